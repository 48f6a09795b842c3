"""Frozen phrase embeddings from any sentence-transformers directory or Hugging Face encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.model_ids import load_failure, resolve_model

log = get_logger("embed")
# Encoding more texts than this takes long enough to show its progress bar, with or without -v.
PROGRESS_BAR_ABOVE = 2_000
STATIC_BATCH = 4_096  # texts per call of a static model, at least


class Embedder:
    """L2-normalised float32 embeddings; duplicate inputs are encoded once.

    Batches are cut from the inputs sorted by token count, one sentence-transformers call each:
    sentence-transformers sorts by characters, which pads short names badly (names of equal length
    differ in tokens), and padding was a large share of the work on names
    (docs/measurements.md#encode-batching, benchmarks/encode_batching.py). A plain HF encoder
    without sentence-transformers files gets mean pooling.
    """

    def __init__(self, model: str, prefix: str, batch_size: int, max_length: int, device: str, param: str = "--model"):
        # an unknown id or a missing folder fails here, before the model libraries' import (11 s on CI's 2 cores)
        source = resolve_model(model, param)
        from sentence_transformers import SentenceTransformer

        from pearl.model.export import is_pearl_export, load

        self.model_id = model
        try:
            # pearl's loader takes a PEARL export's module classes from this package; no directory's code is trusted
            if is_pearl_export(source):
                self.model = load(source, device)
            else:
                # a folder needs no hub: without local_files_only sentence-transformers asks it about the name anyway
                self.model = SentenceTransformer(source, device=device, local_files_only=Path(source).is_dir())
        except PearlError:
            raise
        except Exception as error:  # unknown id, offline hub, broken directory
            raise load_failure(param, model, error) from None
        from sentence_transformers.sentence_transformer.modules import StaticEmbedding

        # a static model (PEARL-static) reads whole texts and pads nothing: a batch costs its tokens, so batches
        # are large, and there is no length to cap
        self.static = isinstance(self.model[0], StaticEmbedding)
        if not self.static:
            self.model.max_seq_length = min(max_length, self.model.max_seq_length or max_length)
        self.prefix = prefix
        self.batch_size = max(batch_size, STATIC_BATCH) if self.static else batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_embedding_dimension()), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        prefixed = [self.prefix + text for text in unique]
        clock = Stopwatch()
        vectors = np.empty((len(unique), self.model.get_embedding_dimension()), dtype=np.float32)
        for batch in tqdm(self.batches(unique), desc="encode", unit=" batch", mininterval=2,
                          disable=len(unique) <= PROGRESS_BAR_ABOVE):
            vectors[batch] = self.model.encode([prefixed[i] for i in batch], batch_size=len(batch),
                                               convert_to_numpy=True, normalize_embeddings=True)
        if len(unique) > PROGRESS_BAR_ABOVE:
            clock.report(log, len(unique), "strings")
        position = {text: i for i, text in enumerate(unique)}
        return vectors[[position[text] for text in texts]]

    def batches(self, texts: list[str]) -> list[np.ndarray]:
        """The batches `embed` encodes these distinct texts in, as indices into them."""
        if self.static:
            return [np.arange(start, min(start + self.batch_size, len(texts)))
                    for start in range(0, len(texts), self.batch_size)]
        return token_sorted_batches(self.model, [self.prefix + text for text in texts], self.batch_size)


def token_sorted_batches(model, texts: list[str], batch_size: int) -> list[np.ndarray]:
    """Indices of `texts` in batches of `batch_size`, longest first by the model's token count (capped at what it
    reads); by characters where the model has no tokenizer. Texts that fit in one batch stay as they are, untokenized:
    one batch pads to its longest text in any order (a served request, a link query)."""
    if len(texts) <= batch_size:
        return [np.arange(len(texts))]
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        lengths = [len(text) for text in texts]
    else:
        ids = tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
        lengths = [len(row) for row in ids]
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def pair_cosine(embedder: Embedder, left: list[str], right: list[str]) -> np.ndarray:
    """Cosine of left[i] and right[i]; strings on both sides are encoded once, in one call."""
    vectors = embedder.embed(left + right)
    return np.einsum("ij,ij->i", vectors[: len(left)], vectors[len(left):])
