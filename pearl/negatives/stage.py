"""The candidates and negatives stages."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from pearl.artifacts import (CANDIDATES_SCHEMA, TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact, write_artifact,
                             write_json)
from pearl.cores import available_cores
from pearl.device import resolve_device
from pearl.log import Stopwatch, get_logger
from pearl.negatives import candidates as mining
from pearl.negatives.candidates import (SEARCH_ROWS, CandidateSettings, NeighbourSearcher, PairScorer, WordKeys,
                                        mine_candidates)
from pearl.negatives.hard_negatives import hard_negative_mask
from pearl.params import Params
from pearl.ray_engine import (RayRun, column_matrix, group_after_actors, matrix_column, ray_session,
                              stream_through_actors)
from pearl.scores import rounded
from pearl.spacy_models import package_version
from pearl.teacher.vectors import VECTORS, TeacherVectors

PHRASES = Path("data/typed/phrases.parquet")
CANDIDATES = Path("data/negatives/candidates.parquet")
NEGATIVES = Path("data/negatives/hard_negatives.parquet")
VARIANTS = Path("data/augment/variants.parquet")

log = get_logger("negatives")

KEY_PHRASES = 100_000  # at most this many phrases per WordKeys batch, and per shuffle partition of their keys


def candidate_settings(params: Params) -> CandidateSettings:
    n = params.negatives
    threads = n.n_threads or available_cores()
    return CandidateSettings(n.top_k, n.min_edit_sim, n.scorer, n.block_top_m, n.block_key_cap, n.block_dim,
                             n.block_nprobe, threads, params.base.seed)


def pair_scores_on_ray(params: Params, settings: CandidateSettings, texts: np.ndarray, rows: np.ndarray,
                       cols: np.ndarray, source: str, run: RayRun) -> np.ndarray:
    """What score_indexed_pairs gives, from Ray actors that each hold the phrases once."""
    stage = params.ray.candidates
    scorer = (texts, settings.scorer, max(1, int(stage.cpus_per_worker)), settings.min_edit_sim)
    scored = [out["score"].to_numpy() for out in stream_through_actors(
        pa.table({"row": rows, "col": cols}), PairScorer, scorer, stage, "candidates", source, run)]
    return np.concatenate(scored) if scored else np.zeros(0, dtype=np.float32)


def neighbours_on_ray(params: Params, source: str, run: RayRun):
    """A `Neighbours` for mine_candidates: Ray actors that each hold the faiss index once search the
    driver's chunks of queries, so they find what search_in_chunks finds."""
    def search(index, vectors: np.ndarray, m: int) -> np.ndarray:
        import faiss

        stage = replace(params.ray.candidates, batch_size=SEARCH_ROWS)
        queries = pa.table({"vector": matrix_column(vectors)})
        searcher = (faiss.serialize_index(index), m, max(1, int(stage.cpus_per_worker)))
        found = stream_through_actors(queries, NeighbourSearcher, searcher, stage, "candidates", source, run)
        return np.vstack([column_matrix(out, "found", m) for out in found])

    return search


def shared_words_on_ray(params: Params, source: str, run: RayRun) -> mining.SharedWords:
    """A `SharedWords` for mine_candidates: actors list the phrases' word keys, a Ray Data shuffle brings
    each partition of the keys together and a task joins it, so they find what shared_word_pairs finds."""
    def join(phrases: list[str], min_share_ratio: float, cap: int) -> tuple[np.ndarray, np.ndarray]:
        parts = max(4 * params.ray.candidates.workers, -(-len(phrases) // KEY_PHRASES))
        stage = replace(params.ray.candidates, batch_size=max(1, -(-len(phrases) // parts)))
        rows = pa.table({"id": pa.array(range(len(phrases)), pa.int64()), "phrase": pa.array(phrases, pa.string())})
        pairs = list(group_after_actors(rows, WordKeys, (min_share_ratio, parts), "part", parts,
                                        partial(mining.capped_pair_table, cap=cap), stage, "candidates", source, run))
        holder = np.concatenate([p["holder"].to_numpy() for p in pairs]) if pairs else np.zeros(0, np.int64)
        keyed = np.concatenate([p["keyed"].to_numpy() for p in pairs]) if pairs else np.zeros(0, np.int64)
        return mining.both_ways(holder, keyed)

    return join


def run_candidates(params: Params, source: Path = PHRASES, output: Path = CANDIDATES,
                   metrics: Path = Path("metrics/candidates.json")) -> dict:
    phrases = read_artifact(source, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    settings = candidate_settings(params)
    clock = Stopwatch()
    if params.engine == "ray":
        log.info("scoring the blocked pairs on Ray, %d actor(s)", params.ray.candidates.workers)
        with ray_session(params.ray) as ray_run:
            blocking = {}
            if len(phrases) >= mining.EXACT_BELOW:  # below, the blocking takes about a second: less than starting actors
                blocking = {"neighbours": neighbours_on_ray(params, str(source), ray_run),
                            "shared_words": shared_words_on_ray(params, str(source), ray_run)}
            rows, cols, scores = mine_candidates(
                phrases, settings, lambda texts, r, c: pair_scores_on_ray(params, settings, texts, r, c, str(source), ray_run),
                **blocking)
        timing = {**clock.report(log, len(phrases), "phrases"), **ray_run.metrics()}
    else:
        rows, cols, scores = mine_candidates(phrases, settings)
        timing = clock.report(log, len(phrases), "phrases")
    texts = np.asarray(phrases, dtype=object)
    table = pl.DataFrame({"phrase": texts[rows].tolist(), "candidate": texts[cols].tolist(), "edit_sim": scores},
                         schema={"phrase": pl.String, "candidate": pl.String, "edit_sim": pl.Float32})
    numbers = {
        "phrases": len(phrases),
        "pairs": table.height,
        "phrases_with_candidate": table["phrase"].n_unique(),
        "coverage": round(table["phrase"].n_unique() / max(len(phrases), 1), 4),
    }
    write_artifact(table, output, {
        "stage": "candidates",
        "scorer": f"rapidfuzz {package_version('rapidfuzz')} {settings.scorer}",
        "blocking": (f"shared-word keys ({settings.block_key_cap} phrases per key) and the {settings.block_top_m} "
                     f"nearest by {settings.block_dim}-d character 1-2-gram vectors (faiss, nprobe "
                     f"{settings.block_nprobe}); then exact scoring"),
        "top_k": settings.top_k,
        "min_edit_sim": settings.min_edit_sim,
        **numbers,
    }, params.shard_rows)
    write_json({**numbers, "engine": params.engine, **timing}, metrics)
    return numbers


def _pair_cosine(params: Params, left: list[str], right: list[str], teacher: Path) -> tuple[np.ndarray, str]:
    """Cosines under model.teacher's cached vectors (the paper scores with a strong encoder),
    or under the backbone when there is no teacher; and the encoder's name."""
    if params.model.teacher is not None:
        return TeacherVectors.load(teacher, params.model.teacher).pair_cosine(left, right), params.model.teacher
    from pearl.embedder import Embedder, pair_cosine

    embedder = Embedder(params.model.backbone, params.model.prefix, params.negatives.batch_size, 64,
                        resolve_device(params.base.device), param="model.backbone")
    return pair_cosine(embedder, left, right), params.model.backbone


def run_negatives(params: Params, source: Path = PHRASES, candidates: Path = CANDIDATES,
                  output: Path = NEGATIVES, metrics: Path = Path("metrics/negatives.json"),
                  teacher: Path = VECTORS, variants: Path = VARIANTS) -> dict:
    phrases = read_artifact(source, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    pairs = read_artifact(candidates, CANDIDATES_SCHEMA)
    n = params.negatives
    clock = Stopwatch()
    cos, encoder = _pair_cosine(params, pairs["phrase"].to_list(), pairs["candidate"].to_list(), teacher)
    cos = rounded(cos)  # the rule's cut, and the bytes written, do not move with another CPU's float noise
    timing = clock.report(log, pairs.height, "pairs")
    scored = pairs.with_columns(cos=pl.Series(cos, dtype=pl.Float32))
    keep = hard_negative_mask(scored["edit_sim"].to_numpy(), cos, n.rule, n.max_cos, n.margin)
    passed = scored.filter(pl.Series(keep)).rename({"candidate": "negative"})
    # a phrase's cached variant is one of its training views, never its negative: a view mined at backbone
    # cosine >= augment.mined_min_cos can still score <= negatives.max_cos under the teacher
    views = read_artifact(variants, VARIANTS_SCHEMA).select("phrase", negative="variant")
    negatives = passed.join(views, on=["phrase", "negative"], how="anti", maintain_order="left")
    # phrases without a hard negative get one row with a null negative: the trainer then uses
    # in-batch negatives only; the phrase itself is never its own negative
    missing = sorted(set(phrases) - set(negatives["phrase"].to_list()))
    none = pl.DataFrame({"phrase": missing}, schema={"phrase": pl.String}).with_columns(
        negative=pl.lit(None, pl.String), edit_sim=pl.lit(None, pl.Float32), cos=pl.lit(None, pl.Float32)
    )
    table = pl.concat([negatives.select("phrase", "negative", "edit_sim", "cos"), none])
    numbers = {
        "encoder": encoder,
        "phrases": len(phrases),
        "candidate_pairs": pairs.height,
        "hard_negatives": negatives.height,
        "own_variants_removed": passed.height - negatives.height,
        "phrases_with_negative": len(phrases) - len(missing),
        "coverage": round((len(phrases) - len(missing)) / max(len(phrases), 1), 4),
    }
    write_artifact(table, output, {
        "stage": "negatives",
        "encoder": encoder,
        "prefix": params.model.prefix if params.model.teacher is None else params.model.teacher_prefix,
        "rule": f"cos <= {n.max_cos}" if n.rule == "max_cos" else f"edit_sim - minmax(cos) > {n.margin}",
        **numbers,
    }, params.shard_rows)
    write_json({**numbers, **timing}, metrics)
    return numbers
