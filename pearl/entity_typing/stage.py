"""The typing stage: phrases → typed phrases with ent_type, label and label_id."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pearl.artifacts import PHRASES_SCHEMA, read_artifact, write_json, write_meta, write_parquet
from pearl.entity_typing.coverage import phrase_entity_type
from pearl.entity_typing.ner import build_ner
from pearl.labels import ENTITY_TYPES, LABELS, LEX_TYPES, shares
from pearl.log import Stopwatch, get_logger
from pearl.params import Params

INPUT = Path("data/phrases/phrases.parquet")
OUTPUT = Path("data/typed/phrases.parquet")
METRICS = Path("metrics/typing.json")

log = get_logger("typing")


def with_labels(phrases: pl.DataFrame, ent_types: list[str]) -> pl.DataFrame:
    typed = phrases.with_columns(ent_type=pl.Series(ent_types, dtype=pl.String))
    label = pl.col("lex_type") + "-" + pl.col("ent_type")
    return typed.with_columns(label=label).with_columns(
        label_id=pl.col("label").replace_strict(LABELS, list(range(len(LABELS))), return_dtype=pl.Int16)
    )


def run(params: Params, source: Path = INPUT, output: Path = OUTPUT, metrics: Path = METRICS) -> dict:
    phrases = read_artifact(source, PHRASES_SCHEMA)
    ner = build_ner(params)
    log.info("typing %d phrases with %s", phrases.height, ner.description)
    clock = Stopwatch()
    texts = phrases["phrase"].to_list()
    ent_types = [phrase_entity_type(text, found) for text, found in zip(texts, ner.entities(texts))]
    timing = clock.report(log, len(texts), "phrases")
    typed = with_labels(phrases, ent_types)
    numbers = {
        "phrases": typed.height,
        "labels_used": typed["label_id"].n_unique(),
        **shares(typed["ent_type"], ENTITY_TYPES),
    }
    write_meta(output, {
        "stage": "typing",
        "backend": params.typing.backend,
        "ner": ner.description,
        "label_set": f"{len(LEX_TYPES)} lexical x {len(ENTITY_TYPES)} entity types = {len(LABELS)} labels (pearl.labels)",
        **numbers,
    })
    write_parquet(typed, output)
    write_json({**numbers, **timing}, metrics)
    log.info("OTHER share %.3f, %d labels used", numbers["share_OTHER"], numbers["labels_used"])
    return numbers
