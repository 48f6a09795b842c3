"""Gathers the finished experiments into `metrics/experiments.{json,md}` and the sweep plots
(CSV files for `dvc plots`, and one image per sweep table for the docs' Experiments page).

DVC's experiment refs do not travel with a push of the branch, so the JSON is the record: each
run found by `dvc exp show` is added to (or replaces, by commit) the runs already recorded, and
the tables are recomputed from all of them. A run's scores are read from its experiment commit;
a bench score counts only when its stage ran on that experiment's own model (dvc.lock: the
`models/pearl` the bench stage read is the one `average` wrote) or, for the untuned backbone,
on its own `model.backbone`: a tune-only experiment carries the baseline's test files unchanged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import mean, stdev
from typing import Any

import polars as pl
import yaml

from pearl.artifacts import atomic_path, write_json
from pearl.bench.task_names import BURT_TABLE_TASKS, BURT_TUNE_TABLE_TASKS, PEARL_TUNE_TASKS
from pearl.errors import PearlError
from pearl.experiments import shell
from pearl.experiments.definitions import (ADDED_OFF, ADDED_OFF_SECTIONS, Table, default_value, param_key, parse_name,
                                          recipe_of, sweep_row, yaml_value)
from pearl.experiments.systems import SYSTEMS, Column, System
from pearl.experiments.sweep_figure import draw_sweeps
from pearl.log import get_logger
from pearl.params import Params, parse_params
from pearl.report.summary import TITLES, with_means

log = get_logger("experiments")
COLUMNS = ("tune", "tune_base", "test", "test_base")  # each system's (pearl.experiments.systems)
TRAIN_FIELDS = ("steps", "seconds", "heldout_type_accuracy", "heldout_type_accuracy_before_averaging", "distill_loss",
                "teacher", "backbone")


@dataclass(frozen=True)
class Finished:
    name: str
    rev: str
    baseline: str


def finished_experiments() -> list[Finished]:
    """Every finished experiment of every commit, from DVC's experiment refs (`dvc exp list -A`).

    Not `dvc exp show -A`, which also collects every commit's params and metrics: minutes over a long
    history, where this reads only refs."""
    from dvc.repo import Repo

    with Repo(".") as repo:
        listed = repo.experiments.ls(all_commits=True)
    return [Finished(name, rev, baseline) for baseline, experiments in listed.items() for name, rev in experiments
            if rev is not None]


def _hash_of(entries: list[dict], path: str) -> str | None:
    return next((e.get("md5") for e in entries if e.get("path") == path), None)


def _column(rev: str, lock: dict, params: dict, column: Column, system: System) -> dict[str, float]:
    model = _hash_of(lock.get(system.export_stage, {}).get("outs", []), system.export)
    scores = {}
    for task in column.tasks:
        entry = lock.get(column.stage(task))
        text = shell.git_show(rev, f"{column.folder}/{task}.json") if entry is not None else None
        if text is None:
            continue
        if not column.trained:
            used = entry.get("params", {}).get("params.yaml", {})
            current = all(used.get(k) == params["model"][k.split(".")[1]] for k in ("model.backbone", "model.prefix"))
        else:
            current = model is not None and _hash_of(entry.get("deps", []), system.export) == model
        if current:
            scores[task] = json.loads(text)["score"]
    return scores


def _with_todays_outside_sections(params: dict, default: Params) -> dict:
    """A run's params with today's `engine`, ray, pearl_base and static sections, and today's burt_small section and
    bench keys where it lacks them: none enters a PEARL-small recipe (the same rows on either engine; PEARL-small's
    stages read no pearl_base, static or burt_small key), and older runs lack them, or keys added to them since; and
    each `ADDED_OFF` lever and section the run predates, at its off value."""
    if not isinstance(params, dict):
        return params
    params = {"burt_small": asdict(default.burt_small), **params, "engine": default.engine, "ray": asdict(default.ray),
              "pearl_base": asdict(default.pearl_base), "static": asdict(default.static)}
    for (section, key), off in ADDED_OFF.items():
        if isinstance(params.get(section), dict) and key not in params[section]:
            params[section] = {**params[section], key: off}
    for section, off in ADDED_OFF_SECTIONS.items():
        if section not in params:
            params[section] = {**asdict(getattr(default, section)), **off}
    if isinstance(params.get("bench"), dict):  # outside every recipe; older runs lack keys added to it since
        params["bench"] = {**asdict(default.bench), **params["bench"]}
    return params


def read_run(found: Finished, tables: dict[str, Table], default: Params) -> dict | None:
    """The record of one finished experiment, or None when no table defines its name."""
    parsed = parse_name(found.name, tables)
    if parsed is None:
        return None
    table, row, seed = parsed
    system = SYSTEMS[tables[table].system]
    lock = yaml.safe_load(shell.git_show(found.rev, "dvc.lock") or "{}").get("stages", {})
    params = yaml.safe_load(shell.git_show(found.rev, "params.yaml") or "{}")
    try:
        recipe = recipe_of(parse_params(_with_todays_outside_sections(params, default)), system.name)
    except PearlError:  # params of an older schema: no row of today's tables has that recipe
        recipe = None
    train = json.loads(shell.git_show(found.rev, f"{system.metrics_dir}/train.json") or "{}")
    # train.json's type accuracy is the tuned model's; the shipped (weight-averaged) export's is average.json's
    shipped = json.loads(shell.git_show(found.rev, f"{system.metrics_dir}/average.json") or "{}").get("heldout_type_accuracy")
    train["heldout_type_accuracy_before_averaging"] = train.pop("heldout_type_accuracy", None)
    train["heldout_type_accuracy"] = shipped
    created = shell.run(["git", "show", "-s", "--format=%cI", found.rev]).strip()
    record = {"name": found.name, "table": table, "row": row, "seed": seed, "rev": found.rev,
              "baseline": found.baseline, "created": created, "recipe": recipe,
              "overrides": tables[table].rows.get(row), "train": {k: train[k] for k in TRAIN_FIELDS if train.get(k) is not None}}
    for column in COLUMNS:
        record[column] = _column(found.rev, lock, params, system.columns[column], system)
    return record


def merge(recorded: list[dict], new: list[dict]) -> list[dict]:
    by_rev = {r["rev"]: r for r in recorded}
    by_rev.update({r["rev"]: r for r in new})
    return sorted(by_rev.values(), key=lambda r: (r["table"], r["row"], r["seed"], r["created"]))


def seed_stat(values: list[float]) -> dict:
    return {"mean": round(mean(values), 2), "std": round(stdev(values), 2) if len(values) > 1 else None,
            "n": len(values)}


def aggregate(runs: list[dict], table: Table) -> dict[str, dict]:
    """Row → column → task or mean → mean ± std over seeds: for each seed and column, the latest
    run, of any table, with the row's recipe that scored that column (a test-only re-run of a
    seed keeps its earlier tune scores). A run recorded by earlier code holds the key that code gave the
    recipe (Table.keys)."""
    latest: dict[tuple[str, int], dict[str, dict[str, float]]] = {}  # (row, seed) → column → scores
    for run in sorted(runs, key=lambda r: r["created"]):
        for row in table.rows:
            if run["recipe"] in table.keys(row):
                scores = latest.setdefault((row, run["seed"]), {column: {} for column in COLUMNS})
                scores.update({column: run[column] for column in COLUMNS if run[column]})
    rows = {}
    for row in table.rows:
        seeds = sorted(s for (r, s) in latest if r == row)
        cells: dict[str, Any] = {"overrides": table.rows[row], "seeds": seeds}
        for column in COLUMNS:
            per_seed = [with_means(latest[(row, s)][column]) for s in seeds]
            keys = sorted({k for scores in per_seed for k in scores})
            cells[column] = {k: seed_stat([p[k] for p in per_seed if k in p]) for k in keys}
        rows[row] = cells
    return rows


def sweep_points(table: Table, rows: dict[str, dict]) -> dict[str, list[dict]]:
    """Param → [{param_key(param): value, tune_mean, tune_std, seeds}] along each swept param."""
    points: dict[str, list[dict]] = {}
    if table.grid:
        return points
    for param, values in (table.sweeps or {}).items():
        line = []
        for value in values:
            row = sweep_row(param, value, table.base)
            tune = rows.get(row, {}).get("tune", {}).get("tune")
            if tune:
                line.append({param_key(param): value, "tune_mean": tune["mean"], "tune_std": tune["std"] or 0.0,
                             "seeds": tune["n"]})
        points[param] = line
    return points


def stat_cell(stat: dict | None, seeds: int) -> str:
    """Mean ± std, and the n behind it when fewer seeds scored it than the row lists."""
    if not stat:
        return "–"
    return (f"{stat['mean']:.2f}" + (f" ± {stat['std']:.2f}" if stat["std"] is not None else "")
            + (f" (n={stat['n']})" if stat["n"] < seeds else ""))


def _overrides(overrides: dict) -> str:
    return " ".join(f"`{k}={yaml_value(v)}`" for k, v in overrides.items()) or "(default)"


# per system: the tune columns, the tune mean (a MEANS column) and the test columns of its tables, with their heads
_COLUMNS = {"pearl-small": (PEARL_TUNE_TASKS, "tune", {"avg9": "Test Avg (9)", "general": "Test General"}),
            "burt-small": (BURT_TUNE_TABLE_TASKS, "burt_tune",
                           {t: f"Test {TITLES[t]}" for t in (*BURT_TABLE_TASKS, "burt_words")})}


def markdown(tables: dict[str, Table], aggregated: dict[str, dict]) -> str:
    out = ["# Experiments", "",
           "Written by `pearl experiments results` from the finished DVC experiments; mean ± std over "
           "the training seeds run (`train.seed`), scores in points. Re-run a row: "
           "`pearl experiments run TABLE --rows ROW --seeds SEED`.", ""]
    for name, table in tables.items():
        rows = aggregated[name]
        out += [f"## {table.title}", ""]
        tune_columns, tune_mean, test_columns = _COLUMNS[table.system]
        header = ["row", "overrides", "seeds", *(TITLES[t] for t in tune_columns), TITLES[tune_mean], "Δ tune",
                  *test_columns.values(), f"backbone untuned: {TITLES[tune_mean].removesuffix(' (mean)')}"]
        out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        reference = rows.get("default", {}).get("tune", {}).get(tune_mean)
        for row, cells in rows.items():
            if not cells["seeds"]:
                continue
            tune = cells["tune"].get(tune_mean)
            delta = (f"{tune['mean'] - reference['mean']:+.2f}" if tune and reference and row != "default" else "")
            seeds = len(cells["seeds"])
            out.append("| " + " | ".join([
                row, _overrides(cells["overrides"]), ",".join(map(str, cells["seeds"])),
                *(stat_cell(cells["tune"].get(t), seeds) for t in tune_columns), stat_cell(tune, seeds), delta,
                *(stat_cell(cells["test"].get(t), seeds) for t in test_columns),
                stat_cell(cells["tune_base"].get(tune_mean), seeds)]) + " |")
        missing = [row for row, cells in rows.items() if not cells["seeds"]]
        if len(missing) == len(rows):
            out = out[:-2] + ["No row run yet."]
        elif missing:
            out += ["", f"Not run yet ({len(missing)} of {len(rows)} rows): "
                        f"{', '.join(missing) if len(missing) <= 12 else ', '.join(missing[:12]) + ', …'}."]
        out.append("")
    return "\n".join(out)


def write_results(tables: dict[str, Table], default: Params, found: list[Finished], out_json: Path,
                  out_md: Path, plots_dir: Path) -> dict:
    try:
        recorded = json.loads(out_json.read_text())["runs"] if out_json.is_file() else []
    except (json.JSONDecodeError, KeyError, TypeError):
        raise PearlError(f"{out_json}: not the record this command writes (restore it: git checkout {out_json})") from None
    new = [r for r in (read_run(f, tables, default) for f in found) if r is not None]
    runs = merge(recorded, new)
    aggregated = {name: aggregate(runs, table) for name, table in tables.items()}
    result = {"runs": runs, "tables": aggregated}
    plots_dir.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        lines = sweep_points(table, aggregated[name])
        for param, line in lines.items():
            plot = plots_dir / f"{name}_{param_key(param)}.csv"
            if not line:  # none of its points run under today's default: an older plot would mislead
                plot.unlink(missing_ok=True)
                continue
            with atomic_path(plot) as tmp:
                pl.DataFrame(line).write_csv(tmp)
        figure = plots_dir / f"{name}.png"
        if any(lines.values()):
            draw_sweeps(table.title, lines, {param: default_value(table.base, param) for param in lines}, figure)
        else:
            figure.unlink(missing_ok=True)
    write_json(result, out_json)
    with atomic_path(out_md) as tmp:
        tmp.write_text(markdown(tables, aggregated))
    log.info("%d runs recorded (%d new from dvc exp show) → %s, %s", len(runs), len(new), out_json, out_md)
    return result
