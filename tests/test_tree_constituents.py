"""Bracketed constituency trees (the benepar path) → phrases, on real trees."""

import pytest
import spacy
from spacy.tokens import Doc

from pearl.errors import PearlError
from pearl.parse.phrases import PhraseRules, sentence_phrases
from pearl.parse.tree_constituents import tree_spans

# Penn Treebank WSJ section 00, sentence 1 (gold tree, with function tags).
VINKEN = (
    "( (S (NP-SBJ (NP (NNP Pierre) (NNP Vinken)) (, ,) (ADJP (NP (CD 61) (NNS years)) (JJ old)) (, ,))"
    " (VP (MD will) (VP (VB join) (NP (DT the) (NN board)) (PP-CLR (IN as) (NP (DT a) (JJ nonexecutive)"
    " (NN director))) (NP-TMP (NNP Nov.) (CD 29)))) (. .)) )"
)
# benepar_en3's output for a sentence of the paper's kind (no function tags, no root wrapper).
TIMES = (
    "(S (NP (DT The) (NNP New) (NNP York) (NNP Times)) (VP (VBD was) (VP (VBN founded)"
    " (PP (IN in) (NP (CD 1851))) (PP (IN by) (NP (NNP Henry) (NNP Raymond))))) (. .))"
)
# A gold tree with an empty element (trace) and a WH phrase.
TRACE = (
    "(S (NP-SBJ (NP (DT the) (NN man)) (SBAR (WHNP-1 (WP who)) (S (NP-SBJ (-NONE- *T*-1))"
    " (VP (VBD left))))) (VP (VBD smiled)))"
)


def _phrases(tree, rules=PhraseRules(1, 8, 100)):
    leaves, spans = tree_spans(tree)
    doc = Doc(spacy.blank("en").vocab, words=leaves)
    return set(sentence_phrases(doc, spans, rules))


def test_spans_of_the_vinken_tree():
    leaves, spans = tree_spans(VINKEN)
    assert leaves[:2] == ["Pierre", "Vinken"] and len(leaves) == 18
    assert ("NP", 0, 2) in spans  # Pierre Vinken
    assert ("NP", 0, 7) in spans  # NP-SBJ, function tag dropped
    assert ("ADJP", 3, 6) in spans and ("NP", 3, 5) in spans
    assert ("PP", 11, 15) in spans and ("NP", 15, 17) in spans


def test_phrases_of_the_vinken_tree():
    found = _phrases(VINKEN)
    assert {("Pierre Vinken", "NP"), ("61 years old", "ADJP"), ("61 years", "NP"),
            ("the board", "NP"), ("as a nonexecutive director", "PP"),
            ("a nonexecutive director", "NP"), ("Nov. 29", "NP")} <= found
    # edge commas trimmed off the subject NP
    assert ("Pierre Vinken , 61 years old", "NP") in found
    # the 11-word VPs exceed max_words=8, the S label is not a phrase type
    assert not any(label in {"S", "VP"} and len(p.split()) > 8 for p, label in found)
    assert all(label in {"NP", "VP", "PP", "ADVP", "ADJP"} for _, label in found)


def test_phrases_of_a_benepar_tree():
    found = _phrases(TIMES)
    assert {("The New York Times", "NP"), ("in 1851", "PP"), ("by Henry Raymond", "PP"),
            ("founded in 1851 by Henry Raymond", "VP"),
            ("was founded in 1851 by Henry Raymond", "VP")} <= found


def test_traces_take_no_leaf():
    leaves, spans = tree_spans(TRACE)
    assert leaves == ["the", "man", "who", "left", "smiled"]
    assert ("VP", 3, 4) in spans and ("NP", 0, 4) in spans
    assert not any(start == end for _, start, end in spans)


@pytest.mark.parametrize("bad", ["", "(S (NP (DT the)", "(S (NP the)) extra", "NP the"])
def test_malformed_trees_are_errors(bad):
    with pytest.raises(PearlError):
        tree_spans(bad)
