"""AutoFJ's set similarities of two names (pearl.joining.set_measures), as the join's chooser scores them."""

import numpy as np
import pytest

from pearl.joining.select import Signals

NAMES = ["2008 Ohio", "2008 presidential election in Ohio", "Ohio elections", "Texas"]


@pytest.fixture(scope="module")
def pairs():
    signals = Signals(NAMES[:1], NAMES[1:], None)
    return signals.of_pairs(np.array([0, 0, 0]), np.array([1, 2, 3]))


def test_a_name_whose_words_all_occur_in_the_other_overlaps_fully(pairs):
    # stems {2008, ohio} and {2008, presidenti, elect, in, ohio}: 2 shared of 5
    assert pairs["overlap(words, uniform)"][0] == pytest.approx(1.0)
    assert pairs["jaccard(words, uniform)"][0] == pytest.approx(2 / 5)
    assert pairs["nested_jaccard(words, uniform)"][0] == pytest.approx(2 / 5)
    assert pairs["overlap(words, idf)"][0] == pytest.approx(1.0)


def test_nested_jaccard_is_zero_unless_one_set_holds_the_other(pairs):
    # {2008, ohio} and {ohio, elect}: one stem shared, neither holds the other
    assert pairs["jaccard(words, uniform)"][1] == pytest.approx(1 / 3)
    assert pairs["overlap(words, uniform)"][1] == pytest.approx(1 / 2)
    assert pairs["nested_jaccard(words, uniform)"][1] == 0.0


def test_idf_weights_favour_the_rarer_shared_words(pairs):
    # "ohio" is in three of the four names, "2008" in two: sharing only "ohio" weighs less than its count says
    assert 0 < pairs["jaccard(words, idf)"][1] < pairs["jaccard(words, uniform)"][1]


def test_names_that_share_nothing_score_zero_on_every_set_similarity(pairs):
    set_signals = [name for name in pairs if name.startswith(("jaccard", "overlap", "nested_jaccard"))]
    assert len(set_signals) == 12 and all(pairs[name][2] == 0.0 for name in set_signals)
    assert all(((pairs[name] >= 0) & (pairs[name] <= 1)).all() for name in set_signals)


def test_3_gram_sets_see_a_misspelling_that_word_sets_miss():
    signals = Signals(["Mississippi"], ["Missisippi"], None)
    found = signals.of_pairs(np.array([0]), np.array([1]))
    assert found["jaccard(words, uniform)"][0] == 0.0 and found["jaccard(3-grams, uniform)"][0] > 0.5
