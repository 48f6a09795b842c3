"""The AutoFJ join benchmark's Markdown tables (benchmarks/join_autofj.py): each system's macro means per split of
the 50 datasets, the tables of earlier runs' --out files side by side, and --same-run-timing's seconds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from pearl.bench import data

SPLITS = {"first 25 by name (design)": slice(0, 25), "held-out 25": slice(25, 50), "all 50": slice(0, 50)}
SPLIT_NAMES = dict(zip(("design", "held-out", "all"), SPLITS))


def macro(per: dict[str, dict], shared: list[str]) -> dict[str, float]:
    """A system's macro means over `shared`, and its median seconds."""
    out = {k: float(np.mean([per[n][k] for n in shared])) for k in ("precision", "recall", "f1")}
    out["at"] = float(np.mean([per[n].get("recall_at_autofj_precision", per[n]["recall"]) for n in shared]))
    out["seconds"] = float(np.median([per[n]["seconds"] for n in shared]))
    return out


SEEDED = re.compile(r"(.+)-s\d+(, .+)$")  # a model trained with several seeds: NAME-sSEED, how it joined


def summary_tables(rows: dict[str, dict[str, dict]], autofj_rows: dict[str, dict], names: list[str],
                   splits: list[str] = list(SPLITS)) -> list[str]:
    """Per split, a Markdown table of each system's macro means over the datasets AutoFJ finished. Where a model
    ran with several seeds, a row gives the mean and sample standard deviation of their macro means (of their
    median seconds, the mean)."""
    tables = []
    columns = ("precision", "recall", "f1", "at", "seconds")
    for split in splits:
        part = SPLITS[split]
        shared = [n for n in data.autofj_names()[part] if n in autofj_rows and n in names]
        if not shared:
            continue
        lines = [f"**{split}: {len(shared)} datasets**", "",
                 "| system | P | R | F1 | R at AutoFJ's P (oracle cut) | median s |", "|---|---|---|---|---|---|"]
        seeded: dict[tuple[str, str], list[dict[str, float]]] = {}
        for system, per in rows.items():
            means = macro(per, shared)
            lines.append(f"| {system} | " + " | ".join(f"{means[k]:.{1 if k == 'seconds' else 3}f}" for k in columns)
                         + " |")
            if (match := SEEDED.match(system)):
                seeded.setdefault((match.group(1), match.group(2)), []).append(means)
        for (model, how), runs in seeded.items():
            if len(runs) > 1:
                cells = [f"{np.mean([r[k] for r in runs]):.{1 if k == 'seconds' else 3}f}"
                         + ("" if k == "seconds" else f" ± {np.std([r[k] for r in runs], ddof=1):.3f}")
                         for k in columns]
                lines.append(f"| {model} (mean ± sample std of {len(runs)} seeds){how} | " + " | ".join(cells) + " |")
        tables.append("\n".join(lines) + "\n")
    return tables


def write_markdown(path: Path, rows: dict[str, dict[str, dict]], autofj_rows: dict[str, dict], names: list[str],
                   source: str, splits: list[str]) -> None:
    tables = summary_tables(rows, autofj_rows, names, splits)
    path.write_text(f"<!-- written by benchmarks/join_autofj.py {source} -->\n\n" + "\n".join(tables))


def tables_from(files: list[str], markdown: Path | None, splits: list[str]) -> None:
    """The tables of earlier runs' --out files (one run per model, say), AutoFJ's rows taken from the first, over
    the datasets that every system joined. Their seconds are those of the runs that wrote the files. A file given
    as LABEL=FILE has its systems named "LABEL: system" (two versions of the join side by side)."""
    labelled = [(label, Path(file)) for label, _, file in (given.rpartition("=") for given in files)]
    rows: dict[str, dict[str, dict]] = {}
    for label, file in labelled:
        try:
            read = json.loads(file.read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"error: {file} is not a --out file of this benchmark ({error})")
        if not isinstance(read, dict):
            raise SystemExit(f"error: {file} is not a --out file of this benchmark (no systems in it)")
        named = {s if s == "AutoFJ" or not label else f"{label}: {s}": per for s, per in read.items()}
        rows |= {system: per for system, per in named.items() if system not in rows}
    if "AutoFJ" not in rows:
        raise SystemExit("error: no AutoFJ rows in the --tables-from files")
    rows = {"AutoFJ": rows.pop("AutoFJ"), **dict(sorted(rows.items()))}
    names = sorted(set.intersection(*(set(per) for system, per in rows.items() if system != "AutoFJ")))
    print("\n".join(summary_tables(rows, rows["AutoFJ"], names)))
    if markdown:
        write_markdown(markdown, rows, rows["AutoFJ"], names, "--tables-from " + " ".join(
            f"{label}={file.name}" if label else file.name for label, file in labelled), splits)


def timing_table(timing: dict) -> str:
    """Markdown: per dataset its size, each system's seconds and AutoFJ's seconds over each encoder's; a last row of
    each column's median; then how the seconds were taken."""
    models = list(timing["load_seconds"])
    rows = timing["datasets"]
    columns = {"AutoFJ s": [row["AutoFJ"] for row in rows.values()]}
    columns |= {f"{model} s": [row[model] for row in rows.values()] for model in models}
    columns |= {f"AutoFJ ÷ {model}": [row["AutoFJ"] / row[model] for row in rows.values()] for model in models}
    lines = ["| dataset | rows left × right | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for i, (name, row) in enumerate(rows.items()):
        lines.append(f"| {name} | {row['rows'][0]} × {row['rows'][1]} | "
                     + " | ".join(f"{values[i]:.2f}" for values in columns.values()) + " |")
    lines.append("| median | | " + " | ".join(f"{np.median(values):.2f}" for values in columns.values()) + " |")
    m = timing["machine"]
    loads = ", ".join(f"{model} {seconds:.1f} s" for model, seconds in timing["load_seconds"].items())
    return "\n".join(lines) + (
        f"\n\nOne run, {m['date']}, on {m['nproc']} processors (nproc) of {m['cpu']}; 1-minute load average "
        f"{m['load_average_start']:.2f} at its start, {m['load_average_end']:.2f} at its end. Dataset by dataset, "
        f"AutoFJ (precision_target {timing['autofj_precision']:g}) ran, then each encoder's `pearl join` (chosen for "
        f"P {timing['precision_target']:g}). AutoFJ's seconds are its join, timed inside its own process; pearl's "
        f"are reading the two tables, encoding and joining. Each model loaded once, before the first dataset, with a "
        f"join of a few rows (imports, first forward pass), not in the seconds above: {loads}.\n")
