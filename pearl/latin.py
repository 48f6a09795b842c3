"""Names in Latin letters, for the string evidence of every verb.

The same town is "Цофинген", "Zofingen" and "ツォフィンゲン": 3-grams and edit distances see nothing in common
between scripts. anyascii transliterates each letter of another script ("Tsofingen"), so that the string signals
compare what the names sound like. Latin letters stay as written: folding "Saint-Étienne" into "Saint-Etienne"
made near-twins of distinct GeoNames names, which the join counts as rivals, and halved its recall on the
generated design set (docs/measurements.md#string-signals-in-latin-letters). An encoder still reads the name as
written. ASCII names, nearly all of most tables, are returned as they are.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from anyascii import anyascii


@lru_cache(maxsize=65536)
def _letter(ch: str) -> str:
    if not ch.isalpha() or unicodedata.name(ch, "").startswith("LATIN"):
        return ch
    return anyascii(ch)


def latin(text: str) -> str:
    return text if text.isascii() else "".join(map(_letter, text))


def latin_all(texts: list[str]) -> list[str]:
    return [latin(text) for text in texts]
