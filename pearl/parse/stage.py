"""The parse stage: sentences → phrases.parquet (phrase, lex_type, freq)."""

from __future__ import annotations

import math
import multiprocessing
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import polars as pl
import pyarrow as pa
from tqdm import tqdm

from pearl.artifacts import SENTENCES_SCHEMA, artifact_files, read_artifact, write_artifact, write_json
from pearl.errors import PearlError
from pearl.labels import LEX_TYPES, shares
from pearl.log import Stopwatch, get_logger
from pearl.params import ParseParams, Params
from pearl.ray_engine import NodeFiles, RayRun, group_after_actors, ray_session
from pearl.spacy_models import package_version

INPUT = Path("data/corpus/sentences.parquet")
OUTPUT = Path("data/phrases/phrases.parquet")
METRICS = Path("metrics/parse.json")
_CHUNK = 2_000
_SENTENCES_PER_PART = 1_000_000

log = get_logger("parse")


def _chunks(texts: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(texts), _CHUNK):
        yield texts[start:start + _CHUNK]


def count_phrases(p: ParseParams, texts: list[str]) -> Counter:
    """Occurrences of (phrase, lex_type) over all sentences; the same for any n_process."""
    # spaCy (and torch, through thinc) load here, after the input was read and checked: 5 s to import
    from pearl.parse.extract import build_parser, extract, extract_in_worker, init_worker

    total: Counter = Counter()
    bar = tqdm(total=len(texts), desc="parse", unit=" sent", mininterval=2)
    if p.n_process == 1:
        parser = build_parser(p)
        for chunk in _chunks(texts):
            total.update(extract(parser, chunk))
            bar.update(len(chunk))
    else:
        # spawn: a forked child would inherit the parent's thread pools and locks
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(p.n_process, mp_context=context, initializer=init_worker, initargs=(p,)) as pool:
            for done, counts in pool.map(extract_in_worker, _chunks(texts)):
                total.update(counts)
                bar.update(done)
    bar.close()
    return total


@dataclass(frozen=True)
class Totals:
    sentences: int
    phrase_occurrences: int
    distinct_phrases: int


def phrases_on_ray(params: Params, source: Path) -> tuple[pl.DataFrame, Totals, RayRun]:
    """What aggregate gives, from Ray: actors count the phrases of their sentences (read on the nodes
    with `ray.shared_storage`, else sent by the driver), a hash shuffle brings each phrase's counts
    together, and tasks keep the frequent ones; the driver gets only the kept phrases and the totals."""
    if params.ray.shared_storage:
        files, sentences = artifact_files(source, SENTENCES_SCHEMA)
        rows = NodeFiles([str(file.resolve()) for file in files], ["text"], sentences)
    else:
        rows = read_artifact(source, SENTENCES_SCHEMA).select("text").to_arrow()
        sentences = rows.num_rows
    if not sentences:
        raise PearlError(f"{source} holds no sentences: check the corpus stage's params")
    log.info("parsing %d sentences with backend=%s on Ray, %d actor(s)%s", sentences, params.parse.backend,
             params.ray.parse.workers, ", read on the nodes" if params.ray.shared_storage else "")
    # enough partitions that each one's counts stay small at any corpus size
    parts = max(params.ray.parse.workers, math.ceil(sentences / _SENTENCES_PER_PART))
    from pearl.parse.extract import PhraseCounter  # spaCy, once the input was checked (as count_phrases)

    with ray_session(params.ray) as run:
        outputs = list(group_after_actors(rows, PhraseCounter, (params.parse, parts), "part", parts,
                                          partial(_kept_in_part, min_freq=params.parse.min_freq),
                                          params.ray.parse, "parse", str(source), run))
    kept = pl.concat([pl.from_arrow(out) for out in outputs], how="vertical_relaxed")
    totals = kept.filter(pl.col("phrase").is_null())
    phrases = (kept.filter(pl.col("phrase").is_not_null()).select("phrase", "lex_type", "freq")
               .sort(["freq", "phrase"], descending=[True, False]))
    return phrases, Totals(sentences, int(totals["occurrences"].sum()), int(totals["distinct"].sum())), run


def _kept_in_part(counts: pa.Table, min_freq: int) -> pa.Table:
    """keep_frequent over one partition's counts, then a row without a phrase holding its totals."""
    occurrences = pl.from_arrow(counts).group_by("phrase", "lex_type").agg(pl.col("count").sum())
    kept = keep_frequent(occurrences, min_freq).with_columns(
        occurrences=pl.lit(None, pl.Int64), distinct=pl.lit(None, pl.Int64))
    totals = pl.DataFrame({"phrase": [None], "lex_type": [None], "freq": [None],
                           "occurrences": [occurrences["count"].sum()], "distinct": [occurrences["phrase"].n_unique()]},
                          schema=kept.schema)
    return pl.concat([kept, totals]).to_arrow()


def aggregate(counts: Counter, min_freq: int) -> pl.DataFrame:
    """keep_frequent over the counts of (phrase, lex_type) occurrences."""
    schema = {"phrase": pl.String, "lex_type": pl.String, "count": pl.Int64}
    return keep_frequent(
        pl.DataFrame([(phrase, lex, n) for (phrase, lex), n in counts.items()], schema=schema, orient="row"), min_freq)


def keep_frequent(occurrences: pl.DataFrame, min_freq: int) -> pl.DataFrame:
    """One row per phrase occurring at least min_freq times: its total frequency and its most frequent
    lexical type, from (phrase, lex_type, count) rows that each hold one (phrase, lex_type).

    Ties between lexical types go to the earlier one in LEX_TYPES (NP first).
    """
    rank = pl.col("lex_type").replace_strict(LEX_TYPES, list(range(len(LEX_TYPES))), return_dtype=pl.Int8)
    return (
        occurrences.with_columns(freq=pl.col("count").sum().over("phrase"), rank=rank)
        .sort(["phrase", "count", "rank"], descending=[False, True, False])
        .unique(subset="phrase", keep="first", maintain_order=True)
        .filter(pl.col("freq") >= min_freq)
        .select("phrase", "lex_type", pl.col("freq").cast(pl.Int64))
        .sort(["freq", "phrase"], descending=[True, False])
    )


def describe_parser(p: ParseParams) -> str:
    model = f"spaCy {package_version('spacy')} {p.spacy_model} {package_version(p.spacy_model)}"
    if p.backend == "spacy":
        return f"{model}: constituents derived from the dependency parse (pearl.parse.dependency_constituents)"
    return f"benepar {package_version('benepar')} {p.benepar_model} over {model} sentences"


def run(params: Params, source: Path = INPUT, output: Path = OUTPUT, metrics: Path = METRICS) -> dict:
    p = params.parse
    if params.engine == "ray":
        clock = Stopwatch()
        phrases, totals, ray_run = phrases_on_ray(params, source)
        timing = {**clock.report(log, totals.sentences, "sentences"), **ray_run.metrics()}
    else:
        texts = read_artifact(source, SENTENCES_SCHEMA)["text"].to_list()
        if not texts:
            raise PearlError(f"{source} holds no sentences: check the corpus stage's params")
        clock = Stopwatch()
        log.info("parsing %d sentences with backend=%s, n_process=%d", len(texts), p.backend, p.n_process)
        counts = count_phrases(p, texts)
        timing = clock.report(log, len(texts), "sentences")
        phrases = aggregate(counts, p.min_freq)
        totals = Totals(len(texts), sum(counts.values()), len({phrase for phrase, _ in counts}))
    if phrases.height == 0:
        raise PearlError(
            f"parse: no phrase occurs at least parse.min_freq={p.min_freq} times in {totals.sentences} sentences"
        )
    numbers = {
        "sentences": totals.sentences,
        "phrase_occurrences": totals.phrase_occurrences,
        "distinct_phrases": totals.distinct_phrases,
        "phrases": phrases.height,
        **shares(phrases["lex_type"], LEX_TYPES),
    }
    write_artifact(phrases, output, {
        "stage": "parse",
        "backend": p.backend,
        "parser": describe_parser(p),
        "engine": params.engine,
        "min_freq": p.min_freq,
        "words": [p.min_words, p.max_words],
        "max_chars": p.max_chars,
        **numbers,
    }, params.shard_rows)
    write_json({**numbers, **timing}, metrics)
    log.info("kept %d phrases with freq >= %d: %s", phrases.height, p.min_freq,
             {k: v for k, v in numbers.items() if k.startswith("share_")})
    return numbers
