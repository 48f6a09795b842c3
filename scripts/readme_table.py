"""The README's generated tables, never copied by hand: the headline table, made from metrics/summary.md (the
`report` stage's output), the join table, from metrics/join/summary.md as benchmarks/join_autofj.py wrote it,
the models' cost, metrics/model_cost.md as benchmarks/model_cost.py wrote it, and pearl beside its peers,
metrics/peers/summary.md as benchmarks/peers.py wrote it.

    python scripts/readme_table.py           # rewrite the README's blocks between their markers
    python scripts/readme_table.py --check   # exit 1 when a block is stale

It keeps the summary's averages, one column each: the 9 phrase tasks (with the paper's PPDB split and
with the leak-free one), the general-purpose guard and the tune suite, for every system that has one.
tests/test_docs.py fails when the README's copy differs from what this makes."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SUMMARY = ROOT / "metrics" / "summary.md"
JOIN_SUMMARY = ROOT / "metrics" / "join" / "summary.md"
MODEL_COST = ROOT / "metrics" / "model_cost.md"
PEERS = ROOT / "metrics" / "peers" / "summary.md"
COLUMNS = ["Avg (9 tasks)", "Avg (9, clean PPDB)", "General (mean)", "Tune (mean)"]
NONE = "–"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _tables(summary: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table of the summary: (header, rows)."""
    tables, lines = [], summary.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---") and \
                (i == 0 or not lines[i - 1].startswith("|")):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            tables.append((_cells(line), rows))
    return tables


def headline(summary: str) -> str:
    """The headline table: one row per system of the summary with at least one of COLUMNS."""
    values: dict[str, dict[str, str]] = {}
    found: dict[str, int] = {}
    for header, rows in _tables(summary):
        for column in COLUMNS:
            if column not in header:
                continue
            found[column] = found.get(column, 0) + 1
            at = header.index(column)
            for row in rows:
                values.setdefault(row[0], {})[column] = row[at] if at < len(row) else NONE
    wrong = [column for column in COLUMNS if found.get(column) != 1]
    if wrong:
        raise SystemExit(f"metrics/summary.md: expected one table column {wrong[0]!r}, found {found.get(wrong[0], 0)}; "
                         "update COLUMNS in scripts/readme_table.py")
    lines = ["| system | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for system, by_column in values.items():
        cells = [by_column.get(column, NONE) or NONE for column in COLUMNS]
        if any(cell != NONE for cell in cells):
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def join_table(summary: str) -> str:
    """The join benchmark's tables at `pearl join`'s default flags: without the comment line that says which
    script wrote them, and without the calibrated cut's rows, which docs/measurements.md keeps."""
    kept = [line for line in summary.splitlines() if not line.startswith("<!--") and ", calibrated cut |" not in line]
    return "\n".join(kept).strip("\n") + "\n"


def cost_table(cost: str) -> str:
    """The encoders' cost table without its caption line, which the README's sentence before it replaces."""
    return "\n".join(line for line in cost.splitlines() if line.startswith("|")) + "\n"


def without_comments(text: str) -> str:
    """A generated table without the comment line that says which script wrote it."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("<!--")).strip("\n") + "\n"


def blocks() -> dict[str, str]:
    """Each README block's name and the text it must hold."""
    return {"headline": headline(SUMMARY.read_text(encoding="utf-8")),
            "join": join_table(JOIN_SUMMARY.read_text(encoding="utf-8")),
            "cost": cost_table(MODEL_COST.read_text(encoding="utf-8")),
            "peers": without_comments(PEERS.read_text(encoding="utf-8"))}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def readme_block(readme: str, name: str) -> str | None:
    """The README's copy of block `name`, between its markers; None when they are missing."""
    start, end = _markers(name)
    if start not in readme or end not in readme.partition(start)[2]:
        return None
    return readme.partition(start)[2].partition(end)[0].strip("\n") + "\n"


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    readme = README.read_text(encoding="utf-8")
    for name, table in blocks().items():
        copy = readme_block(readme, name)
        start, end = _markers(name)
        if copy is None:
            print(f"README.md has no {start} … {end} block", file=sys.stderr)
            return 1
        if check and copy != table:
            print(f"README.md's {name} table is stale: python scripts/readme_table.py", file=sys.stderr)
            return 1
        head, _, rest = readme.partition(start)
        readme = f"{head}{start}\n\n{table}\n{end}{rest.partition(end)[2]}"
    if not check:
        README.write_text(readme, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
