"""Encoding in batches cut by token count (pearl.embedder) against sentence-transformers' own batching.

sentence-transformers sorts a call's texts by characters before batching. Short names of equal
length in characters differ in tokens ("Oho!" against "Good Words"), so its batches carry much
padding. `Embedder.embed` sorts by the model's token count and hands each batch to
sentence-transformers on its own. On the names of a few AutoFJ datasets (left and right tables,
each name once), side by side in one run and in alternating order: the seconds of each, the
padded tokens each one runs, and the largest difference between their vectors.

    python benchmarks/encode_batching.py --markdown metrics/encode_batching.md
    python benchmarks/encode_batching.py --model models/pearl --datasets Magazine Song
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from pearl.embedder import Embedder, token_sorted_batches


def padded_tokens(model, texts: list[str], batches: list[np.ndarray]) -> int:
    lengths = np.array([len(ids) for ids in model.tokenizer(texts, truncation=True,
                                                          max_length=model.max_seq_length)["input_ids"]])
    return int(sum(len(batch) * lengths[batch].max() for batch in batches))


def char_sorted_batches(texts: list[str], batch_size: int) -> list[np.ndarray]:
    order = np.argsort([-len(text) for text in texts], kind="stable")  # sentence-transformers' order
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def main() -> None:
    from autofj.datasets import load_data

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--datasets", nargs="+", default=["Galaxy", "Magazine", "Song"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    embedder = Embedder(args.model, "", args.batch_size, 1 << 30, "cpu")
    model = embedder.model
    lines = [f"{args.model}, batch {args.batch_size}, {os.cpu_count()} cores; seconds: the faster of two rounds\n",
             "| dataset | names | padded tokens: by characters | by tokens | s: sentence-transformers | pearl | "
             "max abs difference |", "|---|---|---|---|---|---|---|"]
    print("\n".join(lines))
    for name in args.datasets:
        left, right, _ = load_data(name)
        texts = list(dict.fromkeys(str(t) for t in list(left["title"]) + list(right["title"])))
        seconds = {"st": [], "pearl": []}
        for _ in range(2):  # alternating, so neither gets the warmer machine
            start = time.perf_counter()
            theirs = model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True)
            seconds["st"].append(time.perf_counter() - start)
            start = time.perf_counter()
            ours = embedder.embed(texts)
            seconds["pearl"].append(time.perf_counter() - start)
        by_chars = padded_tokens(model, texts, char_sorted_batches(texts, args.batch_size))
        by_tokens = padded_tokens(model, texts, token_sorted_batches(model, texts, args.batch_size))
        lines.append(f"| {name} | {len(texts):,} | {by_chars:,} | {by_tokens:,} | {min(seconds['st']):.2f} | "
                     f"{min(seconds['pearl']):.2f} | {float(np.abs(theirs - ours).max()):.1e} |")
        print(lines[-1], flush=True)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
