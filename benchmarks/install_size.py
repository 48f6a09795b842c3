"""What each of pearl's installs costs: the wheel installed into a new venv, core alone and with one extra.

One run, one install at a time: `uv build --wheel`, then per install a new venv into which uv installs the wheel
(with `[extra]`), pinned by constraints.txt and bytecode compiled as pip does, from uv's cache as scripts/setup.sh
left it (a machine that never installed pearl downloads these bytes first). Recorded: the seconds of the install, the venv's size on disk, whether
torch came in, and in the core venv a `pearl join --model string` of two small tables and a PEARL-static index and link,
whose imports are listed.

    python benchmarks/install_size.py                 # core, serve, models, all → metrics/install.md and .json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALLS = ("core", "serve", "models", "all")
VERB_CHECK = """
import json, sys
from pearl.cli import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    assert not stop.code, stop.code
heavy = [m for m in ("torch", "transformers", "sentence_transformers", "fastapi", "ray", "dvc", "spacy") if m in sys.modules]
print(json.dumps(heavy))
"""


def uv(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "uv", *args], check=True, cwd=ROOT)


def size_mb(folder: Path) -> float:
    return int(subprocess.run(["du", "-sk", str(folder)], capture_output=True, text=True, check=True).stdout.split()[0]) / 1024


def find_links() -> list[str]:
    """scripts/setup.sh's: the folders pip finds wheels in (this machine's CPU build of torch), which uv does not read
    from pip's configuration."""
    configured = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"],
                                capture_output=True, text=True).stdout.split()
    return [arg for folder in os.environ.get("PIP_FIND_LINKS", "").split() + configured
            for arg in ("--find-links", folder)]


def install(wheel: Path, extra: str, venv: Path) -> dict:
    uv("venv", "-q", "--python", sys.executable, str(venv))
    target = str(wheel) if extra == "core" else f"pearl[{extra}] @ {wheel.as_uri()}"
    started = time.perf_counter()
    # bytecode compiled, as pip does
    uv("pip", "install", "-q", "--compile-bytecode", "--python", str(venv / "bin" / "python"), *find_links(),
       "-c", "constraints.txt", target)
    seconds = time.perf_counter() - started
    listed = subprocess.run([sys.executable, "-m", "uv", "pip", "list", "--python", str(venv / "bin" / "python")],
                            capture_output=True, text=True, check=True).stdout
    site = next(venv.glob("lib/python*/site-packages"))
    folders = {folder.name: size_mb(folder) for folder in site.iterdir() if folder.is_dir()
               and not folder.name.endswith((".dist-info", "__pycache__"))}
    largest = sorted(folders, key=folders.get, reverse=True)[:5]
    return {"install": extra, "seconds": round(seconds, 1), "mb": round(size_mb(venv)),
            "packages": len(listed.splitlines()) - 2, "torch": " torch " in f" {listed} ".replace("\n", " "),
            "largest_mb": {name: round(folders[name]) for name in largest}}


def core_verbs(venv: Path, work: Path, static: Path | None) -> list[str]:
    """The libraries of an extra that a `string` join, and a PEARL-static index and link of `static` where given,
    imported in `venv`."""
    (work / "left.csv").write_text("name\nNew York\nParis\nBerlin\n")
    (work / "right.csv").write_text("name\nnew york\nPariss\n")
    commands = [["join", str(work / "left.csv"), str(work / "right.csv"), "--left-on", "name", "--right-on", "name",
                 "--model", "string", "--out", str(work / "joined.parquet")]]
    if static is not None:
        commands += [["index", "build", "--input", str(work / "left.csv"), "--column", "name", "--model", str(static),
                      "--out", str(work / "index")],
                     ["link", "--input", str(work / "right.csv"), "--column", "name", "--index", str(work / "index"),
                      "--out", str(work / "linked.parquet")]]
    imported: set[str] = set()
    for command in commands:
        ran = subprocess.run([str(venv / "bin" / "python"), "-c", VERB_CHECK, *command], capture_output=True, text=True,
                             cwd=work)
        if ran.returncode != 0:
            raise SystemExit(f"the core install's `pearl {command[0]}` failed:\n{ran.stderr[-3000:]}")
        imported.update(json.loads(ran.stdout.strip().splitlines()[-1]))
    return sorted(imported)


def markdown(rows: list[dict], joined: list[str], static: Path | None) -> str:
    lines = [f"Measured {date.today()} by `python benchmarks/install_size.py` on {os.cpu_count()} CPU cores: the "
             "wheel into a new venv with uv, from a warm cache, one install at a time.", "",
             "| install | seconds | size on disk MB | packages | torch | largest folders, MB |",
             "|---|---:|---:|---:|---|---|"]
    for row in rows:
        name = "`pip install .`" if row["install"] == "core" else f"`pip install '.[{row['install']}]'`"
        largest = ", ".join(f"{folder} {mb}" for folder, mb in row["largest_mb"].items())
        lines.append(f"| {name} | {row['seconds']:.1f} | {row['mb']:,} | {row['packages']} | "
                     f"{'yes' if row['torch'] else 'no'} | {largest} |")
    ran = "`pearl join --model string` of two small tables" + (
        f", and `pearl index build` and `pearl link` with PEARL-static (`{static}`)," if static else "")
    lines += ["", f"In the core venv, {ran} ran and imported "
                  + (", ".join(joined) if joined else "no library of an extra (torch, transformers, FastAPI, Ray, DVC, "
                                                         "spaCy)") + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--installs", default=",".join(INSTALLS))
    parser.add_argument("--out", type=Path, default=Path("metrics/install.md"))
    parser.add_argument("--static", type=Path, default=Path("models/pearl-static"),
                        help="a PEARL-static export the core venv indexes and links with")
    args = parser.parse_args()
    if not (args.static / "modules.json").is_file():
        raise SystemExit(f"--static {args.static}: no PEARL-static export there; run `dvc repro static`")
    args.static = args.static.resolve()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        uv("build", "-q", "--wheel", "--out-dir", str(work / "dist"))
        wheel = next((work / "dist").glob("pearl-*.whl"))
        rows, joined = [], []
        for extra in args.installs.split(","):
            venv = work / f"venv-{extra}"
            rows.append(install(wheel, extra, venv))
            print(rows[-1], flush=True)
            if extra == "core":
                joined = core_verbs(venv, work, args.static)
            subprocess.run(["rm", "-rf", str(venv)], check=True)
    text = markdown(rows, joined, args.static.relative_to(ROOT) if args.static.is_relative_to(ROOT) else args.static)
    print(text)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
