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
from tests.conftest import TINY_STATIC_SPELLING as SPELLING

TEXTS = ["zurich cafe", "new york times", "NYTimes", "Zürich café 🎉", "x" * 300]


@pytest.fixture
def source(tiny_static_source) -> Path:
    return tiny_static_source


@pytest.fixture
def static(tiny_static):
    return tiny_static


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
    # `pearl serve`'s OpenAI usage: the tokens the static module reads, no special tokens
    assert encoder.token_count(["new york " * 100, "zoo"]) == 201


@pytest.mark.parametrize("prefix", ["", "query: "])
def test_the_verbs_encode_it_with_numpy_into_the_exports_own_vectors(static, prefix):
    """The verbs' encoder runs model2vec and scikit-learn, not the export's torch modules, and gives their vectors
    (to float rounding) and the same weights digest, so an index built by either accepts the other's queries."""
    from pearl.embedder import Embedder
    from pearl.index.encoder import _weights_sha256, load_encoder
    from pearl.index.static_embedder import StaticEmbedder

    out, _ = static
    encoder = load_encoder(str(out), prefix)
    assert isinstance(encoder.embedder, StaticEmbedder)
    torch_side = Embedder(str(out), prefix, 64, 1 << 30, "cpu")
    assert encoder.card.sha256 == _weights_sha256(torch_side.model)
    assert encoder.card.dimension == torch_side.model.get_embedding_dimension()
    texts = [*TEXTS, "", "🎉", "Zürich", *TEXTS]  # duplicates, a text of no token, one of unknown tokens
    ours, theirs = encoder.encode(texts), torch_side.embed(texts)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() < 1e-6
    assert (np.argsort(-(ours @ ours.T), axis=1, kind="stable")[:, 0] ==
            np.argsort(-(theirs @ theirs.T), axis=1, kind="stable")[:, 0]).all()


def test_its_verbs_run_without_torch(static, tmp_path):
    """The core install's promise: index, link and embed with PEARL-static import no transformer library."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    out, _ = static
    pl.DataFrame({"name": ["New York Times", "Zurich cafe", "the zurich zoo"]}).write_csv(tmp_path / "left.csv")
    pl.DataFrame({"name": ["NYTimes", "zurich zoo"]}).write_csv(tmp_path / "right.csv")
    commands = [["index", "build", "--input", f"{tmp_path}/left.csv", "--column", "name", "--model", str(out),
                 "--out", f"{tmp_path}/index"],
                ["link", "--input", f"{tmp_path}/right.csv", "--column", "name", "--index", f"{tmp_path}/index",
                 "--out", f"{tmp_path}/linked.parquet"],
                ["embed", "zurich", "cafe", "--model", str(out), "--out", f"{tmp_path}/vectors.npy"]]
    heavy = ("torch", "transformers", "sentence_transformers")
    ran = subprocess.run([sys.executable, "-c", f"""
import sys
from pearl.cli import main
for command in {commands!r}:
    try:
        main(command)
    except SystemExit as stop:
        assert not stop.code, (command, stop.code)
print(sorted(m for m in {heavy!r} if m in sys.modules))
"""], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == "[]"
    assert pl.read_parquet(tmp_path / "linked.parquet")["mention"].unique().sort().to_list() == ["NYTimes", "zurich zoo"]
    assert np.load(tmp_path / "vectors.npy").shape == (2, 16 + 64)


def fit_run(source, make_params, out: Path, **overrides) -> dict:
    return stage.run(make_params(**{"static__fit": "source_vectors", **overrides}), source=source / "pearl",
                     out_dir=out, phrases=source / "phrases.parquet", variants=source / "variants.parquet",
                     metrics=out.parent / f"{out.name}.json")


def test_the_fit_points_the_texts_means_where_the_sources_vectors_point(source, make_params, tmp_path):
    """Fitted, the static model's cosines (before its 3-gram block) between the training texts agree with the
    source's better than distillation alone leaves them, at the weight asked for; a second run writes the same bytes."""
    texts = stage.training_texts(source / "phrases.parquet", source / "variants.parquet")
    assert len(texts) == 27 and texts[:3] == ["zurich cafe", "new york times", "the zurich zoo"]
    targets = stage.source_targets(make_params(), source / "pearl", texts)
    assert targets.shape == (27, 32 + 8)  # the transformer's 32 and the character encoder's 8, not the 3-grams
    numbers = fit_run(source, make_params, tmp_path / "fitted", static__spelling_weight=0.5)
    fit_run(source, make_params, tmp_path / "none", static__fit="none")

    def cosines(vectors: np.ndarray) -> np.ndarray:
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return (unit @ unit.T)[np.triu_indices(len(vectors), 1)]

    def agreement(folder: Path) -> float:
        """The correlation of the static model's cosines between the texts with the source's (its head, which
        mapped its width to the source's, is gone)."""
        from model2vec import StaticModel

        mine = StaticModel.from_pretrained(str(folder)).encode(texts)
        return float(np.corrcoef(cosines(mine), cosines(targets))[0, 1])

    assert agreement(tmp_path / "fitted") > agreement(tmp_path / "none") + 0.05
    assert numbers["fit"] == "source_vectors" and numbers["fit_texts"] == 27 and numbers["spelling_weight"] == 0.5
    assert load(tmp_path / "fitted")[1].weight == 0.5
    assert "27 training phrases" in (tmp_path / "fitted/README.md").read_text()
    assert "trained after" not in (tmp_path / "none/README.md").read_text()
    fit_run(source, make_params, tmp_path / "again", static__spelling_weight=0.5)
    assert ((tmp_path / "fitted/model.safetensors").read_bytes() == (tmp_path / "again/model.safetensors").read_bytes())


def test_a_fit_without_variants_fails_in_one_line_before_model2vec_loads(source, make_params, tmp_path):
    with pytest.raises(PearlError, match="variants"):
        stage.run(make_params(static__fit="source_vectors"), source=source / "pearl", out_dir=tmp_path / "out",
                  phrases=source / "phrases.parquet", variants=tmp_path / "none.parquet", metrics=tmp_path / "m.json")
    assert not (tmp_path / "out").exists()


def test_a_spelling_weight_for_a_source_without_3_grams_fails_in_one_line(tiny_encoder, make_params, tmp_path):
    model = PhraseModel(ModelConfig(str(tiny_encoder), "", 64, False, 8, 0.5)).eval()
    export_sentence_transformer(model, tmp_path / "plain")
    with pytest.raises(PearlError, match="static.spelling_weight is set but .* has no 3-gram block .*null"):
        stage.run(make_params(static__fit="none", static__spelling_weight=0.4), source=tmp_path / "plain",
                  out_dir=tmp_path / "out", metrics=tmp_path / "m.json")
    assert not (tmp_path / "out").exists()


def test_a_missing_source_fails_in_one_line_before_model2vec_loads(make_params, tmp_path):
    with pytest.raises(MissingModelError, match="not a PEARL export .*run `dvc repro average`"):
        stage.run(make_params(), source=tmp_path / "nowhere", out_dir=tmp_path / "out", metrics=tmp_path / "m.json")
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.json").exists()


def test_a_pca_wider_than_the_transformer_fails_in_one_line(source, make_params, tmp_path):
    with pytest.raises(PearlError, match="static.pca_dims 64 exceeds the width .* \\(32\\); null keeps that width"):
        stage.run(make_params(static__pca_dims=64, static__fit="none"), source=source / "pearl",
                  out_dir=tmp_path / "out", phrases=source / "phrases.parquet", metrics=tmp_path / "m.json")
    assert not (tmp_path / "out").exists()
