import pytest

from pearl.labels import ENTITY_TYPES, LABELS, LEX_TYPES, NUM_LABELS, label_id


def test_label_set_is_the_papers_95_labels():
    assert LEX_TYPES == ("NP", "VP", "PP", "ADVP", "ADJP")
    assert len(ENTITY_TYPES) == 19 and ENTITY_TYPES[-1] == "OTHER"
    assert NUM_LABELS == 95 == len(set(LABELS))


def test_ids_follow_the_documented_order():
    assert label_id("NP", "CARDINAL") == 0
    assert label_id("NP", "ORG") == 15
    assert label_id("NP", "OTHER") == 18
    assert label_id("VP", "CARDINAL") == 19
    assert label_id("PP", "QUANTITY") == 2 * 19 + 12
    assert label_id("ADJP", "OTHER") == 94
    for index, label in enumerate(LABELS):
        lex, ent = label.split("-", 1)
        assert label_id(lex, ent) == index


def test_unknown_label_is_an_error():
    with pytest.raises(KeyError):
        label_id("NP", "MISC")
