"""Loaders of the benchmark data files; a missing file names itself and the param to change."""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pearl.errors import PearlError
from pearl.lone_surrogates import reject_lone_surrogate

BENCHMARK_README = "see data/reference/pearl-benchmark/README.md"


def _require(path: Path, param: str, holds: str = "the folder that holds it") -> Path:
    if not path.is_file():
        readme = "see data/reference/pearl-tune/README.md" if param == "bench.tune_dir" else BENCHMARK_README
        raise PearlError(f"{path} is missing: set {param} to {holds} ({readme})")
    return path


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise PearlError(f"{path}:{line}: not UTF-8 text; re-save the file as UTF-8") from None


def _nonempty(path: Path, items: list, what: str) -> list:
    if not items:
        raise PearlError(f"{path}: holds no {what}; restore the file (see the README of its folder under data/reference)")
    return items


@dataclass(frozen=True)
class PairData:
    left: list[str]
    right: list[str]
    labels: list[int]


PPDB_LABELS = {"pos": 1, "neg": 0}


def load_ppdb(data_dir: Path, filtered: bool) -> PairData:
    path = _require(data_dir / "ppdb" / ("ppdb_filtered.json" if filtered else "ppdb.json"), "bench.data_dir")
    try:
        rows = json.loads(_text(path))
        left, right, labels = [str(r[0]) for r in rows], [str(r[1]) for r in rows], [r[2] for r in rows]
    except (json.JSONDecodeError, IndexError, TypeError, KeyError):
        raise PearlError(f"{path}: expected a JSON list of [phrase1, phrase2, 'pos'|'neg', ...]") from None
    for number, label in enumerate(labels):
        if label not in PPDB_LABELS:
            raise PearlError(f"{path}: pair {number} has label {label!r}; expected 'pos' or 'neg'")
        reject_lone_surrogate(left[number] + right[number], f"{path}: pair {number}")
    _nonempty(path, rows, "pairs")
    return PairData(left, right, [PPDB_LABELS[label] for label in labels])


@dataclass(frozen=True)
class ChoiceItem:
    query: str
    candidates: list[str]  # the gold first
    gold: int = 0


def load_turney(data_dir: Path) -> list[ChoiceItem]:
    path = _require(data_dir / "turney" / "turney.txt", "bench.data_dir")
    items = []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(" | ")]
        if len(fields) < 5:
            raise PearlError(f"{path}:{number}: expected 'bigram | gold | w1 | w2 | distractors...'")
        # columns 2-3 are the bigram's own words: not candidates
        items.append(ChoiceItem(fields[0], [fields[1], *fields[4:]]))
    return _nonempty(path, items, "items")


@dataclass(frozen=True)
class ScoredPairs:
    left: list[str]
    right: list[str]
    scores: list[float]


def load_bird(data_dir: Path) -> ScoredPairs:
    path = _require(data_dir / "bird" / "bird.txt", "bench.data_dir")
    rows = list(csv.DictReader(_text(path).splitlines(), delimiter="\t"))
    if not rows or not {"term1", "term2", "relatedness score"} <= rows[0].keys():
        raise PearlError(f"{path}: expected a TSV header with term1, term2 and 'relatedness score'")
    scores = []
    for number, row in enumerate(rows, start=2):
        try:
            scores.append(float(row["relatedness score"]))
        except (TypeError, ValueError):
            raise PearlError(f"{path}:{number}: relatedness score {row['relatedness score']!r} is not a number") from None
    return ScoredPairs([r["term1"] for r in rows], [r["term2"] for r in rows], scores)


@dataclass(frozen=True)
class RetrievalData:
    mentions: list[str]
    gold: list[str]
    dictionary: list[str]
    dictionary_source: str


def load_lines(path: Path) -> list[str]:
    return [line.split("\t")[0].strip() for line in _text(path).splitlines() if line.strip()]


def load_retrieval(data_dir: Path, task: str, kb: Path | None) -> RetrievalData:
    path = _require(data_dir / task / f"{task}_test_samples.txt", "bench.data_dir")
    mentions, gold = [], []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            raise PearlError(f"{path}:{number}: expected 'mention<TAB>canonical name'")
        mentions.append(fields[0].strip())
        gold.append(fields[1].strip())
    _nonempty(path, mentions, "mentions")
    if kb is None:
        names, source = gold, f"canonical names of {path.name}"
    else:
        names, source = load_lines(_require(kb, f"bench.{task}_kb", "the dictionary file, or null")) + gold, f"knowledge base {kb.name}"
    # the gold names are always in the dictionary: retrieval can only fail by ranking
    return RetrievalData(mentions, gold, list(dict.fromkeys(names)), source)


@dataclass(frozen=True)
class ClusteringData:
    phrases: list[str]
    labels: list[int]
    types: list[str]


CLUSTER_TYPES = {"conll2003": ("PER", "LOC", "ORG"), "bc5cdr": ("Chemical", "Disease")}


def load_clustering(data_dir: Path, task: str, split: str = "test") -> ClusteringData:
    """Every entity mention of the kept types (not deduplicated), as the paper's evaluation."""
    path = _require(data_dir / task / f"{split}.json", "bench.data_dir" if split == "test" else "bench.tune_dir")
    types = CLUSTER_TYPES[task]
    phrases, labels = [], []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        first = len(phrases)
        try:
            record = json.loads(line)
            tokens = [token for sentence in record["sentences"] for token in sentence]
            spans = [span for sentence in record["ner"] for span in sentence]
            for start, end, kind in spans:  # end inclusive, offsets into the whole document
                if kind in types:
                    phrases.append(" ".join(tokens[start:end + 1]))
                    labels.append(types.index(kind))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise PearlError(f"{path}:{number}: expected JSON with 'sentences' and 'ner' [start, end, type] spans") from None
        for phrase in phrases[first:]:
            reject_lone_surrogate(phrase, f"{path}:{number}")
    _nonempty(path, phrases, f"mentions of the types {', '.join(types)}")
    return ClusteringData(phrases, labels, list(types))


@dataclass(frozen=True)
class JoinData:
    name: str
    left: list[str]
    right: list[str]  # right titles that have a ground-truth match
    gold: list[str]   # the matching left title of each


def autofj_names() -> list[str]:
    from importlib.util import find_spec

    spec = find_spec("autofj")
    if spec is None:
        raise PearlError("the PyPI package autofj is not installed: run `bash scripts/setup.sh`")
    root = Path(next(iter(spec.submodule_search_locations))) / "benchmark"
    return sorted(p.name for p in root.iterdir() if (p / "gt.csv").is_file())


def load_autofj(name: str) -> JoinData:
    from autofj.datasets import load_data

    left, right, gt = load_data(name)
    left_titles = [str(t) for t in left["title"].dropna()]
    gold = dict(zip(gt["title_r"].astype(str), gt["title_l"].astype(str)))
    queries = [str(t) for t in right["title"].dropna() if str(t) in gold]
    return JoinData(name, left_titles, queries, [gold[q] for q in queries])


@dataclass(frozen=True)
class IntentSplit:
    texts: list[str]
    labels: list[int]


@dataclass(frozen=True)
class IntentData:
    intents: list[str]
    cut: int  # queries of at most `cut` tokens are short (ATIS-S), longer ones long (ATIS-L)
    splits: dict[str, tuple[IntentSplit, IntentSplit]]  # split → (short, long)


def load_atis(short_text_dir: Path, top: int = 8) -> IntentData:
    """The `top` most frequent single intents; the cut is the median token count of train."""
    raw = {}
    for split in ("train", "dev", "test"):
        folder = short_text_dir / "atis" / split
        texts = _text(_require(folder / "seq.in", "bench.short_text_dir")).splitlines()
        labels = _text(_require(folder / "label", "bench.short_text_dir")).splitlines()
        if len(texts) != len(labels):
            raise PearlError(f"{folder}: seq.in and label differ in length")
        raw[split] = list(zip(texts, labels))
    frequency = Counter(label for _, label in raw["train"] if "#" not in label)
    intents = [label for label, _ in frequency.most_common(top)]
    kept = {s: [(t, intents.index(l)) for t, l in rows if l in intents and t.strip()] for s, rows in raw.items()}
    for split, rows in kept.items():
        if not rows:
            raise PearlError(f"{short_text_dir / 'atis' / split}: no non-blank query with one of the {top} most "
                             "frequent single intents of train; restore the files (see data/reference/short-text/README.md)")
    lengths = sorted(len(t.split()) for t, _ in kept["train"])
    cut = lengths[(len(lengths) - 1) // 2]  # the lower median
    splits = {}
    for split, rows in kept.items():
        short = [(t, l) for t, l in rows if len(t.split()) <= cut]
        long = [(t, l) for t, l in rows if len(t.split()) > cut]
        splits[split] = tuple(IntentSplit([t for t, _ in part], [l for _, l in part]) for part in (short, long))
    return IntentData(intents, cut, splits)


GENERAL_README = "see data/reference/general-similarity/README.md"


def _require_general(path: Path) -> Path:
    if not path.is_file():
        raise PearlError(f"{path} is missing: set bench.general_dir to the folder that holds it ({GENERAL_README})")
    return path


def load_word_similarity(general_dir: Path, file_name: str) -> ScoredPairs:
    """`word1<TAB>word2<TAB>gold` lines (Faruqui et al.'s collection)."""
    path = _require_general(general_dir / "word-sim" / file_name)
    left, right, scores = [], [], []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            pair, score = (fields[0].strip(), fields[1].strip()), float(fields[2])
        except (IndexError, ValueError):
            raise PearlError(f"{path}:{number}: expected 'word1<TAB>word2<TAB>score'") from None
        left.append(pair[0]), right.append(pair[1]), scores.append(score)
    _nonempty(path, scores, "pairs")
    return ScoredPairs(left, right, scores)


def load_stsb(general_dir: Path, split: str) -> ScoredPairs:
    """STS Benchmark's `genre, file, year, id, score, sentence1, sentence2[, extra...]` lines."""
    path = _require_general(general_dir / "stsbenchmark" / f"sts-{split}.csv")
    left, right, scores = [], [], []
    # no csv module: sentences hold bare double quotes, and 284 test lines carry extra fields
    for number, line in enumerate(_text(path).splitlines(), start=1):
        fields = line.split("\t")
        try:
            score, pair = float(fields[4]), (fields[5], fields[6])
        except (IndexError, ValueError):
            raise PearlError(f"{path}:{number}: expected 7 tab-separated fields with the score fifth") from None
        left.append(pair[0]), right.append(pair[1]), scores.append(score)
    _nonempty(path, scores, "pairs")
    return ScoredPairs(left, right, scores)


BURT_README = "see data/reference/burt/README.md"
NLI_LABELS = ("entailment", "neutral", "contradiction")  # class ids 0, 1, 2 of BURT's NLI objective
SICK_SPLITS = ("TRAIN", "TRIAL", "TEST")


@dataclass(frozen=True)
class NliPairs:
    left: list[str]  # premises
    right: list[str]  # hypotheses
    labels: list[int]  # index into NLI_LABELS
    scores: list[float] | None = None  # SICK's relatedness (1–5)


def _require_burt(path: Path) -> Path:
    if not path.is_file():
        raise PearlError(f"{path} is missing: set bench.burt_dir to the folder that holds it ({BURT_README})")
    return path


def load_sick(burt_dir: Path, split: str) -> NliPairs:
    """One SemEval split of SICK's full release: sentence pairs, entailment labels and relatedness."""
    path = _require_burt(burt_dir / "SICK.txt")
    lines = _text(path).splitlines()
    header = lines[0].split("\t") if lines else []
    needed = ("sentence_A", "sentence_B", "entailment_label", "relatedness_score", "SemEval_set")
    if not set(needed) <= set(header):
        raise PearlError(f"{path}: expected a tab-separated header with {', '.join(needed)}")
    column = {name: header.index(name) for name in needed}
    left, right, labels, scores = [], [], [], []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        try:
            if fields[column["SemEval_set"]] != split:
                continue
            label = NLI_LABELS.index(fields[column["entailment_label"]].lower())
            score = float(fields[column["relatedness_score"]])
        except (IndexError, ValueError):
            raise PearlError(f"{path}:{number}: expected {len(header)} tab-separated fields with an entailment label "
                             f"({', '.join(NLI_LABELS).upper()}) and a numeric relatedness") from None
        left.append(fields[column["sentence_A"]]), right.append(fields[column["sentence_B"]])
        labels.append(label), scores.append(score)
    _nonempty(path, labels, f"{split} pairs")
    return NliPairs(left, right, labels, scores)


def load_snli(burt_dir: Path, split: str) -> NliPairs:
    """SentEval's copy of an SNLI split: premises, hypotheses and labels, one pair a line across three files."""
    files = [_require_burt(burt_dir / f"snli_{part}.{split}") for part in ("s1", "s2", "labels")]
    premises, hypotheses, names = ([line.strip() for line in _text(f).splitlines()] for f in files)
    if not len(premises) == len(hypotheses) == len(names):
        raise PearlError(f"{files[0].parent}: snli_s1, snli_s2 and snli_labels .{split} have "
                         f"{len(premises)}, {len(hypotheses)} and {len(names)} lines; they must match")
    unknown = sorted(set(names) - set(NLI_LABELS))
    if unknown:
        raise PearlError(f"{files[2]}: unknown label(s) {', '.join(unknown[:3])} (expected {', '.join(NLI_LABELS)})")
    _nonempty(files[0], premises, "pairs")
    return NliPairs(premises, hypotheses, [NLI_LABELS.index(name) for name in names])
