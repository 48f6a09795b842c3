"""pearl's side of benchmarks/peers.py: one encoder, one task, every data set of a folder, in one process
that the driver times; the peers' side is benchmarks/peer_tasks.py, with the same inputs and outputs.

    python benchmarks/pearl_tasks.py --model string --task join --data DIR --out DIR [--threshold auto|T]

DIR holds one folder per data set with `right.parquet` (and `left.parquet` but for dedupe), one string column
`name`. The task is run as a user runs pearl's Python API, with each verb's defaults:
- link: `pearl.Index.from_table` of the left names, then `pearl.link(k=1)`; pearl has no link threshold of
  its own, so every top-1 is accepted;
- join: `pearl.join(how="left")`, whose default chooses its join functions and cuts for precision 0.9
  without labels;
- dedupe: `pearl.cluster(threshold="auto")`, the cut chosen without labels (or `--threshold`).
Per data set it writes `<name>.parquet` (link: right_row, left_row, score, accepted; join: right_row,
left_row; dedupe: row, cluster) and `<name>.json` (its seconds, the model loaded once before the first).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import polars as pl

import pearl
from pearl.index.encoder import loaded


def link(encoder, left: pl.DataFrame, right: pl.DataFrame) -> pl.DataFrame:
    index = pearl.Index.from_table(left.with_row_index("id").with_columns(pl.col("id").cast(pl.String)), "name",
                                   id_column="id", encoder=encoder)
    linked = pearl.link(index, right, "name", k=1).sort("mention_row")
    return pl.DataFrame({"right_row": linked["mention_row"],
                         "left_row": linked["id"].cast(pl.Int64).fill_null(-1),
                         "score": linked["score"].cast(pl.Float64),
                         "accepted": linked["matched"]})


def join(encoder, left: pl.DataFrame, right: pl.DataFrame) -> pl.DataFrame:
    joined = pearl.join(left.with_row_index("left_row"), right.with_row_index("right_row"), "name", "name", how="left",
                        encoder=encoder)
    return joined.select(pl.col("right_row").cast(pl.Int64),
                         pl.when(pl.col("matched")).then(pl.col("left_row")).otherwise(-1).cast(pl.Int64))


def dedupe(encoder, right: pl.DataFrame, threshold: str) -> pl.DataFrame:
    clusters = pearl.cluster(right, "name", threshold=threshold, encoder=encoder)
    return pl.DataFrame({"row": np.arange(len(right), dtype=np.int64), "cluster": clusters["cluster"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--task", choices=("link", "join", "dedupe"), required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threshold", default="auto", help="dedupe: `pearl cluster --threshold` (default auto)")
    args = parser.parse_args()
    started = time.perf_counter()
    encoder = loaded(args.model)
    load_seconds = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    for folder in sorted(p for p in args.data.iterdir() if p.is_dir()):
        right = pl.read_parquet(folder / "right.parquet")
        started = time.perf_counter()
        if args.task == "dedupe":
            result = dedupe(encoder, right, args.threshold)
        else:
            result = {"link": link, "join": join}[args.task](encoder, pl.read_parquet(folder / "left.parquet"), right)
        seconds = time.perf_counter() - started
        result.write_parquet(args.out / f"{folder.name}.parquet")
        (args.out / f"{folder.name}.json").write_text(json.dumps({"seconds": seconds, "load_seconds": load_seconds}))
    print(json.dumps({"tool": "pearl", "model": args.model, "version": pearl_version(), "task": args.task,
                      "settings": {"threshold": args.threshold} if args.task == "dedupe" else {}}))


def pearl_version() -> str:
    from importlib.metadata import version

    return version("pearl")


if __name__ == "__main__":
    main()
