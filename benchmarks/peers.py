"""pearl beside the tools its users choose between: Splink on DuckDB, goldenmatch, rapidfuzz, string_grouper
and polyfuzz, on the same names, in one run, each tool in its own child process.

Tasks, each scored against labels that stay in this process:
- link: every right name's top-1 left name. top-1 = right top-1 / right names whose match is on the left;
  P and R at the tool's own threshold (the top-1s it accepts: P = right / accepted, R = right / findable);
  and, marked as an oracle, the recall the tool's scores reach at precision 0.9 with a cut chosen on the labels.
- join: each right name's left name or none, by the tool's own decision with no labels: P = right / joined,
  R = right / findable.
- dedupe: the names clustered; pairwise P, R and F1 against the true groups (sklearn's pair confusion matrix).
pearl runs through its Python API (benchmarks/pearl_tasks.py) with `string`, PEARL-small and PEARL-static;
each peer in its own environment (bash benchmarks/setup_peers_env.sh), configured for one name column as its
docs recommend (benchmarks/peer_tasks.py; docs/peers.md says how and why). Each child's wall time (its
imports and model load included) and peak resident memory (os.wait4) are recorded; the children run one at
a time.

Data sets:
- generated: benchmarks/verbs_scale.py's GeoNames names (about 195K left) and right names made from them by one
  edit, a case change, a word swap or an abbreviation, 10% without a match; `--sizes` right rows (100K; 1M
  where `--sizes` asks). The seed chooses the right rows: 0 is the design seed, 1 (default) the test seed.
  Dedupe: the right names, grouped by the left name each came from.
- aliases: benchmarks/alias_set.py's towns of 5,000 to 15,000 inhabitants, their other names (other scripts,
  languages, transliterations) linked to their names. Dedupe: names and other names together, grouped by town.
  aliases-design: the same of towns of 1,000 to 5,000, where levers for aliases are chosen (not in the table's
  default run).
- autofj: the 50 AutoFJ datasets (the right titles that have a match, as benchmarks/join_autofj.py scores).
  Means over the datasets; dedupe: left and right titles together, grouped by the left title they are.

    bash benchmarks/setup_peers_env.sh
    python benchmarks/peers.py --out metrics/peers/peers.json --markdown metrics/peers/peers.md \
        --summary metrics/peers/summary.md
    python benchmarks/peers.py --sets aliases --tools string,rapidfuzz --tasks link      # a quick look
    python benchmarks/peers.py --tables-from metrics/peers/peers.json --markdown t.md   # tables only
    python benchmarks/peers.py --tables-from a.json b.json --markdown t.md   # b's rows replace a's
    python benchmarks/peers.py --rerender     # the committed tables, from the runs in TABLE_RUNS
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"
PEERS_PYTHON = HERE / ".peers-venv" / "bin" / "python"
NO_TASK = 3  # a child's exit status when its tool offers no such task
ORACLE_PRECISION = 0.9
JOIN_PRECISION = 0.88  # a join that keeps at least this precision competes on recall (issue 88's bar)
POLL = 0.1  # seconds between reads of a child's peak memory

# label: (side, what the child is given)
TOOLS = {
    "string": ("pearl", "string"),
    "PEARL-small": ("pearl", "models/pearl"),
    "PEARL-static": ("pearl", "models/pearl-static"),
    "rapidfuzz": ("peer", "rapidfuzz"),
    "Splink": ("peer", "splink"),
    "goldenmatch": ("peer", "goldenmatch"),
    "string_grouper": ("peer", "string_grouper"),
    "polyfuzz": ("peer", "polyfuzz"),
}
TASKS = ("join", "link", "dedupe")


@dataclass
class Dataset:
    name: str
    left: list[str]
    right: list[str]
    left_keys: list[frozenset]   # what each left name is (a city, a town, a title)
    right_keys: list[frozenset]  # what each right name is: a join or link is right when the two share a key
    dedupe: list[str]            # the names a dedupe groups
    groups: np.ndarray           # their true groups

    def findable(self) -> np.ndarray:
        return np.fromiter((bool(k) for k in self.right_keys), dtype=bool, count=len(self.right))

    def right_pairs(self, left_row: np.ndarray) -> np.ndarray:
        """Whether each right row's left row (-1: none) is one of its matches."""
        return np.fromiter((r >= 0 and bool(self.left_keys[r] & keys) for r, keys in zip(left_row, self.right_keys)),
                           dtype=bool, count=len(self.right))


def generated(size: int, seed: int) -> list[Dataset]:
    from verbs_scale import Names, right_table

    names = Names()
    texts, source, true_cities = right_table(names, size, seed)
    return [Dataset(f"generated-{size}", names.left, texts, [frozenset(names.cities_of[n]) for n in names.left],
                    true_cities, texts, np.asarray(source))]


def aliases(design: bool = False) -> list[Dataset]:
    from alias_set import DESIGN, load_alias_set

    towns = load_alias_set(*DESIGN) if design else load_alias_set()
    name = "aliases-design" if design else "aliases"
    print(f"{name}: {len(towns.towns):,} towns, {len(towns.aliases):,} other names; left out: {towns.left_out}",
          flush=True)
    return [Dataset(name, towns.towns, towns.aliases, [frozenset([i]) for i in range(len(towns.towns))],
                    [frozenset([t]) for t in towns.town_of], towns.towns + towns.aliases,
                    np.asarray(list(range(len(towns.towns))) + towns.town_of))]


def autofj(first: int | None = None) -> list[Dataset]:
    from pearl.bench.data import autofj_names, load_autofj

    sets = []
    for name in autofj_names()[:first]:
        data = load_autofj(name)
        entity = {title: i for i, title in enumerate(dict.fromkeys(data.left))}
        sets.append(Dataset(name, data.left, data.right, [frozenset([t]) for t in data.left],
                            [frozenset([g]) for g in data.gold], data.left + data.right,
                            np.asarray([entity[t] for t in data.left] + [entity.get(g, -1) for g in data.gold])))
    return sets


def write_inputs(datasets: list[Dataset], folder: Path) -> dict[str, Path]:
    """Per task, a folder with one sub-folder of parquet files per data set."""
    paths = {"pairs": folder / "pairs", "dedupe": folder / "dedupe"}
    for d in datasets:
        (paths["pairs"] / d.name).mkdir(parents=True)
        pl.DataFrame({"name": d.left}, schema={"name": pl.String}).write_parquet(paths["pairs"] / d.name / "left.parquet")
        pl.DataFrame({"name": d.right}, schema={"name": pl.String}).write_parquet(paths["pairs"] / d.name / "right.parquet")
        (paths["dedupe"] / d.name).mkdir(parents=True)
        pl.DataFrame({"name": d.dedupe}, schema={"name": pl.String}).write_parquet(paths["dedupe"] / d.name / "right.parquet")
    return paths


def run_child(command: list[str], timeout: float) -> dict:
    """Wall seconds, peak resident GB, exit status and the output's last lines of one child.

    The peak is the child's VmHWM, read every POLL seconds: os.wait4's ru_maxrss would count this process's own
    peak, which a forked child carries through exec."""
    started = time.perf_counter()
    peak_kb = 0
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
        status = Path(f"/proc/{process.pid}/status")
        while process.poll() is None:
            try:
                peak_kb = max(peak_kb, next(int(line.split()[1]) for line in status.read_text().splitlines()
                                            if line.startswith("VmHWM:")))
            except (OSError, StopIteration, ValueError):  # exiting: its memory is gone
                pass
            if time.perf_counter() - started > timeout:
                process.kill()
                process.wait()
                break
            time.sleep(POLL)
        seconds = time.perf_counter() - started
        output.seek(0)
        text = output.read()
    return {"seconds": seconds, "peak_gb": peak_kb / 2**20, "status": process.returncode,
            "timed_out": seconds > timeout, "output": text[-2000:]}


def child_command(tool: str, task: str, data: Path, out: Path) -> list[str]:
    side, what = TOOLS[tool]
    if side == "pearl":
        return [sys.executable, str(HERE / "pearl_tasks.py"), "--model", what, "--task", task, "--data", str(data),
                "--out", str(out)]
    return [str(PEERS_PYTHON), str(HERE / "peer_tasks.py"), "--tool", what, "--task", task, "--data", str(data),
            "--out", str(out)]


def recall_at_precision(scores: np.ndarray, right: np.ndarray, findable: int, precision: float) -> float:
    """The most right pairs a cut on `scores` keeps at `precision` or more (an oracle: the labels choose the cut)."""
    order = np.argsort(-scores, kind="stable")
    hits = np.cumsum(right[order])
    ok = hits / np.arange(1, len(order) + 1) >= precision
    return float(hits[ok].max() / findable) if ok.any() and findable else 0.0


def score(task: str, d: Dataset, result: pl.DataFrame) -> dict:
    from sklearn.metrics.cluster import pair_confusion_matrix

    if task == "dedupe":
        clusters = result.sort("row")["cluster"].to_numpy()
        (_, fp), (fn, tp) = pair_confusion_matrix(d.groups, clusters) // 2
        p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}
    result = result.sort("right_row")
    left_row = result["left_row"].to_numpy()
    findable = int(d.findable().sum())
    right = d.right_pairs(left_row)
    if task == "join":
        joined = left_row >= 0
        p, r = right.sum() / max(joined.sum(), 1), right.sum() / findable
        return {"precision": float(p), "recall": float(r), "f1": float(2 * p * r / (p + r)) if p + r else 0.0}
    accepted = result["accepted"].to_numpy() & (left_row >= 0)
    scores = np.nan_to_num(result["score"].to_numpy().astype(np.float64), nan=-np.inf)
    return {"top1": float(right.sum() / findable),
            "precision": float((right & accepted).sum() / max(accepted.sum(), 1)),
            "recall": float((right & accepted).sum() / findable),
            "oracle_recall": recall_at_precision(np.where(left_row >= 0, scores, -np.inf), right, findable,
                                                 ORACLE_PRECISION)}


def run_set(set_name: str, datasets: list[Dataset], tools: list[str], tasks: list[str], timeout: float) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs = write_inputs(datasets, Path(tmp))
        for task in tasks:
            for tool in tools:
                out = Path(tmp) / "out" / task / tool
                child = run_child(child_command(tool, task, inputs["dedupe" if task == "dedupe" else "pairs"], out),
                                  timeout)
                row = {"set": set_name, "tool": tool, "task": task, "seconds": child["seconds"],
                       "peak_gb": child["peak_gb"]}
                if child["status"] == NO_TASK:
                    row["absent"] = child["output"].strip().splitlines()[-1]
                elif child["timed_out"] or child["status"] != 0:
                    last = child["output"].strip().splitlines()[-1:] or [""]
                    row["failed"] = f"timed out after {timeout:.0f} s" if child["timed_out"] else last[0][:300]
                else:
                    config = [line for line in child["output"].splitlines() if line.startswith('{"tool"')]
                    row["config"] = json.loads(config[-1]) if config else None
                    per_set = [score(task, d, pl.read_parquet(out / f"{d.name}.parquet")) for d in datasets]
                    row.update({k: float(np.mean([s[k] for s in per_set])) for k in per_set[0]})
                    errors = [json.loads((out / f"{d.name}.json").read_text()).get("error") for d in datasets]
                    if any(errors):  # scored as giving nothing there
                        row["failed_on"] = f"{sum(map(bool, errors))} of {len(datasets)}: {next(e for e in errors if e)}"
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def _cell(row: dict | None, key: str, digits: int = 3) -> str:
    if row is None:
        return ""
    if "absent" in row:
        return "–"
    if "failed" in row:
        return "failed"
    value = row.get(key)
    if value is None:
        return ""
    return f"{value:.{digits}f}" if digits else f"{value:,.0f}"


def markdown(rows: list[dict], meta: dict) -> str:
    """Per data set, one row per tool: each task's quality, seconds and peak memory."""
    lines = [f"<!-- written by `python benchmarks/peers.py`; {meta['date']}, {meta['cpu']}, {meta['cores']} cores, "
             f"generated seed {meta['seed']} -->", ""]
    sets = list(dict.fromkeys(r["set"] for r in rows))
    for set_name in sets:
        notes: set[str] = set()
        by = {(r["tool"], r["task"]): r for r in rows if r["set"] == set_name}
        tools = _in_order(r["tool"] for r in rows if r["set"] == set_name)
        lines += [f"**{set_name}**", "",
                  "| tool | join P | join R | join s | link top-1 | link P / R at its cut | link R at P 0.9 (oracle) "
                  "| link s | dedupe P / R | dedupe F1 | dedupe s | peak GB join / link / dedupe |",
                  "|---|" + "---:|" * 11]
        for tool in tools:
            j, k, d = by.get((tool, "join")), by.get((tool, "link")), by.get((tool, "dedupe"))
            notes.update(f"{tool} {r['task']} failed on {r['failed_on']}, scored as giving nothing there"
                         for r in (j, k, d) if r and "failed_on" in r)
            notes.update(f"{tool} {r['task']} failed: {r['failed']}" for r in (j, k, d) if r and "failed" in r)
            at_cut = "–" if k is None or "top1" not in k else f"{_cell(k, 'precision')} / {_cell(k, 'recall')}"
            dedupe_pr = _cell(d, "precision") if d is None or "f1" not in d else f"{_cell(d, 'precision')} / {_cell(d, 'recall')}"
            gb = " / ".join("–" if r is None or "absent" in r else f"{r['peak_gb']:.1f}" for r in (j, k, d))
            lines.append(f"| {tool} | {_cell(j, 'precision')} | {_cell(j, 'recall')} | {_seconds(j)} | {_cell(k, 'top1')} "
                         f"| {at_cut} | {_cell(k, 'oracle_recall')} | {_seconds(k)} | {dedupe_pr} | {_cell(d, 'f1')} "
                         f"| {_seconds(d)} | {gb} |")
        if any(by.get((tool, task)) is None for tool in tools for task in TASKS):
            notes.add("A blank cell: not run")
        lines += [""] + [f"- {note}." for note in sorted(notes)] + ([""] if notes else [])
    return "\n".join(lines)


def _in_order(tools) -> list[str]:
    """The tools in TOOLS' order (pearl's first), whichever run measured them first."""
    return sorted(set(tools), key=list(TOOLS).index)


def _seconds(row: dict | None) -> str:
    return "" if row is None or "absent" in row else f"{row['seconds']:.0f}"


def leaders(rows: list[dict]) -> list[str]:
    """Per task, the tool that does best: the join's recall among those that keep precision JOIN_PRECISION,
    link's top-1 and dedupe's F1."""
    rules = [("join", "recall", lambda r: r.get("precision", 0) >= JOIN_PRECISION,
              f"join (recall at precision ≥ {JOIN_PRECISION})"),
             ("link", "top1", lambda r: True, "link (top-1)"), ("dedupe", "f1", lambda r: True, "dedupe (F1)")]
    found = []
    for task, key, keep, label in rules:
        scored = [r for r in rows if r["task"] == task and key in r and keep(r)]
        if scored:
            best = max(scored, key=lambda r: r[key])
            found.append(f"{label}: {best['tool']} ({best[key]:.3f})")
    return found


def summary(rows: list[dict], meta: dict) -> str:
    """The README's table: per tool, each data set's join P / R, link top-1 and dedupe F1."""
    sets = list(dict.fromkeys(r["set"] for r in rows))
    by = {(r["set"], r["tool"], r["task"]): r for r in rows}
    lines = [f"<!-- written by `python benchmarks/peers.py`; {meta['date']}, {meta['cpu']}, {meta['cores']} cores -->",
             "", "| tool | " + " | ".join(f"{s.split(',')[0]}: join P / R | link top-1 | dedupe F1" for s in sets) + " |",
             "|---|" + "---|---:|---:|" * len(sets)]
    for tool in _in_order(r["tool"] for r in rows):
        cells = []
        for set_name in sets:
            j, k, d = (by.get((set_name, tool, task)) for task in TASKS)
            cells += [_cell(j, "precision") if j is None or "recall" not in j
                      else f"{_cell(j, 'precision')} / {_cell(j, 'recall')}", _cell(k, "top1"), _cell(d, "f1")]
        lines.append(f"| {tool} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "date": f"{datetime.now(timezone.utc):%Y-%m-%d}"}


# the runs the committed tables are rendered from, in order (a later run's row replaces an earlier one's);
# docs/peers.md says what each holds
TABLE_RUNS = [ROOT / "metrics" / "peers" / f"{name}.json" for name in (
    "peers", "rerun", "static_splink", "dedupe", "rapidfuzz_dedupe", "generated", "generated_small", "latin_aliases",
    "pooled_link", "pooled_link_more", "pooled_link_generated", "pooled_link_generated_small", "mixed_dedupe",
    "mixed_dedupe_static_aliases")]
TABLE = ROOT / "metrics" / "peers" / "peers.md"
SUMMARY = ROOT / "metrics" / "peers" / "summary.md"  # the README's


def tables_of(paths: list[Path]) -> tuple[list[dict], dict]:
    """(rows, meta) of several --out files: a later file's row replaces an earlier one's of the same data set, tool
    and task; the first file's meta, with every file's date."""
    runs = [json.loads(path.read_text()) for path in paths]
    merged = {(r["set"], r["tool"], r["task"]): r for run in runs for r in run["rows"]}
    meta = {**runs[0]["meta"], "date": ", ".join(dict.fromkeys(run["meta"]["date"] for run in runs))}
    return list(merged.values()), meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="generated,aliases,autofj",
                        help="comma-separated: generated, aliases, autofj, aliases-design")
    parser.add_argument("--sizes", default="100000", help="the generated set's right rows, comma-separated")
    parser.add_argument("--seed", type=int, default=1, help="the generated set's seed (0: the design seed)")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--autofj-first", type=int, help="only the first N AutoFJ datasets by name (a quick look)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per child")
    parser.add_argument("--out", type=Path, help="the rows as JSON")
    parser.add_argument("--markdown", type=Path, help="every figure, per data set")
    parser.add_argument("--summary", type=Path, help="the README's table")
    parser.add_argument("--tables-from", type=Path, nargs="+", metavar="JSON",
                        help="run nothing: the tables of --out files; a later file's row replaces an earlier one's "
                             "of the same data set, tool and task")
    parser.add_argument("--rerender", action="store_true",
                        help="run nothing: write the committed tables (metrics/peers/peers.md and summary.md) from "
                             "TABLE_RUNS")
    args = parser.parse_args()
    if args.rerender:
        args.tables_from, args.markdown, args.summary = TABLE_RUNS, TABLE, SUMMARY
    if args.tables_from:
        rows, meta = tables_of(args.tables_from)
    else:
        tools, tasks, sets = args.tools.split(","), args.tasks.split(","), args.sets.split(",")
        unknown = [t for t in tools if t not in TOOLS] + [t for t in tasks if t not in TASKS] + [
            s for s in sets if s not in ("generated", "aliases", "autofj", "aliases-design")]
        if unknown:
            raise SystemExit(f"peers.py: unknown tool, task or set {unknown[0]!r}: tools {', '.join(TOOLS)}; "
                             f"tasks {', '.join(TASKS)}; sets generated, aliases, autofj, aliases-design")
        untrained = [TOOLS[t][1] for t in tools if TOOLS[t][1].startswith("models/") and not (ROOT / TOOLS[t][1]).is_dir()]
        if untrained:
            raise SystemExit(f"peers.py: {untrained[0]} is missing: `dvc repro` trains it, or leave it out of --tools")
        if any(TOOLS[t][0] == "peer" for t in tools) and not PEERS_PYTHON.exists():
            raise SystemExit("peers.py: the peers' environment is missing: bash benchmarks/setup_peers_env.sh")
        meta = {**machine(), "seed": args.seed,
                "peers": (HERE / ".peers-venv" / "versions.txt").read_text().split() if PEERS_PYTHON.exists() else []}
        rows = []
        for set_name in sets:
            if set_name == "generated":
                for size in (int(s) for s in args.sizes.split(",")):
                    rows += run_set(f"generated, {size:,} right", generated(size, args.seed), tools, tasks, args.timeout)
            elif set_name in ("aliases", "aliases-design"):
                rows += run_set(set_name, aliases(design=set_name == "aliases-design"), tools, tasks, args.timeout)
            else:
                datasets = autofj(args.autofj_first)
                rows += run_set(f"AutoFJ, {len(datasets)} datasets (means)", datasets, tools, tasks, args.timeout)
            if args.out:  # kept after each set, so a long run's finished sets survive a later failure
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    table = markdown(rows, meta)
    print(table)
    for path, text in ((args.markdown, table), (args.summary, summary(rows, meta))):
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


if __name__ == "__main__":
    main()
