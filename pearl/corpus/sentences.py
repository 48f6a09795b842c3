"""Text normalisation and sentence splitting for the corpus stage."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from spacy.language import Language

from pearl.errors import PearlError

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
            if len(text) < rules.min_chars:
                counts.dropped_short += 1
                continue
            if len(text) > rules.max_chars:
                if rules.long_sentences == "error":
                    raise PearlError(
                        f"corpus: document {doc_id!r} has a sentence of {len(text)} characters "
                        f"(> corpus.max_sentence_chars={rules.max_chars}); raise the limit or set "
                        "corpus.long_sentences=skip"
                    )
                counts.dropped_long += 1
                continue
            counts.sentences += 1
            counts.words += sum(1 for token in sent if not (token.is_punct or token.is_space))
            yield doc_id, sent_id, text
            sent_id += 1
