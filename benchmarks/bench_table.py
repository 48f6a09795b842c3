"""Side-by-side `pearl bench --out` folders as one Markdown table, with the report's means.

Each folder holds one system's <task>.json files; a task missing from a folder shows as "–", and a mean
only where all its tasks are there. Prints the table; --out also writes it.

    python benchmarks/bench_table.py w0.2=/tmp/bench/w02 w0=/tmp/bench/w0 MiniLM=/tmp/bench/minilm --out t.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pearl.report.summary import MEANS, TITLES, with_means


def scores(folder: Path) -> dict[str, float]:
    return with_means({path.stem: json.loads(path.read_text())["score"] for path in sorted(folder.glob("*.json"))})


def table(systems: dict[str, dict[str, float]]) -> str:
    tasks = list(dict.fromkeys(t for found in systems.values() for t in found if t in TITLES and t not in MEANS))
    columns = [*(t for t in TITLES if t in tasks), *(m for m in MEANS if any(m in s for s in systems.values()))]
    lines = ["| system | " + " | ".join(TITLES[c] for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for label, found in systems.items():
        lines.append(f"| {label} | " + " | ".join(f"{found[c]:.2f}" if c in found else "–" for c in columns) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="+", metavar="LABEL=FOLDER")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    if bad := [s for s in args.systems if "=" not in s]:
        parser.error(f"{bad[0]!r}: write LABEL=FOLDER")
    folders = {label: Path(folder) for label, folder in (s.split("=", 1) for s in args.systems)}
    if empty := [f for f in folders.values() if not any(f.glob("*.json"))]:
        parser.error(f"{empty[0]}: no <task>.json here; pass a folder written by `pearl bench --out`")
    text = table({label: scores(folder) for label, folder in folders.items()})
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
