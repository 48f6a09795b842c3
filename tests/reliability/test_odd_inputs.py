"""Inputs that are odd but valid go through: odd unicode, 100,000-character strings, one-row tables; and no
pearl command reaches for the network unless a param names a hub model."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from tests.reliability.cases import parquet
from tests.reliability.conftest import LONG, connections, pearl, replace

pytestmark = pytest.mark.slow


def ok(result) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_odd_unicode_and_a_100k_document_go_through_every_stage(project):
    """The project was built from a corpus with RTL marks, combining accents, NUL, a ZWJ emoji, a lone
    surrogate and a 100,000-character document (see conftest)."""
    corpus = json.loads((project.root / "metrics/corpus.json").read_text())
    assert corpus["sentences_dropped_long"] == 1  # the 100K document: skipped and counted, not split into junk
    texts = pl.read_parquet(project.root / "data/corpus/sentences.parquet")["text"]
    assert not texts.str.contains("[\u0000\u200f\ud800]").any()  # control, format and surrogate code points gone
    phrases = pl.read_parquet(project.root / "data/typed/phrases.parquet")["phrase"].to_list()
    assert any("القاهرة" in p for p in phrases) and any("café" in p for p in phrases)  # NFC: e + U+0301 is é
    assert any("\U0001F468\u200D\U0001F469" in p for p in phrases)  # the ZWJ sequence survives
    lines = ["القاهرة\u200f", "cafe\u0301", "a\u0000b", "\U0001F468\u200D\U0001F469\u200D\U0001F467", LONG]
    replace(project.root.parent / "odd.txt", "\n".join(lines) + "\n")
    vectors = [json.loads(line)["vector"] for line in
               ok(pearl(project.root, "embed", "--input", project.root.parent / "odd.txt")).splitlines()]
    assert len(vectors) == len(lines) and np.isfinite(vectors).all()


def test_a_100k_character_phrase_goes_through_every_stage(project, tmp_path):
    root = project.copy(tmp_path / "project")
    path = root / "data/phrases/phrases.parquet"
    phrases = pl.read_parquet(path)
    parquet(path, pl.concat([phrases, pl.DataFrame({"phrase": [LONG.strip()], "lex_type": ["NP"], "freq": [2]},
                                                   schema=phrases.schema)]))
    for stage in ("typing", "augment", "candidates", "teacher", "negatives", "train", "average"):
        ok(pearl(root, stage))
    assert LONG.strip() in pl.read_parquet(root / "data/typed/phrases.parquet")["phrase"].to_list()
    assert LONG.strip() in pl.read_parquet(root / "data/teacher/vectors.parquet")["text"].to_list()


def test_a_one_row_phrases_table_goes_through_every_stage_before_train(project, tmp_path):
    root = project.copy(tmp_path / "project")
    path = root / "data/phrases/phrases.parquet"
    parquet(path, pl.read_parquet(path).head(1))
    for stage in ("typing", "augment", "candidates", "teacher", "negatives"):
        ok(pearl(root, stage))
    assert pl.read_parquet(root / "data/negatives/hard_negatives.parquet").height == 1  # its row: no negative


# odd unicode (RTL marks, a combining accent, NUL, a ZWJ emoji) in front of 100,000 characters
ODD_LONG = "\u200fالقاهرة\u200f cafe\u0301 a\u0000b \U0001F468\u200D\U0001F469\u200D\U0001F467 " + LONG
BENCH_LONG = {  # task → (system, file under inputs/, a line holding ODD_LONG; None: a record built below)
    "turney": ("string", "bench/turney/turney.txt", f"{ODD_LONG} | binary | a | b | dual | lumen\n"),
    "bird": ("string", "bench/bird/bird.txt", f"x\t{ODD_LONG}\train\tbigram\ts\tNone\t0.3\tn-n\n"),
    "yago": ("string", "bench/yago/yago_test_samples.txt", f"{ODD_LONG}\tNew York City\n"),
    "ppdb": ("base", "bench/ppdb/ppdb.json", None),
    "conll2003": ("base", "bench/conll2003/test.json", None),
    "atis_s": ("base", "short-text/atis/train/seq.in", None),
}


@pytest.mark.parametrize("task", list(BENCH_LONG))
def test_odd_unicode_and_100k_characters_in_a_benchmark_file_are_scored(project, tmp_path, task):
    root = project.copy(tmp_path / "project")
    system, name, line = BENCH_LONG[task]
    path = root / "inputs" / name
    text = path.read_text()
    if task == "ppdb":
        text = json.dumps([*json.loads(text), [ODD_LONG, "large dog", "pos"]])
    elif task == "conll2003":
        text += json.dumps({"sentences": [[ODD_LONG, "visited", "Paris"]], "ner": [[[0, 0, "PER"], [2, 2, "LOC"]]]}) + "\n"
    elif task == "atis_s":
        text = ODD_LONG + "\n" + text.split("\n", 1)[1]
    else:
        text += line
    replace(path, text)
    ok(pearl(root, "bench-task", system, task))
    result = json.loads((root / f"metrics/bench/{system}/{task}.json").read_text())
    assert np.isfinite(result["score"]) and result["n"] > 0


def test_every_pearl_command_stays_offline(project, tmp_path):
    root = project.copy(tmp_path / "project")
    replace(root / "names.csv", "id,name\n1,New York City\n2,Paris\n3,Tokyo\n")
    replace(root / "mentions.csv", "mention\nNYC\nparis\n")
    commands = [
        ("params",), ("bench-task", "base", "turney"), ("bench-task", "model", "turney"),
        ("bench-task", "string", "turney"), ("bench-task", "ref", "turney"),
        ("embed", "New York"), ("index", "build", "--input", "names.csv", "--column", "name", "--out", "idx"),
        ("link", "--index", "idx", "--input", "mentions.csv", "--column", "mention", "--out", "links.csv"),
        ("join", "names.csv", "mentions.csv", "--left-on", "name", "--right-on", "mention", "--out", "joined.csv"),
        ("cluster", "names.csv", "--column", "name", "--k", "2", "--out", "clusters.csv"),
        ("types", "New York City"),
    ]
    for command in commands:
        ok(pearl(root, *command))
    assert connections(root) == []
