"""Benchmark task names (kept free of heavy imports: params validation reads them)."""

PHRASE_TASKS = ("ppdb", "ppdb_filtered", "turney", "bird", "yago", "umls", "conll2003", "bc5cdr", "autofj")
SHORT_TEXT_TASKS = ("atis_s", "atis_l")
# PPDB with unordered pairs deduplicated and no phrase on both sides of a split (the paper's
# random split puts the twin (b, a) of many test pairs in train).
CLEAN_PPDB_TASKS = ("ppdb_clean", "ppdb_filtered_clean")
# The general-purpose guard: words (BURT's Table 2) and sentences must not get worse.
GENERAL_TASKS = ("simlex", "ws353_sim", "ws353_rel", "men", "stsb")
# BURT's sentence relatedness (SICK TEST; its TRIAL split is the tune twin), kept out of the default suites
BURT_TASKS = ("sick_r",)
ALL_TASKS = PHRASE_TASKS + SHORT_TEXT_TASKS + CLEAN_PPDB_TASKS + GENERAL_TASKS + BURT_TASKS
# The tune suite: no file of it is a reported test set (data/reference/pearl-tune/README.md). Its name-linking
# tasks are built from the Vital Articles leads (pearl/bench/wiki_aliases.py) and from GeoNames cities
# that training leaves out (pearl/bench/geonames_aliases.py).
NAME_TUNE_TASKS = ("wiki_aliases", "geonames_aliases")
PEARL_TUNE_TASKS = ("conll2003_train", "bc5cdr_train", "stsb_dev", "rw", "simverb", *NAME_TUNE_TASKS)
BURT_TUNE_TASKS = ("sick_trial",)
TUNE_TASKS = PEARL_TUNE_TASKS + BURT_TUNE_TASKS
# The tune mean of every screen so far: its six tasks stay its definition, so that means stay comparable.
TUNE_MEAN_TASKS = TUNE_TASKS[:6]
# BURT's Table 2 columns that run offline, and the two that choose BURT-small's settings
BURT_TABLE_TASKS = ("stsb", "sick_r", "simlex", "ws353_sim", "ws353_rel", "men")
BURT_TUNE_TABLE_TASKS = ("stsb_dev", "sick_trial")
# The tasks the string baseline can score: those that need no vectors.
STRING_TASKS = ("turney", "bird", "yago", "umls", "autofj")
