"""Side-by-side `pearl bench --out` folders as one Markdown table, with the report's means.

Each folder holds one system's <task>.json files; a task missing from a folder shows as "–", and a mean
only where all its tasks are there. A system given several folders (one per training seed, comma-separated)
shows mean ± std over them, each seed's means taken first, as `pearl experiments results` does. Prints the
table; --out also writes it.

    python benchmarks/bench_table.py w0.2=/tmp/bench/w02 w0=/tmp/bench/w0 MiniLM=/tmp/bench/minilm --out t.md
    python benchmarks/bench_table.py "PEARL-base=s42/bench,s1/bench,s2/bench" MiniLM=/tmp/bench/minilm
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pearl.errors import PearlError
from pearl.experiments.bench_table import scores, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="+", metavar="LABEL=FOLDER[,FOLDER…]")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    if bad := [s for s in args.systems if "=" not in s]:
        parser.error(f"{bad[0]!r}: write LABEL=FOLDER")
    folders = {label: [Path(f) for f in spec.split(",")] for label, spec in (s.split("=", 1) for s in args.systems)}
    if empty := [f for fs in folders.values() for f in fs if not any(f.glob("*.json"))]:
        parser.error(f"{empty[0]}: no <task>.json here; pass a folder written by `pearl bench --out`")
    try:
        text = table({label: [scores(f) for f in fs] for label, fs in folders.items()})
    except PearlError as error:
        parser.exit(1, f"{error}\n")
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
