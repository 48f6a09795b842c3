"""Character-level augmentation (paper §3.1): swap, drop, insert, keyboard-neighbour replace.

One augmenter is built per run (the neighbour table once) and draws from one seeded
generator, so a cache built from the same phrases and seed is the same. A method returns None
when it cannot change the phrase (nothing to swap in "aa", nothing to drop in "a"): identity
variants and empty strings never come out.
"""

from __future__ import annotations

import string

import numpy as np

METHODS = ("char_swap", "char_drop", "char_insert", "char_keyboard")

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def keyboard_neighbours() -> dict[str, str]:
    """Keys touching each letter on a QWERTY keyboard (rows staggered right by half a key)."""
    position = {key: (r, c) for r, row in enumerate(_ROWS) for c, key in enumerate(row)}
    neighbours = {}
    for key, (r, c) in position.items():
        near = [(r, c - 1), (r, c + 1), (r - 1, c), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c)]
        neighbours[key] = "".join(_ROWS[i][j] for i, j in near if 0 <= i < 3 and 0 <= j < len(_ROWS[i]))
    return neighbours


class CharAugmenter:
    def __init__(self, seed: int | np.random.SeedSequence):
        self.rng = np.random.default_rng(seed)
        self.neighbours = keyboard_neighbours()

    def _pick(self, options: list[int]) -> int | None:
        return options[self.rng.integers(len(options))] if options else None

    def swap(self, phrase: str) -> str | None:
        """Swap two adjacent, different letters of one word."""
        spots = [i for i in range(len(phrase) - 1)
                 if phrase[i].isalpha() and phrase[i + 1].isalpha() and phrase[i] != phrase[i + 1]]
        i = self._pick(spots)
        return None if i is None else phrase[:i] + phrase[i + 1] + phrase[i] + phrase[i + 2:]

    def drop(self, phrase: str) -> str | None:
        """Drop one letter of a word of at least two letters (a word never disappears)."""
        spots = [i for i, ch in enumerate(phrase) if ch.isalpha()
                 and ((i > 0 and phrase[i - 1].isalpha()) or (i + 1 < len(phrase) and phrase[i + 1].isalpha()))]
        i = self._pick(spots)
        if i is None:
            return None
        variant = phrase[:i] + phrase[i + 1:]
        return variant if variant != phrase else None

    def insert(self, phrase: str) -> str | None:
        """Insert a letter after a letter: a random ASCII letter in Latin words, else a repeat."""
        spots = [i for i, ch in enumerate(phrase) if ch.isalpha()]
        i = self._pick(spots)
        if i is None:
            return None
        ch = phrase[i]
        new = string.ascii_lowercase[self.rng.integers(26)] if ch.isascii() else ch
        return phrase[:i + 1] + (new.upper() if ch.isupper() else new) + phrase[i + 1:]

    def keyboard(self, phrase: str) -> str | None:
        """Replace a letter by a neighbouring key, keeping its case."""
        spots = [i for i, ch in enumerate(phrase) if ch.lower() in self.neighbours]
        i = self._pick(spots)
        if i is None:
            return None
        near = self.neighbours[phrase[i].lower()]
        new = near[self.rng.integers(len(near))]
        return phrase[:i] + (new.upper() if phrase[i].isupper() else new) + phrase[i + 1:]

    def variants(self, phrase: str) -> dict[str, str]:
        """One variant per method that can change the phrase."""
        made = {
            "char_swap": self.swap(phrase),
            "char_drop": self.drop(phrase),
            "char_insert": self.insert(phrase),
            "char_keyboard": self.keyboard(phrase),
        }
        return {method: v for method, v in made.items() if v and v.strip() and v != phrase}
