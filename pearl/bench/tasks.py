"""The benchmark tasks of the paper's Tables 1 and 2, each scored by one protocol.

Every task returns flat numbers: `score` in percent (accuracy, Pearson r or NMI × 100), `n`
(items scored) and task-specific counts; tasks with seeds add `std`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pearl.bench import data, ppdb_split
from pearl.embedder import Embedder
from pearl.bench.geonames_aliases import load_geonames_aliases
from pearl.bench.metrics import choice_accuracy, kmeans_nmi, pearson, spearman, tied_accuracy
from pearl.bench.probe_settings import ProbeResult, ProbeSettings
from pearl.bench.similarity import EmbeddingSimilarity, TrigramJaccard
from pearl.bench.task_names import ALL_TASKS, TUNE_TASKS
from pearl.bench.wiki_aliases import load_wiki_aliases


@dataclass
class BenchContext:
    data_dir: Path
    short_text_dir: Path
    general_dir: Path
    tune_dir: Path
    burt_dir: Path
    seed: int
    probe: ProbeSettings
    ppdb_seeds: int
    atis_seeds: int
    kmeans_inits: int
    kb: dict[str, Path | None]
    # None: the string baseline. Called when a task first needs vectors, after it has read and checked its file:
    # a bad benchmark file fails before the model libraries load
    load_embedder: Callable[[], Embedder] | None = None

    @cached_property
    def embedder(self) -> Embedder:
        return self.load_embedder()

    @property
    def similarity(self) -> EmbeddingSimilarity | TrigramJaccard:
        return TrigramJaccard() if self.load_embedder is None else EmbeddingSimilarity(self.embedder)

    def vectors(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed(texts)


def _percent(value: float) -> float:
    return round(100 * float(value), 2)


def _seeded(results: list[ProbeResult], n: int, **extra) -> dict:
    scores = [r.accuracy for r in results]
    return {"score": _percent(np.mean(scores)), "std": _percent(np.std(scores)), "n": n, "seeds": len(scores),
            "probe_lrs": [r.lr for r in results], **extra}


PPDB_SPLIT = (0.7, 0.15, 0.15)  # train / validation (early stopping) / test


def paraphrase(ctx: BenchContext, filtered: bool, clean: bool = False) -> dict:
    """Concatenated frozen embeddings → MLP probe; 70/15/15 split, each seed its own split.

    The paper's protocol splits pairs at random; `clean` dedupes unordered pairs and splits so
    that no phrase is on two sides (pearl.bench.ppdb_split)."""
    pairs = data.load_ppdb(ctx.data_dir, filtered)
    extra = {}
    if clean:
        cleaned = ppdb_split.unordered_unique(pairs)
        pairs, extra = cleaned.pairs, {"duplicates_dropped": cleaned.duplicates, "conflicts_dropped": cleaned.conflicts}
    vectors = ctx.vectors(pairs.left + pairs.right)
    features = np.hstack([vectors[: len(pairs.left)], vectors[len(pairs.left):]])
    labels = np.asarray(pairs.labels)
    n = len(labels)
    from pearl.bench.probe import probe_accuracy  # torch, once the files were read

    results, test_pairs = [], []
    for run in tqdm(range(ctx.ppdb_seeds), desc="probe seeds"):
        if clean:
            parts = ppdb_split.phrase_disjoint_split(pairs, PPDB_SPLIT, ctx.seed + run)
        else:
            order = np.random.default_rng(ctx.seed + run).permutation(n)
            a, b = int(PPDB_SPLIT[0] * n), int(sum(PPDB_SPLIT[:2]) * n)
            parts = [order[:a], order[a:b], order[b:]]
        split = [(features[p], labels[p]) for p in parts]
        results.append(probe_accuracy(*split, classes=2, seed=ctx.seed + run, settings=ctx.probe))
        test_pairs.append(len(parts[2]))
    return _seeded(results, n, test_pairs=int(np.mean(test_pairs)), **extra)


def turney(ctx: BenchContext) -> dict:
    items = data.load_turney(ctx.data_dir)
    left = [item.query for item in items for _ in item.candidates]
    right = [c for item in items for c in item.candidates]
    flat = ctx.similarity.rowwise(left, right)
    bounds = np.cumsum([0] + [len(item.candidates) for item in items])
    per_item = [flat[bounds[i]:bounds[i + 1]] for i in range(len(items))]
    return {"score": _percent(choice_accuracy(per_item, [item.gold for item in items])), "n": len(items),
            "candidates": int(np.mean([len(item.candidates) for item in items]))}


def bird(ctx: BenchContext) -> dict:
    pairs = data.load_bird(ctx.data_dir)
    predicted = ctx.similarity.rowwise(pairs.left, pairs.right)
    return {"score": _percent(pearson(predicted, np.asarray(pairs.scores))), "n": len(pairs.scores)}


def retrieval(ctx: BenchContext, task: str) -> dict:
    return {**linking(ctx, data.load_retrieval(ctx.data_dir, task, ctx.kb[task])),
            "dictionary_is_kb": int(ctx.kb[task] is not None)}


def linking(ctx: BenchContext, dataset: data.RetrievalData) -> dict:
    """Top-1 accuracy of the nearest dictionary name (exact search), ties credited 1/k."""
    tied = ctx.similarity.top_ties(dataset.mentions, dataset.dictionary)
    position = {name: i for i, name in enumerate(dataset.dictionary)}
    accuracy = tied_accuracy(tied, [{position[g]} for g in dataset.gold])
    return {"score": _percent(accuracy), "n": len(dataset.mentions), "dictionary_size": len(dataset.dictionary)}


def clustering(ctx: BenchContext, task: str, split: str = "test") -> dict:
    dataset = data.load_clustering(ctx.data_dir if split == "test" else ctx.tune_dir, task, split)
    nmi = kmeans_nmi(ctx.vectors(dataset.phrases), dataset.labels, ctx.kmeans_inits, ctx.seed)
    return {"score": _percent(nmi), "n": len(dataset.phrases), "clusters": len(dataset.types)}


def autofj(ctx: BenchContext) -> dict:
    """Each right-table title with a match → the nearest left-table title; mean over datasets."""
    names = data.autofj_names()
    accuracies, queries = [], 0
    for name in tqdm(names, desc="autofj datasets"):
        join = data.load_autofj(name)
        tied = ctx.similarity.top_ties(join.right, join.left)
        # a left title can occur more than once: any row with the gold title is right
        rows_of = {}
        for i, title in enumerate(join.left):
            rows_of.setdefault(title, set()).add(i)
        accuracies.append(tied_accuracy(tied, [rows_of.get(g, set()) for g in join.gold]))
        queries += len(join.right)
    return {"score": _percent(np.mean(accuracies)), "n": queries, "datasets": len(names),
            "min_dataset_score": _percent(min(accuracies))}


def intent(ctx: BenchContext, length: str) -> dict:
    """ATIS-S / ATIS-L: MLP probe trained on train, early-stopped on dev, accuracy on test."""
    atis = data.load_atis(ctx.short_text_dir)
    part = 0 if length == "short" else 1
    splits = [atis.splits[s][part] for s in ("train", "dev", "test")]
    features = [(ctx.vectors(s.texts), np.asarray(s.labels)) for s in splits]
    from pearl.bench.probe import probe_accuracy  # torch, once the files were read

    results = [
        probe_accuracy(*features, classes=len(atis.intents), seed=ctx.seed + run, settings=ctx.probe)
        for run in tqdm(range(ctx.atis_seeds), desc="probe seeds")
    ]
    return _seeded(results, len(splits[2].texts), length_cut_tokens=atis.cut, train=len(splits[0].texts))


def scored_pairs(ctx: BenchContext, pairs: data.ScoredPairs) -> dict:
    """Spearman's ρ × 100 of the pairs' cosines against the gold scores (BURT's protocol)."""
    predicted = ctx.similarity.rowwise(pairs.left, pairs.right)
    return {"score": _percent(spearman(predicted, np.asarray(pairs.scores))), "n": len(pairs.scores)}


def sick_relatedness(ctx: BenchContext, split: str) -> dict:
    """SentEval's SICK-R without its trained regressor: Spearman's ρ × 100 of cosines against relatedness (BURT
    scores cosines for the STS sets; SICK-R is scored the same way here, so no regression is fitted)."""
    sick = data.load_sick(ctx.burt_dir, split)
    return scored_pairs(ctx, data.ScoredPairs(sick.left, sick.right, sick.scores))


WORD_SIM_FILES = {
    "simlex": "EN-SIMLEX-999.txt", "ws353_sim": "EN-WS-353-SIM.txt", "ws353_rel": "EN-WS-353-REL.txt",
    "men": "EN-MEN-TR-3k.txt", "rw": "EN-RW-STANFORD.txt", "simverb": "EN-SimVerb-3500.txt",
}


TASKS: dict[str, Callable[[BenchContext], dict]] = {
    "ppdb": lambda ctx: paraphrase(ctx, filtered=False),
    "ppdb_filtered": lambda ctx: paraphrase(ctx, filtered=True),
    "turney": turney,
    "bird": bird,
    "yago": lambda ctx: retrieval(ctx, "yago"),
    "umls": lambda ctx: retrieval(ctx, "umls"),
    "conll2003": lambda ctx: clustering(ctx, "conll2003"),
    "bc5cdr": lambda ctx: clustering(ctx, "bc5cdr"),
    "autofj": autofj,
    "atis_s": lambda ctx: intent(ctx, "short"),
    "atis_l": lambda ctx: intent(ctx, "long"),
    "ppdb_clean": lambda ctx: paraphrase(ctx, filtered=False, clean=True),
    "ppdb_filtered_clean": lambda ctx: paraphrase(ctx, filtered=True, clean=True),
    **{task: (lambda ctx, f=WORD_SIM_FILES[task]: scored_pairs(ctx, data.load_word_similarity(ctx.general_dir, f)))
       for task in ("simlex", "ws353_sim", "ws353_rel", "men")},
    "stsb": lambda ctx: scored_pairs(ctx, data.load_stsb(ctx.general_dir, "test")),
    "sick_r": lambda ctx: sick_relatedness(ctx, "TEST"),
    # the tune suite
    "conll2003_train": lambda ctx: clustering(ctx, "conll2003", "train"),
    "bc5cdr_train": lambda ctx: clustering(ctx, "bc5cdr", "train"),
    "stsb_dev": lambda ctx: scored_pairs(ctx, data.load_stsb(ctx.general_dir, "dev")),
    **{task: (lambda ctx, f=WORD_SIM_FILES[task]: scored_pairs(ctx, data.load_word_similarity(ctx.general_dir, f)))
       for task in ("rw", "simverb")},
    "wiki_aliases": lambda ctx: linking(ctx, load_wiki_aliases()),
    "geonames_aliases": lambda ctx: linking(ctx, load_geonames_aliases()),
    "sick_trial": lambda ctx: sick_relatedness(ctx, "TRIAL"),
}
assert tuple(TASKS) == ALL_TASKS + TUNE_TASKS
