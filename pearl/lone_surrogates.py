"""Refusing text that holds half a UTF-16 pair: no tokenizer or UTF-8 writer can take it.

It reaches Python from a JSON escape such as "\\ud800", or from command-line bytes that are not
UTF-8. The corpus turns it into a space (pearl/corpus/sentences.py); inputs that are scored or
embedded as given are refused instead, naming where it sits.
"""

from __future__ import annotations

import re

from pearl.errors import PearlError

_SURROGATE = re.compile("[\ud800-\udfff]")


def reject_lone_surrogate(text: str, where: str) -> str:
    found = _SURROGATE.search(text)
    if found:
        raise PearlError(f"{where} holds U+{ord(found.group()):04X}, half a UTF-16 surrogate pair and no character "
                         "(a JSON \\u escape of one half, or bytes that are not UTF-8); fix or drop it")
    return text
