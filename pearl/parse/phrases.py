"""Which token spans become phrases, and their text."""

from __future__ import annotations

from dataclasses import dataclass

from spacy.lang.en.stop_words import STOP_WORDS
from spacy.tokens import Doc

from pearl.labels import LEX_TYPES

_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))


@dataclass(frozen=True)
class PhraseRules:
    min_words: int
    max_words: int
    max_chars: int


def _trim(doc: Doc, start: int, end: int) -> tuple[int, int]:
    while start < end and (doc[start].is_punct or doc[start].is_space):
        start += 1
    while end > start and (doc[end - 1].is_punct or doc[end - 1].is_space):
        end -= 1
    return start, end


def phrase_text(doc: Doc, start: int, end: int, rules: PhraseRules) -> str | None:
    """The text of tokens [start, end), or None if they are not a usable phrase.

    Rejected: too few or too many words (punctuation does not count), over max_chars, no
    letter or digit, only stop words ("it", "of them"), or unbalanced brackets or quotes.
    """
    if start == end:
        return None
    words = [t for t in doc[start:end] if not (t.is_punct or t.is_space)]
    if not rules.min_words <= len(words) <= rules.max_words:
        return None
    if all(t.lower_ in STOP_WORDS for t in words):
        return None
    text = doc[start:end].text
    if len(text) > rules.max_chars or not any(ch.isalnum() for ch in text):
        return None
    if any(text.count(a) != text.count(b) for a, b in _PAIRS) or text.count('"') % 2:
        return None
    return text


def sentence_phrases(
    doc: Doc, spans: list[tuple[str, int, int]], rules: PhraseRules
) -> list[tuple[str, str]]:
    """(phrase, lex_type) occurrences of one sentence, edge punctuation trimmed.

    Spans that trim to the same tokens with the same label count once; labels outside the
    five lexical types are ignored.
    """
    trimmed = {(label, *_trim(doc, start, end)) for label, start, end in spans if label in LEX_TYPES}
    found = []
    for label, start, end in sorted(trimmed, key=lambda span: (span[1], span[2], span[0])):
        text = phrase_text(doc, start, end, rules)
        if text is not None:
            found.append((text, label))
    return found
