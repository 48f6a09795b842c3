"""Benchmark task names (kept free of heavy imports: params validation reads them)."""

PHRASE_TASKS = ("ppdb", "ppdb_filtered", "turney", "bird", "yago", "umls", "conll2003", "bc5cdr", "autofj")
SHORT_TEXT_TASKS = ("atis_s", "atis_l")
ALL_TASKS = PHRASE_TASKS + SHORT_TEXT_TASKS
# The tasks the string baseline can score: those that need no vectors.
STRING_TASKS = ("turney", "bird", "yago", "umls", "autofj")
