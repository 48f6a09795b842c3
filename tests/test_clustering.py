"""`--threshold` clustering through the neighbour graph (pearl.clustering.cluster): the all-pairs average
linkage's clusters, past the 20K names that all pairs allowed, and a group too large for average linkage cut
into pieces along its strongest links."""

import logging

import numpy as np
import pytest

from pearl.clustering import cluster as clustering
from pearl.errors import PearlError
from pearl.index.encoder import StringEncoder


def _partition(labels) -> list[tuple[int, ...]]:
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels):
        groups.setdefault(int(label), []).append(row)
    return sorted(tuple(group) for group in groups.values())


def _every_pairs_score(texts: list[str], own: np.ndarray, weight: float) -> np.ndarray:
    """(1 − weight) · `own` + weight · rapidfuzz's token set ratio of every two names, as `pearl link` mixes it."""
    from rapidfuzz import fuzz, process, utils

    string = process.cdist(texts, texts, scorer=fuzz.token_set_ratio, processor=utils.default_process) / 100
    return (1 - weight) * own + weight * string


@pytest.mark.parametrize("string_weight", [0.0, 0.5])
def test_the_neighbour_graph_gives_the_clusters_of_average_linkage_over_all_pairs(tiny_text_encoder, string_weight,
                                                                                  monkeypatch):
    """With string evidence, over every pair's mixed score, though the graph holds only each name's nearest by
    cosine and by 3-grams, searched a chunk of names at a time."""
    from sklearn.cluster import AgglomerativeClustering

    monkeypatch.setattr(clustering, "CHUNK", 64)

    rng = np.random.default_rng(3)
    stems = ["".join(rng.choice(list("abcdefghij"), 5)) for _ in range(60)]
    texts = list(dict.fromkeys(f"{rng.choice(stems)} {rng.choice(stems)[:int(rng.integers(2, 6))]}" for _ in range(400)))
    vectors = tiny_text_encoder.encode(texts)
    scores = _every_pairs_score(texts, vectors @ vectors.T, string_weight)
    for threshold in np.quantile(scores[np.triu_indices(len(texts), 1)], [0.995, 0.999]):
        labels, representatives = clustering.cluster_labels(texts, tiny_text_encoder, None, float(threshold),
                                                            string_weight=string_weight)
        every_pair = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                             distance_threshold=1 - threshold + 1e-6).fit_predict(1 - scores)
        assert _partition(labels) == _partition(every_pair)
        assert max(map(len, _partition(labels))) >= 3  # the thresholds leave groups to average, not only pairs
        for label, member in enumerate(representatives):
            assert labels[member] == label


def test_string_clusters_more_names_than_all_pairs_could_hold():
    rng = np.random.default_rng(5)
    words = list(dict.fromkeys("".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 7)) for _ in range(11_000)))
    texts = words + [word.upper() for word in words]  # the same 3-gram set as its lower-case twin
    labels, _ = clustering.cluster_labels(texts, StringEncoder(), None, 0.9)
    assert len(texts) > 20_000
    assert (labels[: len(words)] == labels[len(words):]).all()
    assert len(set(labels.tolist())) == len(words)  # random 7-letter words share no group at Jaccard 0.9


def test_a_group_past_the_limit_is_cut_into_pieces_and_a_crowded_name_is_logged(monkeypatch, caplog):
    texts = ["acme corp", "acme corp.", "acme corps", "acme co", "acme corp inc"]
    monkeypatch.setattr(clustering, "MAX_COMPONENT", 3)
    with caplog.at_level(logging.INFO, logger="pearl.cluster"):
        labels, representatives = clustering.cluster_labels(texts, StringEncoder(), None, 0.5)
    assert "links 5 names into one group, past the 3 whose distances average linkage holds" in caplog.text
    assert max(map(len, _partition(labels))) <= 3
    assert [labels[member] for member in representatives] == list(range(len(representatives)))
    with pytest.raises(PearlError, match=r"^--threshold 0.0 puts all 5 names in one cluster, .*: give a higher"):
        clustering.cluster_labels(texts, StringEncoder(), None, 0.0)
    monkeypatch.setattr(clustering, "MAX_COMPONENT", 20_000)
    monkeypatch.setattr(clustering, "NEIGHBOURS", 1)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pearl.cluster"):
        labels, _ = clustering.cluster_labels(texts, StringEncoder(), None, 0.5)
    assert "names have more than 1 neighbours at or above 0.5" in caplog.text
    assert "pieces" not in caplog.text
    assert len(set(labels.tolist())) == 1  # every name still reaches the group through its nearest


@pytest.mark.parametrize("limit, pieces", [(2, [(0, 1), (2, 3), (4,), (5, 6)]), (3, [(0, 1), (2, 3, 4), (5, 6)]),
                                           (5, [(0, 1, 2, 3, 4), (5, 6)])])
def test_a_large_group_is_cut_along_its_spanning_tree_strongest_edge_first(monkeypatch, limit, pieces):
    # a path a–b–c–d–e (the chord a–c is off the maximum spanning tree) and a pair f–g, small enough to stay whole
    edges = {(0, 1): 0.9, (1, 2): 0.5, (0, 2): 0.45, (2, 3): 0.95, (3, 4): 0.8, (5, 6): 0.1}
    rows, columns = (np.array(side) for side in zip(*edges))
    component = np.array([0, 0, 0, 0, 0, 1, 1])
    monkeypatch.setattr(clustering, "MAX_COMPONENT", limit)
    found = clustering._pieces(component, np.bincount(component) > limit, rows, columns,
                               np.array(list(edges.values()), dtype=np.float32))
    assert _partition(found) == pieces


def test_close_pairs_are_every_pair_at_the_threshold_in_products_of_any_number_of_rows(monkeypatch):
    from pearl.index import trigrams

    rng = np.random.default_rng(7)
    stems = ["".join(rng.choice(list("abcdef"), 4)) for _ in range(30)]
    texts = list(dict.fromkeys(f"{rng.choice(stems)} {rng.choice(stems)}" for _ in range(300)))
    jaccard = trigrams.jaccard_matrix(texts, texts)
    np.fill_diagonal(jaccard, 0.0)
    expected = sorted(zip(*np.nonzero(jaccard >= 0.5)))
    for rows_per_product in (50_000, 7):
        monkeypatch.setattr(trigrams, "_PRODUCT_ROWS", rows_per_product)
        rows, columns, scores, crowded = trigrams.NameSets(texts).close_pairs(0.5, len(texts))
        assert sorted(zip(rows.tolist(), columns.tolist())) == [(int(a), int(b)) for a, b in expected]
        assert np.allclose(scores, jaccard[rows, columns]) and crowded == 0


def test_string_clusters_are_scikit_learns_average_linkage_over_all_pairs():
    from pearl.index import trigrams

    rng = np.random.default_rng(11)
    stems = ["".join(rng.choice(list("abcdefg"), 4)) for _ in range(25)]
    texts = list(dict.fromkeys(f"{rng.choice(stems)} {rng.choice(stems)[:int(rng.integers(2, 5))]}" for _ in range(400)))
    _assert_string_clusters_are_average_linkage(texts, 1.0 - trigrams.jaccard_matrix(texts, texts), (0.4, 0.6), 0.0)


def _assert_string_clusters_are_average_linkage(texts: list[str], distances: np.ndarray, thresholds, string_weight):
    """`string`'s clusters at each threshold are scikit-learn's average linkage over every pair's distance, and
    some cluster has three names or more."""
    from sklearn.cluster import AgglomerativeClustering

    for threshold in thresholds:
        labels, _ = clustering.cluster_labels(texts, StringEncoder(), None, threshold, string_weight=string_weight)
        every_pair = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                             distance_threshold=1 - threshold + 1e-6).fit_predict(distances)
        assert _partition(labels) == _partition(every_pair)
        assert max(map(len, _partition(labels))) >= 3


def test_string_clusters_with_string_evidence_are_average_linkage_over_every_pairs_mixed_score():
    """Misspelt words with a second word: the mix's scores are seldom tied, so that the order of merges is one."""
    from pearl.index import trigrams

    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, int(rng.integers(6, 11)))) for _ in range(80)]
    texts = []
    for _ in range(400):
        word = list(rng.choice(words))
        for _ in range(int(rng.integers(0, 3))):
            word[int(rng.integers(len(word)))] = rng.choice(letters)
        texts.append("".join(word) + " " + rng.choice(words)[:int(rng.integers(3, 7))])
    texts = list(dict.fromkeys(texts))
    distances = 1.0 - _every_pairs_score(texts, trigrams.jaccard_matrix(texts, texts), 0.5)
    _assert_string_clusters_are_average_linkage(texts, distances, (0.5, 0.6), 0.5)




TWINS = [("springfield", "springfeld"), ("riverside", "riversyde"), ("oakland", "oaklande"), ("greenville", "grenville"),
         ("madison", "maddison")]


def _twins_and(others: list[str]) -> list[str]:
    return [name for pair in TWINS for name in pair] + others

def test_a_model_that_reads_twins_apart_still_groups_them_by_their_letters():
    """An encoder that gives every name its own direction (cosine 0 between any two): by cosine alone nothing is
    grouped; with string evidence the twins are, found among each name's nearest by 3-grams."""
    class Orthogonal:
        kind = "embedding"

        def encode(self, texts):
            return np.eye(64, dtype=np.float32)[: len(texts)]

        def truncated(self, texts):
            return 0

    texts = _twins_and(["oxford", "zanzibar", "quito", "lagos"])
    assert len(set(clustering.cluster_labels(texts, Orthogonal(), None, 0.4, string_weight=0.0)[0].tolist())) == len(texts)
    labels, _ = clustering.cluster_labels(texts, Orthogonal(), None, 0.4)  # a model's default: the link's weight
    assert _partition(labels) == sorted([(2 * i, 2 * i + 1) for i in range(len(TWINS))]
                                        + [(2 * len(TWINS) + i,) for i in range(4)])


def test_string_clusters_by_its_3_gram_jaccard_alone_unless_a_weight_is_given():
    texts = _twins_and([f"acme branch {i}" for i in range(10)])
    by_default = clustering.cluster_labels(texts, StringEncoder(), None, "auto")[0]
    assert (by_default == clustering.cluster_labels(texts, StringEncoder(), None, "auto", string_weight=0.0)[0]).all()
    assert (by_default != clustering.cluster_labels(texts, StringEncoder(), None, "auto", string_weight=0.5)[0]).any()


def test_names_with_one_vector_whose_cosine_rounds_past_1_are_grouped():
    """A static model gives case variants one vector, and a float32 unit vector's cosine with itself can round
    to just above 1: the mix's distance is then clipped at 0, not refused by linkage."""
    rng = np.random.default_rng(0)
    units = rng.standard_normal((20_000, 384)).astype(np.float32)
    units /= np.linalg.norm(units, axis=1, keepdims=True)
    vector = next(v for v in units if (np.tile(v, (3, 1)) @ np.tile(v, (3, 1)).T).min() > 1 + 3e-7)  # past the mix's rounding

    class OneVector:
        kind = "embedding"

        def encode(self, texts):
            return np.tile(vector, (len(texts), 1))

        def truncated(self, texts):
            return 0

    labels, _ = clustering.cluster_labels(["Zofingen", "ZOFINGEN", "zofingen."], OneVector(), None, 0.9)
    assert labels.tolist() == [0, 0, 0]

def test_auto_joins_the_twins_and_keeps_a_table_of_random_strings_apart():
    """By 3-gram Jaccard alone: random strings share few 3-grams, so their nearest scores are tied in crowds.
    With string evidence mixed in they are not, and `auto` joins some strangers, as it does on real unrelated
    names at either weight (docs/measurements.md#dedupe-string-evidence)."""
    rng = np.random.default_rng(0)
    others = list(dict.fromkeys("".join(rng.choice(list("abcdefghijklmnop"), 8)) for _ in range(400)))
    labels, _ = clustering.cluster_labels(_twins_and(others), StringEncoder(), None, "auto", string_weight=0.0)
    assert _partition(labels) == sorted([(2 * i, 2 * i + 1) for i in range(len(TWINS))]
                                        + [(2 * len(TWINS) + i,) for i in range(len(others))])


@pytest.mark.parametrize("string_weight", [0.0, 0.5])
def test_auto_groups_no_one_of_a_crowd_where_every_pair_is_a_coin_toss(caplog, string_weight):
    """Ten numbered branches of one firm are each other's nearest names at one score: any of them could be
    another's twin, so no cut that keeps them is estimated precise. By 3-gram Jaccard they score above the twins,
    so no cut is, and only names that score 1 are grouped; the mix scores them below some twins."""
    crowd = [f"acme branch {i}" for i in range(10)]
    with caplog.at_level(logging.INFO, logger="pearl.cluster"):
        labels, _ = clustering.cluster_labels(_twins_and(crowd), StringEncoder(), None, "auto",
                                              string_weight=string_weight)
    crowd_labels = set(labels[2 * len(TWINS):].tolist())
    assert len(crowd_labels) == len(crowd) and not crowd_labels & set(labels[:2 * len(TWINS)].tolist())
    if string_weight == 0:
        assert "--threshold auto: no cut reaches the target 0.9" in caplog.text
        assert len(set(labels.tolist())) == 2 * len(TWINS) + len(crowd)


@pytest.mark.parametrize("threshold, message", [
    ("banana", "--threshold 'banana': give a cosine similarity in [-1, 1], or auto"),
    ("1.5", "--threshold 1.5: a cosine score lies in [-1, 1]")])
def test_a_threshold_that_is_neither_a_score_nor_auto_is_refused(threshold, message):
    import re

    with pytest.raises(PearlError, match=f"^{re.escape(message)}$"):
        clustering.cluster_labels(["a b", "a c"], StringEncoder(), None, threshold)
