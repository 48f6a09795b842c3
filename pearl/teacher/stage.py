"""The `teacher` stage: every text the recipe scores with the teacher, encoded once.

That is each training phrase, each mined candidate (the hard-negative pool, which `negatives`
scores) and the cached variants of `teacher.variant_levels` (which the view filter scores).
The student's positives need no vector of their own: distillation scores a view by its phrase.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from pearl.artifacts import CANDIDATES_SCHEMA, TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact, write_json
from pearl.device import resolve_device
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.params import Params
from pearl.ray_engine import RayRun, RowActor, map_with_actors, ray_session
from pearl.teacher.vectors import VECTORS, TeacherVectors

PHRASES = Path("data/typed/phrases.parquet")
CANDIDATES = Path("data/negatives/candidates.parquet")
VARIANTS = Path("data/augment/variants.parquet")

log = get_logger("teacher")


def teacher_texts(params: Params, phrases: Path, candidates: Path, variants: Path) -> tuple[list[str], dict]:
    """Distinct texts to encode, in a fixed order, and how many each source added."""
    texts: dict[str, None] = {}
    added = {}
    sources = [("phrases", read_artifact(phrases, TYPED_PHRASES_SCHEMA)["phrase"]),
               ("candidates", read_artifact(candidates, CANDIDATES_SCHEMA)["candidate"])]
    levels = params.teacher.variant_levels
    if levels:
        cached = read_artifact(variants, VARIANTS_SCHEMA)
        sources += [(f"{level}_variants", cached.filter(pl.col("level") == level)["variant"]) for level in levels]
    for name, column in sources:
        before = len(texts)
        texts.update(dict.fromkeys(column.to_list()))
        added[name] = len(texts) - before
    return list(texts), added


def build_embedder(params: Params):
    from pearl.embedder import Embedder

    return Embedder(params.model.teacher, params.model.teacher_prefix, params.teacher.batch_size,
                    params.model.max_length, resolve_device(params.base.device), param="model.teacher")


class TeacherEncoder(RowActor):
    """A Ray actor (`engine: ray`): loads the teacher once; texts in, one encoder call per
    `teacher.batch_size` of them, their vectors out."""

    def __init__(self, params: Params):
        self.embedder = build_embedder(params)

    def process(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        size = self.embedder.batch_size
        vectors = np.concatenate([self.embedder.embed(texts[i:i + size]) for i in range(0, len(texts), size)])
        return pa.table({"text": texts, "vector": pa.FixedSizeListArray.from_arrays(vectors.ravel(), vectors.shape[1])})


def encode_on_ray(params: Params, texts: list[str], source: str) -> tuple[np.ndarray, RayRun]:
    """What the teacher's Embedder.embed gives for these distinct texts, from a pool of Ray actors.

    sentence-transformers encodes a call's texts longest first (by characters) in batches, each
    padded to its longest. The actors get the same batches of that order, so every text is padded
    as it is locally and gets the same floats, not merely close ones."""
    per_call, batch = params.ray.teacher.batch_size, params.teacher.batch_size
    if per_call % batch:
        raise PearlError(f"ray.teacher.batch_size={per_call} must be a multiple of teacher.batch_size={batch}, "
                         "so that the actors encode the local engine's batches")
    order = np.argsort([-len(text) for text in texts])  # as SentenceTransformer.encode orders them
    rows = pa.table({"text": pa.array([texts[i] for i in order], pa.string())})
    position = {text: i for i, text in enumerate(texts)}
    matrix = None
    with ray_session(params.ray) as run:
        for out in map_with_actors(rows, TeacherEncoder, (params,), params.ray.teacher, "teacher", source, run):
            vectors = out["vector"].combine_chunks().flatten().to_numpy().reshape(out.num_rows, -1)
            if matrix is None:
                matrix = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            matrix[[position[text] for text in out["text"].to_pylist()]] = vectors
    return matrix, run


def run(params: Params, phrases: Path = PHRASES, candidates: Path = CANDIDATES, variants: Path = VARIANTS,
        output: Path = VECTORS, metrics: Path = Path("metrics/teacher.json")) -> dict:
    teacher = params.model.teacher
    if teacher is None:  # the recipe without a teacher: an empty artifact keeps the DAG one shape
        TeacherVectors("none", [], np.zeros((0, 1), dtype=np.float32)).save(output, {"texts_by_source": {}})
        numbers = {"teacher": "none", "texts": 0}
        write_json(numbers, metrics)
        return numbers
    texts, added = teacher_texts(params, phrases, candidates, variants)
    t = params.teacher
    log.info("encoding %d texts with %s (%s)%s", len(texts), teacher,
             ", ".join(f"{n} new from {source}" for source, n in added.items()),
             f" on Ray, {params.ray.teacher.workers} actor(s)" if params.engine == "ray" else "")
    if params.engine == "ray":
        clock = Stopwatch()
        matrix, ray_run = encode_on_ray(params, texts, str(phrases))
        timing = {**clock.report(log, len(texts), "texts"), **ray_run.metrics()}
    else:
        embedder = build_embedder(params)
        clock = Stopwatch()
        matrix = embedder.embed(texts)
        timing = clock.report(log, len(texts), "texts")
    vectors = TeacherVectors(teacher, texts, matrix)
    vectors.save(output, {"prefix": params.model.teacher_prefix, "max_length": params.model.max_length,
                          "variant_levels": list(t.variant_levels), "texts_by_source": added})
    numbers = {"teacher": teacher, "texts": len(texts), "dimension": int(matrix.shape[1]), **added}
    write_json({**numbers, "engine": params.engine, **timing}, metrics)
    return numbers
