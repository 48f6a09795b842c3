"""The DVC pipeline end to end on a small mixed-script corpus, in a scratch copy of the repo."""

import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml

from tests.conftest import ROOT
from tests.reliability.conftest import connections, offline_env, toy_benchmark

SENTENCES = [
    "The New York Times is a newspaper in New York City.",
    "Stanley Kubrick directed the film in 1968.",
    "Москва — столица России, and the city of Tokyo (東京) is the capital of Japan 🗾.",
    "Emoji such as 🎉 appear in the capital of France, café culture, naïve art and Zürich.",
    "The الإسكندرية library was very large.",
]


def _run(args, cwd, env):
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout


# `dvc status` after the test's edit of negatives.min_edit_sim, train.p_alias and model.teacher: the stages that read
# one of them, and what they read (a whole section by its name; check_params reads the whole file)
STATUS_AFTER_EDIT = {"check_params": ["params.yaml"], "augment": ["model.teacher", "train.p_alias"],
                     "candidates": ["negatives.min_edit_sim"], "teacher": ["model.teacher"],
                     "negatives": ["model.teacher"], "train": ["model.teacher", "train"],
                     "train_pearl_base": ["model.teacher", "train"], "train_burt_small": ["train"]}


@pytest.mark.slow
def test_dvc_repro_then_noop_then_experiment(tmp_path, tiny_encoder):
    repo = tmp_path / "repo"
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if name.startswith(("data/", "metrics/", "models/")) and not name.startswith("data/reference/") or name == "dvc.lock":
            continue
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": " ".join(SENTENCES)}) + "\n" for _ in range(3)))
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["corpus"].update(source="files", files=[str(corpus)])
    params["parse"]["n_process"] = 1
    params["augment"].update(nltk_data=str(ROOT / "nltk_data"),  # git-ignored: prepared by scripts/setup.sh
                             alias_sources=["geonames", "schwartz_hearst"])  # the sources read from packages and the corpus
    toy_benchmark(tmp_path / "bench")
    (tmp_path / "general" / "word-sim").mkdir(parents=True)
    (tmp_path / "general" / "word-sim" / "EN-RW-STANFORD.txt").write_text("cat\tdog\t8\ncat\tcar\t2\ncup\tmug\t9\n")
    # one task per suite: each bench stage is a process that loads its model (6–8 s here), run twice
    params["bench"].update(data_dir=str(tmp_path / "bench"), tasks=["turney"], string_tasks=["turney"],
                           general_dir=str(tmp_path / "general"), tune_tasks=["rw"],
                           reference_models=["sentence-transformers/all-MiniLM-L6-v2"])  # offline in the tests
    params["model"]["teacher"] = "sentence-transformers/all-MiniLM-L6-v2"  # offline in the tests
    # PEARL-small on the tests' tiny BERT: `static` distils every token of its backbone's vocabulary (77 here, 30,522
    # in MiniLM's: 40 s on a CI core)
    params["model"]["backbone"] = str(tiny_encoder)
    params["figure4"].update(per_type=3, perplexity=2.0)
    params["train"].update(batch_size=2, max_steps=3, checkpoint_dir=str(tmp_path / "checkpoints"), num_workers=0)
    # PEARL-base on the same backbone (the only one offline in the tests), a step fewer
    params["pearl_base"].update(backbone="sentence-transformers/all-MiniLM-L6-v2", batch_size=2, max_steps=2)
    # BURT-small on NLI alone (PTC reads all of WordNet: 10 s), two steps; BURT's test task, not its tune twin
    params["burt_small"].update(pi_weight=0, ptc_weight=0, max_steps=2)
    params["bench"]["burt_tune_tasks"] = []
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    env = offline_env(repo)  # sockets blocked and hub variables unset: the default DAG must not reach for the network
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    _run(["git", "init", "-q"], repo, env)
    _run([*git, "add", "-A"], repo, env)
    _run([*git, "commit", "-qm", "init"], repo, env)

    _run(["dvc", "repro"], repo, env)
    summary = json.loads((repo / "metrics/summary.json").read_text())
    test = summary["test"]
    assert set(test) == {"base", "string", "ref:sentence-transformers/all-MiniLM-L6-v2", "model", "delta", "pearl-base",
                         "pearl_base_margin_over_best_offshelf", "static", "static_gap", "burt-small", "burt_delta"}
    assert set(test["burt-small"]) == {"turney", "sick_r"} and "sick_r" in test["base"]
    assert set(summary["tune"]["burt-small"]) == {"rw"}
    assert set(test["model"]) == {"turney", "sick_r"} and set(test["ref:sentence-transformers/all-MiniLM-L6-v2"]) == {"turney"}
    assert set(summary["tune"]["model"]) == {"rw"}
    report = (repo / "metrics/summary.md").read_text()
    assert "| String distance (Jaccard, 3-grams) |" in report and "### Tune suite (defaults are chosen here)" in report
    typed = pl.read_parquet(repo / "data/typed/phrases.parquet")
    assert typed.height > 5 and typed["label_id"].is_between(0, 94).all() and (typed["freq"] >= 2).all()
    labels = dict(zip(typed["phrase"], typed["label"]))
    assert labels["The New York Times"] == "NP-ORG" and labels["in 1968"] == "PP-OTHER"
    assert {"Москва", "東京", "the capital of Japan 🗾", "naïve art"} <= labels.keys()
    variants = pl.read_parquet(repo / "data/augment/variants.parquet")
    assert set(variants["level"]) == {"char", "token", "phrase"}  # train.p_alias is 0: no alias source is built
    augment = json.loads((repo / "metrics/augment.json").read_text())
    assert not [key for key in augment if key.startswith("alias_")] and augment["leak_dropped_alias"] == 0
    assert (variants["variant"] != variants["phrase"]).all()
    negatives = pl.read_parquet(repo / "data/negatives/hard_negatives.parquet")
    assert set(negatives["phrase"]) == set(typed["phrase"])
    assert json.loads((repo / "metrics/train.json").read_text())["steps"] == 3
    assert (repo / "models/pearl/modules.json").is_file() and "2_CharFeatures" in (repo / "models/pearl/modules.json").read_text()
    assert json.loads((repo / "metrics/pearl-base/train.json").read_text())["steps"] == 2
    assert (repo / "models/pearl-base/modules.json").is_file() and set(summary["tune"]["pearl-base"]) == {"rw"}
    assert "| PEARL-base (ours) |" in report and "| PEARL-small (ours) |" in report and "| PEARL-static (ours) |" in report
    assert "### BURT's Table 2, offline subset, test suite" in report and "| BURT-small (BURT's recipe, offline data) |" in report
    burt = json.loads((repo / "metrics/burt-small/train.json").read_text())
    assert list(burt["burt"]) == ["nli"] and burt["steps"] == 2 and burt["burt"]["nli"]["dropped_test_or_tune"] > 0
    assert json.loads((repo / "metrics/static.json").read_text())["dimension"] == 32 + 256  # the tiny BERT's, the 3-grams
    assert set(summary["tune"]["static"]) == {"rw"}
    figure4 = json.loads((repo / "metrics/figure4.json").read_text())
    assert figure4["conll2003"]["phrases"] == 9 and (repo / "metrics/figure4/phrases.png").is_file()
    assert "up to date" in _run(["dvc", "repro"], repo, env)

    _run([*git, "add", "-A"], repo, env)
    _run([*git, "commit", "-qm", "first run"], repo, env)
    # what an experiment's params invalidate, read from `dvc status` without running them: each reaches the stages
    # that read it, and no other (the stages behind those re-run because their inputs change)
    edited = yaml.safe_load((repo / "params.yaml").read_text())
    edited["negatives"]["min_edit_sim"], edited["train"]["p_alias"], edited["model"]["teacher"] = 0.9, 0.1, None
    (repo / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
    status = json.loads(_run(["dvc", "status", "--json"], repo, env))
    changed = {stage: sorted(param for change in changes for param in _changed_params(change))
               for stage, changes in status.items()}
    assert changed == STATUS_AFTER_EDIT, changed
    _run(["git", "checkout", "params.yaml"], repo, env)
    # one experiment, run: it re-runs the DAG from train to the export once (`average` loads the export it writes, as
    # the benchmarks, which ran above, do) and a small-only run leaves PEARL-base's note
    _run(["dvc", "exp", "run", "-S", "train.lr=3e-5", "-S", "model.char_encoder=false", "-S", "pearl_base.enabled=false",
          "average", "bench_tune_pearl_base"], repo, env)
    diff = json.loads(_run(["dvc", "metrics", "diff", "--json"], repo, env))
    assert float(yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["train"]["params"]["params.yaml"]["train"][
        "lr"]) == 3e-5
    assert (diff["metrics/train.json"]["char_encoder"]["old"], diff["metrics/train.json"]["char_encoder"]["new"]) == (True, False)
    assert diff["metrics/average.json"]["dimension"]["new"] < diff["metrics/average.json"]["dimension"]["old"]
    assert "metrics/teacher.json" not in diff and "metrics/augment.json" not in diff  # upstream of train: not re-run
    # a small-only run: PEARL-base's stages leave their note, which its bench and the report pass over
    assert json.loads((repo / "metrics/pearl-base/train.json").read_text())["enabled"] is False
    assert sorted(p.name for p in (repo / "models/pearl-base").iterdir()) == ["NOT_TRAINED.json"]
    assert "skipped" in json.loads((repo / "metrics/tune/pearl-base/rw.json").read_text())
    assert connections(repo) == []


def _changed_params(change) -> list[str]:
    if not isinstance(change, dict):  # "always changed"
        return []
    params = change.get("changed deps", {}).get("params.yaml", {})
    return list(params) if isinstance(params, dict) else ["params.yaml"]  # a stage that reads the whole file


def _stages() -> dict[str, dict]:
    """dvc.yaml's stages, a foreach stage as its `do` template."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    return {name: stage.get("do", stage) for name, stage in stages.items()}


# the code that loads models/pearl, which a stage reading it reads too
EXPORT_LOADING = ["pearl/embedder.py", "pearl/model/__init__.py", "pearl/model/export.py", "pearl/model/st_loader.py", "pearl/model/st_modules.py",
                  "pearl/model/char_encoder.py", "pearl/model_ids.py"]


def test_every_stage_that_loads_the_export_depends_on_the_code_that_loads_it():
    assert [path for path in EXPORT_LOADING if not (ROOT / path).is_file()] == []
    readers = {name: stage["deps"] for name, stage in _stages().items()
               if {"models/pearl", "models/pearl-base", "models/pearl-static", "models/burt-small"} & set(stage.get("deps", []))}
    assert {"bench", "bench_tune", "figure4", "bench_pearl_base", "bench_tune_pearl_base", "static", "bench_static",
            "bench_tune_static", "bench_burt_small", "bench_tune_burt_small", "bench_burt_tasks",
            "bench_burt_tasks_burt_small"} <= readers.keys()
    missing = {name: [path for path in EXPORT_LOADING if not any(path == dep or path.startswith(f"{dep}/") for dep in deps)]
               for name, deps in readers.items()}
    assert missing == dict.fromkeys(readers, [])


def test_a_stage_that_reads_the_bench_settings_depends_on_the_whole_section():
    readers = {name: stage["params"] for name, stage in _stages().items() if name.split("_")[0] == "bench"}
    sectioned = {name for name, params in readers.items() if "bench" in params}
    assert sectioned == {"bench", "bench_base", "bench_ref", "bench_tune", "bench_tune_base", "bench_tune_ref",
                         "bench_pearl_base", "bench_tune_pearl_base", "bench_static", "bench_tune_static",
                         "bench_burt_small", "bench_tune_burt_small", *(f"bench{suite}_burt_tasks{system}"
                                                                        for suite in ("", "_tune")
                                                                        for system in ("", "_base", "_burt_small"))}
    assert not [param for name in sectioned for param in readers[name] if param.startswith("bench.")]


# modules the benchmark imports that cannot move a score: errors, logging, params (tracked as params), the CLI
SCORE_NEUTRAL = {"pearl/errors.py", "pearl/log.py", "pearl/params.py", "pearl/device.py", "pearl/artifacts.py",
                 "pearl/lone_surrogates.py", "pearl/cli.py"}
TUNE_ONLY = {"pearl/corpus/sources.py"}  # the tune suite's Wiki aliases read the corpus package
EMBEDDING_ONLY = {"pearl/embedder.py"}  # bench_string scores 3-gram Jaccard: no model


def _pearl_imports(path: Path) -> set[str]:
    """The files of the pearl modules `path` imports directly (`from pearl.index import trigrams` included)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [(node.module, alias.name) for alias in node.names] if isinstance(node, ast.ImportFrom) and node.module \
            else [(alias.name, None) for alias in node.names] if isinstance(node, ast.Import) else []
        for module, member in names:
            if not module.startswith("pearl"):
                continue
            base = ROOT / module.replace(".", "/")
            for candidate in ([base / f"{member}.py"] if member else []) + [base.with_suffix(".py"), base / "__init__.py"]:
                if candidate.is_file():
                    found.add(str(candidate.relative_to(ROOT)))
                    break
    return found


def test_every_benchmark_stage_depends_on_the_code_its_scores_come_from():
    imported = set().union(*(_pearl_imports(path) for path in [ROOT / "stages" / "bench.py",
                                                               *(ROOT / "pearl" / "bench").glob("*.py")]))
    wanted = {path for path in imported - SCORE_NEUTRAL if not path.startswith("pearl/bench/")}
    assert {"pearl/scores.py", "pearl/index/trigrams.py"} <= wanted
    for name, stage in _stages().items():
        if name.split("_")[0] != "bench":
            continue
        needs = (wanted if "tune" in name else wanted - TUNE_ONLY) - (EMBEDDING_ONLY if name == "bench_string" else set())
        missing = [path for path in needs if not any(path == dep or path.startswith(f"{dep}/") for dep in stage["deps"])]
        assert missing == [], f"{name} lacks {missing}"
