"""benchmarks/bench_table.py: one folder per system, or one per seed with mean ± std."""

import json

import pytest

from pearl.errors import PearlError
from bench_table import scores, table


def _folder(tmp_path, name, task_scores):
    folder = tmp_path / name
    folder.mkdir()
    for task, score in task_scores.items():
        (folder / f"{task}.json").write_text(json.dumps({"score": score}))
    return folder


def test_seed_folders_give_mean_and_sample_std(tmp_path):
    seeds = [scores(_folder(tmp_path, f"s{i}", {"bird": b, "turney": 60.0})) for i, b in enumerate([60.0, 62.0, 64.0])]
    one = [scores(_folder(tmp_path, "peer", {"bird": 69.8}))]
    text = table({"base": seeds, "peer": one})
    assert "| base | 60.00 ± 0.00 | 62.00 ± 2.00 |" in text  # Turney before BIRD, as the report orders them
    assert "| peer | – | 69.80 |" in text


def test_a_task_missing_from_one_seed_says_how_many_scored_it(tmp_path):
    seeds = [scores(_folder(tmp_path, "a", {"bird": 60.0, "yago": 80.0})), scores(_folder(tmp_path, "b", {"bird": 62.0}))]
    assert "| base | 61.00 ± 1.41 | 80.00 (n=1) |" in table({"base": seeds})


def test_a_reference_models_file_reads_as_its_one_models_result(tmp_path):
    folder = tmp_path / "ref"
    folder.mkdir()
    (folder / "bird.json").write_text(json.dumps({"sentence-transformers/all-mpnet-base-v2": {"score": 69.77}}))
    assert scores(folder)["bird"] == 69.77


def test_a_file_of_several_reference_models_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "ref"
    folder.mkdir()
    (folder / "bird.json").write_text(json.dumps({"a": {"score": 1.0}, "b": {"score": 2.0}}))
    with pytest.raises(PearlError, match="pass one model's folder"):
        scores(folder)
