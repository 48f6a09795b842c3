"""The labelled pairs of BURT's three objectives, and the batch of one objective at each training step.

- `nli`: premise and hypothesis, 3-way. Offline, SICK TRAIN and SNLI dev stand in for the SNLI and MultiNLI
  training sets, which `burt.nli_source: hub` loads with Hugging Face `datasets`.
- `pi`: positive pairs, each against `burt.pi_negatives` random partners (label 1: paraphrase, 0: not).
  Positives are a PPDB file's pairs when `burt.ppdb_file` names one, else our own: the cached token, phrase
  and alias variants of each corpus phrase.
- `ptc`: equivalence, entailment or independent. A PPDB file's entailment labels when one is given
  (Forward- and ReverseEntailment are one class, as BURT's model is symmetric; Exclusion and OtherRelated are
  dropped, as BURT drops them), else WordNet's relations: lemmas of one synset (equivalence), a synset's and
  its direct hypernym's first lemmas (entailment), first lemmas of sister synsets (independent).

Every pair with a side among the test and tune texts (the folded texts of the benchmark suites, SICK TRIAL
and TEST, SNLI test) is dropped and counted. A step's batch is a pure function of (seed, step), like the
phrase batches (pearl/train/data.py), so a resumed run draws what the uninterrupted one did.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pearl.artifacts import VARIANTS_SCHEMA, read_artifact
from pearl.bench.data import NLI_LABELS, load_sick, load_snli
from pearl.bench.geonames_aliases import fold
from pearl.errors import PearlError, first_line
from pearl.params import BurtParams

PTC_LABELS = ("equivalence", "entailment", "independent")
CLASSES = {"nli": len(NLI_LABELS), "pi": 2, "ptc": len(PTC_LABELS)}
PI_VARIANT_LEVELS = ("token", "phrase", "alias")
_PPDB_RELATIONS = {"Equivalence": 0, "ForwardEntailment": 1, "ReverseEntailment": 1, "Independent": 2}


@dataclass(frozen=True)
class LabelledPairs:
    left: list[str]
    right: list[str]
    labels: np.ndarray  # int64 class ids
    source: str  # where the pairs came from, for the metrics


@dataclass(frozen=True)
class PairBatch:
    task: str
    left: list[str]
    right: list[str]
    labels: np.ndarray


def burt_test_texts(burt_dir: Path) -> set[str]:
    """Folded sentences of BURT's tests and tune split, which no training pair may hold."""
    texts = set()
    for pairs in (load_sick(burt_dir, "TRIAL"), load_sick(burt_dir, "TEST"), load_snli(burt_dir, "test")):
        texts.update(fold(t) for t in pairs.left + pairs.right)
    return texts


def _clean(a: str, b: str, blocked: set[str]) -> bool:
    """Neither side of the pair is a test or tune text."""
    return fold(a) not in blocked and fold(b) not in blocked


def _without_leaks(pairs: LabelledPairs, blocked: set[str]) -> tuple[LabelledPairs, int]:
    keep = [i for i, (a, b) in enumerate(zip(pairs.left, pairs.right)) if _clean(a, b, blocked)]
    kept = LabelledPairs([pairs.left[i] for i in keep], [pairs.right[i] for i in keep], pairs.labels[keep], pairs.source)
    return kept, len(pairs.left) - len(keep)


def _joined(parts: list[tuple[list[str], list[str], list[int]]], source: str) -> LabelledPairs:
    left = [a for part in parts for a in part[0]]
    right = [b for part in parts for b in part[1]]
    return LabelledPairs(left, right, np.array([y for part in parts for y in part[2]], dtype=np.int64), source)


def nli_pairs(burt: BurtParams, burt_dir: Path) -> LabelledPairs:
    if burt.nli_source == "offline":
        sick, snli = load_sick(burt_dir, "TRAIN"), load_snli(burt_dir, "dev")
        return _joined([(sick.left, sick.right, sick.labels), (snli.left, snli.right, snli.labels)],
                       f"offline substitute: SICK TRAIN + SNLI dev ({burt_dir})")
    return _joined([_hub_nli(name) for name in burt.nli_hub], "hub: " + ", ".join(burt.nli_hub))


def _hub_nli(name: str) -> tuple[list[str], list[str], list[int]]:
    """A Hugging Face NLI dataset's train split (premise, hypothesis, label 0/1/2; -1, no gold label, dropped)."""
    from datasets import load_dataset

    try:
        rows = load_dataset(name, split="train")
        columns = rows.select_columns(["premise", "hypothesis", "label"]).to_dict()
    except Exception as error:  # no network, unknown id, other columns
        raise PearlError(f"burt.nli_hub: {name} could not be loaded ({type(error).__name__}: {first_line(error)}); "
                         "set burt.nli_source=offline for SICK TRAIN and SNLI dev") from None
    keep = [i for i, y in enumerate(columns["label"]) if y in (0, 1, 2)]
    return ([columns["premise"][i] for i in keep], [columns["hypothesis"][i] for i in keep],
            [columns["label"][i] for i in keep])


def read_ppdb(path: Path) -> LabelledPairs:
    """(phrase, paraphrase, PTC class) of a PPDB 2.0 file, its Exclusion and OtherRelated pairs left out."""
    if not path.is_file():
        raise PearlError(f"{path} is missing: set burt.ppdb_file to a PPDB 2.0 file, or to null")
    left, right, labels = [], [], []
    with path.open(encoding="utf-8", errors="strict") as lines:
        for number, line in enumerate(lines, start=1):
            fields = [f.strip() for f in line.split("|||")]
            if len(fields) < 6:
                raise PearlError(f"{path}:{number}: expected 'LHS ||| phrase ||| paraphrase ||| features ||| "
                                 "alignment ||| entailment' (PPDB 2.0)")
            if fields[-1] in _PPDB_RELATIONS:
                left.append(fields[1]), right.append(fields[2]), labels.append(_PPDB_RELATIONS[fields[-1]])
    if not left:
        raise PearlError(f"{path}: no pair labelled {', '.join(_PPDB_RELATIONS)}")
    return LabelledPairs(left, right, np.array(labels, dtype=np.int64), f"PPDB file {path}")


def pi_positives(burt: BurtParams, variants: Path) -> LabelledPairs:
    if burt.ppdb_file is not None:
        ppdb = read_ppdb(Path(burt.ppdb_file))
        return LabelledPairs(ppdb.left, ppdb.right, np.ones(len(ppdb.left), dtype=np.int64), ppdb.source)
    rows = (read_artifact(variants, VARIANTS_SCHEMA).filter(pl.col("level").is_in(PI_VARIANT_LEVELS))
            .select("phrase", "variant").unique(maintain_order=True))
    if rows.is_empty():
        raise PearlError(f"{variants}: no token, phrase or alias variant to pair for burt.pi_weight: "
                         "give burt.ppdb_file or set burt.pi_weight=0")
    return LabelledPairs(rows["phrase"].to_list(), rows["variant"].to_list(), np.ones(rows.height, dtype=np.int64),
                         f"our positives: {', '.join(PI_VARIANT_LEVELS)} variants of {variants}")


def wordnet_relations(wordnet) -> dict[int, list[tuple[str, str]]]:
    """Every PTC pair WordNet gives, by class: synonyms, (hyponym, hypernym) and sister synsets; a pair that more
    than one relation gives is left out."""
    def name(lemma) -> str:
        return lemma.name().replace("_", " ")

    found: dict[int, dict[tuple[str, str], None]] = {0: {}, 1: {}, 2: {}}
    for synset in wordnet.all_synsets():
        names = list(dict.fromkeys(name(lemma) for lemma in synset.lemmas()))
        for pair in itertools.combinations(names[:6], 2):
            found[0][pair] = None
        # nltk keeps a synset's pointers in sets: sorted, so that the pairs do not follow Python's string hashing
        for hypernym in sorted(synset.hypernyms(), key=lambda s: s.name()):
            found[1][(names[0], name(hypernym.lemmas()[0]))] = None
        sisters = [name(h.lemmas()[0]) for h in sorted(synset.hyponyms(), key=lambda s: s.name())]
        for pair in zip(sisters, sisters[1:]):
            found[2][pair] = None
    # a pair that two relations give (synonyms in one sense, hypernyms in another) has no one label
    labels: dict[frozenset, set[int]] = {}
    for label, pairs in found.items():
        for a, b in pairs:
            labels.setdefault(frozenset((fold(a), fold(b))), set()).add(label)
    return {label: [(a, b) for a, b in pairs if fold(a) != fold(b) and len(labels[frozenset((fold(a), fold(b)))]) == 1]
            for label, pairs in found.items()}


def ptc_pairs(burt: BurtParams, nltk_data: Path, seed: int, blocked: set[str]) -> tuple[LabelledPairs, dict[str, int], int]:
    """Up to `burt.ptc_pairs_per_label` pairs of each class without a test or tune text (so that the leak filter
    leaves the classes balanced), how many each class had without one, and how many it dropped."""
    if burt.ppdb_file is not None:
        ppdb = read_ppdb(Path(burt.ppdb_file))
        found = {y: [(a, b) for a, b, z in zip(ppdb.left, ppdb.right, ppdb.labels) if z == y] for y in range(3)}
        source = ppdb.source
    else:
        from pearl.augment.token_level import load_wordnet

        found, source = wordnet_relations(load_wordnet(nltk_data)), f"WordNet ({nltk_data})"
    by_label = {y: [(a, b) for a, b in pairs if _clean(a, b, blocked)] for y, pairs in found.items()}
    dropped = sum(map(len, found.values())) - sum(map(len, by_label.values()))
    available = {PTC_LABELS[y]: len(pairs) for y, pairs in by_label.items()}
    rng = np.random.default_rng([seed, 6])
    parts = []
    for y, pairs in by_label.items():
        drawn = [pairs[i] for i in np.sort(rng.permutation(len(pairs))[: burt.ptc_pairs_per_label])]
        parts.append(([a for a, _ in drawn], [b for _, b in drawn], [y] * len(drawn)))
    return _joined(parts, source), available, dropped


class BurtPairs:
    """The pairs of each objective that is on, and the batch of one objective per step, in BURT's order:
    the sentence task every second batch, the phrase tasks in turn between."""

    def __init__(self, pairs: dict[str, LabelledPairs], batch_size: int, pi_negatives: int):
        self.pairs, self.batch_size, self.pi_negatives = pairs, batch_size, pi_negatives
        self.tasks = [task for task in CLASSES if task in pairs]
        self._partners = pairs["pi"].right if "pi" in pairs else []

    def steps_per_epoch(self) -> int:
        """Batches that draw as many examples as the objectives hold, a PI pair counting with its k negatives."""
        examples = sum(len(p.left) * (self.pi_negatives + 1 if task == "pi" else 1) for task, p in self.pairs.items())
        return -(-examples // self.batch_size)

    def task_at(self, step: int) -> str:
        others = [task for task in self.tasks if task != "nli"]
        if "nli" in self.tasks and others:
            return "nli" if step % 2 == 0 else others[(step // 2) % len(others)]
        return self.tasks[step % len(self.tasks)]

    def batch(self, seed: int, step: int) -> PairBatch:
        task = self.task_at(step)
        pairs = self.pairs[task]
        rng = np.random.default_rng([seed, 5, step])
        if task != "pi":
            rows = rng.integers(len(pairs.left), size=self.batch_size)
            return PairBatch(task, [pairs.left[i] for i in rows], [pairs.right[i] for i in rows], pairs.labels[rows])
        # each positive stands with k negatives in the set drawn from: a draw is a positive one time in k + 1
        draws = rng.integers(len(pairs.left) * (self.pi_negatives + 1), size=self.batch_size)
        rows, negative = draws // (self.pi_negatives + 1), draws % (self.pi_negatives + 1) > 0
        partners = rng.integers(len(self._partners), size=self.batch_size)
        right = [self._negative(pairs, i, p) if neg else pairs.right[i] for i, p, neg in zip(rows, partners, negative)]
        return PairBatch(task, [pairs.left[i] for i in rows], right, (~negative).astype(np.int64))

    def _negative(self, pairs: LabelledPairs, row: int, partner: int) -> str:
        """The drawn partner, or the next one where it is the pair's own text (a negative that is a paraphrase)."""
        own = {pairs.left[row], pairs.right[row]}
        for offset in range(len(self._partners)):
            text = self._partners[(partner + offset) % len(self._partners)]
            if text not in own:
                return text
        raise PearlError("burt.pi_weight: every PI pair has the same texts, so none can be a negative of another")


def load_burt_pairs(burt: BurtParams, burt_dir: Path, variants: Path, nltk_data: Path, blocked: set[str],
                    seed: int) -> tuple[BurtPairs, dict]:
    """The pairs of the objectives `burt` turns on, without test or tune texts, and what was kept and dropped."""
    blocked = blocked | burt_test_texts(burt_dir)
    loaded, record = {}, {}
    for task in burt.weights:
        extra = {}
        if task == "ptc":
            pairs, available, dropped = ptc_pairs(burt, nltk_data, seed, blocked)
            extra = {"available_per_label": available}
        else:
            pairs, dropped = _without_leaks(nli_pairs(burt, burt_dir) if task == "nli" else pi_positives(burt, variants),
                                            blocked)
        if not pairs.left:
            raise PearlError(f"burt.{task}_weight: every {task} pair has a side among the test and tune texts "
                             f"({pairs.source}); set the weight to 0")
        loaded[task] = pairs
        per_label = np.bincount(pairs.labels, minlength=CLASSES[task]).tolist()
        record[task] = {"source": pairs.source, "pairs": len(pairs.left), "dropped_test_or_tune": dropped,
                        "per_label": per_label, **extra}
    return BurtPairs(loaded, burt.batch_size, burt.pi_negatives), record
