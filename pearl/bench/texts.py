"""Every text a test or tune task scores, folded for case and space: what training data must never pair.

A retrieval task contributes its mentions and gold names, not its whole dictionary: the dictionary of
Wiki aliases is every Vital Articles title, which is also where the corpus comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from pearl.bench import data
from pearl.bench.geonames_aliases import fold, load_geonames_aliases
from pearl.bench.task_names import ALL_TASKS, TUNE_TASKS
from pearl.bench.tasks import WORD_SIM_FILES, BenchContext
from pearl.bench.wiki_aliases import load_wiki_aliases


def _pairs(pairs: data.PairData | data.ScoredPairs) -> Iterator[str]:
    yield from pairs.left
    yield from pairs.right


def _retrieval(dataset: data.RetrievalData) -> Iterator[str]:
    yield from dataset.mentions
    yield from dataset.gold


def _turney(ctx: BenchContext) -> Iterator[str]:
    for item in data.load_turney(ctx.data_dir):
        yield item.query
        yield from item.candidates


def _autofj(_: BenchContext) -> Iterator[str]:
    for name in data.autofj_names():
        join = data.load_autofj(name)
        yield from join.left
        yield from join.right


def _atis(ctx: BenchContext) -> Iterator[str]:
    for parts in data.load_atis(ctx.short_text_dir).splits.values():
        for part in parts:
            yield from part.texts


def _word_sim(task: str) -> Callable[[BenchContext], Iterator[str]]:
    return lambda ctx: _pairs(data.load_word_similarity(ctx.general_dir, WORD_SIM_FILES[task]))


TASK_TEXTS: dict[str, Callable[[BenchContext], Iterator[str]]] = {
    "ppdb": lambda ctx: _pairs(data.load_ppdb(ctx.data_dir, filtered=False)),
    "ppdb_filtered": lambda ctx: _pairs(data.load_ppdb(ctx.data_dir, filtered=True)),
    "turney": _turney,
    "bird": lambda ctx: _pairs(data.load_bird(ctx.data_dir)),
    "yago": lambda ctx: _retrieval(data.load_retrieval(ctx.data_dir, "yago", ctx.kb["yago"])),
    "umls": lambda ctx: _retrieval(data.load_retrieval(ctx.data_dir, "umls", ctx.kb["umls"])),
    "conll2003": lambda ctx: iter(data.load_clustering(ctx.data_dir, "conll2003").phrases),
    "bc5cdr": lambda ctx: iter(data.load_clustering(ctx.data_dir, "bc5cdr").phrases),
    "autofj": _autofj,
    "atis_s": _atis,
    "atis_l": _atis,
    "ppdb_clean": lambda ctx: _pairs(data.load_ppdb(ctx.data_dir, filtered=False)),
    "ppdb_filtered_clean": lambda ctx: _pairs(data.load_ppdb(ctx.data_dir, filtered=True)),
    **{task: _word_sim(task) for task in ("simlex", "ws353_sim", "ws353_rel", "men", "rw", "simverb")},
    "stsb": lambda ctx: _pairs(data.load_stsb(ctx.general_dir, "test")),
    "conll2003_train": lambda ctx: iter(data.load_clustering(ctx.tune_dir, "conll2003", "train").phrases),
    "bc5cdr_train": lambda ctx: iter(data.load_clustering(ctx.tune_dir, "bc5cdr", "train").phrases),
    "stsb_dev": lambda ctx: _pairs(data.load_stsb(ctx.general_dir, "dev")),
    "wiki_aliases": lambda _: _retrieval(load_wiki_aliases()),
    "geonames_aliases": lambda _: _retrieval(load_geonames_aliases()),
    "sick_r": lambda ctx: _pairs(data.load_sick(ctx.burt_dir, "TEST")),
    "sick_trial": lambda ctx: _pairs(data.load_sick(ctx.burt_dir, "TRIAL")),
}
assert set(TASK_TEXTS) == set(ALL_TASKS + TUNE_TASKS)


def evaluation_texts(ctx: BenchContext, tasks: tuple[str, ...]) -> set[str]:
    """The folded texts of `tasks` (the params' test and tune suites); a missing file names its param."""
    return {fold(text) for task in dict.fromkeys(tasks) for text in TASK_TEXTS[task](ctx)}


def leaked(texts: Iterable[str], blocked: set[str]) -> np.ndarray:
    """Whether each text, folded, is one of the `blocked` evaluation texts."""
    return np.fromiter((fold(text) in blocked for text in texts), dtype=bool)
