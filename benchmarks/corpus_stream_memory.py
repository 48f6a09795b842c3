"""Memory of the corpus stage over a streamed Hugging Face dataset: flat, whatever the stream's length.

The hub is unreachable here, so the benchmark first writes a local stand-in for wikimedia/wikipedia
(Parquet files with its columns id, url, title, text; the offline Vital Articles leads repeated up to
100K documents) and points `corpus.source: wikipedia` at it: `datasets.load_dataset(folder, "default",
streaming=True)` is the same streaming reader as for the hub. Each run is a fresh process; its memory
is sampled every 0.2 s: the stage's own process (which would grow if it held the stream), as RSS and
as private memory (RSS less shared pages: a Ray driver maps the batches it gets back from the
object store's shared memory, and those pages count in its RSS), and its whole process tree (Ray's
head processes and actors included; shared pages count once per process).

Side by side, 10K and 100K documents, local engine and Ray: flat memory means the peak at 100K
documents is that at 10K. The Ray runs (Parquet shards and a manifest) must also write the local
run's rows, in its order.

    python benchmarks/corpus_stream_memory.py                # 10K and 100K documents
    python benchmarks/corpus_stream_memory.py --docs 2000 20000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from pearl.artifacts import SENTENCES_SCHEMA, read_artifact
from pearl.corpus.sources import iter_wiki_vital

MiB = 2**20


def write_stand_in(folder: Path, documents: int, per_file: int = 10_000) -> None:
    leads = [(title, text) for title, text in iter_wiki_vital() if text]
    (folder / "data").mkdir(parents=True)
    files = -(-documents // per_file)
    for f in range(files):
        rows = range(f * per_file, min((f + 1) * per_file, documents))
        titles = [leads[i % len(leads)][0] for i in rows]
        pq.write_table(pa.table({
            "id": [str(i) for i in rows],
            "url": [f"https://en.wikipedia.org/wiki/{t.replace(' ', '_')}" for t in titles],
            "title": titles,
            "text": [leads[i % len(leads)][1] for i in rows],
        }), folder / "data" / f"train-{f:05d}-of-{files:05d}.parquet")


def run_stage(overrides: dict, folder: Path) -> dict:
    """Run the corpus stage in a fresh process; its metrics and the memory it used over time."""
    folder.mkdir()
    child = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(overrides), str(folder)])
    process = psutil.Process(child.pid)
    samples = []  # (seconds, own RSS, own RSS less shared pages, tree RSS)
    started = time.perf_counter()
    while child.poll() is None:
        try:
            own = process.memory_info()
            tree = own.rss
            for p in process.children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    tree += p.memory_info().rss
            samples.append((time.perf_counter() - started, own.rss, own.rss - own.shared, tree))
        except psutil.NoSuchProcess:  # the stage has just ended
            pass
        time.sleep(0.2)
    if child.returncode:
        raise SystemExit(f"the corpus stage failed with {overrides}")
    return {"metrics": json.loads((folder / "corpus.json").read_text()), "samples": samples,
            "rows": read_artifact(folder / "sentences.parquet", SENTENCES_SCHEMA)}


def child(overrides: str, folder: str) -> None:
    from pearl.corpus import stage
    from pearl.params import load_params

    params = load_params(Path(__file__).resolve().parents[1] / "params.yaml", json.loads(overrides))
    stage.run(params, output=Path(folder) / "sentences.parquet", metrics=Path(folder) / "corpus.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory() as scratch:
        stand_in = Path(scratch) / "wikipedia-stand-in"
        write_stand_in(stand_in, max(args.docs))
        source = {"corpus.source": "wikipedia", "corpus.hf_dataset": str(stand_in), "corpus.hf_config": "default"}
        engines = {"local": {"engine": "local"}, "Ray, 2 actors": {"engine": "ray", "ray.num_cpus": 2}}
        results = {}
        for docs in args.docs:
            for engine, overrides in engines.items():
                folder = Path(scratch) / f"{docs}-{len(results)}"
                results[docs, engine] = run_stage({**source, **overrides, "corpus.max_docs": docs}, folder)

    print(f"\nlocal stand-in for wikimedia/wikipedia streamed by `datasets` (streaming=True); 2 CPU cores\n")
    print("| documents | engine | sentences | seconds | sentences/s | stage process peak RSS MiB | "
          "private at ¼ / ½ / ¾ of the run / peak MiB | process tree peak RSS MiB | same rows as local |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (docs, engine), r in results.items():
        m, samples = r["metrics"], r["samples"]
        private = [samples[int(len(samples) * q)][2] / MiB for q in (0.25, 0.5, 0.75)] + [max(s[2] for s in samples) / MiB]
        same = r["rows"].equals(results[docs, "local"]["rows"])
        print(f"| {docs:,} | {engine} | {m['sentences']:,} | {m['seconds']:.1f} | {m['sentences_per_s']:.0f} | "
              f"{max(s[1] for s in samples) / MiB:.0f} | {' / '.join(f'{q:.0f}' for q in private)} | "
              f"{max(s[3] for s in samples) / MiB:.0f} | {'yes' if same else 'NO'} |")
    small, large = min(args.docs), max(args.docs)
    print(f"\ngrowth of the peaks from {small:,} to {large:,} documents:")
    for engine in engines:
        grow = [max(s[i] for s in results[large, engine]["samples"]) - max(s[i] for s in results[small, engine]["samples"])
                for i in (1, 2, 3)]
        print(f"- {engine}: stage process RSS {grow[0] / MiB:+.0f} MiB, private {grow[1] / MiB:+.0f} MiB; "
              f"process tree RSS {grow[2] / MiB:+.0f} MiB")
    if not all(r["rows"].equals(results[docs, "local"]["rows"]) for (docs, _), r in results.items()):
        raise SystemExit("Ray wrote other sentences than the local engine")


if __name__ == "__main__":
    main()
