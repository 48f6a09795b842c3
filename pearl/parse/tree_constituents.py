"""Phrases from bracketed constituency trees (Penn Treebank style), as benepar outputs them.

`tree_spans("(S (NP (DT The) (NN cat)) (VP (VBD sat)))")` gives the leaves
["The", "cat", "sat"] and the labelled spans over them, end exclusive. Function tags are
dropped (NP-SBJ → NP); empty elements (-NONE- traces of gold PTB trees) occupy no leaf.
"""

from __future__ import annotations

import re

from pearl.errors import PearlError

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def _base_label(label: str) -> str:
    if label.startswith("-"):  # -NONE-, -LRB-: not function-tagged
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def tree_spans(bracketed: str) -> tuple[list[str], list[tuple[str, int, int]]]:
    tokens = _TOKEN.findall(bracketed)
    leaves: list[str] = []
    spans: list[tuple[str, int, int]] = []
    position = 0

    def node() -> None:
        nonlocal position
        if tokens[position] != "(":
            raise PearlError(f"malformed tree near token {position}: {bracketed[:80]!r}")
        position += 1
        label = ""
        if tokens[position] not in "()":
            label = tokens[position]
            position += 1
        if position < len(tokens) and tokens[position] not in "()":
            # preterminal: (TAG word)
            word = tokens[position]
            position += 1
            if label != "-NONE-":
                leaves.append(word)
        else:
            start = len(leaves)
            while position < len(tokens) and tokens[position] == "(":
                node()
            if label and len(leaves) > start:
                spans.append((_base_label(label), start, len(leaves)))
        if position >= len(tokens) or tokens[position] != ")":
            raise PearlError(f"unbalanced tree: {bracketed[:80]!r}")
        position += 1

    if not tokens:
        raise PearlError("empty tree")
    node()
    if position != len(tokens):
        raise PearlError(f"trailing text after tree: {bracketed[:80]!r}")
    return leaves, spans
