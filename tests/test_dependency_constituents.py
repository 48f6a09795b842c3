"""The dependency → constituent rules on sentences whose constituents are known."""

import pytest

from pearl.parse.dependency_constituents import sentence_constituents
from pearl.parse.phrases import PhraseRules, sentence_phrases

RULES = PhraseRules(min_words=1, max_words=8, max_chars=100)


def phrases(nlp, text):
    doc = nlp(text)
    return set(sentence_phrases(doc, sentence_constituents(doc[:]), RULES))


def test_noun_phrases_full_and_base_and_prepositional_phrase(nlp_parser):
    found = phrases(nlp_parser, "Paris is the capital of France.")
    assert {("Paris", "NP"), ("the capital of France", "NP"), ("the capital", "NP"),
            ("of France", "PP"), ("France", "NP")} <= found
    assert ("is the capital of France", "VP") in found
    # the subject is never inside the VP, and the verb alone is no NP
    assert not any(p.startswith("Paris is") for p, _ in found)


def test_compound_names_are_one_np_not_several(nlp_parser):
    found = phrases(nlp_parser, "The New York Times reported the news.")
    assert ("The New York Times", "NP") in found
    assert ("New York", "NP") not in found and ("York", "NP") not in found
    assert ("reported the news", "VP") in found


def test_auxiliaries_give_an_outer_vp(nlp_parser):
    found = phrases(nlp_parser, "The bridge has been closed.")
    assert ("closed", "VP") in found
    assert ("has been closed", "VP") in found


def test_adverb_and_adjective_phrases(nlp_parser):
    found = phrases(nlp_parser, "The river flows slowly.")
    assert ("slowly", "ADVP") in found
    found = phrases(nlp_parser, "The city became very large.")
    assert ("very large", "ADJP") in found
    assert ("very", "ADVP") not in found  # inside an ADJP, not a phrase of its own
    found = phrases(nlp_parser, "She bought a very expensive car.")
    assert ("very expensive", "ADJP") in found and ("a very expensive car", "NP") in found
    found = phrases(nlp_parser, "She bought a red car.")
    assert ("red", "ADJP") not in found  # a bare attributive adjective is no ADJP


def test_pronouns_and_stop_word_phrases_are_dropped(nlp_parser):
    found = phrases(nlp_parser, "It was built by them in 1968.")
    assert ("It", "NP") not in found and ("by them", "PP") not in found
    assert ("in 1968", "PP") in found and ("1968", "NP") in found


@pytest.mark.parametrize("max_words", [1, 2])
def test_length_bound(nlp_parser, max_words):
    doc = nlp_parser("Wild cats chase small mice in old gardens near Rome.")
    found = sentence_phrases(doc, sentence_constituents(doc[:]), PhraseRules(1, max_words, 100))
    assert found and all(len(p.split()) <= max_words for p, _ in found)
