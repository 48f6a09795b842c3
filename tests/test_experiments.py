import json
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml

from pearl.bench.task_names import TUNE_MEAN_TASKS, TUNE_TASKS
from pearl.errors import PearlError
from pearl.experiments import shell
from pearl.experiments.definitions import ADDED_OFF, Run, load_table, load_tables, parse_name
from pearl.experiments.results import Finished, aggregate, finished_experiments, markdown, read_run, sweep_points
from pearl.experiments.runner import run_all
from pearl.experiments.systems import SYSTEMS
from pearl.params import load_params, set_key

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_tables_are_valid_and_cover_the_papers_experiments():
    tables = load_tables(ROOT / "experiments", ROOT / "params.yaml")
    assert {"table3", "table4", "figure5", "figure5full"} <= tables.keys()
    ablated = {key for overrides in tables["table3"].rows.values() for key in overrides}
    assert {"train.contrastive_weight", "train.type_weight", "train.distill_weight", "model.char_encoder",
            "train.hard_negatives", "average.alpha", "train.p_char", "train.p_token", "train.p_phrase"} <= ablated
    assert {"train.lr", "train.batch_size", "train.temperature", "average.alpha"} <= tables["figure5"].sweeps.keys()
    for table in tables.values():
        for run in table.runs():
            assert parse_name(run.name, tables) == (table.name, run.row, run.seed)


def _table(tmp_path, body: dict) -> Path:
    path = tmp_path / "t9.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def test_a_row_that_makes_bad_params_fails_in_one_line_naming_it(tmp_path):
    with pytest.raises(PearlError, match=r"row bad: .*train.lrr") as error:
        load_table(_table(tmp_path, {"rows": {"ok": {"train.lr": 1e-4}, "bad": {"train.lrr": 1}}}), ROOT / "params.yaml")
    assert "\n" not in str(error.value)
    with pytest.raises(PearlError, match="row bad: .*train.hard_negatives=-1"):
        load_table(_table(tmp_path, {"rows": {"bad": {"train.hard_negatives": -1}}}), ROOT / "params.yaml")
    with pytest.raises(PearlError, match="row lrr-1: .*train.lrr"):
        load_table(_table(tmp_path, {"sweeps": {"train.lrr": [1]}}), ROOT / "params.yaml")
    with pytest.raises(PearlError, match="unknown key"):
        load_table(_table(tmp_path, {"rows": {"a": {}}, "sedes": [1]}), ROOT / "params.yaml")
    with pytest.raises(PearlError, match="no such experiment table"):
        load_table(tmp_path / "nope.yaml", ROOT / "params.yaml")


def test_sweeps_vary_one_param_at_a_time_or_all_in_a_grid(tmp_path):
    sweeps = {"train.lr": [1e-5, 3e-5], "average.alpha": [0.5, 1.0]}
    one = load_table(_table(tmp_path, {"sweeps": sweeps, "seeds": [42, 1]}), ROOT / "params.yaml")
    # 3e-5 and 0.5 are the defaults: their point is the default row
    assert one.rows == {"default": {}, "lr-1.0e-05": {"train.lr": 1e-5}, "alpha-1.0": {"average.alpha": 1.0}}
    grid = load_table(_table(tmp_path, {"sweeps": sweeps, "grid": True, "fixed": {"train.max_steps": None}}),
                      ROOT / "params.yaml")
    assert len(grid.rows) == 1 + 4 and all(r["train.max_steps"] is None for r in grid.rows.values())
    # a table pinned at an earlier default sweeps around it: its own value is the default row
    pinned = load_table(_table(tmp_path, {"sweeps": {"train.max_steps": [123, 999]}, "fixed": {"train.max_steps": 123}}),
                        ROOT / "params.yaml")
    assert pinned.rows == {"default": {"train.max_steps": 123}, "max_steps-999": {"train.max_steps": 999}}
    assert pinned.recipes["default"] != one.recipes["default"]
    runs = one.runs()
    assert [r.name for r in runs[:3]] == ["t9-default-s42", "t9-lr-1.0e-05-s42", "t9-alpha-1.0-s42"]
    # the default seed is the run itself; another seed goes to train.seed alone
    assert runs[1].set_args(42) == ["-S", "train.lr=1.0e-05"]
    assert runs[4].set_args(42) == ["-S", "train.lr=1.0e-05", "-S", "train.seed=1"]
    assert Run("t9", "x", 1, {"model.teacher": None}).set_args(42)[:2] == ["-S", "model.teacher=null"]


def test_dry_run_prints_the_commands_of_the_runs_not_finished(capsys):
    runs = [Run("t9", "a", 42, {"train.lr": 1e-4}), Run("t9", "b", 42, {}), Run("t9", "a", 1, {"train.lr": 1e-4})]
    names = run_all(runs, 42, ("bench_tune_base", "bench_tune"), done={"t9-b-s42"}, dry_run=True)
    assert names == ["t9-a-s42", "t9-a-s1"]
    assert capsys.readouterr().out.splitlines() == [
        "dvc exp run -n t9-a-s42 -S train.lr=0.0001 bench_tune_base bench_tune",
        "dvc exp run -n t9-a-s1 -S train.lr=0.0001 -S train.seed=1 bench_tune_base bench_tune",
    ]


def test_an_experiment_that_fails_with_head_detached_leaves_the_branch_checked_out_at_its_params(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    _commit(tmp_path, {"params.yaml": "train: {lr: 3.0e-5}\n", "dvc.lock": "stages: {}\n", "metrics/train.json": "{}"})
    monkeypatch.chdir(tmp_path)
    real_run = shell.run

    def fake_run(args: list[str], capture: bool = True) -> str:
        if args[:3] == ["dvc", "exp", "run"]:  # as DVC leaves an interrupted run: params set, HEAD detached
            Path("params.yaml").write_text("train: {lr: 1.0e-4}\n")
            real_run(["git", "checkout", "--quiet", "--detach"])
            raise PearlError("`dvc exp run` failed: interrupted")
        return "" if args[0] == "dvc" else real_run(args, capture)

    monkeypatch.setattr(shell, "run", fake_run)
    with pytest.raises(PearlError, match="experiment t9-a-s42 failed"):
        run_all([Run("t9", "a", 42, {"train.lr": 1e-4})], 42, ("bench_tune",), done=set())
    assert real_run(["git", "branch", "--show-current"]).strip() == "main"
    assert Path("params.yaml").read_text() == "train: {lr: 3.0e-5}\n"


@pytest.mark.slow
def test_experiments_run_in_a_clone_that_never_built_some_outputs_of_the_lock(tmp_path, monkeypatch):
    import sys

    dvc = [str(Path(sys.executable).with_name("dvc"))]
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    subprocess.run([*dvc, "init", "-q"], cwd=tmp_path, check=True)
    _commit(tmp_path, {"params.yaml": "x: 1\n", "metrics/.keep": "", "dvc.yaml": (  # the runner restores metrics/
        "stages:\n  small:\n    cmd: cp params.yaml out.txt\n    params: [x]\n    outs: [out.txt]\n"
        "  big:\n    cmd: echo big > big.txt\n    outs: [big.txt]\n")})
    subprocess.run([*dvc, "repro", "-q"], cwd=tmp_path, check=True)
    _commit(tmp_path, {})
    # as in a fresh clone where only the small model was built: `big`'s output is in no cache
    big = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]["big"]["outs"][0]["md5"]
    (tmp_path / ".dvc" / "cache" / "files" / "md5" / big[:2] / big[2:]).unlink()
    (tmp_path / "big.txt").unlink()
    monkeypatch.chdir(tmp_path)
    assert run_all([Run("t9", "a", 42, {"x": 2})], 42, ("small",), done=set()) == ["t9-a-s42"]
    assert (tmp_path / "out.txt").read_text() == "x: 1\n" and not (tmp_path / "big.txt").exists()


def _commit(repo: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "exp"], cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()


@pytest.mark.slow
def test_finished_experiments_are_read_from_dvcs_refs_of_every_commit(tmp_path, monkeypatch):
    import sys

    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    dvc = [str(Path(sys.executable).with_name("dvc"))]
    subprocess.run([*dvc, "init", "-q"], cwd=tmp_path, check=True)
    first = _commit(tmp_path, {"params.yaml": "x: 1\n", "dvc.yaml": "stages:\n  s:\n    cmd: cp params.yaml out.txt\n"
                               "    params: [x]\n    outs: [out.txt]\n"})
    subprocess.run([*dvc, "exp", "run", "-q", "-n", "old-exp", "-S", "x=2"], cwd=tmp_path, check=True)
    subprocess.run(["git", "checkout", "--", "params.yaml"], cwd=tmp_path, check=True)
    second = _commit(tmp_path, {"notes.txt": "a later commit"})
    subprocess.run([*dvc, "exp", "run", "-q", "-n", "new-exp", "-S", "x=3"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    found = sorted(finished_experiments(), key=lambda f: f.name)
    assert [(f.name, f.baseline) for f in found] == [("new-exp", second), ("old-exp", first)]
    for f in found:  # each rev is the experiment's own commit, holding its params
        assert shell.git_show(f.rev, "params.yaml") == f"x: {2 if f.name == 'old-exp' else 3}\n"


def _experiment_commit(repo: Path, seed_score: float, test_model_hash: str, overrides: dict,
                       before_ray: bool = False, before_shared_storage: bool = False) -> str:
    """An experiment's commit: the project's params with `overrides` set, as `dvc exp run -S` leaves them;
    `before_ray`: made before params.yaml had `engine`, the ray and BURT sections, and the `ADDED_OFF` levers;
    `before_shared_storage`: before it had ray.shared_storage."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for dotted, value in overrides.items():
        set_key(params, dotted, value)
    if before_ray:  # and before BURT's sections and bench keys
        del params["ray"], params["engine"], params["burt"], params["burt_small"]
        for key in ("burt_dir", "burt_tasks", "burt_tune_tasks"):
            del params["bench"][key]
        for section, key in ADDED_OFF:
            del params[section][key]
    if before_shared_storage:
        del params["ray"]["shared_storage"]
    model = {"path": "models/pearl", "md5": "m1.dir"}
    lock = {"stages": {
        "average": {"outs": [model]},
        **{f"bench_tune@{t}": {"deps": [model]} for t in TUNE_TASKS},
        "bench_tune_base@rw": {"params": {"params.yaml": {"model.backbone": params["model"]["backbone"],
                                                          "model.prefix": params["model"]["prefix"]}}},
        "bench@bird": {"deps": [{"path": "models/pearl", "md5": test_model_hash}]},
    }}
    files = {"dvc.lock": yaml.safe_dump(lock), "params.yaml": yaml.safe_dump(params),
             "metrics/train.json": json.dumps({"steps": 270, "seconds": 1.0, "heldout_type_accuracy": 0.61}),
             "metrics/average.json": json.dumps({"heldout_type_accuracy": 0.64}),
             "metrics/tune/base/rw.json": json.dumps({"score": 40.0}),
             "metrics/bench/model/bird.json": json.dumps({"score": 70.0})}
    for i, task in enumerate(TUNE_MEAN_TASKS):  # runs from before geonames_aliases keep their tune mean
        files[f"metrics/tune/model/{task}.json"] = json.dumps({"score": seed_score + i})
    return _commit(repo, files)


def test_results_keep_only_scores_of_the_experiments_own_model_and_average_seeds(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    # view_min_cos stands in for a lever added, off, after `fresh` was made (the code holds none now)
    monkeypatch.setitem(ADDED_OFF, ("train", "view_min_cos"), None)
    table = load_table(_table(tmp_path, {"rows": {"default": {}, "no-type": {"train.type_weight": 0}},
                                         "seeds": [42, 1]}), ROOT / "params.yaml")
    no_type = {"train.type_weight": 0}
    stale = _experiment_commit(repo, 50.0, "m0.dir", no_type, before_shared_storage=True)  # bench@bird read the baseline's model
    fresh = _experiment_commit(repo, 52.0, "m1.dir", {**no_type, "train.seed": 1}, before_ray=True)
    elsewhere = _experiment_commit(repo, 60.0, "m1.dir", {"train.seed": 3})  # the default, run by another table
    monkeypatch.chdir(repo)
    default = load_params(ROOT / "params.yaml")
    first = read_run(Finished("t9-no-type-s42", stale, "base"), {"t9": table}, default)
    second = read_run(Finished("t9-no-type-s1", fresh, "base"), {"t9": table}, default)
    other = read_run(Finished("t9-alpha-0.5-s3", elsewhere, "base"), {"t9": table}, default)
    assert read_run(Finished("someone-elses", fresh, "base"), {"t9": table}, default) is None
    assert first["tune"]["rw"] == 53.0 and first["tune_base"] == {"rw": 40.0}
    assert first["test"] == {} and second["test"] == {"bird": 70.0}
    assert first["overrides"] == {"train.type_weight": 0} and first["train"]["steps"] == 270
    # the shipped export's type accuracy, the tuned model's beside it
    assert (first["train"]["heldout_type_accuracy"], first["train"]["heldout_type_accuracy_before_averaging"]) == (0.64, 0.61)

    # a run counts for the row of its recipe, whatever its name (and wherever it ran: `second` predates
    # `engine`, `first` ray.shared_storage); one of an older recipe (the default has moved on since) for none
    older = {**first, "rev": "old", "seed": 7, "recipe": "older", "created": "2026-01-01T00:00:00+00:00"}
    rows = aggregate([older, first, second, other], table)
    assert first["recipe"] == second["recipe"] == table.recipes["no-type"] != other["recipe"]
    filtered = load_table(_table(tmp_path, {"rows": {"on": {"train.view_min_cos": 0.5}}}), ROOT / "params.yaml")
    assert filtered.recipes["on"] not in (first["recipe"], other["recipe"])  # a lever switched on is a recipe of its own
    assert rows["no-type"]["seeds"] == [1, 42] and rows["default"]["seeds"] == [3]
    tune_mean = rows["no-type"]["tune"]["tune"]
    assert (tune_mean["mean"], tune_mean["n"]) == (51.0 + (len(TUNE_MEAN_TASKS) - 1) / 2, 2) and tune_mean["std"] == pytest.approx(1.41, abs=0.01)
    assert rows["no-type"]["test"]["bird"] == {"mean": 70.0, "std": None, "n": 1}
    # a later test-only run of seed 1 adds its test scores and keeps the seed's earlier tune scores
    retest = {**second, "rev": "later", "created": "2099-01-01T00:00:00+00:00", "tune": {}, "test": {"bird": 72.0}}
    rows_after = aggregate([older, first, second, other, retest], table)
    assert rows_after["no-type"]["tune"] == rows["no-type"]["tune"]
    assert rows_after["no-type"]["test"]["bird"] == {"mean": 72.0, "std": None, "n": 1}
    text = markdown({"t9": table}, {"t9": rows})
    assert "| no-type | `train.type_weight=0` | 1,42 | 51.00 ± 1.41 |" in text and "| default | (default) | 3 | 60.00 |" in text
    assert "Not run yet (1 of 2 rows): default." in markdown({"t9": table}, {"t9": aggregate([first], table)})


def test_a_burt_small_table_runs_burt_smalls_stages_and_counts_scores_of_its_own_model(tmp_path, monkeypatch):
    tables = load_tables(ROOT / "experiments", ROOT / "params.yaml")
    burt = tables["burt-table3"]
    assert burt.system == "burt-small" and parse_name("burt-table3-nli-pi-s1", tables) == ("burt-table3", "nli-pi", 1)
    assert len(set(burt.recipes.values())) == len(burt.rows)  # every ablation trains something else
    assert not set(burt.recipes.values()) & {r for t in tables.values() if t.system == "pearl-small" for r in t.recipes.values()}
    targets = SYSTEMS["burt-small"].targets("tune") + SYSTEMS["burt-small"].targets("test")
    assert "bench_tune_burt_tasks_burt_small@sick_trial" in targets and "bench_burt_small@stsb" in targets
    assert not [t for t in targets if t.split("@")[0] in ("bench", "bench_tune", "bench_burt_tasks", "bench_tune_burt_tasks")]

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    set_key(params, "burt_small.pi_weight", 0)
    set_key(params, "burt_small.ptc_weight", 0)
    set_key(params, "train.seed", 1)
    model = {"path": "models/burt-small", "md5": "b1.dir"}
    lock = {"stages": {"average_burt_small": {"outs": [model]}, "average": {"outs": [{"path": "models/pearl", "md5": "p1.dir"}]},
                       "bench_tune_burt_small@stsb_dev": {"deps": [model]},
                       "bench_tune_burt_tasks_burt_small@sick_trial": {"deps": [model]},
                       "bench_burt_small@stsb": {"deps": [{"path": "models/burt-small", "md5": "b0.dir"}]}}}  # a stale one
    rev = _commit(repo, {"dvc.lock": yaml.safe_dump(lock), "params.yaml": yaml.safe_dump(params),
                         "metrics/burt-small/train.json": json.dumps({"steps": 1000, "seconds": 2.0}),
                         "metrics/tune/burt-small/stsb_dev.json": json.dumps({"score": 70.0}),
                         "metrics/tune/burt-small/sick_trial.json": json.dumps({"score": 60.0}),
                         "metrics/bench/burt-small/stsb.json": json.dumps({"score": 65.0}),
                         "metrics/tune/model/stsb_dev.json": json.dumps({"score": 99.0})})
    monkeypatch.chdir(repo)
    record = read_run(Finished("burt-table3-nli-s1", rev, "base"), tables, load_params(ROOT / "params.yaml"))
    assert record["recipe"] == burt.recipes["nli"] and record["train"]["steps"] == 1000
    assert record["tune"] == {"stsb_dev": 70.0, "sick_trial": 60.0} and record["test"] == {}
    text = markdown({"burt-table3": burt}, {"burt-table3": aggregate([record], burt)})
    assert "| nli | `burt_small.pi_weight=0` `burt_small.ptc_weight=0` | 1 | 70.00 | 60.00 | 65.00 |" in text


def test_pearl_statics_section_is_outside_every_recipe_and_the_thread_count_inside(tmp_path):
    table = load_table(_table(tmp_path, {"rows": {"default": {}, "static": {"static.spelling_weight": 0.4},
                                                  "one-thread": {"train.cpu_threads": 1}}}), ROOT / "params.yaml")
    # PEARL-static is distilled after PEARL-small trains; another thread count trains other bytes
    assert table.recipes["static"] == table.recipes["default"] != table.recipes["one-thread"]


def test_a_cell_over_fewer_seeds_than_its_row_lists_shows_its_n(tmp_path):
    table = load_table(_table(tmp_path, {"rows": {"default": {}}, "seeds": [42, 1, 2]}), ROOT / "params.yaml")
    tune = {t: 50.0 for t in TUNE_TASKS}
    runs = [{"rev": f"r{seed}", "seed": seed, "created": f"2026-01-0{i}T00:00:00+00:00", "recipe": table.recipes["default"],
             "tune": tune if seed != 2 else {t: v for t, v in tune.items() if t != "rw"},
             "tune_base": {}, "test": {}, "test_base": {}} for i, seed in enumerate((42, 1, 2), 1)]
    text = markdown({"t9": table}, {"t9": aggregate(runs, table)})
    row = next(line for line in text.splitlines() if line.startswith("| default |"))
    assert "| 1,2,42 |" in row and "50.00 ± 0.00 (n=2)" in row  # RW and the tune mean: 2 of 3 seeds
    assert row.count("(n=2)") == 2


def test_sweep_points_put_the_default_run_at_the_default_value(tmp_path):
    table = load_table(_table(tmp_path, {"sweeps": {"train.lr": [1e-5, 3e-5, 1e-4]}}), ROOT / "params.yaml")
    cell = lambda m: {"tune": {"tune": {"mean": m, "std": None, "n": 1}}}  # noqa: E731
    rows = {"default": cell(54.0), "lr-1.0e-05": cell(53.0), "lr-0.0001": cell(55.0)}

    points = sweep_points(table, rows)
    assert [(p["lr"], p["tune_mean"]) for p in points["train.lr"]] == [(1e-5, 53.0), (3e-5, 54.0), (1e-4, 55.0)]
    # a table pinned by `fixed` puts its default run at the pinned value, not at params.yaml's
    pinned = load_table(_table(tmp_path, {"sweeps": {"train.max_steps": [123, 999]}, "fixed": {"train.max_steps": 123}}),
                        ROOT / "params.yaml")
    steps = sweep_points(pinned, {"default": cell(54.0), "max_steps-999": cell(55.0)})["train.max_steps"]
    assert [(p["max_steps"], p["tune_mean"]) for p in steps] == [(123, 54.0), (999, 55.0)]


def test_figure4_draws_each_dataset_and_scores_the_types(make_params, tiny_encoder, tmp_path):
    from pearl.experiments.tsne import run

    for task, kinds in (("conll2003", ("PER", "LOC", "ORG")), ("bc5cdr", ("Chemical", "Disease"))):
        (tmp_path / task).mkdir()
        words = [f"{kind.lower()} name {i}" for kind in kinds for i in range(6)]
        spans = [[i, i, kinds[i // 6]] for i in range(len(words))]
        (tmp_path / task / "test.json").write_text(json.dumps({"sentences": [words], "ner": [spans]}) + "\n")
    typed = tmp_path / "typed.parquet"
    kinds = ["PERSON", "GPE", "DATE", "OTHER"]
    pl.DataFrame({"phrase": [f"{k.lower()} {i}" for k in kinds for i in range(6)], "label_id": [0] * 24,
                  "ent_type": [k for k in kinds for _ in range(6)]}).write_parquet(typed)
    params = make_params(model__backbone=str(tiny_encoder), bench__data_dir=str(tmp_path), figure4__per_type=5,
                         figure4__phrase_types=2, figure4__perplexity=5.0)
    result = run(params, str(tiny_encoder), typed, tmp_path / "fig", tmp_path / "fig.json")
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == ["bc5cdr.png", "conll2003.png", "phrases.png"]
    assert (result["conll2003"]["phrases"], result["conll2003"]["drawn"]) == (18, 15)
    assert result["bc5cdr"]["types"] == ["Chemical", "Disease"]
    assert result["phrases"]["types"] == ["DATE", "GPE"]  # OTHER is no entity type; two of the three kept
    assert all(-1 <= result[s][k] <= 1 for s in ("conll2003", "bc5cdr", "phrases") for k in ("backbone", "model"))
    assert json.loads((tmp_path / "fig.json").read_text()) == result


def test_results_draw_each_sweep_from_the_runs_of_todays_default_and_drop_a_plot_left_without_any(tmp_path):
    from pearl.experiments.results import write_results
    from pearl.params import load_params

    table = load_table(_table(tmp_path, {"sweeps": {"train.lr": [1e-5, 3e-5], "average.alpha": [0.5, 1.0]}}),
                       ROOT / "params.yaml")
    tune = dict.fromkeys(TUNE_TASKS, 50.0)
    run = lambda row, recipe: {"name": f"t9-{row}-s42", "table": "t9", "row": row, "seed": 42, "rev": row,  # noqa: E731
                               "created": "2026-01-01T00:00:00+00:00", "recipe": recipe, "tune": tune,
                               "tune_base": {}, "test": {}, "test_base": {}}
    record = tmp_path / "experiments.json"
    record.write_text(json.dumps({"runs": [run("default", table.recipes["default"]),
                                           run("lr-1.0e-05", table.recipes["lr-1.0e-05"]),
                                           run("alpha-1.0", "of an older default")]}))
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "t9_alpha.csv").write_text("alpha,tune_mean\n1.0,1.0\n")
    write_results({"t9": table}, load_params(ROOT / "params.yaml"), [], record, tmp_path / "experiments.md", plots)
    assert pl.read_csv(plots / "t9_lr.csv")["lr"].to_list() == [1e-5, 3e-5]
    # alpha 0.5 is the default's run: one point is still a line to draw; the 1.0 run is of another recipe
    assert pl.read_csv(plots / "t9_alpha.csv")["alpha"].to_list() == [0.5]
    assert _png_width(plots / "t9.png") == 2 * 288  # the docs' image: a panel of 3.2 in at 90 dpi per param
    record.write_text(json.dumps({"runs": [run("lr-1.0e-05", table.recipes["lr-1.0e-05"])]}))
    write_results({"t9": table}, load_params(ROOT / "params.yaml"), [], record, tmp_path / "experiments.md", plots)
    assert not (plots / "t9_alpha.csv").exists() and _png_width(plots / "t9.png") == 288
    record.write_text(json.dumps({"runs": []}))
    write_results({"t9": table}, load_params(ROOT / "params.yaml"), [], record, tmp_path / "experiments.md", plots)
    assert sorted(p.name for p in plots.iterdir()) == []


def _png_width(path) -> int:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(header[16:20], "big")


@pytest.mark.parametrize("flag, value, kind", [("--seeds", "1,x", "integers >= 0 (train.seed)"),
                                               ("--seeds", "1,,2", "integers >= 0 (train.seed)"),
                                               ("--seeds", "-1", "integers >= 0 (train.seed)"),
                                               ("--seeds", "", "integers >= 0 (train.seed)"),
                                               ("--rows", "default,", "row names")])
def test_seeds_or_rows_that_are_not_a_list_of_them_fail_in_one_line_naming_the_flag(flag, value, kind):
    from typer.testing import CliRunner

    from pearl.cli import app

    result = CliRunner().invoke(app, ["experiments", "run", "table3", flag, value, "--dry-run",
                                      "--params", str(ROOT / "params.yaml")])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.output.strip() == f"error: {flag} {value!r}: expected comma-separated {kind}"
