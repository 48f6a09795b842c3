"""Texts encoded by a pool of Ray actors into exactly the floats the local Embedder gives them."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa

from pearl.embedder import Embedder
from pearl.errors import PearlError
from pearl.params import RayStageParams
from pearl.ray_engine import RayRun, RowActor, map_with_actors


class EncoderActor(RowActor):
    """Builds its Embedder once (on its own node, so `base.device` resolves there); texts in, one
    encoder call per `embedder.batch_size` of them, their vectors out."""

    def __init__(self, build: Callable[[], Embedder]):
        self.embedder = build()

    def process(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        size = self.embedder.batch_size
        vectors = np.concatenate([self.embedder.embed(texts[i:i + size]) for i in range(0, len(texts), size)])
        return pa.table({"text": texts, "vector": pa.FixedSizeListArray.from_arrays(vectors.ravel(), vectors.shape[1])})


def encode_on_ray(texts: list[str], build: Callable[[], Embedder], batch: tuple[str, int], stage: RayStageParams,
                  name: str, source: str, run: RayRun) -> np.ndarray:
    """What `build().embed(texts)` gives for these distinct texts. `batch` is the embedder's batch
    param and size; `stage.batch_size` (texts per actor call) must be a multiple of it.

    The actors get the texts in the order of the local embedder's batches (by token count), so each
    actor call holds whole batches and every text is padded as it is locally: the same floats, not
    merely close ones. The driver loads the model once for that order (its tokenizer)."""
    batch_param, batch_size = batch
    if stage.batch_size % batch_size:
        raise PearlError(f"ray.{name}.batch_size={stage.batch_size} must be a multiple of {batch_param}={batch_size}, "
                         "so that the actors encode the local engine's batches")
    rows = pa.table({"text": pa.array([texts[i] for batch in build().batches(texts) for i in batch], pa.string())})
    position = {text: i for i, text in enumerate(texts)}
    matrix = None
    for out in map_with_actors(rows, EncoderActor, (build,), stage, name, source, run):
        vectors = out["vector"].combine_chunks().flatten().to_numpy().reshape(out.num_rows, -1)
        if matrix is None:
            matrix = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        matrix[[position[text] for text in out["text"].to_pylist()]] = vectors
    return matrix
