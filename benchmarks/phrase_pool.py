"""Realistic phrase lists of any size, for timing candidate mining (and the index and the Ray engine) at scale.

Real phrases first: the typed phrases when built, the AutoFJ titles, the YAGO/UMLS names. Beyond that pool,
variants of them that mining should pair with their source: a typo, a word dropped, a word added.
No stage runs this: benchmarks/mine_candidates.py, index_scale.py and ray_front_half.py do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pearl.artifacts import TYPED_PHRASES_SCHEMA, read_artifact
from pearl.bench import data


def real_phrases(root: Path) -> list[str]:
    """The distinct real phrases under the repository `root`."""
    pool: list[str] = []
    typed = root / "data/typed/phrases.parquet"
    if typed.exists():
        pool += read_artifact(typed, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    for name in data.autofj_names():
        join = data.load_autofj(name)
        pool += join.left + join.right
    for task in ("yago", "umls"):
        names = data.load_retrieval(root / "data/reference/pearl-benchmark", task, None)
        pool += [name for pair in zip(names.mentions, names.gold) for name in pair]
    return list(dict.fromkeys(p for p in pool if p.strip()))


def variant(phrase: str, words: list[str], rng: np.random.Generator) -> str:
    tokens = phrase.split()
    kind = rng.integers(3)
    if kind == 0 and len(phrase) > 3:  # a typo
        i = int(rng.integers(len(phrase)))
        return phrase[:i] + phrase[i + 1:]
    if kind == 1 and len(tokens) > 1:  # a word dropped
        del tokens[int(rng.integers(len(tokens)))]
        return " ".join(tokens)
    tokens.insert(int(rng.integers(len(tokens) + 1)), words[int(rng.integers(len(words)))])  # a word added
    return " ".join(tokens)


def phrases_of_size(n: int, pool: list[str], seed: int) -> tuple[list[str], int]:
    """`n` distinct phrases, and how many of them are real: a sample of `pool`, or all of it and variants."""
    rng = np.random.default_rng(seed)
    if n <= len(pool):
        return [pool[i] for i in rng.choice(len(pool), n, replace=False)], n
    words = sorted({w for p in pool[:50_000] for w in p.split()})
    chosen = dict.fromkeys(pool)
    while len(chosen) < n:
        for i in rng.integers(len(pool), size=n - len(chosen)):
            chosen.setdefault(variant(pool[i], words, rng))
    return list(chosen)[:n], len(pool)
