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
import json
from pathlib import Path

from pearl.errors import PearlError
from pearl.experiments.results import seed_stat, stat_cell
from pearl.report.summary import MEANS, TITLES, with_means


def scores(folder: Path) -> dict[str, float]:
    return with_means({path.stem: _score(path) for path in sorted(folder.glob("*.json"))})


def _score(path: Path) -> float:
    result = json.loads(path.read_text())
    if "score" not in result and len(result) == 1:  # a bench_ref stage's file: {reference model: its result}
        (result,) = result.values()
    if "score" not in result:
        raise PearlError(f"{path}: no 'score' (a bench_ref file of {len(result)} models? pass one model's folder)")
    return result["score"]


def table(systems: dict[str, list[dict[str, float]]]) -> str:
    """`systems`: label → one scores dict per seed."""
    found = [column for seeds in systems.values() for scores_ in seeds for column in scores_]
    tasks = list(dict.fromkeys(t for t in found if t in TITLES and t not in MEANS))
    columns = [*(t for t in TITLES if t in tasks), *(m for m in MEANS if m in found)]
    lines = ["| system | " + " | ".join(TITLES[c] for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for label, seeds in systems.items():
        cells = []
        for column in columns:
            values = [s[column] for s in seeds if column in s]
            cells.append(stat_cell(seed_stat(values) if values else None, len(seeds)))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
