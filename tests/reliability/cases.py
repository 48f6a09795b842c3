"""Bad inputs, one per row: how the case breaks a copy of the scratch project, the real command, and the
words its one-line error must contain. `python -m tests.reliability.table` prints them for docs/reliability.md."""

from __future__ import annotations

import json
import resource
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pearl.artifacts import ShardedParquetWriter
from tests.reliability.conftest import replace


@dataclass(frozen=True)
class Case:
    name: str
    command: tuple[str, ...]
    expect: str | tuple[str, ...]  # in the error line (one of them)
    breaks: Callable[[Path], None] = lambda root: None
    preexec: Callable[[], None] | None = field(default=None, compare=False)


def parquet(path: Path, df: pl.DataFrame) -> None:
    path.unlink(missing_ok=True)  # a fresh inode: the project's copy stays as it was
    df.write_parquet(path)


def edit_parquet(relative: str, change: Callable[[pl.DataFrame], pl.DataFrame]) -> Callable[[Path], None]:
    def breaks(root: Path) -> None:
        path = root / relative
        parquet(path, change(pl.read_parquet(path)))

    return breaks


def corrupt_middle_row_group(path: Path, table: pa.Table) -> None:
    """Three row groups, the middle one's column data overwritten: the footer still reads."""
    path.unlink(missing_ok=True)
    pq.write_table(table, path, row_group_size=(table.num_rows + 2) // 3, compression="none")
    data = bytearray(path.read_bytes())
    column = pq.ParquetFile(path).metadata.row_group(1).column(table.num_columns - 1)
    start = column.data_page_offset
    data[start + 8: start + column.total_compressed_size] = b"\xff" * (column.total_compressed_size - 8)
    replace(path, bytes(data))


def long_text_table(column: str, rows: int = 300) -> pa.Table:
    return pa.table({"doc_id": [f"d{i}" for i in range(rows)], "sent_id": pa.array(range(rows), pa.int32()),
                     column: [f"This is sentence number {i} of the document about the capital of France." for i in range(rows)]})


def sharded(relative: str, tamper: Callable[[Path], None]) -> Callable[[Path], None]:
    """Rewrite a Parquet artifact as `engine: ray` writes it (three shards and a manifest), then tamper with it."""
    def breaks(root: Path) -> None:
        path = root / relative
        table = pq.read_table(path)
        with ShardedParquetWriter(path, table.schema, shard_rows=table.num_rows // 3 + 1) as writer:
            writer.write(table.to_pydict())
        tamper(path)

    return breaks


def edit_text(relative: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def breaks(root: Path) -> None:
        path = root / relative
        replace(path, change(path.read_text()))

    return breaks


def write(relative: str, data: bytes | str) -> Callable[[Path], None]:
    return lambda root: replace(root / relative, data)


def remove(relative: str) -> Callable[[Path], None]:
    def breaks(root: Path) -> None:
        path = root / relative
        shutil.rmtree(path) if path.is_dir() else path.unlink()

    return breaks


def unwritable(relative: str) -> Callable[[Path], None]:
    """Point an output folder at sysfs, which refuses new files even to root (chmod would not stop root)."""
    def breaks(root: Path) -> None:
        folder = root / relative
        shutil.rmtree(folder)
        folder.symlink_to("/sys/kernel", target_is_directory=True)

    return breaks


def file_size_limit(limit: int) -> Callable[[], None]:
    """The disk filling up, as the process sees it: writes past `limit` bytes fail (EFBIG)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def fake_export(root: Path) -> None:
    """A folder whose modules.json names PEARL's module only in a comment: its code must not be trusted."""
    folder = root / "fake-export"
    folder.mkdir()
    (folder / "pearl_model.json").write_text("{}")
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "",
                                                      "type": "evil_code.Module", "note": "st_modules.PhraseTransformer"}]))


BIRD_HEADER = "pair\tterm1\tterm2\tterm2: unigram or bigram\tsource\trelation\trelatedness score\tpos\n"
BENCH = "inputs/bench"

CASES = [
    # params and -S overrides
    Case("-S on an empty params file", ("params", "-S", "base.seed=1"), "expected a mapping of sections, got NoneType",
         write("params.yaml", "")),
    Case("-S through a value", ("params", "-S", "base.seed.x=1"), "-S base.seed.x: 'base.seed' is a value (42), not a section"),
    Case("-S into an unknown section", ("params", "-S", "pars.min_freq=3"), "unknown section 'pars'"),
    Case("-S with a value of the wrong type", ("params", "-S", "train.lr=fast"), "train.lr='fast'"),
    Case("misspelt key in params.yaml", ("parse",), "unknown key 'parse.min_frek'",
         edit_text("params.yaml", lambda text: text.replace("min_freq:", "min_frek:", 1))),
    Case("params.yaml not UTF-8", ("params",), "params.yaml: not valid YAML", write("params.yaml", b"base:\n  seed: \xff\n")),
    Case("params.yaml missing", ("corpus",), "params file not found", remove("params.yaml")),
    # models
    Case("unknown hub id for model.backbone, no network", ("augment", "-S", "model.backbone=no-such-org/no-such-model"),
         "model.backbone='no-such-org/no-such-model' could not be loaded"),
    Case("model.backbone names a missing folder", ("train", "-S", "model.backbone=./no/such/folder"),
         "model.backbone='./no/such/folder': no such folder"),
    Case("unknown hub id for model.teacher, no network", ("teacher", "-S", "model.teacher=no-such-org/teacher"),
         "model.teacher='no-such-org/teacher' could not be loaded"),
    Case("unknown hub id for typing.hf_model, no network",
         ("typing", "-S", "typing.backend=transformers", "-S", "typing.hf_model=no-such-org/ner"),
         "typing.hf_model='no-such-org/ner' could not be loaded"),
    Case("average without models/finetuned/pearl_heads.pt", ("average",),
         "pearl_heads.pt is missing: run `dvc repro train`", remove("models/finetuned/pearl_heads.pt")),
    Case("average with truncated head weights", ("average",), "the saved model is unreadable",
         lambda root: replace(root / "models/finetuned/pearl_heads.pt", (root / "models/finetuned/pearl_heads.pt").read_bytes()[:100])),
    Case("benchmark of the model before it exists", ("bench-task", "model", "turney"),
         "models/pearl is missing: run `dvc repro average`", remove("models/pearl")),
    Case("a folder that mentions PEARL's module but is no export", ("embed", "--model", "fake-export", "a phrase"),
         "references the module class 'evil_code.Module'", fake_export),  # refused, never imported
    # upstream artifacts, checked by the stage that reads them
    Case("sentences.parquet missing", ("parse",), "sentences.parquet is missing: run `dvc repro corpus` first",
         remove("data/corpus/sentences.parquet")),
    Case("sentences.parquet with a corrupt row group", ("parse",), "row group 1 of 3 is corrupt",
         lambda root: corrupt_middle_row_group(root / "data/corpus/sentences.parquet", long_text_table("text"))),
    Case("sentences.parquet not Parquet at all", ("parse",), "not a readable Parquet file",
         write("data/corpus/sentences.parquet", b"PAR1 not really")),
    Case("sentences.parquet as shards: one changed after its manifest", ("parse",),
         "part-00001.parquet does not match the hash in manifest.json",
         sharded("data/corpus/sentences.parquet",
                 lambda folder: pq.write_table(long_text_table("text"), folder / "part-00001.parquet"))),
    Case("sentences.parquet as shards: one listed but missing", ("parse",), "part-00002.parquet listed but missing",
         sharded("data/corpus/sentences.parquet", lambda folder: (folder / "part-00002.parquet").unlink())),
    Case("sentences.parquet as shards: the manifest missing", ("parse",), "is a folder without manifest.json",
         sharded("data/corpus/sentences.parquet", lambda folder: (folder / "manifest.json").unlink())),
    Case("sentences.parquet: sent_id of the wrong type", ("parse",), "column sent_id has type String, expected int",
         edit_parquet("data/corpus/sentences.parquet", lambda df: df.with_columns(pl.col("sent_id").cast(pl.String)))),
    Case("sentences.parquet: 0 rows", ("parse",), "sentences.parquet holds no sentences",
         edit_parquet("data/corpus/sentences.parquet", lambda df: df.head(0))),
    Case("phrases.parquet: a null phrase", ("typing",), "has a null phrase",
         edit_parquet("data/phrases/phrases.parquet", lambda df: df.with_columns(
             phrase=pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col("phrase"))))),
    Case("phrases.parquet: an unknown lex_type", ("typing",), "row 0 has lex_type='XP', not one of NP, VP",
         edit_parquet("data/phrases/phrases.parquet", lambda df: df.with_columns(
             lex_type=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("XP")).otherwise(pl.col("lex_type"))))),
    Case("phrases.parquet: 0 rows", ("typing",), "phrases.parquet has no rows",
         edit_parquet("data/phrases/phrases.parquet", lambda df: df.head(0))),
    Case("typed phrases: a duplicate phrase", ("train",), "row 1 repeats the key (phrase)",
         edit_parquet("data/typed/phrases.parquet", lambda df: df.with_columns(
             phrase=pl.when(pl.int_range(pl.len()) == 1).then(pl.col("phrase").first()).otherwise(pl.col("phrase"))))),
    Case("typed phrases: a label_id out of range", ("augment",), "label_id=95, outside 0..94",
         edit_parquet("data/typed/phrases.parquet", lambda df: df.with_columns(label_id=pl.lit(95, pl.Int16)))),
    Case("typed phrases: 1 row, at train", ("train",), "1 phrases; training needs at least 4",
         edit_parquet("data/typed/phrases.parquet", lambda df: df.head(1))),
    *(Case(f"typed phrases: 0 rows, at {stage}", (stage,), "typed/phrases.parquet has no rows",
           edit_parquet("data/typed/phrases.parquet", lambda df: df.head(0)))
      for stage in ("augment", "candidates", "teacher", "negatives", "train")),
    Case("variants.parquet: an unknown level", ("train",), "level='sentence'",
         edit_parquet("data/augment/variants.parquet", lambda df: df.with_columns(level=pl.lit("sentence")))),
    Case("candidates.parquet: a NaN edit_sim", ("negatives",), "edit_sim=nan, outside 0..1",
         edit_parquet("data/negatives/candidates.parquet", lambda df: df.with_columns(edit_sim=pl.lit(float("nan"), pl.Float32)))),
    Case("hard_negatives.parquet lacks a column", ("train",), "lacks column(s) negative",
         edit_parquet("data/negatives/hard_negatives.parquet", lambda df: df.drop("negative"))),
    Case("teacher vectors of another teacher", ("train",), "holds vectors of 'another/teacher'",
         edit_text("data/teacher/vectors.meta.json", lambda text: json.dumps({**json.loads(text), "teacher": "another/teacher"}))),
    # corpus sources
    Case("corpus .jsonl with a line that is not UTF-8", ("corpus",), "corpus.jsonl:2: not UTF-8 text",
         write("inputs/corpus.jsonl", b'{"text": "A first sentence about Paris."}\n{"text": "caf\xe9"}\n')),
    Case("corpus .parquet with a corrupt row group", ("corpus", "-S", "corpus.files=[inputs/corpus.parquet]"),
         "corpus.parquet: row group 1 of 3 is unreadable",
         lambda root: corrupt_middle_row_group(root / "inputs/corpus.parquet", long_text_table("text"))),
    Case("corpus.files matching no file", ("corpus", "-S", "corpus.files=[inputs/none/*.txt]"), "matches no file"),
    # benchmark files
    Case("BIRD: a score that is not a number", ("bench-task", "string", "bird"),
         "bird.txt:3: relatedness score 'high' is not a number",
         write(f"{BENCH}/bird/bird.txt", BIRD_HEADER + "x\ta\tb\tbigram\ts\tNone\t0.5\tn-n\nx\tc\td\tbigram\ts\tNone\thigh\tn-n\n")),
    Case("PPDB: an empty ppdb.json", ("bench-task", "base", "ppdb"), "expected a JSON list",
         write(f"{BENCH}/ppdb/ppdb.json", "")),
    Case("PPDB: a ppdb.json with no pairs", ("bench-task", "base", "ppdb"), "ppdb.json: holds no pairs",
         write(f"{BENCH}/ppdb/ppdb.json", "[]")),
    Case("PPDB: a label other than pos or neg", ("bench-task", "base", "ppdb"), "pair 0 has label 'maybe'",
         write(f"{BENCH}/ppdb/ppdb.json", '[["big dog", "large dog", "maybe"]]')),
    Case("PPDB: a lone surrogate (JSON \\ud800) in a phrase", ("bench-task", "base", "ppdb"),
         "ppdb.json: pair 1 holds U+D800, half a UTF-16 surrogate pair",
         write(f"{BENCH}/ppdb/ppdb.json", r'[["big dog", "large dog", "pos"], ["big \ud800 dog", "cat", "neg"]]')),
    Case("CoNLL: a lone surrogate (JSON \\udc00) in a mention", ("bench-task", "base", "conll2003"),
         "test.json:1 holds U+DC00",
         write(f"{BENCH}/conll2003/test.json", r'{"sentences": [["Par\udc00is", "and", "Obama"]], "ner": [[[0, 0, "LOC"], [2, 2, "PER"]]]}' + "\n")),
    Case("figure4 on a CoNLL file with as many mentions as types", ("figure4",),
         "3 distinct phrases of 3 types; figure4 needs at least 2 types and more phrases than types",
         write(f"{BENCH}/conll2003/test.json", json.dumps(
             {"sentences": [["Obama", "visited", "Paris", "with", "Google"]], "ner": [[[0, 0, "PER"], [2, 2, "LOC"], [4, 4, "ORG"]]]}))),
    Case("YAGO: an empty retrieval file", ("bench-task", "string", "yago"), "yago_test_samples.txt: holds no mentions",
         write(f"{BENCH}/yago/yago_test_samples.txt", "\n")),
    Case("ATIS: no usable training rows", ("bench-task", "base", "atis_s"), "no non-blank query",
         write("inputs/short-text/atis/train/label", "atis_flight#atis_fare\n" * 12)),
    Case("CoNLL: no mention of the kept types", ("bench-task", "base", "conll2003"), "holds no mentions of the types PER, LOC, ORG",
         write(f"{BENCH}/conll2003/test.json", json.dumps({"sentences": [["Hello"]], "ner": [[[0, 0, "MISC"]]]}) + "\n")),
    Case("Turney: a line that is not UTF-8", ("bench-task", "string", "turney"), "turney.txt:2: not UTF-8",
         write(f"{BENCH}/turney/turney.txt", b"double star | binary | double | star | dual\nbass | caf\xe9 | a | b | c\n")),
    Case("bench.data_dir pointing nowhere", ("bench-task", "string", "turney", "-S", "bench.data_dir=nowhere"),
         "is missing: set bench.data_dir"),
    # pearl embed
    Case("pearl embed --input with a blank line", ("embed", "--input", "phrases.txt"), "phrases.txt: line 2 is blank",
         write("phrases.txt", "New York\n\nParis\n")),
    Case("pearl embed --input not UTF-8", ("embed", "--input", "phrases.txt"), "not UTF-8 text",
         write("phrases.txt", b"caf\xe9\n")),
    # a byte that is not UTF-8 on the command line reaches Python as a lone surrogate (U+DCE9 for \\xe9)
    Case("pearl embed with an argument that is not UTF-8", ("embed", "New York", "caf\udce9"), "phrase 2 holds U+DCE9"),
    Case("pearl types with an argument that is not UTF-8", ("types", "caf\udce9"), "phrase 1 holds U+DCE9"),
    Case("a product verb's table not UTF-8", ("cluster", "inputs/names.csv", "--column", "name", "--model", "string",
                                             "--threshold", "0.5", "--out", "clusters.csv"),
         "names.csv: line 3 is not UTF-8", write("inputs/names.csv", b"name\nParis\ncaf\xe9\n")),
    # issue 40: pearl join --precision-target, checked before either table is embedded
    Case("pearl join with a precision target outside (0, 1]",
         ("join", "inputs/names.csv", "inputs/names.csv", "--left-on", "name", "--right-on", "name",
          "--precision-target", "1.5", "--out", "joined.csv"),
         "--precision-target 1.5: a precision in (0, 1]", write("inputs/names.csv", "name\nParis\nParis France\n")),
    Case("pearl join with a precision target and a fixed cut",
         ("join", "inputs/names.csv", "inputs/names.csv", "--left-on", "name", "--right-on", "name",
          "--precision-target", "0.9", "--threshold", "0.5", "--out", "joined.csv"),
         "leave out --threshold, --calibration-quantile and --string-weight", write("inputs/names.csv", "name\nParis\nParis France\n")),
    Case("pearl join on a column of numbers",
         ("join", "inputs/names.csv", "inputs/names.csv", "--left-on", "qty", "--right-on", "name",
          "--out", "joined.csv"),
         "the left table's column 'qty' holds only numbers ('3', …), not names",
         write("inputs/names.csv", "name,qty\nParis,3\nRome,12\n")),
    # the file system
    Case("output folder not writable (parse)", ("parse",), "could not be written (Permission denied)",
         unwritable("data/phrases")),
    Case("disk full while writing (typing)", ("typing",), "could not be written (File too large)",
         preexec=file_size_limit(64)),
    Case("product output in a folder that is not writable", ("cluster", "inputs/names.csv", "--column", "name",
                                                             "--model", "string", "--threshold", "0.5", "--out", "/sys/kernel/c.parquet"),
         ("c.parquet could not be written (Permission denied)", "folder /sys/kernel is read-only"),  # root, or not
         write("inputs/names.csv", "name\nParis\nParis France\n")),
    # issue 38 (meta after data): room for typing's meta (~700 bytes) but not its Parquet (~3 KB), so the data
    # write itself fails; the unchanged tree shows that no new meta was left beside the old artifact
    Case("disk full while writing the Parquet itself (typing)", ("typing",),
         "phrases.parquet could not be written (File too large)", preexec=file_size_limit(1024)),
    # issue 38 (--seeds): parsed before anything else runs
    Case("experiments run with a seed that is not a number", ("experiments", "run", "table3", "--seeds", "1,x"),
         "--seeds '1,x': expected comma-separated integers >= 0 (train.seed)"),
    Case("experiments run with an empty or negative seed", ("experiments", "run", "table3", "--seeds", "1,,-2"),
         "--seeds '1,,-2': expected comma-separated integers >= 0 (train.seed)"),
]
