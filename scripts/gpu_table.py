"""Record a GPU script's run (scripts/gpu_*.sh): `python scripts/gpu_table.py RESULTS_DIR RECORD_DIR`, RESULTS_DIR
being its results.tgz unpacked. Writes RECORD_DIR/run.json (every score, the stages' metrics, the software) and
RECORD_DIR/run.md (the tables of the suites that ran, and the join tables of scripts/gpu_join_models.sh, whose
per-dataset rows are copied to RECORD_DIR/join/), and prints the tables. Where several training seeds ran
(pearl-base-sSEED), a row gives their mean and one their sample standard deviation, in the columns that every seed
finished.

Beside the paper's 9-task average: the clean-PPDB one and the mean of the seven tasks without a trained probe,
which fp16 rounding moves least (issue 39)."""

import json
import re
import shutil
import statistics
import sys
from pathlib import Path

from pearl.artifacts import atomic_path, write_json
from pearl.bench.task_names import GENERAL_TASKS, PHRASE_TASKS, TUNE_TASKS
from pearl.report.summary import TITLES, with_means

COLUMNS = {"test": [*PHRASE_TASKS, "avg9", "avg9_clean", "probe_free7", *GENERAL_TASKS, "general"],
           "tune": [*TUNE_TASKS, "tune", "tune_names"]}
SEEDED = re.compile(r"(.+)-s(\d+)$")


def scores(folder: Path) -> dict[str, float]:
    return with_means({p.stem: json.loads(p.read_text())["score"] for p in sorted(folder.glob("*.json"))})


def seed_rows(rows: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The mean and spread of each model's seeds, keyed 'NAME (mean of N seeds)' and 'NAME (std)'."""
    models: dict[str, list[dict[str, float]]] = {}
    for system, row in rows.items():
        if (seeded := SEEDED.match(system)):
            models.setdefault(seeded.group(1), []).append(row)
    out = {}
    for name, seeds in models.items():
        if len(seeds) < 2:
            continue
        values = {c: [row[c] for row in seeds] for c in seeds[0] if all(c in row for row in seeds)}
        out[f"{name} (mean of {len(seeds)} seeds)"] = {c: statistics.mean(v) for c, v in values.items()}
        out[f"{name} (std)"] = {c: statistics.stdev(v) for c, v in values.items()}
    return out


def record(results: Path) -> dict:
    suites = {}
    for suite in COLUMNS:
        rows = {system.name: scores(system) for system in sorted((results / suite).glob("*")) if system.is_dir()}
        suites[suite] = rows | seed_rows(rows)
    return {
        "software": (results / "env.txt").read_text().strip().splitlines(),
        "timeline": (results / "timeline.txt").read_text().strip().splitlines(),
        "stages": {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))},
        "scores": suites,
    }


def markdown(run: dict) -> str:
    lines = []
    for suite, columns in COLUMNS.items():
        if not run["scores"][suite]:
            continue
        titles = [TITLES.get(c, "Probe-free (7)") for c in columns]
        lines += [f"### {suite} suite", "", "| system | " + " | ".join(titles) + " |", "|---" * (len(columns) + 1) + "|"]
        for system, row in run["scores"][suite].items():
            lines.append(f"| {system} | " + " | ".join(f"{row[c]:.2f}" if c in row else "–" for c in columns) + " |")
        lines.append("")
    return "\n".join(lines)


def main(results: Path, out: Path) -> None:
    run = record(results)
    text = markdown(run)
    if (results / "join.md").is_file():  # benchmarks/join_autofj.py --tables-from
        text += ("### joins (benchmarks/join_autofj.py; the seconds are no speed figure: the GPU machine's, with the "
                 "joins and trainings side by side, and AutoFJ's of its 2-core run)\n\n")
        text += (results / "join.md").read_text()
        (out / "join").mkdir(parents=True, exist_ok=True)
        for rows in sorted((results / "join").glob("*.json")):
            shutil.copyfile(rows, out / "join" / rows.name)
    write_json(run, out / "run.json")
    with atomic_path(out / "run.md") as tmp:
        tmp.write_text(text)
    print(text)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/gpu_table.py RESULTS_DIR RECORD_DIR")
    main(Path(sys.argv[1]), Path(sys.argv[2]))
