"""What each encoder costs a user: names encoded per second, load seconds and vector size, side by side.

The names are those of a few AutoFJ datasets (left and right tables, each name once), encoded as the
product verbs encode them (`pearl.embedder.Embedder`, batch 128, or 4,096 for a static model, which pads
nothing; the model's own token limit). The models run in turn, twice in alternating order so that
neither gets the warmer machine; a row keeps the faster of its two rounds.

    python benchmarks/model_cost.py --markdown metrics/model_cost.md
    python benchmarks/model_cost.py --models models/pearl models/pearl-base --datasets Song
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from pearl.embedder import STATIC_BATCH, Embedder

MODELS = ["models/pearl", "models/pearl-static", "models/pearl-base", "sentence-transformers/all-MiniLM-L6-v2",
          "sentence-transformers/all-mpnet-base-v2"]


def names(datasets: list[str]) -> list[str]:
    from autofj.datasets import load_data

    found: dict[str, None] = {}
    for name in datasets:
        left, right, _ = load_data(name)
        found.update(dict.fromkeys(str(t) for t in [*left["title"], *right["title"]]))
    return list(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--datasets", nargs="+", default=["Galaxy", "Magazine", "Song"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    texts = names(args.datasets)
    import sentence_transformers  # noqa: F401  the libraries' import, once, is no model's load time

    loaded, load_seconds, seconds = {}, {}, {model: [] for model in args.models}
    for model in args.models:
        start = time.perf_counter()
        loaded[model] = Embedder(model, "", args.batch_size, 1 << 30, "cpu")
        load_seconds[model] = time.perf_counter() - start
    for round_ in range(2):
        for model in args.models if round_ == 0 else reversed(args.models):
            start = time.perf_counter()
            loaded[model].embed(texts)
            seconds[model].append(time.perf_counter() - start)
    lines = [f"{len(texts):,} names of AutoFJ's {', '.join(args.datasets)}; batch {args.batch_size} "
             f"({STATIC_BATCH:,} for a static model), "
             f"{os.cpu_count()} cores, CPU; the faster of two rounds\n",
             "| model | names/s | seconds | load s | dimension |", "|---|---|---|---|---|"]
    for model in args.models:
        best = min(seconds[model])
        lines.append(f"| {model} | {len(texts) / best:,.0f} | {best:.2f} | {load_seconds[model]:.1f} | "
                     f"{loaded[model].model.get_embedding_dimension()} |")
    print("\n".join(lines))
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
