"""AutoFJ's negative rules, learned from the left table alone.

The left table is a reference without duplicates, so two left names that differ by exactly one token
each way ("2008 Ohio election" and "2012 Ohio election") tell that this pair of tokens names different
entities. A candidate pair whose token differences hold such a pair ("2008" against "2012") is then
never a join, however close its strings and vectors are: string scores and embeddings alike see a
year, a number or a sibling's name as a small edit. Tokens are lower-cased, split on anything but word
characters and Porter-stemmed, as AutoFJ does (Li et al., SIGMOD 2021, its `NegativeRule`), so that a
plural is no difference. On the first 25 AutoFJ datasets by name they raised the chosen join's macro
precision by 0.010 (string and all-MiniLM-L6-v2) for 0.002–0.009 of recall (benchmarks/join_autofj.py;
docs/measurements.md#join-negative-rules).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=None)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


def token_sets(names: list[str]) -> list[frozenset[str]]:
    stem = lru_cache(maxsize=None)(_stemmer().stem)
    return [frozenset(stem(word) for word in _WORD.findall(name.lower())) for name in names]


class NegativeRules:
    """The token pairs that tell two left names apart, learned from pairs of left names (rows of `tokens`)."""

    def __init__(self, tokens: list[frozenset[str]], a: np.ndarray, b: np.ndarray):
        self.pairs: set[tuple[str, str]] = set()
        for i, j in zip(a.tolist(), b.tolist()):
            only_i, only_j = tokens[i] - tokens[j], tokens[j] - tokens[i]
            # a one-token name differs from anything by its whole self: no rule
            if len(only_i) == 1 and len(only_j) == 1 and len(tokens[i]) > 1:
                (x,), (y,) = only_i, only_j
                self.pairs |= {(x, y), (y, x)}

    def allowed(self, tokens: list[frozenset[str]], a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per pair of rows of `tokens`, False where their token differences hold a learned pair."""
        if not self.pairs:
            return np.ones(len(a), dtype=bool)
        return np.fromiter((not self._breaks(tokens[i], tokens[j]) for i, j in zip(a.tolist(), b.tolist())),
                           dtype=bool, count=len(a))

    def _breaks(self, first: frozenset[str], second: frozenset[str]) -> bool:
        only_second = second - first
        return any((x, y) in self.pairs for x in first - second for y in only_second)
