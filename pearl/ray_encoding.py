"""Texts encoded by a pool of Ray actors into exactly the floats the local Embedder gives them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa

from pearl.embedder import Embedder
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.params import RayStageParams
from pearl.ray_engine import KeptActors, RayRun, RowActor, column_matrix, map_with_actors, matrix_column, ray_session

log = get_logger("ray")


class EncoderActor(RowActor):
    """Builds its Embedder once (on its own node, so `base.device` resolves there); texts in, one
    encoder call per `embedder.batch_size` of them, their vectors out."""

    def __init__(self, build: Callable[[], Embedder]):
        self.embedder = build()

    def process(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        size = self.embedder.batch_size
        vectors = np.concatenate([self.embedder.embed(texts[i:i + size]) for i in range(0, len(texts), size)])
        return pa.table({"text": texts, "vector": matrix_column(vectors)})


def encode_on_ray(texts: list[str], build: Callable[[], Embedder], batch: tuple[str, int], stage: RayStageParams,
                  name: str, source: str, run: RayRun, driver: Embedder | None = None) -> np.ndarray:
    """What `build().embed(texts)` gives for these distinct texts. `batch` is the embedder's batch
    param and size; `stage.batch_size` (texts per actor call) must be a multiple of it.

    The actors get the texts in the order of the local embedder's batches (by token count), so each
    actor call holds whole batches and every text is padded as it is locally: the same floats, not
    merely close ones. The driver needs the model for that order (its tokenizer): `driver`, or one
    more `build()`."""
    batch_param, batch_size = batch
    if stage.batch_size % batch_size:
        raise PearlError(f"ray.{name}.batch_size={stage.batch_size} must be a multiple of {batch_param}={batch_size}, "
                         "so that the actors encode the local engine's batches")
    order = (driver or build()).batches(texts)
    rows = pa.table({"text": pa.array([texts[i] for batch in order for i in batch], pa.string())})
    position = {text: i for i, text in enumerate(texts)}
    matrix = None
    for out in map_with_actors(rows, EncoderActor, (build,), stage, name, source, run):
        vectors = column_matrix(out, "vector")
        if matrix is None:
            matrix = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        matrix[[position[text] for text in out["text"].to_pylist()]] = vectors
    return matrix


@dataclass
class RayEncoding:
    """`--engine ray` of the product verbs: their texts encoded by `workers` Ray actors, `batches` of the
    local engine's batches per actor call, and their searches dealt to `workers` kept actors (`actors`), on
    the Ray cluster at `address` (None: a Ray started on this machine, of every CPU). The first encoding
    starts or joins the Ray, and the verb's later ones use it until `close`. Each actor loads the model
    from the same path or id, so a multi-node cluster needs the model on every node (a hub id, or a folder
    on storage they all see)."""

    address: str | None = None
    workers: int = 2
    batches: int = 8
    num_cpus: int | None = None  # read by ray_session: a Ray started here takes them all
    _session: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    _run: RayRun | None = field(default=None, repr=False)

    def encode(self, embedder: Embedder, build: Callable[[], Embedder], texts: list[str]) -> np.ndarray:
        """What `embedder.embed(texts)` gives, byte for byte; `build` makes that embedder on an actor."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return embedder.embed([])
        clock = Stopwatch()
        matrix = encode_on_ray(unique, build, ("the batch size", embedder.batch_size),
                               self._stage(self.batches * embedder.batch_size), "encode", "the texts", self._started(),
                               driver=embedder)
        clock.report(log, len(unique), "strings")
        used = self._run.metrics()
        log.info("encoded on %d Ray node(s) so far, actors busy %.1f s", used["ray_nodes"], used["ray_busy_seconds"])
        position = {text: i for i, text in enumerate(unique)}
        return matrix[[position[text] for text in texts]]

    def actors(self, actor: type[RowActor], constructor_args: tuple, name: str, batch_size: int) -> KeptActors:
        """`workers` actors of `actor` on this verb's Ray, each built once with `constructor_args`, mapping
        `batch_size` rows a call until `close`."""
        # the verb encodes between their calls, on Ray tasks that need the CPUs: the actors hold none
        kept = KeptActors(actor, constructor_args, self._stage(batch_size), name, f"the {name}", self._started(),
                          hold_cpus=False)
        self._session.callback(kept.close)  # its actors end with the verb, before the Ray it started
        return kept

    def _started(self) -> RayRun:
        if self._run is None:
            self._run = self._session.enter_context(ray_session(self))
        return self._run

    def _stage(self, batch_size: int) -> RayStageParams:
        return RayStageParams(workers=self.workers, batch_size=batch_size, cpus_per_worker=1, gpus_per_worker=0)

    def close(self) -> None:
        """Stop the Ray the first encoding started (a joined cluster keeps running)."""
        self._session.close()
        self._run = None
