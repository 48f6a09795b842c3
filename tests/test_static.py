"""PEARL-static: the `static` stage distils a PEARL export's transformer with model2vec; pearl, plain
sentence-transformers and model2vec load what it writes."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from pearl.errors import MissingModelError, PearlError
from pearl.model.export import export_sentence_transformer, load
from pearl.model.phrase_model import ModelConfig, PhraseModel
from pearl.static import stage

TEXTS = ["zurich cafe", "new york times", "NYTimes", "Zürich café 🎉", "x" * 300]
SPELLING = 0.3


@pytest.fixture(scope="module")
def source(tiny_encoder, tmp_path_factory) -> Path:
    """A PEARL export of the tiny BERT with its 3-gram block, and the typed phrases beside it."""
    torch.manual_seed(0)
    model = PhraseModel(ModelConfig(str(tiny_encoder), "", 64, True, 8, 0.5)).eval()
    root = tmp_path_factory.mktemp("static-source")
    export_sentence_transformer(model, root / "pearl", spelling_weight=SPELLING, spelling_features=64)
    pl.DataFrame({"phrase": ["zurich cafe", "new york times", "the zurich zoo"], "lex_type": ["NP"] * 3,
                  "freq": [2] * 3, "ent_type": ["GPE"] * 3, "label": ["NP-GPE"] * 3, "label_id": [4] * 3}
                 ).write_parquet(root / "phrases.parquet")
    return root


@pytest.fixture(scope="module")
def static(source, tmp_path_factory):
    from pearl.params import load_params
    from tests.conftest import ROOT

    out = tmp_path_factory.mktemp("static") / "pearl-static"
    params = load_params(ROOT / "params.yaml", {"static.pca_dims": 16, "static.vocabulary": "tokenizer+phrases"})
    numbers = stage.run(params, source=source / "pearl", out_dir=out, phrases=source / "phrases.parquet",
                        metrics=out.parent / "static.json")
    return out, numbers


def test_the_static_export_is_its_token_vectors_plus_the_sources_3_gram_block(static):
    """A dot product is (1 − w) · the cosine of model2vec's own vectors + w · the 3-gram cosine, w the source's."""
    from model2vec import StaticModel
    from sklearn.feature_extraction.text import HashingVectorizer

    out, numbers = static
    vectors = load(out).encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 16 + 64) == (len(TEXTS), numbers["dimension"])
    tokens = StaticModel.from_pretrained(str(out)).encode(TEXTS)
    with np.errstate(invalid="ignore"):
        tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    grams = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 3), n_features=64, alternate_sign=False,
                              norm="l2").transform(TEXTS).toarray()
    known = slice(0, 4)
    assert np.allclose(vectors[known] @ vectors[known].T, (1 - SPELLING) * tokens[known] @ tokens[known].T
                       + SPELLING * grams[known] @ grams[known].T, atol=1e-5)
    # "x" * 300 is one unknown token, which both leave out: its vector is its 3-grams alone
    assert np.isnan(tokens[4]).all() and np.allclose(vectors[4], np.r_[np.zeros(16), grams[4]], atol=1e-6)
    assert json.loads((out / "pearl_model.json").read_text())["spelling_weight"] == numbers["spelling_weight"] == SPELLING


def test_the_training_phrases_words_become_tokens_of_their_own(static, source):
    from transformers import AutoTokenizer

    out, numbers = static
    # the character WordPiece has no word: each distinct word of the phrases is added, most frequent first
    assert stage.phrase_words(["zurich cafe", "the zurich zoo"], AutoTokenizer.from_pretrained(source / "pearl")) == [
        "zurich", "cafe", "the", "zoo"]
    assert numbers["words_added"] == 7 and numbers["vocabulary"] == "tokenizer+phrases"
    assert load(out)[0].tokenizer.encode("zurich zoo", add_special_tokens=False).tokens == ["zurich", "zoo"]


def test_plain_sentence_transformers_load_it_with_the_shipped_code(static):
    from sentence_transformers import SentenceTransformer

    out, _ = static
    plain = SentenceTransformer(str(out), trust_remote_code=True, local_files_only=True)
    assert type(plain[0]).__module__.startswith("transformers_modules.")
    assert np.allclose(plain.encode(TEXTS), load(out).encode(TEXTS), atol=1e-6)


def test_the_verbs_encoder_reads_whole_texts_in_large_batches(static):
    from pearl.embedder import STATIC_BATCH
    from pearl.index.encoder import load_encoder

    out, _ = static
    encoder = load_encoder(str(out))
    assert encoder.card.max_tokens is None and encoder.truncated(["word " * 5000]) == 0
    assert encoder.embedder.batch_size == STATIC_BATCH
    names = [f"name {i}" for i in range(STATIC_BATCH + 5)]
    assert [len(batch) for batch in encoder.embedder.batches(names)] == [STATIC_BATCH, 5]
    assert np.allclose(encoder.encode(TEXTS), load(out).encode(TEXTS), atol=1e-6)
    # `pearl serve`'s OpenAI usage: the tokens the static module reads, no special tokens
    from pearl.serve.app import token_count

    assert token_count(encoder.embedder, ["new york " * 100, "zoo"]) == 201


def test_a_missing_source_fails_in_one_line_before_model2vec_loads(make_params, tmp_path):
    with pytest.raises(MissingModelError, match="not a PEARL export .*run `dvc repro average`"):
        stage.run(make_params(), source=tmp_path / "nowhere", out_dir=tmp_path / "out", metrics=tmp_path / "m.json")
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.json").exists()


def test_a_pca_wider_than_the_transformer_fails_in_one_line(source, make_params, tmp_path):
    with pytest.raises(PearlError, match="static.pca_dims 64 exceeds the width .* \\(32\\); null keeps that width"):
        stage.run(make_params(static__pca_dims=64), source=source / "pearl", out_dir=tmp_path / "out",
                  phrases=source / "phrases.parquet", metrics=tmp_path / "m.json")
    assert not (tmp_path / "out").exists()
