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


def test_the_neighbour_graph_gives_the_clusters_of_average_linkage_over_all_pairs(tiny_text_encoder):
    from sklearn.cluster import AgglomerativeClustering

    rng = np.random.default_rng(3)
    stems = ["".join(rng.choice(list("abcdefghij"), 5)) for _ in range(60)]
    texts = list(dict.fromkeys(f"{rng.choice(stems)} {rng.choice(stems)[:int(rng.integers(2, 6))]}" for _ in range(400)))
    vectors = tiny_text_encoder.encode(texts)
    cosines = vectors @ vectors.T
    for threshold in np.quantile(cosines[np.triu_indices(len(texts), 1)], [0.995, 0.999]):
        labels, representatives = clustering.cluster_labels(texts, tiny_text_encoder, None, float(threshold))
        every_pair = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                             distance_threshold=1 - threshold + 1e-6).fit_predict(vectors)
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
    from sklearn.cluster import AgglomerativeClustering

    from pearl.index import trigrams

    rng = np.random.default_rng(11)
    stems = ["".join(rng.choice(list("abcdefg"), 4)) for _ in range(25)]
    texts = list(dict.fromkeys(f"{rng.choice(stems)} {rng.choice(stems)[:int(rng.integers(2, 5))]}" for _ in range(400)))
    distances = 1.0 - trigrams.jaccard_matrix(texts, texts)
    for threshold in (0.4, 0.6):
        labels, _ = clustering.cluster_labels(texts, StringEncoder(), None, threshold)
        every_pair = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                             distance_threshold=1 - threshold + 1e-6).fit_predict(distances)
        assert _partition(labels) == _partition(every_pair)
        assert max(map(len, _partition(labels))) >= 3



TWINS = [("springfield", "springfeld"), ("riverside", "riversyde"), ("oakland", "oaklande"), ("greenville", "grenville"),
         ("madison", "maddison")]


def _twins_and(others: list[str]) -> list[str]:
    return [name for pair in TWINS for name in pair] + others


def test_auto_joins_the_twins_and_keeps_a_table_of_unrelated_names_apart():
    rng = np.random.default_rng(0)
    others = list(dict.fromkeys("".join(rng.choice(list("abcdefghijklmnop"), 8)) for _ in range(400)))
    labels, _ = clustering.cluster_labels(_twins_and(others), StringEncoder(), None, "auto")
    assert _partition(labels) == sorted([(2 * i, 2 * i + 1) for i in range(len(TWINS))]
                                        + [(2 * len(TWINS) + i,) for i in range(len(others))])


def test_auto_groups_nothing_where_a_crowd_makes_every_pair_a_coin_toss(caplog):
    """Ten numbered branches of one firm are each other's nearest names at one score: any of them could be
    another's twin, so no cut is estimated precise, and only names that score 1 are grouped."""
    crowd = [f"acme branch {i}" for i in range(10)]
    with caplog.at_level(logging.INFO, logger="pearl.cluster"):
        labels, _ = clustering.cluster_labels(_twins_and(crowd), StringEncoder(), None, "auto")
    assert "--threshold auto: no cut reaches the target 0.9" in caplog.text
    assert len(set(labels.tolist())) == 2 * len(TWINS) + len(crowd)


@pytest.mark.parametrize("threshold, message", [
    ("banana", "--threshold 'banana': give a cosine similarity in [-1, 1], or auto"),
    ("1.5", "--threshold 1.5: a cosine score lies in [-1, 1]")])
def test_a_threshold_that_is_neither_a_score_nor_auto_is_refused(threshold, message):
    import re

    with pytest.raises(PearlError, match=f"^{re.escape(message)}$"):
        clustering.cluster_labels(["a b", "a c"], StringEncoder(), None, threshold)
