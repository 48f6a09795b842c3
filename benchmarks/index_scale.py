"""`pearl index` at scale: build time, memory, query latency and approximate-search recall.

Names: mining's realistic pool, benchmarks/phrase_pool.py (our phrases, the AutoFJ titles,
the YAGO/UMLS names, then typo / dropped-word / added-word variants of them) up to `--size`.
They are encoded once and cached (`--cache`), so the index figures exclude encoding; queries are
1,000 further variants that are not in the index.

One run prints, side by side:
1. encoding throughput of `Index.build` against plain `SentenceTransformer.encode` on the same
   model and names (`--throughput-names`), as a ratio;
2. for the exact (IndexFlatIP) and the approximate (HNSW) index of `--size` names: build
   seconds, resident memory added, search latency p50/p95 for batches of 1 and 1,000, and
   recall@10 against exact search.

    python benchmarks/index_scale.py                      # 1M names, all-MiniLM-L6-v2
    python benchmarks/index_scale.py --size 100000        # a quicker look
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from pearl.index.encoder import EmbeddingEncoder
from pearl.index.phrase_index import Index, IndexSettings
from pearl.log import configure_logging
from pearl.model_ids import model_cache
from phrase_pool import phrases_of_size, real_phrases, variant


def resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class CachedEncoder:
    """An encoder whose vectors were computed earlier: the index figures leave encoding out."""

    kind = "embedding"

    def __init__(self, card, texts: list[str], vectors: np.ndarray):
        self.card = card
        self.row = {text: i for i, text in enumerate(texts)}
        self.vectors = vectors

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.vectors[[self.row[t] for t in texts]]

    def truncated(self, texts: list[str]) -> int:
        return 0


def cached_vectors(encoder: EmbeddingEncoder, texts: list[str], cache: Path) -> np.ndarray:
    if cache.is_file():
        vectors = np.load(cache)
        if len(vectors) == len(texts):
            print(f"vectors: {cache} (cached)")
            return vectors
    start = time.perf_counter()
    vectors = encoder.encode(texts)
    print(f"encoded {len(texts)} names in {time.perf_counter() - start:.0f} s → {cache}")
    cache.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache.parent, suffix=".npy", delete=False) as tmp:
        np.save(tmp, vectors)
    os.replace(tmp.name, cache)
    return vectors


def throughput(encoder: EmbeddingEncoder, names: list[str], rounds: int) -> None:
    """Median names/s of three ways to encode the same names, run in turn `rounds` times."""
    st = encoder.embedder.model
    st.encode(names[:256])  # warm-up

    def pearl_build() -> None:
        with tempfile.TemporaryDirectory() as scratch:
            Index.build(names, encoder=encoder).save(Path(scratch) / "index")

    ways = {
        "pearl Index.build + save": pearl_build,
        "SentenceTransformer.encode (defaults)": lambda: st.encode(names),
        f"SentenceTransformer.encode (batch {encoder.embedder.batch_size}, normalised)":
            lambda: st.encode(names, batch_size=encoder.embedder.batch_size, normalize_embeddings=True),
    }
    seconds = {way: [] for way in ways}
    for _ in range(rounds):
        for way, run in ways.items():
            start = time.perf_counter()
            run()
            seconds[way].append(time.perf_counter() - start)
    ours = float(np.median(seconds["pearl Index.build + save"]))
    print(f"\nencoding throughput, {len(names)} distinct names, median of {rounds} rounds, {os.cpu_count()} cores")
    for way, times in seconds.items():
        median = float(np.median(times))
        print(f"  {way:<48} {len(names) / median:8.0f} names/s   pearl / this: {median / ours:.2f}")


def latencies(index: Index, queries: list[str], batch: int, rounds: int) -> tuple[float, float]:
    times = []
    for r in range(rounds):
        chunk = [queries[(r * batch + i) % len(queries)] for i in range(batch)]
        start = time.perf_counter()
        index.search(chunk, 10)
        times.append((time.perf_counter() - start) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--throughput-names", type=int, default=5_000)
    parser.add_argument("--throughput-rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=model_cache() / "bench")
    args = parser.parse_args()
    configure_logging()

    pool = real_phrases(Path(__file__).resolve().parents[1])
    names, real = phrases_of_size(args.size, pool, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    words = sorted({w for p in pool[:50_000] for w in p.split()})
    taken = set(names)
    queries = []
    while len(queries) < args.queries:
        q = variant(pool[int(rng.integers(len(pool)))], words, rng)
        if q not in taken:
            taken.add(q)
            queries.append(q)
    encoder = EmbeddingEncoder(args.model)
    print(f"{len(names)} names ({real} real), {len(queries)} held-out queries, {args.model}, {os.cpu_count()} cores")
    if args.throughput_rounds:
        throughput(encoder, names[: args.throughput_names], args.throughput_rounds)

    cache = args.cache / f"{args.model.replace('/', '__')}-{args.size}-{args.seed}.npy"
    vectors = cached_vectors(encoder, names, cache)
    query_vectors = encoder.encode(queries)
    cached = CachedEncoder(encoder.card, names + queries, np.vstack([vectors, query_vectors]))

    print(f"\n{'index':<10} {'build s':>8} {'memory MB':>10} {'p50 1 ms':>9} {'p95 1 ms':>9} "
          f"{'p50 1K ms':>10} {'p95 1K ms':>10} {'recall@10':>10}")
    exact_rows = None
    for label, settings in (("exact", IndexSettings(exact_below=args.size + 1)), ("hnsw", IndexSettings(exact_below=0))):
        before = resident_mb()
        start = time.perf_counter()
        index = Index.build(names, encoder=cached, settings=settings)
        build = time.perf_counter() - start
        memory = resident_mb() - before
        p50_1, p95_1 = latencies(index, queries, 1, 200)
        p50_k, p95_k = latencies(index, queries, 1000, 5)
        _, rows = index.search(queries, 10)
        if exact_rows is None:
            exact_rows, recall = rows, 1.0
        else:
            recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows, exact_rows)]))
        print(f"{index.kind:<10} {build:>8.1f} {memory:>10.0f} {p50_1:>9.2f} {p95_1:>9.2f} "
              f"{p50_k:>10.1f} {p95_k:>10.1f} {recall:>10.3f}", flush=True)
        del index


if __name__ == "__main__":
    main()
