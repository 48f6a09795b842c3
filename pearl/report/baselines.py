"""The majority class of each probe task: the accuracy of a probe that answers one class for every test item, the
floor beside which a probe's score is read."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pearl.bench import data, ppdb_split


def _share(labels: list[int]) -> float:
    return round(100 * Counter(labels).most_common(1)[0][1] / len(labels), 2)


def majority_shares(tasks: list[str], data_dir: Path, short_text_dir: Path) -> dict[str, float]:
    """task → the majority class's share of its test items, in percent, for the probe tasks among `tasks`. ATIS's test
    split is fixed; PPDB's is drawn per seed, so its share is the whole set's (the deduplicated set's for the clean
    tasks), which each random test split matches in expectation."""
    shares = {}
    if {"atis_s", "atis_l"} & set(tasks):
        atis = data.load_atis(short_text_dir)
        for task, part in (("atis_s", 0), ("atis_l", 1)):
            if task in tasks:
                shares[task] = _share(atis.splits["test"][part].labels)
    for raw, clean, filtered in (("ppdb", "ppdb_clean", False), ("ppdb_filtered", "ppdb_filtered_clean", True)):
        if {raw, clean} & set(tasks):  # each file read once for its task and its clean twin
            pairs = data.load_ppdb(data_dir, filtered)
            if raw in tasks:
                shares[raw] = _share(pairs.labels)
            if clean in tasks:
                shares[clean] = _share(ppdb_split.unordered_unique(pairs).pairs.labels)
    return shares
