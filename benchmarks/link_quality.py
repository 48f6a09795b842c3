"""Entity linking through `pearl index` + `pearl link` on the YAGO and UMLS test files.

The dictionary is what the benchmark stage ranks against (the test file's canonical names, or
the knowledge base that `bench.<task>_kb` names), indexed with `Index.build`; each mention is
linked with k = 10. Reported: recall@1/5/10 (the gold name among the top k), and beside it the
top-1 of the benchmark stage's own metrics (metrics/bench/<system>/<task>.json, which credits
a tie of k names 1/k; `link` orders ties by dictionary row instead).

    python benchmarks/link_quality.py                              # the trained export
    python benchmarks/link_quality.py --models models/pearl,string
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from pearl.bench import data
from pearl.bench.run import resolve_kb
from pearl.index.encoder import load_encoder
from pearl.index.phrase_index import Index
from pearl.linking.link import link
from pearl.log import configure_logging
from pearl.params import load_params

ROOT = Path(__file__).resolve().parents[1]
STAGE_SYSTEM = {"models/pearl": "model", "string": "string"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="models/pearl")
    parser.add_argument("--tasks", default="yago,umls")
    args = parser.parse_args()
    configure_logging()
    params = load_params(ROOT / "params.yaml")
    print(f"{os.cpu_count()} cores")
    print(f"{'encoder':<40} {'task':<5} {'mentions':>8} {'dictionary':>10} {'R@1':>6} {'R@5':>6} {'R@10':>6} "
          f"{'stage top-1':>11} {'seconds':>8}")
    for model in args.models.split(","):
        encoder = load_encoder(model)
        for task in args.tasks.split(","):
            kb = resolve_kb(getattr(params.bench, f"{task}_kb"), task, params.bench.hf_dataset)
            dataset = data.load_retrieval(Path(params.bench.data_dir), task, kb)
            start = time.perf_counter()
            index = Index.build(dataset.dictionary, encoder=encoder)
            links = link(index, dataset.mentions, "mention", k=10)
            seconds = time.perf_counter() - start
            ranks = np.full(len(dataset.mentions), np.inf)
            for row, rank, name in links.select("mention_row", "rank", "name").iter_rows():
                if name == dataset.gold[row]:
                    ranks[row] = rank
            recall = {k: 100 * float(np.mean(ranks <= k)) for k in (1, 5, 10)}
            system = "base" if model == params.model.backbone else STAGE_SYSTEM.get(model)
            stage = ROOT / "metrics/bench" / (system or "-") / f"{task}.json"
            stage_top1 = f"{json.loads(stage.read_text())['score']:.2f}" if system and stage.is_file() else "–"
            print(f"{model:<40} {task:<5} {len(dataset.mentions):>8} {len(dataset.dictionary):>10} {recall[1]:6.2f} "
                  f"{recall[5]:6.2f} {recall[10]:6.2f} {stage_top1:>11} {seconds:8.0f}", flush=True)


if __name__ == "__main__":
    main()
