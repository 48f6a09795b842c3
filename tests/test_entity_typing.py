import json

import polars as pl
import pytest

from pearl.entity_typing import stage
from pearl.entity_typing.coverage import core_span, phrase_entity_type
from pearl.entity_typing.ner import SpacyNER, TransformersNER, ontonotes_type
from pearl.errors import PearlError
from pearl.labels import label_id
from tests.conftest import SPACY_MODEL


@pytest.mark.parametrize(
    ("phrase", "core"),
    [
        ("the United States", "United States"),
        ("The New York Times", "New York Times"),
        ("Kubrick's", "Kubrick"),
        ("Kubrick’s", "Kubrick"),
        ('"Hamlet",', "Hamlet"),
        ("U.S.", "U.S"),
        ("the", "the"),  # a determiner alone stays: its core is not empty
        ("...", ""),
    ],
)
def test_core_span(phrase, core):
    start, end = core_span(phrase)
    assert phrase[start:end] == core


def test_entity_must_cover_the_whole_core():
    assert phrase_entity_type("the United States", [(4, 17, "GPE")]) == "GPE"
    assert phrase_entity_type("the United States", [(0, 17, "GPE")]) == "GPE"
    assert phrase_entity_type("in 1968", [(3, 7, "DATE")]) == "OTHER"
    assert phrase_entity_type("Paris and London", [(0, 5, "GPE"), (10, 16, "GPE")]) == "OTHER"
    assert phrase_entity_type("Kubrick's film", [(0, 7, "PERSON")]) == "OTHER"
    assert phrase_entity_type("Kubrick's", [(0, 7, "PERSON")]) == "PERSON"
    assert phrase_entity_type("anything", []) == "OTHER"


def test_ontonotes_label_names():
    assert ontonotes_type("B-ORG") == "ORG"
    assert ontonotes_type("I-work_of_art") == "WORK_OF_ART"
    assert ontonotes_type("WORK OF ART") == "WORK_OF_ART"
    assert ontonotes_type("O") is None
    with pytest.raises(PearlError, match="not an OntoNotes type"):
        ontonotes_type("B-PER")


def test_spacy_ner_types_known_phrases():
    ner = SpacyNER(SPACY_MODEL, batch_size=8)
    phrases = ["The New York Times", "the United States", "Stanley Kubrick", "in 1968", "a red car"]
    types = [phrase_entity_type(p, e) for p, e in zip(phrases, ner.entities(phrases))]
    assert types == ["ORG", "GPE", "PERSON", "OTHER", "OTHER"]


def test_transformers_path_with_a_tiny_deberta(tiny_ner_model):
    ner = TransformersNER(str(tiny_ner_model("I-ORG")), batch_size=2, device="cpu")
    phrases = ["The New York Times", "nytimes", "in 1968"]
    assert [phrase_entity_type(p, e) for p, e in zip(phrases, ner.entities(phrases))] == ["ORG"] * 3
    silent = TransformersNER(str(tiny_ner_model("O")), batch_size=2, device="cpu")
    assert [phrase_entity_type(p, e) for p, e in zip(phrases, silent.entities(phrases))] == ["OTHER"] * 3
    assert "transformers" in ner.description


def test_transformers_path_rejects_non_ontonotes_models_and_missing_ones(tiny_ner_model, tmp_path):
    with pytest.raises(PearlError, match="not an OntoNotes type"):
        TransformersNER(str(tiny_ner_model("B-PER", types=["PER", "LOC", "ORG", "MISC"])), 2, "cpu")
    with pytest.raises(PearlError, match="typing.hf_model=.*no-such-model.: no such folder") as error:
        TransformersNER(str(tmp_path / "no-such-model"), 2, "cpu")
    assert "\n" not in str(error.value)


def test_stage_writes_valid_labels_for_both_backends(make_params, tiny_ner_model, tmp_path):
    phrases = pl.DataFrame({
        "phrase": ["The New York Times", "in 1968", "very large", "Москва 🎉", "Intelligent"],
        "lex_type": ["NP", "PP", "ADJP", "NP", "ADJP"],
        "freq": [5, 3, 2, 2, 2],
    })
    source = tmp_path / "phrases.parquet"
    phrases.write_parquet(source)
    out, evaluation = tmp_path / "typed" / "phrases.parquet", tmp_path / "typed" / "evaluation_texts.parquet"
    suites = {"bench__tasks": ["simlex"], "bench__tune_tasks": ["rw"]}  # the committed word lists
    stage.run(make_params(**suites), source=source, output=out, metrics=tmp_path / "m.json", evaluation=evaluation)
    # "intelligent" is a SimLex-999 word: no training phrase
    assert "intelligent" in pl.read_parquet(evaluation)["text"].to_list()
    assert json.loads((tmp_path / "m.json").read_text())["leak_dropped_phrases"] == 1
    typed = pl.read_parquet(out)
    assert typed.columns == ["phrase", "lex_type", "freq", "ent_type", "label", "label_id"]
    row = typed.row(0, named=True)
    assert (row["ent_type"], row["label"], row["label_id"]) == ("ORG", "NP-ORG", label_id("NP", "ORG"))
    assert typed.row(1, named=True)["label"] == "PP-OTHER"
    assert typed["label_id"].is_between(0, 94).all()
    meta = json.loads((out.parent / "phrases.meta.json").read_text())
    assert meta["backend"] == "spacy" and meta["phrases"] == 4

    params = make_params(typing__backend="transformers", typing__hf_model=str(tiny_ner_model("I-ORG")), base__device="cpu",
                         **suites)
    stage.run(params, source=source, output=out, metrics=tmp_path / "m.json", evaluation=evaluation)
    assert pl.read_parquet(out)["label"].to_list() == ["NP-ORG", "PP-ORG", "ADJP-ORG", "NP-ORG"]
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["share_ORG"] == 1.0 and metrics["share_OTHER"] == 0.0
