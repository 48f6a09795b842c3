import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pearl.cli import app
from tests.conftest import ROOT

runner = CliRunner()


def test_help_lists_every_stage():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("corpus", "parse", "typing", "params"):
        assert command in result.output
    assert "phrases" in runner.invoke(app, ["parse", "--help"]).output


def test_bad_params_are_one_line_errors_with_exit_code_1():
    result = runner.invoke(app, ["params", "-S", "parse.min_frek=3"])
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: params.yaml: unknown key 'parse.min_frek' (a typo? see params.yaml for the valid keys)"
    )
    result = runner.invoke(app, ["params", "-S", "parse.min_freq"])
    assert result.exit_code == 1 and "expected section.key=value" in result.output
    assert runner.invoke(app, ["params", "-S", "parse.min_freq=3"]).exit_code == 0
    assert runner.invoke(app, ["params", "-S", "bench.tune_tasks=[]"]).exit_code == 0  # BURT's tune tasks remain
    result = runner.invoke(app, ["params", "-S", "bench.tune_tasks=[]", "-S", "bench.burt_tune_tasks=[]"])
    assert result.exit_code == 1 and result.output.startswith(  # the report's dep would be missing
        "error: params: bench.tune_tasks and bench.burt_tune_tasks are empty: the report ")


def test_missing_upstream_artifact_names_the_stage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["typing", "--params", str(ROOT / "params.yaml")])
    assert result.exit_code == 1
    assert "data/phrases/phrases.parquet is missing: run `dvc repro parse` first" in result.output


def test_a_sigterm_that_lands_in_a_finaliser_is_delivered_again(monkeypatch):
    """An exception raised in __del__ is printed and dropped, which once let a SIGTERMed stage finish."""
    import signal
    import time

    from pearl import cli

    sent = []
    monkeypatch.setattr(cli.os, "kill", lambda pid, signum: sent.append(signum))

    class Finalised:
        def __del__(self):
            cli._raise_terminated(signal.SIGTERM, sys._getframe())

    Finalised()  # its __del__ runs here
    time.sleep(0.3)
    assert sent == [signal.SIGTERM]
    with pytest.raises(cli.Terminated):
        cli._raise_terminated(signal.SIGTERM, sys._getframe())


def test_a_sigterm_that_stops_an_extension_modules_import_is_reported_as_the_stop(capsys):
    """pybind11 raises ImportError("initialization failed") from whatever stops a module's initialisation: a SIGTERM
    that landed in scipy's lazy import once ended a stage with that traceback instead of the stop's line."""
    import signal

    import typer

    from pearl import cli

    with pytest.raises(typer.Exit) as stopped, cli._one_line_errors():
        try:
            raise cli.Terminated
        except cli.Terminated as error:
            raise ImportError("initialization failed") from error
    assert stopped.value.exit_code == 128 + signal.SIGTERM
    assert "error: stopped by SIGTERM" in capsys.readouterr().err
    with pytest.raises(ImportError, match="no module"), cli._one_line_errors():  # any other failure stays itself
        raise ImportError("no module named nowhere")


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The models a test loads; each load fails, as a user's would after minutes of waiting."""
    from sentence_transformers import SentenceTransformer

    loaded = []

    def load(self, model_name_or_path=None, *args, **kwargs):
        loaded.append(str(model_name_or_path))
        raise AssertionError(f"{model_name_or_path} was loaded before the flags were checked")

    monkeypatch.setattr(SentenceTransformer, "__init__", load)  # pearl's own loader is a subclass
    return loaded


def _verb_commands(folder, model, index) -> dict[str, list[str]]:
    names = str(folder / "names.csv")
    return {
        "index build": ["index", "build", "--input", names, "--column", "name", "--out", str(folder / "idx"),
                        "--model", model],
        "index add": ["index", "add", "--index", index, "--input", names, "--column", "name"],
        "link": ["link", "--index", index, "--input", names, "--column", "name", "--out", str(folder / "l.csv")],
        "join": ["join", names, names, "--left-on", "name", "--right-on", "name", "--model", model,
                 "--out", str(folder / "j.csv")],
        "embed": ["embed", "acme", "--model", model],
        "types": ["types", "acme", "--model", model],
        "bench": ["bench", "--model", model, "--params", str(ROOT / "params.yaml")],
        "cluster": ["cluster", names, "--column", "name", "--model", model, "--out", str(folder / "c.csv")],
    }


@pytest.mark.parametrize("verb, flags, message", [
    ("index build", ["--column", "nme"], "the names table has no column 'nme'"),
    ("index build", ["--id-column", "key"], "the names table has no column 'key'"),
    ("index add", ["--column", "nme"], "the names table has no column 'nme'"),
    ("index add", ["--id-column", "key"], "the names table has no column 'key'"),
    ("link", ["--k", "0"], "--k 0: ask for at least 1"),
    ("link", ["--min-score", "7"], "--min-score 7.0: a cosine score lies in [-1, 1]"),
    ("link", ["--column", "nme"], "the mentions table has no column 'nme'"),
    ("join", ["--threshold", "7"], "--threshold 7.0: a cosine score lies in [-1, 1]"),
    ("join", ["--candidates", "0"], "--candidates 0: at least 1"),
    ("join", ["--sample", "0"], "--sample 0: at least 1 right row to choose on"),
    ("join", ["--string-weight", "2"], "--string-weight 2.0: a weight in [0, 1]"),
    ("join", ["--calibration-quantile", "2"], "--calibration-quantile 2.0: a quantile in [0, 1]"),
    ("join", ["--precision-target", "0"], "--precision-target 0.0: a precision in (0, 1]"),
    ("join", ["--precision-target", "0.9", "--threshold", "0.5"], "--precision-target chooses its own scoring"),
    ("join", ["--right-on", "nme"], "the right table has no column 'nme'"),
    ("join", ["--how", "outer"], "--how 'outer': inner or left"),
    ("embed", ["--out", "no-such-folder/v.npy"], "folder no-such-folder does not exist"),
    ("types", ["--out", "types.txt"], "write .parquet or .csv"),
    ("bench", ["--tasks", "turney,turnip"], "--tasks: unknown task 'turnip'"),
    ("cluster", ["--threshold", "7"], "--threshold 7.0: a cosine score lies in [-1, 1]"),
    ("cluster", ["--k", "0"], "--k 0: between 1 and the 2 distinct names"),
    ("cluster", ["--threshold", "banana"], "--threshold 'banana': give a cosine similarity in [-1, 1], or auto"),
    ("cluster", [], "give exactly one of --k"),
    ("cluster", ["--threshold", "0.5", "--string-weight", "2"], "--string-weight 2.0: a weight in [0, 1]"),
    ("join", ["--engine", "spark"], "--engine 'spark': local or ray"),
    ("cluster", ["--engine", "ray", "--model", "string", "--threshold", "0.5"],
     "--engine ray encodes on Ray actors, and `string` encodes nothing"),
])
def test_every_verb_checks_its_flags_before_it_loads_the_model(verb, flags, message, tiny_text_encoder, tiny_encoder,
                                                                 tmp_path, loads):
    from pearl.index.phrase_index import Index

    (tmp_path / "names.csv").write_text("name\nacme corp\nparis\n")
    index = tmp_path / "index"
    Index.build(["acme corp", "paris"], encoder=tiny_text_encoder).save(index)
    result = runner.invoke(app, _verb_commands(tmp_path, str(tiny_encoder), str(index))[verb] + flags)
    assert loads == [] and result.exit_code == 1, result.output
    assert result.output.strip().startswith("error: ") and message in result.output, result.output


def test_embed_tells_an_export_that_fails_to_load_in_one_line(tmp_path):
    """A folder that passes as a PEARL export but holds no model (a copy cut short) names --model, not a traceback."""
    (tmp_path / "pearl_model.json").write_text("{}")
    (tmp_path / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "",
                                                        "type": "st_modules.PhraseTransformer"}]))
    result = runner.invoke(app, ["embed", "--model", str(tmp_path), "acme"])
    assert result.exit_code == 1 and result.output.startswith(f"error: --model='{tmp_path}' could not be loaded ("), result.output
    assert result.output.count("\n") == 1, result.output


def test_embed_refuses_string_which_has_no_vectors():
    result = runner.invoke(app, ["embed", "--model", "string", "acme"])
    assert (result.exit_code, result.output) == (
        1, "error: --model string has no vectors: give a PEARL export or a sentence-transformers model\n")


def test_embed_writes_the_vectors_the_verbs_compare(tiny_encoder, tmp_path):
    """Any sentence-transformers model, encoded by the verbs' own encoder: `pearl embed` agrees with an index."""
    from pearl.index.encoder import load_encoder

    texts = ["New York Times", "NYTimes", "café de flore"]
    result = runner.invoke(app, ["embed", "--model", str(tiny_encoder), "--out", str(tmp_path / "v.npy"), *texts])
    assert result.exit_code == 0, result.output
    assert np.array_equal(np.load(tmp_path / "v.npy"), load_encoder(str(tiny_encoder)).encode(texts))


@pytest.mark.slow
def test_the_libraries_logs_and_bars_show_only_with_verbose(tiny_encoder, tmp_path):
    """A verb's stderr holds pearl's own lines; the loaders' INFO lines and "Loading weights" bar need -v."""
    (tmp_path / "names.txt").write_text("acme corp\nparis\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_", "TQDM_"))}
    pearl = str(Path(sys.executable).parent / "pearl")
    runs = [subprocess.Popen([pearl, *flags, "cluster", "names.txt", "--column", "text", "--model", str(tiny_encoder),
                              "--k", "1", "--out", f"clusters{len(flags)}.csv"],
                             cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
            for flags in ((), ("-v",))]  # side by side: each pays the libraries' imports
    quiet, verbose = (run.communicate(timeout=300)[1] for run in runs)
    assert all(run.returncode == 0 for run in runs), quiet + verbose
    assert "pearl.cluster: 2 rows" in quiet and "pearl.cluster: 2 rows" in verbose
    for line in ("sentence_transformers.base.model: No device provided", "Loading weights"):
        assert line not in quiet and line in verbose, quiet + verbose


@pytest.mark.parametrize("command, error, unloaded", [
    (["parse"], "data/corpus/sentences.parquet is missing", ("spacy", "torch")),
    (["augment"], "data/typed/phrases.parquet is missing", ("spacy", "torch")),
    (["train"], "data/typed/phrases.parquet is missing", ("torch",)),
    (["average"], "models/finetuned/pearl_model.json is missing", ("torch",)),
    (["bench-task", "base", "ppdb", "-S", "bench.data_dir=nowhere"], "nowhere/ppdb/ppdb.json is missing",
     ("torch", "sklearn", "scipy.stats")),
    (["bench-task", "model", "turney", "-S", "bench.data_dir=nowhere"], "models/pearl is missing",
     ("torch", "sklearn", "scipy.stats")),
])
def test_a_stage_tells_a_missing_input_before_the_model_libraries_import(command, error, unloaded, tmp_path):
    """spaCy, torch, transformers and scikit-learn take 2–9 s to import: a missing input is told without them."""
    (tmp_path / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())
    code = (f"import sys\nfrom pearl.cli import main\ntry:\n    main({command!r})\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {unloaded!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert error in done.stderr
    assert done.stdout.strip() == "[]"
