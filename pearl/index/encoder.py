"""The encoders the product verbs accept: any embedding model, or the `string` baseline.

An embedding model is a PEARL export, a sentence-transformers directory or a Hugging Face id
(resolved offline where pearl ships a copy). `string` is the benchmark's String Distance
baseline: Jaccard similarity of character 3-gram sets, which has no vectors, so it is searched
exhaustively (see pearl.index.trigrams).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pearl.embedder import STATIC_BATCH
from pearl.errors import PearlError
from pearl.index.static_embedder import StaticEmbedder, is_static_export
from pearl.log import get_logger
from pearl.model.export import is_pearl_export
from pearl.pearl_base import check_trained

if TYPE_CHECKING:
    from pearl.ray_encoding import RayEncoding

log = get_logger("encoder")

STRING = "string"
_NO_LIMIT = 1 << 30  # the model's own max_seq_length applies


@dataclass(frozen=True)
class ModelCard:
    """What an index records of its encoder, and what a query must match."""

    id: str
    kind: str  # "embedding" or "string"
    sha256: str  # of the weights: the same id can point at a retrained model
    dimension: int
    prefix: str
    max_tokens: int | None


class EmbeddingEncoder:
    kind = "embedding"

    def __init__(self, model: str, prefix: str = "", batch_size: int = 128, device: str | None = None,
                 ray: RayEncoding | None = None):
        # a local folder by its absolute path, so the index can be queried from anywhere
        model_id = str(Path(model).resolve()) if Path(model).is_dir() else model
        if is_pearl_export(model) and is_static_export(model):
            # PEARL-static runs no transformer: numpy's, without torch (the core install has none)
            self._build = partial(StaticEmbedder, model_id, prefix, max(batch_size, STATIC_BATCH))
            self.embedder = self._build()
            self.card = ModelCard(model_id, self.kind, self.embedder.weights_sha256(), self.embedder.dimension,
                                  prefix, None)
        else:
            from pearl.embedder import Embedder

            self._build = partial(Embedder, model_id, prefix, batch_size, _NO_LIMIT, device)  # also on a Ray actor
            self.embedder = self._build()
            st = self.embedder.model
            self.card = ModelCard(model_id, self.kind, _weights_sha256(st), st.get_embedding_dimension(), prefix,
                                  None if self.embedder.static else st.max_seq_length)
        self.ray = ray

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 rows; inner product is cosine. On Ray actors with `ray`: the same bytes."""
        if self.ray is not None:
            return self.ray.encode(self.embedder, self._build, texts)
        return self.embedder.embed(texts)

    def token_count(self, texts: list[str]) -> int:
        """The tokens the model reads for these texts, special tokens included: what an API bills as usage."""
        prefixed = [self.card.prefix + text for text in texts]
        tokenizer = self.embedder.model.tokenizer
        if self.embedder.static:  # a `tokenizers.Tokenizer`, which reads whole texts and adds no special tokens
            return sum(len(encoding.ids) for encoding in tokenizer.encode_batch(prefixed, add_special_tokens=False))
        ids = tokenizer(prefixed, truncation=True, max_length=self.card.max_tokens)["input_ids"]
        return sum(len(row) for row in ids)

    def truncated(self, texts: list[str]) -> int:
        """How many texts are longer than the model reads (it truncates them)."""
        limit = self.card.max_tokens
        if limit is None:  # a static model reads whole texts
            return 0
        long = [t for t in texts if len(t) > limit - 2]  # a token covers at least one character
        if not long:
            return 0
        tokenizer = self.embedder.model.tokenizer
        # cut one token past the limit: enough to tell, and without transformers' warning of a long sequence
        ids = tokenizer(long, add_special_tokens=True, truncation=True, max_length=limit + 1)["input_ids"]
        return sum(len(row) > limit for row in ids)


class StringEncoder:
    kind = STRING
    card = ModelCard(STRING, STRING, "jaccard-char-3gram", 0, "", None)

    def truncated(self, texts: list[str]) -> int:
        return 0


Encoder = EmbeddingEncoder | StringEncoder


def load_encoder(model: str, prefix: str = "", batch_size: int = 128, device: str | None = None,
                 ray: RayEncoding | None = None) -> Encoder:
    if not model:
        raise PearlError("--model is empty: give a PEARL export, a sentence-transformers id or directory, or `string`")
    if model == STRING:
        if ray is not None:
            raise PearlError("--engine ray encodes on Ray actors, and `string` encodes nothing: use --engine local")
        return StringEncoder()
    check_trained(model)
    encoder = EmbeddingEncoder(model, prefix, batch_size, device, ray)
    log.info("encoder %s: %d dimensions, reads %s tokens, weights %s…", model, encoder.card.dimension,
             encoder.card.max_tokens or "all its", encoder.card.sha256[:12])
    return encoder


def _weights_sha256(st) -> str:
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(st.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def loaded(encoder: Encoder | str | Callable[[], Encoder]) -> Encoder:
    """A verb's encoder, loaded now if it came as a model name or a loader: once the verb's inputs passed
    their checks."""
    if isinstance(encoder, str):
        return load_encoder(encoder)
    return encoder if hasattr(encoder, "kind") else encoder()  # an encoder has its kind, a loader none
