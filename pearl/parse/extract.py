"""Phrase extraction over batches of sentences, with either parser backend.

Each worker process builds its parser once (`init_worker`) and returns only counts, so
what crosses process boundaries is small.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
from spacy.language import Language

from pearl.errors import PearlError
from pearl.params import ParseParams
from pearl.parse.dependency_constituents import sentence_constituents
from pearl.parse.phrases import PhraseRules, sentence_phrases
from pearl.parse.tree_constituents import tree_spans
from pearl.ray_engine import RowActor, partitions
from pearl.spacy_models import load_spacy


@dataclass
class Parser:
    nlp: Language
    backend: str
    rules: PhraseRules
    batch_size: int


def build_parser(p: ParseParams) -> Parser:
    rules = PhraseRules(p.min_words, p.max_words, p.max_chars)
    if p.backend == "spacy":
        nlp = load_spacy(p.spacy_model, keep=("tok2vec", "tagger", "parser", "attribute_ruler"))
        return Parser(nlp, "spacy", rules, p.batch_size)
    nlp = load_spacy(p.spacy_model, keep=("senter",))
    import benepar  # noqa: F401  registers the "benepar" spaCy factory

    try:
        nlp.add_pipe("benepar", config={"model": p.benepar_model})
    except LookupError:
        raise PearlError(
            f"benepar model '{p.benepar_model}' is not installed: run "
            f"`python -c \"import benepar; benepar.download('{p.benepar_model}')\"` "
            "(needs internet), or set parse.backend=spacy"
        ) from None
    return Parser(nlp, "benepar", rules, p.batch_size)


def _spans(backend: str, sent) -> list[tuple[str, int, int]]:
    if backend == "spacy":
        return sentence_constituents(sent)
    leaves, spans = tree_spans(sent._.parse_string)
    if len(leaves) != len(sent):
        raise PearlError(f"benepar tree has {len(leaves)} leaves for {len(sent)} tokens: {sent.text[:80]!r}")
    return [(label, sent.start + start, sent.start + end) for label, start, end in spans]


def extract(parser: Parser, sentences: list[str]) -> Counter:
    """Counts of (phrase, lex_type) occurrences in `sentences`."""
    counts: Counter = Counter()
    for doc in parser.nlp.pipe(sentences, batch_size=parser.batch_size):
        for sent in doc.sents:
            counts.update(sentence_phrases(doc, _spans(parser.backend, sent), parser.rules))
    return counts


_worker_parser: Parser | None = None


def init_worker(p: ParseParams) -> None:
    global _worker_parser
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _worker_parser = build_parser(p)


def extract_in_worker(sentences: list[str]) -> tuple[int, Counter]:
    return len(sentences), extract(_worker_parser, sentences)


class PhraseCounter(RowActor):
    """A Ray actor (`engine: ray`): builds its parser once; a batch of sentences in, its
    (phrase, lex_type) counts out as rows, each with the partition of its phrase that the shuffle
    before the phrases' totals groups by."""

    def __init__(self, p: ParseParams, parts: int):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        self.parser = build_parser(p)
        self.parts = parts

    def process(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        if any(text is None or not text.strip() for text in texts):  # read on a node, past the driver's checks
            raise ValueError("a null or blank sentence")
        counts = extract(self.parser, texts)
        phrases = [phrase for phrase, _ in counts]
        return pa.table({
            "phrase": pa.array(phrases, pa.string()),
            "lex_type": pa.array([lex for _, lex in counts], pa.string()),
            "count": pa.array(list(counts.values()), pa.int64()),
            "part": partitions(phrases, self.parts),
        })
