"""The typing stage: phrases → typed phrases with ent_type, label and label_id."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from pearl.artifacts import EVALUATION_TEXTS_SCHEMA, PHRASES_SCHEMA, read_artifact, write_artifact, write_json
from pearl.bench.run import build_context
from pearl.bench.texts import evaluation_texts, leaked
from pearl.entity_typing.coverage import phrase_entity_type
from pearl.entity_typing.ner import SpacyNER, TransformersNER, build_ner
from pearl.errors import PearlError
from pearl.labels import ENTITY_TYPES, LABELS, LEX_TYPES, shares
from pearl.log import Stopwatch, get_logger
from pearl.params import Params
from pearl.ray_engine import RayRun, RowActor, map_with_actors, ray_session

INPUT = Path("data/phrases/phrases.parquet")
OUTPUT = Path("data/typed/phrases.parquet")
EVALUATION_TEXTS = Path("data/typed/evaluation_texts.parquet")
METRICS = Path("metrics/typing.json")

log = get_logger("typing")


def with_labels(phrases: pl.DataFrame, ent_types: list[str]) -> pl.DataFrame:
    typed = phrases.with_columns(ent_type=pl.Series(ent_types, dtype=pl.String))
    label = pl.col("lex_type") + "-" + pl.col("ent_type")
    return typed.with_columns(label=label).with_columns(
        label_id=pl.col("label").replace_strict(LABELS, list(range(len(LABELS))), return_dtype=pl.Int16)
    )


def entity_types(ner: SpacyNER | TransformersNER, texts: list[str]) -> list[str]:
    return [phrase_entity_type(text, found) for text, found in zip(texts, ner.entities(texts))]


class PhraseTyper(RowActor):
    """A Ray actor (`engine: ray`): loads the NER model once; phrases in, their entity types out,
    with the model's description."""

    def __init__(self, params: Params):
        self.ner = build_ner(params)

    def process(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("phrase").to_pylist()
        return pa.table({"phrase": texts, "ent_type": entity_types(self.ner, texts),
                         "ner": [self.ner.description] * len(texts)})


def entity_types_on_ray(params: Params, texts: list[str], source: Path) -> tuple[list[str], str, RayRun]:
    """What entity_types gives, from a pool of Ray actors; the NER's description, where and how long
    the actors worked."""
    found: dict[str, str] = {}
    descriptions: set[str] = set()
    with ray_session(params.ray) as run:
        rows = pa.table({"phrase": pa.array(texts, pa.string())})
        for typed in map_with_actors(rows, PhraseTyper, (params,), params.ray.typing, "typing", str(source), run):
            found.update(zip(typed["phrase"].to_pylist(), typed["ent_type"].to_pylist()))
            descriptions.update(typed["ner"].to_pylist())
    if len(descriptions) != 1:  # nodes with different model or package versions would type differently
        raise PearlError(f"typing on Ray: the actors ran different NER models ({sorted(descriptions)}): "
                         "install the same packages on every node")
    return [found[text] for text in texts], descriptions.pop(), run


def without_evaluation_texts(params: Params, phrases: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The phrases that no test or tune task scores (folded for case and space), and the folded texts
    of those tasks: no training phrase, view or negative may be one (augment and train read them)."""
    clock = Stopwatch()
    blocked = evaluation_texts(build_context(params, None, ""), (*params.bench.tasks, *params.bench.tune_tasks))
    clock.report(log, len(blocked), "test_and_tune_texts")
    kept = phrases.filter(pl.Series(~leaked(phrases["phrase"].to_list(), blocked)))
    if kept.is_empty():
        raise PearlError(f"typing: all {phrases.height} phrases are test or tune texts (bench.tasks, "
                         "bench.tune_tasks): nothing is left to train on")
    return kept, sorted(blocked)


def run(params: Params, source: Path = INPUT, output: Path = OUTPUT, metrics: Path = METRICS,
        evaluation: Path = EVALUATION_TEXTS) -> dict:
    read = read_artifact(source, PHRASES_SCHEMA)
    # before the NER: a missing benchmark file fails first, and the dropped phrases are not typed
    phrases, blocked = without_evaluation_texts(params, read)
    texts = phrases["phrase"].to_list()
    clock = Stopwatch()
    if params.engine == "ray":
        log.info("typing %d phrases on Ray, %d actor(s)", phrases.height, params.ray.typing.workers)
        ent_types, description, ray_run = entity_types_on_ray(params, texts, source)
        timing = {**clock.report(log, len(texts), "phrases"), **ray_run.metrics()}
    else:
        ner = build_ner(params)
        description = ner.description
        log.info("typing %d phrases with %s", phrases.height, description)
        ent_types = entity_types(ner, texts)
        timing = clock.report(log, len(texts), "phrases")
    typed = with_labels(phrases, ent_types)
    numbers = {
        "phrases": typed.height,
        "leak_dropped_phrases": read.height - phrases.height,
        "labels_used": typed["label_id"].n_unique(),
        **shares(typed["ent_type"], ENTITY_TYPES),
    }
    write_artifact(typed, output, {
        "stage": "typing",
        "backend": params.typing.backend,
        "ner": description,
        "engine": params.engine,
        "label_set": f"{len(LEX_TYPES)} lexical x {len(ENTITY_TYPES)} entity types = {len(LABELS)} labels (pearl.labels)",
        **numbers,
    }, params.shard_rows)
    write_artifact(pl.DataFrame({"text": blocked}, schema={"text": pl.String}), evaluation,
                   {"stage": "typing", "tasks": [*params.bench.tasks, *params.bench.tune_tasks], "texts": len(blocked)})
    write_json({**numbers, **timing}, metrics)
    log.info("OTHER share %.3f, %d labels used", numbers["share_OTHER"], numbers["labels_used"])
    return numbers
