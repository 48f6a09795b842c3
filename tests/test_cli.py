import pytest
from typer.testing import CliRunner

from pearl.cli import app

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


def test_missing_upstream_artifact_names_the_stage(tmp_path, monkeypatch):
    from tests.conftest import ROOT

    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["typing", "--params", str(ROOT / "params.yaml")])
    assert result.exit_code == 1
    assert "data/phrases/phrases.parquet is missing: run `dvc repro parse` first" in result.output


def test_a_sigterm_that_lands_in_a_finaliser_is_delivered_again(monkeypatch):
    """An exception raised in __del__ is printed and dropped, which once let a SIGTERMed stage finish."""
    import signal
    import sys
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
