"""Faults that come from outside a file: a Hugging Face stream that drops mid-corpus."""

import os

import pytest
from typer.testing import CliRunner

from tests.reliability.conftest import tree

pytestmark = pytest.mark.slow


def test_a_stream_that_drops_fails_in_one_line_and_writes_nothing(project, tmp_path, monkeypatch):
    import datasets

    from pearl.cli import app

    def dropping(name, config, split, streaming):
        yield from ({"id": str(i), "text": f"Sentence number {i} is about the capital of France."} for i in range(3))
        raise ConnectionError("Connection reset by peer\nmore detail")

    monkeypatch.setattr(datasets, "load_dataset", dropping)
    root = project.copy(tmp_path / "project")
    before = tree(root)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(app, ["corpus", "-S", "corpus.source=wikipedia"])
    os.chdir(tmp_path)
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert lines == ["error: corpus.hf_dataset='wikimedia/wikipedia': the stream failed after 3 documents "
                     "(ConnectionError: Connection reset by peer); run the stage again"], result.stderr
    assert tree(root) == before
