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
