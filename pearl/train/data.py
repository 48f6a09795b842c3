"""Training batches: distinct phrases, one augmented view each, hard negatives, false-negative mask.

A batch is a pure function of (seed, step): the epoch's permutation and every random choice in
the batch come from generators seeded by them. So batches can be built in DataLoader workers in
any order, and a run resumed at step s sees exactly the batches the uninterrupted run saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import torch
from threadpoolctl import threadpool_limits

from pearl.artifacts import HARD_NEGATIVES_SCHEMA, TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact
from pearl.augment.char_level import CharAugmenter
from pearl.bench.geonames_aliases import fold
from pearl.errors import PearlError
from pearl.teacher.vectors import TeacherVectors

LEVELS = ("char", "token", "phrase", "alias")
CACHED_LEVELS = LEVELS[1:]  # read from the augment cache; character views are made per step


@dataclass(frozen=True)
class Batch:
    texts: list[str]  # anchors, their positives (same order), then the hard negatives
    n_anchors: int
    labels: torch.Tensor  # type label of each anchor (its positive shares it)
    exclude: torch.Tensor  # (anchors, candidates) bool: false negatives left out of the loss
    features: dict[str, torch.Tensor]  # tokenised `texts`
    teacher_cos: torch.Tensor | None  # (anchors, candidates): the teacher's cosines, for distillation


@dataclass(frozen=True)
class Sampling:
    seed: int
    batch_size: int
    hard_negatives: int
    level_probs: dict[str, float]
    blas_threads: int | None = None  # numpy's BLAS threads for the teacher cosines; None: numpy's own


@dataclass
class ViewFilter:
    """Drops cached views whose teacher cosine to their phrase is below `min_cos`: many cached
    variants change the meaning ("in Eastern Europe" → "in Western Europe")."""

    min_cos: float
    levels: tuple[str, ...]  # the levels training draws views from
    teacher: TeacherVectors
    kept: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)

    def apply(self, rows: pl.DataFrame, level: str) -> pl.DataFrame:
        missing = [v for v in rows["variant"].to_list() if v not in self.teacher]
        if missing:
            raise PearlError(f"train.view_min_cos needs teacher vectors of the {level} variants: add {level} to "
                             f"teacher.variant_levels ({len(missing)} variants lack one, e.g. {missing[0]!r})")
        keep = self.teacher.pair_cosine(rows["phrase"].to_list(), rows["variant"].to_list()) >= self.min_cos
        self.kept[level], self.dropped[level] = int(keep.sum()), int((~keep).sum())
        return rows.filter(pl.Series(keep))


def heldout_split(n: int, heldout_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, held-out) row numbers of n phrases; `average` measures the shipped model on the same held-out rows."""
    order = np.random.default_rng([seed, 1]).permutation(n)
    n_heldout = max(1, int(round(heldout_fraction * n)))
    return np.sort(order[n_heldout:]), np.sort(order[:n_heldout])


class TrainingSet:
    """Phrases with labels, cached token/phrase variants and hard negatives, split train/held-out."""

    def __init__(self, phrases: list[str], labels: np.ndarray, variants: dict[str, list[list[str]]],
                 negatives: list[list[str]], heldout_fraction: float, seed: int,
                 teacher: TeacherVectors | None = None, blocked: set[str] = frozenset()):
        self.phrases = phrases
        self.labels = labels
        self.variants = variants  # level → per phrase, its cached variants
        self.negatives = negatives
        self.teacher = teacher  # for distillation; None = off
        self.blocked = blocked  # folded test and tune texts: no character view may be one
        self.train, self.heldout = heldout_split(len(phrases), heldout_fraction, seed)
        self._order_key, self._order = None, self.train

    @classmethod
    def load(cls, typed: Path, variants: Path, negatives: Path, heldout_fraction: float, seed: int,
             teacher: TeacherVectors | None = None, view_filter: ViewFilter | None = None,
             blocked: set[str] = frozenset()) -> TrainingSet:
        table = read_artifact(typed, TYPED_PHRASES_SCHEMA)
        phrases = table["phrase"].to_list()
        if len(phrases) < 4:
            raise PearlError(f"{typed}: {len(phrases)} phrases; training needs at least 4")
        index = {p: i for i, p in enumerate(phrases)}
        cached = read_artifact(variants, VARIANTS_SCHEMA)
        by_level = {}
        for level in CACHED_LEVELS:
            lists = [[] for _ in phrases]
            rows = cached.filter(pl.col("level") == level)
            if view_filter is not None and level in view_filter.levels:
                rows = view_filter.apply(rows, level)
            for phrase, variant in zip(rows["phrase"].to_list(), rows["variant"].to_list()):
                if phrase in index:
                    lists[index[phrase]].append(variant)
            by_level[level] = lists
        # a phrase without any hard negative has one row with a null negative
        mined = read_artifact(negatives, HARD_NEGATIVES_SCHEMA).drop_nulls("negative")
        negative_lists = [[] for _ in phrases]
        for phrase, negative in zip(mined["phrase"].to_list(), mined["negative"].to_list()):
            if phrase in index:
                negative_lists[index[phrase]].append(negative)
        return cls(phrases, table["label_id"].to_numpy().astype(np.int64), by_level, negative_lists,
                   heldout_fraction, seed, teacher, blocked)

    def steps_per_epoch(self, batch_size: int) -> int:
        return len(self.train) // batch_size

    def anchors(self, sampling: Sampling, step: int) -> np.ndarray:
        per_epoch = self.steps_per_epoch(sampling.batch_size)
        epoch, position = divmod(step, per_epoch)
        order = self._epoch_order(sampling.seed, epoch)
        return order[position * sampling.batch_size:(position + 1) * sampling.batch_size]

    def _epoch_order(self, seed: int, epoch: int) -> np.ndarray:
        # once per epoch, not per step: at 3.8M phrases a permutation takes longer than a GPU step
        if self._order_key != (seed, epoch):
            self._order = np.random.default_rng([seed, 2, epoch]).permutation(self.train)
            self._order_key = (seed, epoch)
        return self._order

    def batch_texts(self, sampling: Sampling, step: int
                    ) -> tuple[list[str], int, np.ndarray, np.ndarray, np.ndarray | None, dict]:
        """(texts, n_anchors, labels, exclude, teacher cosines, level counts) of one step."""
        chosen = self.anchors(sampling, step)
        rng = np.random.default_rng([sampling.seed, 3, step])
        chars = CharAugmenter(np.random.SeedSequence([sampling.seed, 4, step]))
        anchors = [self.phrases[i] for i in chosen]
        positives, counts = [], dict.fromkeys((*LEVELS, "none"), 0)
        for i, phrase in zip(chosen, anchors):
            view, level = self._positive(phrase, int(i), sampling.level_probs, rng, chars)
            positives.append(view)
            counts[level] += 1
        in_batch = set(anchors) | set(positives)
        negatives = []
        for i in chosen:
            pool = [n for n in self.negatives[i] if n not in in_batch]
            for j in rng.permutation(len(pool))[: sampling.hard_negatives]:
                negatives.append(pool[j])
                in_batch.add(pool[j])  # each negative text once per batch
        candidates = positives + negatives
        exclude = np.zeros((len(anchors), len(candidates)), dtype=bool)
        columns = {}
        for j, text in enumerate(candidates):
            columns.setdefault(text, []).append(j)
        for i, (anchor, positive) in enumerate(zip(anchors, positives)):
            for text in {anchor, positive}:
                for j in columns.get(text, ()):
                    exclude[i, j] = j != i
        teacher_cos = None
        if self.teacher is not None:
            # a view is scored as its phrase: it should mean what the phrase means
            rows = self.teacher.vectors(anchors + negatives)
            meaning = np.concatenate([rows[: len(anchors)], rows])
            # OpenBLAS splits the product by its thread count, which OMP_NUM_THREADS sets at start-up,
            # and 1 and 2 threads give other bits: the targets, and so the model, would follow the shell
            with threadpool_limits(limits=sampling.blas_threads, user_api="blas"):
                teacher_cos = rows[: len(anchors)] @ meaning[len(anchors):].T
        return anchors + candidates, len(anchors), self.labels[chosen], exclude, teacher_cos, counts

    def _positive(self, phrase: str, index: int, probs: dict[str, float], rng: np.random.Generator,
                  chars: CharAugmenter) -> tuple[str, str]:
        options = {}
        if probs["char"] > 0:
            made = [v for v in chars.variants(phrase).values() if fold(v) not in self.blocked]
            if made:
                options["char"] = made
        for level in CACHED_LEVELS:
            if probs.get(level, 0) > 0 and self.variants[level][index]:
                options[level] = self.variants[level][index]
        if probs.get("none", 0) > 0:
            options["none"] = [phrase]  # the phrase itself: its view differs by dropout only
        if not options:
            return phrase, "none"
        levels = list(options)
        weights = np.array([probs[level] for level in levels])
        level = levels[rng.choice(len(levels), p=weights / weights.sum())]
        return options[level][rng.integers(len(options[level]))], level


@dataclass(frozen=True)
class PairStep:
    """One batch of one of BURT's objectives, tokenised."""

    task: str
    labels: torch.Tensor
    left: dict[str, torch.Tensor]
    right: dict[str, torch.Tensor]


@dataclass(frozen=True)
class Step:
    phrases: Batch | None  # None when none of PEARL's losses is on (BURT's objectives alone)
    pairs: PairStep | None  # None when none of BURT's objectives is on


class StepBatches(torch.utils.data.Dataset):
    """Item k of this dataset is training step `first + k`; tokenised in the worker. `pairs` (BURT's objectives,
    pearl.train.burt_pairs.BurtPairs) is tokenised by `tokenize_pairs`, to its own, sentence-sized length."""

    def __init__(self, data: TrainingSet | None, sampling: Sampling, tokenize, first: int, last: int,
                 pairs=None, tokenize_pairs=None):
        self.data, self.sampling, self.tokenize = data, sampling, tokenize
        self.first, self.last = first, last
        self.pairs, self.tokenize_pairs = pairs, tokenize_pairs

    def __len__(self) -> int:
        return self.last - self.first

    def __getitem__(self, k: int) -> Step:
        step, phrases, pairs = self.first + k, None, None
        if self.data is not None:
            texts, n, labels, exclude, teacher_cos, _ = self.data.batch_texts(self.sampling, step)
            phrases = Batch(texts, n, torch.from_numpy(labels), torch.from_numpy(exclude), self.tokenize(texts),
                            None if teacher_cos is None else torch.from_numpy(teacher_cos))
        if self.pairs is not None:
            drawn = self.pairs.batch(self.sampling.seed, step)
            pairs = PairStep(drawn.task, torch.from_numpy(drawn.labels), self.tokenize_pairs(drawn.left),
                             self.tokenize_pairs(drawn.right))
        return Step(phrases, pairs)
