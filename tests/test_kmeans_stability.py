"""benchmarks/kmeans_stability.py: the clustering protocol re-run under other k-means random states."""

import json

import pytest

from benchmarks.kmeans_stability import _states, rows
from pearl.errors import PearlError


def test_one_row_per_random_state_with_the_benchmarks_marked(tmp_path, tiny_encoder):
    (tmp_path / "bc5cdr").mkdir()
    words = ["aspirin", "cancer", "ibuprofen", "asthma", "caffeine", "diabetes", "insulin", "stroke"]
    doc = {"sentences": [words], "ner": [[[i, i, "Chemical" if i % 2 == 0 else "Disease"] for i in range(len(words))]]}
    (tmp_path / "bc5cdr" / "train.json").write_text(json.dumps(doc) + "\n")
    lines = rows("tiny", str(tiny_encoder), ["bc5cdr"], tmp_path, n_init=2, states=[7, 0], bench_state=7)
    assert [line.split(" | ")[2] for line in lines] == ["7 (the benchmark's)", "0"]
    assert all(line.startswith("| tiny | bc5cdr train |") for line in lines)
    assert all(0 <= float(line.split(" | ")[4].rstrip(" |")) <= 100 for line in lines)


def test_the_string_encoder_is_refused_in_one_line(tmp_path):
    with pytest.raises(PearlError, match="no vectors to cluster"):
        rows("s", "string", ["bc5cdr"], tmp_path, n_init=2, states=[0], bench_state=0)


def test_bad_random_states_name_the_flag():
    with pytest.raises(PearlError, match="--states"):
        _states("42,x")
    with pytest.raises(PearlError, match="listed twice"):
        _states("1,1")
