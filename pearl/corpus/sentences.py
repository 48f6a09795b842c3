"""Text normalisation and sentence splitting for the corpus stage."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from pearl.errors import PearlError
from pearl.params import CorpusParams
from pearl.ray_engine import RowActor
from pearl.spacy_models import load_spacy

if TYPE_CHECKING:  # an annotation only: spaCy loads with the pipeline
    from spacy.language import Language

# spaCy's working memory grows with document length; pathological paragraphs are cut into
# windows of this size at a space, which only matters for text without sentence punctuation.
_MAX_CHUNK_CHARS = 100_000
_SPACES = re.compile(r"[^\S\n]+")


def clean_text(text: str) -> str:
    """NFC-normalise, turn control and format characters and lone surrogates into spaces, collapse spaces.

    Zero-width joiners are kept: emoji sequences and several scripts need them. A lone surrogate
    (e.g. a JSON "\\ud800") is no character at all and could not be written as UTF-8.
    """
    text = unicodedata.normalize("NFC", text)
    text = "".join(
        ch if ch in "\n\u200d" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp") else " "
        for ch in text
    )
    return _SPACES.sub(" ", text)


def paragraphs(text: str) -> Iterator[str]:
    for paragraph in clean_text(text).split("\n"):
        paragraph = paragraph.strip()
        while len(paragraph) > _MAX_CHUNK_CHARS:
            cut = paragraph.rfind(" ", 0, _MAX_CHUNK_CHARS)
            cut = cut if cut > 0 else _MAX_CHUNK_CHARS
            yield paragraph[:cut]
            paragraph = paragraph[cut:].strip()
        if paragraph:
            yield paragraph


@dataclass
class SplitCounts:
    documents: int = 0
    sentences: int = 0
    words: int = 0
    dropped_short: int = 0
    dropped_long: int = 0


@dataclass(frozen=True)
class SentenceFilter:
    min_chars: int
    max_chars: int
    long_sentences: str  # "skip" | "error"


def _judge(text: str, rules: SentenceFilter, doc_id: str) -> str:
    """'short', 'long' or 'kept'; a long sentence under long_sentences=error stops the stage."""
    if len(text) < rules.min_chars:
        return "short"
    if len(text) > rules.max_chars:
        if rules.long_sentences == "error":
            raise PearlError(
                f"corpus: document {doc_id!r} has a sentence of {len(text)} characters "
                f"(> corpus.max_sentence_chars={rules.max_chars}); raise the limit or set "
                "corpus.long_sentences=skip"
            )
        return "long"
    return "kept"


def _words(sent) -> int:
    return sum(1 for token in sent if not (token.is_punct or token.is_space))


def split_sentences(
    nlp: Language,
    documents: Iterable[tuple[str, str]],
    rules: SentenceFilter,
    counts: SplitCounts,
    batch_size: int,
) -> Iterator[tuple[str, int, str]]:
    """Yield (doc_id, sent_id, text); sent_id counts kept sentences within a document."""

    def paragraph_stream() -> Iterator[tuple[str, str]]:
        for doc_id, text in documents:
            counts.documents += 1
            for paragraph in paragraphs(text):
                yield paragraph, doc_id

    current, sent_id = None, 0
    for doc, doc_id in nlp.pipe(paragraph_stream(), as_tuples=True, batch_size=batch_size):
        if doc_id != current:  # paragraphs arrive in document order
            current, sent_id = doc_id, 0
        for sent in doc.sents:
            text = sent.text.strip()
            verdict = _judge(text, rules, doc_id)
            if verdict == "short":
                counts.dropped_short += 1
            elif verdict == "long":
                counts.dropped_long += 1
            else:
                counts.sentences += 1
                counts.words += _words(sent)
                yield doc_id, sent_id, text
                sent_id += 1


@dataclass
class DocumentSentences:
    """One document's kept sentences and what was dropped from it, when a batch is split on its own."""

    sentences: list[str] = field(default_factory=list)
    words: int = 0
    dropped_short: int = 0
    dropped_long: int = 0


def split_documents(nlp: Language, documents: list[tuple[str, str]], rules: SentenceFilter,
                    batch_size: int) -> list[DocumentSentences]:
    """Each document's share of what split_sentences yields over the same documents."""
    split = [DocumentSentences() for _ in documents]
    stream = ((paragraph, i) for i, (_, text) in enumerate(documents) for paragraph in paragraphs(text))
    for doc, i in nlp.pipe(stream, as_tuples=True, batch_size=batch_size):
        for sent in doc.sents:
            text = sent.text.strip()
            verdict = _judge(text, rules, documents[i][0])
            if verdict == "short":
                split[i].dropped_short += 1
            elif verdict == "long":
                split[i].dropped_long += 1
            else:
                split[i].sentences.append(text)
                split[i].words += _words(sent)
    return split


class SentenceSplitter(RowActor):
    """A Ray actor (`engine: ray`): loads the sentence splitter once; a batch of documents in, one row
    per document out with its kept sentences and counts."""

    def __init__(self, p: CorpusParams):
        self.nlp = load_spacy(p.spacy_model, keep=("senter",))
        self.rules = SentenceFilter(p.min_sentence_chars, p.max_sentence_chars, p.long_sentences)
        self.batch_size = p.batch_size

    def process(self, batch: pa.Table) -> pa.Table:
        documents = list(zip(batch.column("doc_id").to_pylist(), batch.column("text").to_pylist()))
        split = split_documents(self.nlp, documents, self.rules, self.batch_size)
        return pa.table({
            "doc_id": batch.column("doc_id"),
            "sentences": pa.array([d.sentences for d in split], pa.list_(pa.string())),
            "words": pa.array([d.words for d in split], pa.int64()),
            "dropped_short": pa.array([d.dropped_short for d in split], pa.int64()),
            "dropped_long": pa.array([d.dropped_long for d in split], pa.int64()),
        })
