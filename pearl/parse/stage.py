"""The parse stage: sentences → phrases.parquet (phrase, lex_type, freq)."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl
import pyarrow as pa
from tqdm import tqdm

from pearl.artifacts import SENTENCES_SCHEMA, read_artifact, write_json, write_meta, write_parquet
from pearl.errors import PearlError
from pearl.labels import LEX_TYPES, shares
from pearl.log import Stopwatch, get_logger
from pearl.params import ParseParams, Params
from pearl.parse.extract import PhraseCounter, build_parser, extract, extract_in_worker, init_worker
from pearl.ray_engine import RayRun, map_with_actors, ray_session
from pearl.spacy_models import package_version

INPUT = Path("data/corpus/sentences.parquet")
OUTPUT = Path("data/phrases/phrases.parquet")
METRICS = Path("metrics/parse.json")
_CHUNK = 2_000

log = get_logger("parse")


def _chunks(texts: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(texts), _CHUNK):
        yield texts[start:start + _CHUNK]


def count_phrases(p: ParseParams, texts: list[str]) -> Counter:
    """Occurrences of (phrase, lex_type) over all sentences; the same for any n_process."""
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


def count_phrases_on_ray(params: Params, texts: list[str], source: Path) -> tuple[Counter, RayRun]:
    """What count_phrases gives, from a pool of Ray actors; and where and how long they worked."""
    total: Counter = Counter()
    with ray_session(params.ray) as run:
        rows = pa.table({"text": pa.array(texts, pa.string())})
        for counts in map_with_actors(rows, PhraseCounter, (params.parse,), params.ray.parse, "parse", str(source), run):
            # one output batch may join several actors' outputs, so a key can repeat within it
            for key, n in zip(zip(counts["phrase"].to_pylist(), counts["lex_type"].to_pylist()),
                              counts["count"].to_pylist()):
                total[key] += n
    return total, run


def aggregate(counts: Counter, min_freq: int) -> pl.DataFrame:
    """One row per phrase: its total frequency and its most frequent lexical type.

    Ties between lexical types go to the earlier one in LEX_TYPES (NP first).
    """
    schema = {"phrase": pl.String, "lex_type": pl.String, "count": pl.Int64}
    occurrences = pl.DataFrame(
        [(phrase, lex, n) for (phrase, lex), n in counts.items()], schema=schema, orient="row"
    )
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
    texts = read_artifact(source, SENTENCES_SCHEMA)["text"].to_list()
    if not texts:
        raise PearlError(f"{source} holds no sentences: check the corpus stage's params")
    clock = Stopwatch()
    if params.engine == "ray":
        log.info("parsing %d sentences with backend=%s on Ray, %d actor(s)", len(texts), p.backend,
                 params.ray.parse.workers)
        counts, ray_run = count_phrases_on_ray(params, texts, source)
        timing = {**clock.report(log, len(texts), "sentences"), **ray_run.metrics()}
    else:
        log.info("parsing %d sentences with backend=%s, n_process=%d", len(texts), p.backend, p.n_process)
        counts = count_phrases(p, texts)
        timing = clock.report(log, len(texts), "sentences")
    phrases = aggregate(counts, p.min_freq)
    if phrases.height == 0:
        raise PearlError(
            f"parse: no phrase occurs at least parse.min_freq={p.min_freq} times in {len(texts)} sentences"
        )
    numbers = {
        "sentences": len(texts),
        "phrase_occurrences": sum(counts.values()),
        "distinct_phrases": len({phrase for phrase, _ in counts}),
        "phrases": phrases.height,
        **shares(phrases["lex_type"], LEX_TYPES),
    }
    write_meta(output, {
        "stage": "parse",
        "backend": p.backend,
        "parser": describe_parser(p),
        "engine": params.engine,
        "min_freq": p.min_freq,
        "words": [p.min_words, p.max_words],
        "max_chars": p.max_chars,
        **numbers,
    })
    write_parquet(phrases, output, params.shard_rows)
    write_json({**numbers, **timing}, metrics)
    log.info("kept %d phrases with freq >= %d: %s", phrases.height, p.min_freq,
             {k: v for k, v in numbers.items() if k.startswith("share_")})
    return numbers
