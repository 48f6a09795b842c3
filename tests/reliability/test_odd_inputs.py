"""Inputs that are odd but valid go through: odd unicode, 100,000-character strings, one-row tables; and no
pearl command reaches for the network unless a param names a hub model."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from tests.reliability.cases import parquet
from tests.reliability.conftest import LONG, commit_all, connections, pearl, pearl_chain, replace

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
    ok(pearl_chain(root, *([stage] for stage in ("typing", "augment", "candidates", "teacher", "negatives", "train", "average"))))
    assert LONG.strip() in pl.read_parquet(root / "data/typed/phrases.parquet")["phrase"].to_list()
    assert LONG.strip() in pl.read_parquet(root / "data/teacher/vectors.parquet")["text"].to_list()


def test_a_100k_character_sentence_is_parsed(project, tmp_path):
    root = project.copy(tmp_path / "project")
    path = root / "data/corpus/sentences.parquet"
    sentences = pl.read_parquet(path)
    long = ("The capital of France is Paris and " * 2858).strip()  # 100,000 characters of real words
    parquet(path, pl.concat([sentences, pl.DataFrame({"doc_id": ["long"], "sent_id": [0], "text": [long]},
                                                     schema=sentences.schema)]))
    before = json.loads((project.root / "metrics/parse.json").read_text())["phrase_occurrences"]
    ok(pearl(root, "parse"))
    # its ~14,000 phrases were counted, not skipped
    assert json.loads((root / "metrics/parse.json").read_text())["phrase_occurrences"] > before + 10_000


def test_a_one_row_phrases_table_goes_through_every_stage_before_train(project, tmp_path):
    root = project.copy(tmp_path / "project")
    path = root / "data/phrases/phrases.parquet"
    parquet(path, pl.read_parquet(path).head(1))
    ok(pearl_chain(root, *([stage] for stage in ("typing", "augment", "candidates", "teacher", "negatives"))))
    assert pl.read_parquet(root / "data/negatives/hard_negatives.parquet").height == 1  # its row: no negative


# odd unicode (RTL marks, a combining accent, NUL, a ZWJ emoji) in front of 100,000 characters
ODD_LONG = "\u200fالقاهرة\u200f cafe\u0301 a\u0000b \U0001F468\u200D\U0001F469\u200D\U0001F467 " + LONG
BENCH_LONG = {  # task → (system, file under inputs/, a line holding ODD_LONG; None: a record built below)
    "turney": ("string", "bench/turney/turney.txt", f"{ODD_LONG} | binary | a | b | dual | lumen\n"),
    "bird": ("string", "bench/bird/bird.txt", f"x\t{ODD_LONG}\train\tbigram\ts\tNone\t0.3\tn-n\n"),
    "yago": ("string", "bench/yago/yago_test_samples.txt", f"{ODD_LONG}\tNew York City\n"),
    "umls": ("string", "bench/umls/umls_test_samples.txt", f"{ODD_LONG}\tInfluenza\n"),
    "ppdb": ("base", "bench/ppdb/ppdb.json", None),
    "conll2003": ("base", "bench/conll2003/test.json", None),
    "bc5cdr": ("base", "bench/bc5cdr/test.json", None),
    "atis_s": ("base", "short-text/atis/train/seq.in", None),
    "simlex": ("base", "general/word-sim/EN-SIMLEX-999.txt", f"{ODD_LONG}\tdog\t5.0\n"),
    "stsb": ("base", "general/stsbenchmark/sts-test.csv", f"main-captions\tMSRvid\t2012test\t0099\t2.5\t{ODD_LONG}\tA man plays.\n"),
}


@pytest.fixture(scope="module")
def bench_long(project, tmp_path_factory) -> tuple:
    """One copy with ODD_LONG in every task's file, each task scored by `bench-task` in one process (the cases
    share the model libraries' import); a task reads only its own file."""
    root = project.copy(tmp_path_factory.mktemp("bench-long") / "project")
    for task, (system, name, line) in BENCH_LONG.items():
        path = root / "inputs" / name
        text = path.read_text()
        if task == "ppdb":
            text = json.dumps([*json.loads(text), [ODD_LONG, "large dog", "pos"]])
        elif task == "conll2003":
            text += json.dumps({"sentences": [[ODD_LONG, "visited", "Paris"]], "ner": [[[0, 0, "PER"], [2, 2, "LOC"]]]}) + "\n"
        elif task == "bc5cdr":
            text += json.dumps({"sentences": [[ODD_LONG, "induced", "fever"]], "ner": [[[0, 0, "Chemical"], [2, 2, "Disease"]]]}) + "\n"
        elif task == "atis_s":
            text = ODD_LONG + "\n" + text.split("\n", 1)[1]
        else:
            text += line
        replace(path, text)
    result = pearl_chain(root, *(("bench-task", system, task) for task, (system, _, _) in BENCH_LONG.items()),
                         keep_going=True)
    return root, result


@pytest.mark.parametrize("task", list(BENCH_LONG))
def test_odd_unicode_and_100k_characters_in_a_benchmark_file_are_scored(bench_long, task):
    root, run = bench_long
    system = BENCH_LONG[task][0]
    header = f"$ pearl bench-task {system} {task}\n"
    output = run.stderr[run.stderr.index(header):].split("\n$ pearl ", 1)[0]
    assert "error: " not in output and "Traceback" not in output, output[-3000:]
    result = json.loads((root / f"metrics/bench/{system}/{task}.json").read_text())
    assert np.isfinite(result["score"]) and result["n"] > 0


def test_every_pearl_command_stays_offline(project, tmp_path):
    """The stages ran offline when the project was built (conftest); here the default corpus and every other
    command, the product verbs on tables of odd names."""
    root = project.copy(tmp_path / "project")
    names = ["New York City", "Paris", "Tokyo", "\u200fالقاهرة\u200f", "cafe\u0301 de Flore", "a\u0000b",
             "\U0001F468\u200D\U0001F469\u200D\U0001F467 family", LONG]
    pl.DataFrame({"id": [str(i) for i in range(len(names))], "name": names}).write_csv(root / "names.csv")
    pl.DataFrame({"id": ["9"], "name": ["Berlin"]}).write_csv(root / "more.csv")
    pl.DataFrame({"mention": ["NYC", "القاهرة", "café de flore", LONG[:50_000]]}).write_csv(root / "mentions.csv")
    commit_all(root)  # for the experiments commands
    commands = [
        ("params",), ("corpus", "-S", "corpus.source=wiki-vital", "-S", "corpus.max_docs=5"),
        *(("bench-task", system, "turney") for system in ("base", "model", "string", "ref")), ("report",), ("figure4",),
        ("bench", "--model", "models/pearl", "--tasks", "bird"),
        ("experiments", "run", "table3", "--rows", "no-type", "--seeds", "1", "--dry-run"), ("experiments", "results"),
        ("embed", "New York"), ("index", "build", "--input", "names.csv", "--column", "name", "--out", "idx"),
        ("index", "add", "--index", "idx", "--input", "more.csv", "--column", "name"),
        ("link", "--index", "idx", "--input", "mentions.csv", "--column", "mention", "--out", "links.csv"),
        ("join", "names.csv", "mentions.csv", "--left-on", "name", "--right-on", "mention", "--how", "left",
         "--out", "joined.csv"),
        ("cluster", "names.csv", "--column", "name", "--k", "2", "--out", "clusters.csv"),
        ("types", "--input", "names.csv", "--column", "name", "--out", "types.csv"),
    ]
    ok(pearl_chain(root, *commands))
    assert connections(root) == []
    assert pl.read_csv(root / "links.csv")["mention_row"].unique().len() == 4
    assert pl.read_csv(root / "joined.csv").height == 4
    assert pl.read_csv(root / "clusters.csv").height == pl.read_csv(root / "types.csv").height == len(names)
