"""The `teacher` stage: every text the recipe scores with the teacher, encoded once.

That is each training phrase, each mined candidate (the hard-negative pool, which `negatives`
scores) and the cached variants of `teacher.variant_levels` (which the view filter scores).
The student's positives need no vector of their own: distillation scores a view by its phrase.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import polars as pl

from pearl.artifacts import CANDIDATES_SCHEMA, TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact, write_json
from pearl.device import resolve_device
from pearl.embedder import Embedder
from pearl.log import Stopwatch, get_logger
from pearl.params import Params
from pearl.ray_encoding import encode_on_ray
from pearl.ray_engine import ray_session
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


def build_embedder(params: Params) -> Embedder:
    return Embedder(params.model.teacher, params.model.teacher_prefix, params.teacher.batch_size,
                    params.model.max_length, resolve_device(params.base.device), param="model.teacher")


def run(params: Params, phrases: Path = PHRASES, candidates: Path = CANDIDATES, variants: Path = VARIANTS,
        output: Path = VECTORS, metrics: Path = Path("metrics/teacher.json")) -> dict:
    teacher = params.model.teacher
    if teacher is None:  # the recipe without a teacher: an empty artifact keeps the DAG one shape
        TeacherVectors("none", [], np.zeros((0, 1), dtype=np.float32)).save(output, {"texts_by_source": {}},
                                                                          params.shard_rows)
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
        with ray_session(params.ray) as ray_run:
            matrix = encode_on_ray(texts, partial(build_embedder, params), ("teacher.batch_size", t.batch_size),
                                   params.ray.teacher, "teacher", str(phrases), ray_run)
        timing = {**clock.report(log, len(texts), "texts"), **ray_run.metrics()}
    else:
        embedder = build_embedder(params)
        clock = Stopwatch()
        matrix = embedder.embed(texts)
        timing = clock.report(log, len(texts), "texts")
    vectors = TeacherVectors(teacher, texts, matrix)
    vectors.save(output, {"prefix": params.model.teacher_prefix, "max_length": params.model.max_length,
                          "variant_levels": list(t.variant_levels), "texts_by_source": added}, params.shard_rows)
    numbers = {"teacher": teacher, "texts": len(texts), "dimension": int(matrix.shape[1]), **added}
    write_json({**numbers, "engine": params.engine, **timing}, metrics)
    return numbers
