"""NER backends that return, for each phrase, its entities as (start, end, OntoNotes type)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tqdm import tqdm

from pearl.device import resolve_device
from pearl.entity_typing.coverage import Entity
from pearl.errors import PearlError
from pearl.labels import ONTONOTES_TYPES
from pearl.model_ids import load_failure, resolve_model
from pearl.params import Params
from pearl.spacy_models import describe, load_spacy, package_version

_TAG_PREFIX = re.compile(r"^[BIESLU]-")


def ontonotes_type(label: str) -> str | None:
    """'B-work_of_art' → 'WORK_OF_ART'; 'O' → None. Other schemes (PER, MISC) are errors."""
    core = _TAG_PREFIX.sub("", label).upper().replace(" ", "_").replace("-", "_")
    if core == "O":
        return None
    if core not in ONTONOTES_TYPES:
        raise PearlError(f"NER label {label!r} is not an OntoNotes type: use a model trained on OntoNotes 5")
    return core


class SpacyNER:
    def __init__(self, model: str, batch_size: int):
        self.nlp = load_spacy(model, keep=("ner",))
        self.batch_size = batch_size
        for label in self.nlp.get_pipe("ner").labels:
            ontonotes_type(label)
        self.description = describe(self.nlp)

    def entities(self, phrases: list[str]) -> Iterator[list[Entity]]:
        docs = self.nlp.pipe(phrases, batch_size=self.batch_size)
        for doc in tqdm(docs, total=len(phrases), desc="typing", unit=" phrase", mininterval=2):
            yield [(e.start_char, e.end_char, ontonotes_type(e.label_)) for e in doc.ents]


class TransformersNER:
    """A token-classification model fine-tuned on OntoNotes (the paper: DeBERTa), spans aggregated."""

    def __init__(self, model: str, batch_size: int, device: str):
        from transformers import pipeline

        source = resolve_model(model, "typing.hf_model")
        try:
            self.pipe = pipeline("token-classification", model=source, aggregation_strategy="simple", device=device)
        except Exception as error:  # offline hub, unknown id, broken files
            raise load_failure("typing.hf_model", model, error, "; or set typing.backend=spacy") from None
        for label in self.pipe.model.config.id2label.values():
            ontonotes_type(label)
        self.batch_size = batch_size
        self.description = f"transformers {package_version('transformers')} {model} on {device}"

    def entities(self, phrases: list[str]) -> Iterator[list[Entity]]:
        bar = tqdm(total=len(phrases), desc="typing", unit=" phrase", mininterval=2)
        for start in range(0, len(phrases), self.batch_size):
            batch = phrases[start:start + self.batch_size]
            for found in self.pipe(batch, batch_size=self.batch_size):
                types = ((e["start"], e["end"], ontonotes_type(e["entity_group"])) for e in found)
                yield [entity for entity in types if entity[2] is not None]
            bar.update(len(batch))
        bar.close()


def build_ner(params: Params) -> SpacyNER | TransformersNER:
    p = params.typing
    if p.backend == "spacy":
        return SpacyNER(p.spacy_model, p.batch_size)
    return TransformersNER(p.hf_model, p.batch_size, resolve_device(params.base.device))
