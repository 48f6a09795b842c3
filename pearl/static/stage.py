"""The `static` stage: models/pearl's transformer distilled by model2vec → models/pearl-static.

model2vec embeds each token of the vocabulary once with the transformer (mean pooling, as PEARL-small pools),
reduces the vectors with PCA and weighs them by a Zipf estimate of their frequency (SIF). A text's vector is then
the mean of its tokens' vectors: no transformer runs when it encodes. The export keeps PEARL-small's hashed
3-gram block and its weight; the character encoder (a CNN over each text's bytes) is left out, being the cost
PEARL-static exists to avoid.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pearl.artifacts import TYPED_PHRASES_SCHEMA, artifact_files, atomic_dir, read_artifact, write_json
from pearl.device import resolve_device
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.model import CONFIG, EXPORT, STATIC_EXPORT
from pearl.model.export import check_export, export_static
from pearl.params import Params

log = get_logger("static")

PHRASES = Path("data/typed/phrases.parquet")


def phrase_words(phrases: list[str], tokenizer) -> list[str]:
    """The words of `phrases` that `tokenizer` (a transformers fast tokenizer) has no token for, as its normaliser
    and pre-tokeniser cut them (lower-cased, split at punctuation for a BERT WordPiece), most frequent first."""
    backend = tokenizer.backend_tokenizer
    known = tokenizer.get_vocab()
    counts = Counter(word for phrase in phrases
                     for word, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(phrase)
                                                                           if backend.normalizer else phrase))
    return [word for word, _ in counts.most_common() if word not in known]


def run(params: Params, source: Path = EXPORT, out_dir: Path = STATIC_EXPORT, phrases: Path = PHRASES,
        metrics: Path = Path("metrics/static.json")) -> dict:
    check_export(source)
    if params.static.vocabulary == "tokenizer+phrases":
        artifact_files(phrases, TYPED_PHRASES_SCHEMA)
    if not (source / "config.json").is_file():
        raise PearlError(f"{source}: no transformer in its root (config.json); PEARL-static is distilled from a "
                         "PEARL export's transformer: run `dvc repro average`")
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
    config = {"kind": "static", "source": str(source), "vocabulary": params.static.vocabulary,
              "vocabulary_size": int(static.embedding.shape[0]), "words_added": len(words),
              "pca_dims": params.static.pca_dims}
    with atomic_dir(out_dir) as staged:
        export_static(static.embedding, static.tokenizer, source, staged, config)
    exported = json.loads((out_dir / CONFIG).read_text())
    numbers = {**config, "token_dimension": int(static.embedding.shape[1]), "dimension": exported["dimension"],
               "spelling_weight": exported["spelling_weight"], "seconds": round(clock.seconds, 1)}
    log.info("PEARL-static: %d tokens × %d dimensions → %s", static.embedding.shape[0], static.embedding.shape[1],
             out_dir)
    write_json(numbers, metrics)
    return numbers
