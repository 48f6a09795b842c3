"""When does a predicted entity give its type to a whole phrase?

A phrase takes an entity's type when that one entity covers the phrase's core: the phrase
without leading determiners ("the", "a", "an"), without leading or trailing punctuation and
spaces, and without a trailing possessive ('s, ’s, '). So "the United States" is GPE whether
or not the model includes "the" in the entity, "Kubrick's" is PERSON, but "in 1968" stays
OTHER: a preposition is not part of a DATE. Anything else is OTHER.
"""

from __future__ import annotations

import re

# An entity as character offsets into the phrase, end exclusive, and its OntoNotes type.
Entity = tuple[int, int, str]

_DETERMINERS = re.compile(r"^(?:(?:the|a|an)\s+)+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:['’]s|['’])$")


def _is_edge_junk(ch: str) -> bool:
    return not ch.isalnum()


def core_span(phrase: str) -> tuple[int, int]:
    start, end = 0, len(phrase)
    while start < end and _is_edge_junk(phrase[start]):
        start += 1
    determiners = _DETERMINERS.match(phrase, start, end)
    if determiners and determiners.end() < end:
        start = determiners.end()
    possessive = _POSSESSIVE.search(phrase, start, end)
    if possessive and possessive.start() > start:
        end = possessive.start()
    while end > start and _is_edge_junk(phrase[end - 1]):
        end -= 1
    return start, end


def phrase_entity_type(phrase: str, entities: list[Entity]) -> str:
    start, end = core_span(phrase)
    if start == end:
        return "OTHER"
    for ent_start, ent_end, label in entities:
        if ent_start <= start and ent_end >= end:
            return label
    return "OTHER"
