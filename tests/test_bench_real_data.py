"""The loaders on the real benchmark files the repository holds (data/reference)."""

from pearl.bench import data
from tests.conftest import ROOT

BENCHMARK = ROOT / "data" / "reference" / "pearl-benchmark"
SHORT_TEXT = ROOT / "data" / "reference" / "short-text"


def test_phrase_task_files_have_the_papers_sizes():
    assert len(data.load_ppdb(BENCHMARK, filtered=False).labels) == 23_364  # paper A.1
    filtered = data.load_ppdb(BENCHMARK, filtered=True)
    assert len(filtered.labels) == 15_532 and set(filtered.labels) == {0, 1}
    turney = data.load_turney(BENCHMARK)
    assert len(turney) == 2_180 and all(len(item.candidates) >= 2 for item in turney)  # paper: 2180
    bird = data.load_bird(BENCHMARK)
    assert len(bird.scores) == 3_345 and 0 <= min(bird.scores) <= max(bird.scores) <= 1  # paper: 3345


def test_retrieval_and_clustering_files():
    for task in ("yago", "umls"):
        retrieval = data.load_retrieval(BENCHMARK, task, kb=None)
        assert len(retrieval.mentions) == 10_000 and set(retrieval.gold) <= set(retrieval.dictionary)
    conll = data.load_clustering(BENCHMARK, "conll2003")
    assert sorted(set(conll.labels)) == [0, 1, 2] and len(conll.phrases) == 4_946
    bc5cdr = data.load_clustering(BENCHMARK, "bc5cdr")
    assert sorted(set(bc5cdr.labels)) == [0, 1] and len(bc5cdr.phrases) == 9_658


def test_atis_keeps_the_eight_intents_the_paper_uses():
    atis = data.load_atis(SHORT_TEXT)
    assert set(atis.intents) == {
        "atis_flight", "atis_airfare", "atis_ground_service", "atis_airline", "atis_abbreviation",
        "atis_aircraft", "atis_flight_time", "atis_quantity",
    }
    assert all(len(short.texts) and len(long.texts) for short, long in atis.splits.values())
