"""Constituents read off spaCy's dependency parse: the offline stand-in for benepar.

A dependency tree has no phrase nodes, so phrases are rebuilt from heads and their
dependents, following where the Penn Treebank would put a bracket:

- NP: a noun, proper noun, pronoun or number that heads its own nominal (not a `compound`,
  `nmod`, `nummod` or `quantmod` modifier). Two spans: the head's whole subtree ("the capital
  of France") and the head with its left dependents only ("the capital"), as the PTB nests
  (NP (NP the capital) (PP of France)).
- PP: a preposition (`prep`, `agent`, or an ADP `dative`) with its object: its subtree.
- ADVP: an adverb modifying a verb or auxiliary (`advmod`, `npadvmod`): its subtree
  ("later in the century"). Adverbs inside adjective or adverb phrases are not ADVPs.
- ADJP: a predicative adjective (`acomp`, `oprd`), or an attributive one that has
  dependents of its own ("very large" in "a very large house"): its subtree. A bare
  attributive adjective is not a phrase of its own in the PTB either.
- VP: a verb (or an auxiliary used as the main verb: "is a city") with its right-hand
  complements, excluding coordination and punctuation ("directed the film in 1968"); when
  auxiliaries or negation precede it, a second, outer VP includes them ("has been used").
  Subjects are never inside a VP.

Spans are (label, start, end) token offsets in the Doc, end exclusive.
"""

from __future__ import annotations

from spacy.tokens import Span, Token

_NOMINAL = {"NOUN", "PROPN", "PRON", "NUM"}
_NOT_NP_HEAD = {"compound", "nmod", "nummod", "quantmod", "flat"}
_VERB_OUTSIDE = {"punct", "cc", "conj", "mark"}
_AUXILIARY = {"aux", "auxpass", "neg"}
_SUBJECT = {"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"}


def _subtree(token: Token) -> tuple[int, int]:
    return token.left_edge.i, token.right_edge.i + 1


def _noun_phrases(token: Token) -> list[tuple[str, int, int]]:
    start, end = _subtree(token)
    spans = [("NP", start, end)]
    if end != token.i + 1:
        spans.append(("NP", start, token.i + 1))
    return spans


def _verb_phrases(token: Token) -> list[tuple[str, int, int]]:
    complements = [c for c in token.rights if c.dep_ not in _VERB_OUTSIDE]
    end = max((c.right_edge.i for c in complements), default=token.i) + 1
    spans = [("VP", token.i, end)]
    auxiliaries = [c.i for c in token.lefts if c.dep_ in _AUXILIARY]
    if auxiliaries:
        first = min(auxiliaries)
        inverted = any(c.dep_ in _SUBJECT and c.i > first for c in token.lefts)
        if not inverted:
            spans.append(("VP", first, end))
    return spans


def _is_verb_head(token: Token) -> bool:
    if token.pos_ == "VERB":
        return token.dep_ not in {"amod", "compound", "nmod"}
    if token.pos_ == "AUX":  # copula or main-verb "have"/"do" heading its clause
        return token.dep_ not in {"aux", "auxpass"}
    return False


def sentence_constituents(sent: Span) -> list[tuple[str, int, int]]:
    spans: list[tuple[str, int, int]] = []
    for token in sent:
        pos, dep = token.pos_, token.dep_
        if pos in _NOMINAL and dep not in _NOT_NP_HEAD:
            spans.extend(_noun_phrases(token))
        elif (dep in {"prep", "agent"} or (pos == "ADP" and dep == "dative")) and any(token.children):
            spans.append(("PP", *_subtree(token)))
        elif pos == "ADV" and dep in {"advmod", "npadvmod"} and token.head.pos_ in {"VERB", "AUX"}:
            spans.append(("ADVP", *_subtree(token)))
        elif pos == "ADJ" and (
            dep in {"acomp", "oprd"}
            or (dep == "amod" and any(c.dep_ != "punct" for c in token.children))
        ):
            spans.append(("ADJP", *_subtree(token)))
        if _is_verb_head(token):
            spans.extend(_verb_phrases(token))
    return spans
