"""The `static` stage: models/pearl's transformer distilled by model2vec → models/pearl-static.

model2vec embeds each token of the vocabulary once with the transformer (mean pooling, as PEARL-small pools),
reduces the vectors with PCA and weighs them by a Zipf estimate of their frequency (SIF). A text's vector is then
the mean of its tokens' vectors: no transformer runs when it encodes. With `static.fit: source_vectors` the token
vectors are then trained (model2vec's StaticModelForSimilarity) so that a text's mean points where PEARL-small's
vector of it points, before its 3-gram block, over the training texts: one token vector at a time, out of context,
is what distillation alone sees. That target holds the character encoder's share too, which PEARL-static does not
run. The export keeps PEARL-small's hashed 3-gram block, at `static.spelling_weight` or the source's weight; the
character encoder (a CNN over each text's bytes) is left out, being the cost PEARL-static exists to avoid.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from pearl.artifacts import (TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, artifact_files, atomic_dir, read_artifact,
                             write_json)
from pearl.device import resolve_device
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.model import CONFIG, EXPORT, STATIC_EXPORT
from pearl.model.export import check_export, export_static
from pearl.params import Params

log = get_logger("static")

PHRASES = Path("data/typed/phrases.parquet")
VARIANTS = Path("data/augment/variants.parquet")


def phrase_words(phrases: list[str], tokenizer) -> list[str]:
    """The words of `phrases` that `tokenizer` (a transformers fast tokenizer) has no token for, as its normaliser
    and pre-tokeniser cut them (lower-cased, split at punctuation for a BERT WordPiece), most frequent first."""
    backend = tokenizer.backend_tokenizer
    known = tokenizer.get_vocab()
    counts = Counter(word for phrase in phrases
                     for word, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(phrase)
                                                                           if backend.normalizer else phrase))
    return [word for word, _ in counts.most_common() if word not in known]


def training_texts(phrases: Path, variants: Path) -> list[str]:
    """The training phrases and their augmented variants, each once: augment and typing have already dropped every
    text that a test or tune task scores."""
    texts = read_artifact(phrases, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    texts += read_artifact(variants, VARIANTS_SCHEMA)["variant"].to_list()
    return list(dict.fromkeys(texts))


def source_targets(params: Params, source: Path, texts: list[str]) -> np.ndarray:
    """The source export's vector of each text up to its 3-gram block: that block's input, which the export keeps
    as the first `input_dim` numbers of a vector, scaled, so its direction is exact."""
    from pearl.embedder import Embedder
    from pearl.model.st_modules import SpellingNgrams

    embedder = Embedder(str(source), params.model.prefix, params.teacher.batch_size, params.model.max_length,
                        resolve_device(params.base.device))
    spelling = [m for m in embedder.model if isinstance(m, SpellingNgrams)]
    width = spelling[0].input_dim if spelling else embedder.model.get_embedding_dimension()
    return np.ascontiguousarray(embedder.embed(texts)[:, :width])


def fit_to_source(static, params: Params, source: Path, texts: list[str]):
    """`static` (a model2vec StaticModel) with its token vectors trained by model2vec's StaticModelForSimilarity, a
    cosine loss between each text's mean and the source's vector of it. A linear head maps the token width to the
    target's during training and is dropped after; training stops early on a held-out tenth of the texts."""
    import torch
    from model2vec.train import StaticModelForSimilarity

    from pearl.train.loop import training_threads

    targets = source_targets(params, source, texts)
    torch.set_num_threads(training_threads(params))
    trainable = StaticModelForSimilarity.from_static_model(model=static, n_layers=0)
    trainable.fit(texts, torch.from_numpy(targets), device=resolve_device(params.base.device),
                  random_seed=params.base.seed)
    return trainable.to_static_model()


def run(params: Params, source: Path = EXPORT, out_dir: Path = STATIC_EXPORT, phrases: Path = PHRASES,
        variants: Path = VARIANTS, metrics: Path = Path("metrics/static.json")) -> dict:
    check_export(source)
    fits = params.static.fit == "source_vectors"
    if params.static.vocabulary == "tokenizer+phrases" or fits:
        artifact_files(phrases, TYPED_PHRASES_SCHEMA)
    if fits:
        artifact_files(variants, VARIANTS_SCHEMA)
    if not (source / "config.json").is_file():
        raise PearlError(f"{source}: no transformer in its root (config.json); PEARL-static is distilled from a "
                         "PEARL export's transformer: run `dvc repro average`")
    if params.static.spelling_weight is not None and not json.loads((source / CONFIG).read_text()).get(
            "spelling_weight"):
        raise PearlError(f"static.spelling_weight is set but {source} has no 3-gram block to weigh: set it to null")
    width = json.loads((source / "config.json").read_text()).get("hidden_size")
    if params.static.pca_dims is not None and width and params.static.pca_dims > width:
        raise PearlError(f"static.pca_dims {params.static.pca_dims} exceeds the width of {source}'s transformer "
                         f"({width}); null keeps that width")
    clock = Stopwatch()
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source)
    transformer = AutoModel.from_pretrained(source)
    words = (phrase_words(read_artifact(phrases, TYPED_PHRASES_SCHEMA)["phrase"].to_list(), tokenizer)
             if params.static.vocabulary == "tokenizer+phrases" else [])
    log.info("distilling %s: its tokenizer's %d tokens and %d words of the training phrases", source,
             len(tokenizer.get_vocab()), len(words))
    static = distill_from_model(model=transformer, tokenizer=tokenizer, vocabulary=words,
                                device=resolve_device(params.base.device), pca_dims=params.static.pca_dims,
                                quantize_to="float32")
    texts = training_texts(phrases, variants) if fits else []
    if fits:
        log.info("fitting the token vectors to %s's vectors of %d training texts", source, len(texts))
        static = fit_to_source(static, params, source, texts)
    config = {"kind": "static", "source": str(source), "vocabulary": params.static.vocabulary,
              "vocabulary_size": int(static.embedding.shape[0]), "words_added": len(words),
              "pca_dims": params.static.pca_dims, "fit": params.static.fit, "fit_texts": len(texts)}
    with atomic_dir(out_dir) as staged:
        export_static(static.embedding, static.tokenizer, source, staged, config, params.static.spelling_weight)
    exported = json.loads((out_dir / CONFIG).read_text())
    numbers = {**config, "token_dimension": int(static.embedding.shape[1]), "dimension": exported["dimension"],
               "spelling_weight": exported["spelling_weight"], "seconds": round(clock.seconds, 1)}
    log.info("PEARL-static: %d tokens × %d dimensions → %s", static.embedding.shape[0], static.embedding.shape[1],
             out_dir)
    write_json(numbers, metrics)
    return numbers
