"""The install's extras (pyproject.toml): the core runs the `string` verbs without any model, service, Ray or
pipeline library, and a command whose extra is missing fails in one line naming it. Each check runs in a fresh
interpreter, whose sys.modules shows what was imported."""

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
# libraries of the extras: the core must never import them
EXTRA_LIBRARIES = ("torch", "transformers", "sentence_transformers", "fastapi", "uvicorn", "prometheus_client", "ray",
                   "dvc", "spacy", "datasets", "benepar", "gensim", "matplotlib")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_pearl_and_its_string_verbs_import_no_library_of_an_extra(tmp_path):
    pl.DataFrame({"name": ["New York", "Paris", "Berlin", "Parma"]}).write_csv(tmp_path / "left.csv")
    pl.DataFrame({"name": ["new york", "Pariss"]}).write_csv(tmp_path / "right.csv")
    commands = [
        ["index", "build", "--input", f"{tmp_path}/left.csv", "--column", "name", "--model", "string",
         "--out", f"{tmp_path}/index"],
        ["link", "--input", f"{tmp_path}/right.csv", "--column", "name", "--index", f"{tmp_path}/index",
         "--out", f"{tmp_path}/linked.parquet"],
        ["join", f"{tmp_path}/left.csv", f"{tmp_path}/right.csv", "--left-on", "name", "--right-on", "name",
         "--model", "string", "--out", f"{tmp_path}/joined.parquet"],
        ["cluster", f"{tmp_path}/left.csv", "--column", "name", "--model", "string", "--threshold", "auto",
         "--out", f"{tmp_path}/clusters.parquet"],
    ]
    ran = _python(f"""
import json, sys
import pearl
imported = [sorted(m for m in {EXTRA_LIBRARIES!r} if m in sys.modules)]
from pearl.cli import main
for command in {commands!r}:
    try:
        main(command)
    except SystemExit as stop:
        assert not stop.code, (command, stop.code)
    imported.append(sorted(m for m in {EXTRA_LIBRARIES!r} if m in sys.modules))
print(json.dumps(imported))
""")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout.splitlines()[-1]) == [[]] * 5
    for out in ("index", "linked.parquet", "joined.parquet", "clusters.parquet"):
        assert (tmp_path / out).exists()


MODELS = "error: this needs pearl's [models] extra, and sentence_transformers is not installed: pip install " \
         "'pearl[models]', or give --model string"


@pytest.mark.parametrize("missing, command, line", [
    ("sentence_transformers", ["index", "build", "--input", "{left}", "--column", "name", "--out", "{out}",
                               "--model", "sentence-transformers/all-MiniLM-L6-v2"], MODELS),
    ("fastapi", ["serve", "--index", "{index}", "--port", "65000"],
     "error: this needs pearl's [serve] extra, and fastapi is not installed: pip install 'pearl[serve]'"),
    # the Ray engine's own line (pearl.ray_engine), which names Ray's package as a node needs it
    ("ray", ["index", "build", "--input", "{left}", "--column", "name", "--out", "{out}", "--model",
             "sentence-transformers/all-MiniLM-L6-v2", "--engine", "ray"],
     "error: engine=ray needs Ray: pip install 'ray[data]' (on every node), or set engine=local"),
])
def test_a_command_whose_extra_is_missing_fails_in_one_line_naming_it(tmp_path, missing, command, line):
    from pearl.index.phrase_index import Index

    pl.DataFrame({"name": ["New York", "Paris"]}).write_csv(tmp_path / "left.csv")
    Index.build(["New York", "Paris"], ["NY", "PA"], "string").save(tmp_path / "index")
    command = [part.format(left=tmp_path / "left.csv", out=tmp_path / "out.parquet", index=tmp_path / "index")
               for part in command]
    # None in sys.modules: the library's import fails as if it were not installed
    ran = _python(f"import sys; sys.modules[{missing!r}] = None\nfrom pearl.cli import main\nmain({command!r})")
    assert ran.returncode == 1, ran.stderr[-3000:]
    assert ran.stderr.strip().splitlines()[-1] == line
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.slow
def test_the_core_wheel_alone_runs_a_string_join_and_a_static_link(tmp_path, tiny_static):
    # the dependencies pyproject.toml gives the core are enough: the wheel in a new venv, without any extra
    from install_size import core_verbs, install, uv

    uv("build", "-q", "--wheel", "--out-dir", str(tmp_path / "dist"))
    installed = install(next((tmp_path / "dist").glob("pearl-*.whl")), "core", tmp_path / "venv")
    assert not installed["torch"]
    assert core_verbs(tmp_path / "venv", tmp_path, tiny_static[0]) == []
    assert pl.read_parquet(tmp_path / "joined.parquet")["name_left"].to_list() == ["New York", "Paris"]
    assert pl.read_parquet(tmp_path / "linked.parquet")["mention"].unique().sort().to_list() == ["Pariss", "new york"]
