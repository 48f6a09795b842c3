"""Training batches, the train and average stages, export and resume, on a tiny random backbone."""

import dataclasses
import json
import os

import numpy as np
import polars as pl
import pytest
import torch

from pearl.artifacts import (EVALUATION_TEXTS_SCHEMA, HARD_NEGATIVES_SCHEMA, TEACHER_VECTORS_SCHEMA, TYPED_PHRASES_SCHEMA,
                             VARIANTS_SCHEMA)
from pearl.errors import PearlError
from pearl.teacher.vectors import TeacherVectors
from pearl.train.data import Sampling, TrainingSet
from pearl.train.loop import loader_workers
from tests.conftest import ROOT

SCHEMAS = {"typed": TYPED_PHRASES_SCHEMA, "variants": VARIANTS_SCHEMA, "negatives": HARD_NEGATIVES_SCHEMA,
           "teacher": TEACHER_VECTORS_SCHEMA, "evaluation": EVALUATION_TEXTS_SCHEMA}
WORDS = ["new", "york", "times", "post", "city", "river", "bank", "art", "cafe", "zurich", "tokyo", "paris"]


def _toy_inputs(folder):
    rng = np.random.default_rng(0)
    phrases = sorted({" ".join(rng.choice(WORDS, size=rng.integers(1, 4))) for _ in range(200)})[:60]
    typed = pl.DataFrame({"phrase": phrases, "label_id": pl.Series([i % 3 * 19 + 18 for i in range(len(phrases))], dtype=pl.Int16)})
    variants = pl.DataFrame({
        "phrase": [p for p in phrases for _ in range(2)],
        "level": ["token", "phrase"] * len(phrases),
        "method": ["token_swap", "mined"] * len(phrases),
        "variant": [v for p in phrases for v in (" ".join(reversed(p.split())) + " x", p.upper())],
    })
    negatives = pl.DataFrame({
        "phrase": [p for p in phrases for _ in range(3)] + ["lonely"],
        "negative": [phrases[(i + k) % len(phrases)] for i in range(len(phrases)) for k in (1, 2, 3)] + [None],
    })
    paths = {name: folder / f"{name}.parquet" for name in ("typed", "variants", "negatives", "teacher", "evaluation")}
    pl.DataFrame({"text": ["a test text"]}).write_parquet(paths["evaluation"])
    vectors = rng.normal(size=(len(phrases), 16)).astype(np.float32)
    TeacherVectors("toy-teacher", phrases, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
                   ).save(paths["teacher"], {})
    typed.write_parquet(paths["typed"])
    variants.write_parquet(paths["variants"])
    negatives.write_parquet(paths["negatives"])
    return paths


@pytest.fixture
def toy(tmp_path):
    return _toy_inputs(tmp_path)


def _set(toy):
    return TrainingSet.load(toy["typed"], toy["variants"], toy["negatives"], 0.1, seed=3)


def test_batches_are_a_function_of_seed_and_step(toy):
    data = _set(toy)
    sampling = Sampling(3, 8, 2, {"char": 0.34, "token": 0.33, "phrase": 0.33})
    first = data.batch_texts(sampling, 5)
    again = data.batch_texts(sampling, 5)
    assert first[0] == again[0] and np.array_equal(first[3], again[3])
    assert data.batch_texts(sampling, 6)[0] != first[0]
    texts, n, labels, exclude, teacher_cos, counts = first
    assert teacher_cos is None  # no teacher given
    anchors, positives, negatives = texts[:n], texts[n:2 * n], texts[2 * n:]
    assert len(set(anchors)) == n == 8 and not set(anchors) & {data.phrases[i] for i in data.heldout}
    assert 0 < len(negatives) <= 2 * n and len(set(negatives)) == len(negatives)
    assert not set(negatives) & (set(anchors) | set(positives))
    assert all(p != a for a, p in zip(anchors, positives)) and sum(counts.values()) == n
    for i in range(n):  # an excluded column holds the anchor's own text or its positive's
        for j in np.flatnonzero(exclude[i]):
            assert j != i and texts[n + j] in (anchors[i], positives[i])


def test_epochs_cover_every_training_phrase_once(toy):
    data = _set(toy)
    sampling = Sampling(3, 6, 0, {"char": 1.0, "token": 0.0, "phrase": 0.0})
    steps = data.steps_per_epoch(6)
    seen = np.concatenate([data.anchors(sampling, s) for s in range(steps)])
    assert len(seen) == len(set(seen)) == steps * 6 and set(seen) <= set(data.train)


def test_a_step_is_the_same_whichever_step_was_built_before(toy):
    """DataLoader workers build steps out of order, across epochs."""
    sampling = Sampling(3, 6, 0, {"char": 1.0, "token": 0.0, "phrase": 0.0})
    per_epoch = _set(toy).steps_per_epoch(6)
    steps = [per_epoch + 1, 0, 2 * per_epoch, 1, per_epoch + 1]
    shared = _set(toy)
    for step in steps:
        assert np.array_equal(shared.anchors(sampling, step), _set(toy).anchors(sampling, step))
    assert not np.array_equal(shared.anchors(sampling, 0), shared.anchors(sampling, per_epoch))


@pytest.mark.parametrize("cores, local_world, device, workers", [
    (2, 1, "cpu", 0), (16, 1, "cpu", 2), (16, 1, "cuda", 8), (4, 1, "cuda", 3), (16, 4, "cuda", 3), (1, 1, "cuda", 0)])
def test_auto_workers_leave_cpu_cores_to_the_compute_and_feed_a_gpu(monkeypatch, cores, local_world, device, workers):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)), raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(local_world))
    assert loader_workers("auto", torch.device(device)) == workers
    assert loader_workers(5, torch.device(device)) == 5


def test_levels_switch_off(toy):
    data = _set(toy)
    only_token = data.batch_texts(Sampling(3, 8, 0, {"char": 0.0, "token": 1.0, "phrase": 0.0}), 0)
    assert only_token[-1]["token"] == 8
    texts, n, *_, counts = data.batch_texts(Sampling(3, 8, 0, {"char": 0.0, "token": 0.0, "phrase": 0.0}), 0)
    assert counts["none"] == 8 and texts[:n] == texts[n:2 * n]  # the phrase is its own view


def test_alias_views_are_drawn_only_for_phrases_that_have_them(toy):
    aliased = pl.read_parquet(toy["typed"])["phrase"][:30].to_list()
    extra = pl.DataFrame({"phrase": aliased, "level": "alias", "method": "geonames", "variant": [f"{p} alias" for p in aliased]})
    pl.concat([pl.read_parquet(toy["variants"]), extra]).write_parquet(toy["variants"])
    data = _set(toy)
    sampling = Sampling(3, 16, 0, {"char": 0.0, "token": 0.0, "phrase": 0.0, "alias": 1.0})
    for step in range(3):
        texts, n, *_, counts = data.batch_texts(sampling, step)
        drawn = [(a, v) for a, v in zip(texts[:n], texts[n:2 * n]) if a != v]
        assert counts["alias"] == len(drawn) == sum(a in aliased for a in texts[:n]) > 0
        assert all(v == f"{a} alias" for a, v in drawn)


def test_identity_views_mix_with_augmented_ones(toy):
    data = _set(toy)
    texts, n, *_, counts = data.batch_texts(Sampling(3, 8, 0, {"char": 1.0, "token": 0.0, "phrase": 0.0, "none": 1.0}), 0)
    assert counts["none"] > 0 and counts["char"] > 0 and counts["none"] + counts["char"] == 8
    assert sum(a == v for a, v in zip(texts[:n], texts[n:2 * n])) == counts["none"]


def _params(make_params, tiny_encoder, tmp_path, **extra):
    settings = dict(model__backbone=str(tiny_encoder), model__max_length=16, model__char_dim=8, model__teacher=None,
                    train__batch_size=8, train__max_steps=6, train__log_every=1, train__checkpoint_every=2,
                    train__num_workers=0, train__checkpoint_dir=str(tmp_path / "ckpt"))
    return make_params(**{**settings, **extra})


def _train(params, toy, out):
    from pearl.train.inputs import TrainInputs
    from pearl.train.stage import run_train

    out.mkdir(exist_ok=True)
    inputs = TrainInputs(toy["typed"], toy["variants"], toy["negatives"], toy["teacher"], toy["evaluation"])
    numbers = run_train(params, inputs, out / "model", out / "train.json", out / "log.csv")
    return numbers, pl.read_csv(out / "log.csv")


@pytest.mark.slow
def test_same_seed_same_trace_and_a_crash_resumes_to_the_same_model(make_params, tiny_encoder, toy, tmp_path, monkeypatch):
    import pearl.train.loop as loop

    params = _params(make_params, tiny_encoder, tmp_path)
    numbers, reference = _train(params, toy, tmp_path / "a")
    assert numbers["steps"] == 6 and reference.height == 6 and not (tmp_path / "ckpt" / "latest.pt").exists()
    torch.set_num_threads(1)  # as on a machine with another thread count: training uses train.cpu_threads
    _, again = _train(params, toy, tmp_path / "b")
    assert torch.get_num_threads() == params.train.cpu_threads == numbers["cpu_threads"] == 2
    assert reference.select("step", "loss", "contrastive", "type_loss").equals(again.select("step", "loss", "contrastive", "type_loss"))
    # train.seed alone varies training: equal to base.seed it is the same run, another draws other batches
    _, same = _train(_params(make_params, tiny_encoder, tmp_path, train__seed=params.base.seed), toy, tmp_path / "s1")
    reseeded, other = _train(_params(make_params, tiny_encoder, tmp_path, train__seed=params.base.seed + 1), toy, tmp_path / "s2")
    assert same["loss"].equals(reference["loss"]) and not other["loss"].equals(reference["loss"])
    assert reseeded["seed"] == params.base.seed + 1 and numbers["seed"] == params.base.seed

    real_step, calls = loop._step, []

    def crash_on_fifth(*args):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt  # as a kill after the step-4 checkpoint
        return real_step(*args)

    monkeypatch.setattr(loop, "_step", crash_on_fifth)
    with pytest.raises(KeyboardInterrupt):
        _train(params, toy, tmp_path / "c")
    assert (tmp_path / "ckpt" / "latest.pt").exists()
    monkeypatch.setattr(loop, "_step", real_step)
    resumed_numbers, resumed = _train(params, toy, tmp_path / "c")
    assert resumed_numbers["resumed_from_step"] == 4
    assert resumed.select("step", "loss").equals(reference.select("step", "loss"))
    a = torch.load(tmp_path / "a" / "model" / "pearl_heads.pt")
    c = torch.load(tmp_path / "c" / "model" / "pearl_heads.pt")
    assert torch.equal(a["type_head"]["weight"], c["type_head"]["weight"])


@pytest.mark.slow
def test_inputs_in_shards_as_engine_ray_writes_them_train_the_same_model(make_params, tiny_encoder, toy, tmp_path):
    from pearl.artifacts import read_artifact, write_parquet

    params = _params(make_params, tiny_encoder, tmp_path, model__teacher="toy-teacher", train__distill_weight=1.0)
    sharded = {}
    for name, path in toy.items():
        sharded[name] = tmp_path / "shards" / path.name
        write_parquet(read_artifact(path, SCHEMAS[name]), sharded[name], shard_rows=7)
        assert (sharded[name] / "manifest.json").is_file()
    (tmp_path / "shards" / "teacher.meta.json").write_bytes((tmp_path / "teacher.meta.json").read_bytes())
    _, files = _train(params, toy, tmp_path / "a")
    _, shards = _train(params, sharded, tmp_path / "b")
    assert shards.select("step", "loss", "distill").equals(files.select("step", "loss", "distill"))
    a = torch.load(tmp_path / "a" / "model" / "pearl_heads.pt")
    b = torch.load(tmp_path / "b" / "model" / "pearl_heads.pt")
    assert torch.equal(a["type_head"]["weight"], b["type_head"]["weight"])


@pytest.mark.slow
def test_a_teacher_without_distillation_is_the_recipe_without_one(make_params, tiny_encoder, toy, tmp_path):
    plain, plain_log = _train(_params(make_params, tiny_encoder, tmp_path), toy, tmp_path / "a")
    idle, idle_log = _train(_params(make_params, tiny_encoder, tmp_path, model__teacher="toy-teacher",
                                    train__distill_weight=0), toy, tmp_path / "b")
    assert plain_log.select("loss", "contrastive", "type_loss").equals(idle_log.select("loss", "contrastive", "type_loss"))
    assert (plain["teacher"], idle["teacher"], idle["distill_weight"]) == ("none", "toy-teacher", 0.0)
    taught, taught_log = _train(_params(make_params, tiny_encoder, tmp_path, model__teacher="toy-teacher",
                                        train__distill_weight=2.0), toy, tmp_path / "c")
    assert taught["distill_weight"] == 2.0 and (taught_log["distill"] > 0).all() and (plain_log["distill"] == 0).all()
    # same batches and same first forward: the total differs by exactly the weighted distillation term
    first = taught_log.row(0, named=True)
    assert first["loss"] == pytest.approx(plain_log["loss"][0] + 2.0 * first["distill"], abs=1e-4)
    correlated, correlated_log = _train(_params(make_params, tiny_encoder, tmp_path, model__teacher="toy-teacher",
                                                train__distill_weight=2.0, train__distill_loss="correlation"),
                                        toy, tmp_path / "e")
    first = correlated_log.row(0, named=True)
    assert (correlated["distill_loss"], taught["distill_loss"], plain["distill_loss"]) == ("correlation", "kl", "none")
    assert first["distill"] != pytest.approx(taught_log["distill"][0], rel=1e-3)
    assert first["loss"] == pytest.approx(plain_log["loss"][0] + 2.0 * first["distill"], abs=1e-4)
    with pytest.raises(PearlError, match="holds vectors of 'toy-teacher'"):
        _train(_params(make_params, tiny_encoder, tmp_path, model__teacher="another", train__distill_weight=1.0),
               toy, tmp_path / "d")


@pytest.mark.slow
def test_average_exports_a_sentence_transformer_equal_to_pearls_encode(make_params, tiny_encoder, toy, tmp_path):
    from sentence_transformers import SentenceTransformer
    from typer.testing import CliRunner

    import pearl
    from pearl.cli import app
    from pearl.labels import LABELS
    from pearl.model.phrase_model import PhraseModel
    from pearl.train.loop import training_seed, type_accuracy
    from pearl.train.stage import run_average
    from pearl.types.predict import predict_types

    params = _params(make_params, tiny_encoder, tmp_path, model__prefix="query: ", train__max_steps=3,
                     train__heldout_fraction=0.4, average__spelling_weight=0.0)  # first without the spelling block
    _train(params, toy, tmp_path)
    tuned = PhraseModel.load(tmp_path / "model")
    with torch.no_grad():  # three steps leave the head on one label: one that reads the vector tells the models apart
        torch.manual_seed(0)
        tuned.type_head.bias.zero_()
        tuned.type_head.weight.zero_()
        tuned.type_head.weight[[18, 37, 56]] = 10 * torch.randn(3, tuned.type_head.weight.shape[1])
    tuned.save(tmp_path / "model")
    numbers = run_average(params, tmp_path / "model", tmp_path / "export", tmp_path / "average.json", toy["typed"])
    assert numbers["tensors_averaged"] > 0 and numbers["dimension"] == 32 + 8
    # the held-out type accuracy reported is the shipped export's, as `pearl types` reads it
    data = TrainingSet.load(toy["typed"], toy["variants"], toy["negatives"], 0.4, training_seed(params))
    heldout, labels = [data.phrases[i] for i in data.heldout], data.labels[data.heldout]
    shipped = predict_types(tmp_path / "export", heldout)["label"].to_list()
    accuracy = round(float(np.mean([label == LABELS[i] for label, i in zip(shipped, labels)])), 4)
    before = round(type_accuracy(tuned, heldout, labels), 4)
    assert (numbers["heldout_type_accuracy"], numbers["heldout_type_accuracy_before_averaging"]) == (accuracy, before)
    assert accuracy != before
    modules = [m["type"] for m in json.loads((tmp_path / "export" / "modules.json").read_text())]
    assert modules[0] == "st_modules.PhraseTransformer" and modules[2] == "st_modules.CharFeatures"
    assert (tmp_path / "export" / "pearl_type_head.safetensors").is_file()
    assert (tmp_path / "export" / "1_Pooling" / "config.json").is_file()

    texts = ["new york times", "NYTimes", "Zürich café 🎉", "", "x" * 500]
    expected = PhraseModel.load(tmp_path / "model")
    from transformers import AutoModel
    original = AutoModel.from_pretrained(str(tiny_encoder)).state_dict()
    tuned = expected.backbone.state_dict()
    expected.backbone.load_state_dict({k: (original[k] + tuned[k]) / 2 if tuned[k].is_floating_point() else tuned[k] for k in tuned})
    from pearl.model.export import backbone_max_seq_length
    expected.tokenize.max_length = backbone_max_seq_length(expected)  # the export reads what its backbone reads
    want = expected.encode(texts)
    st = SentenceTransformer(str(tmp_path / "export"), trust_remote_code=True)
    assert st.max_seq_length == 64 != params.model.max_length  # the tiny backbone's positions, not the training cut
    assert torch.allclose(torch.from_numpy(st.encode(texts)), want, atol=1e-5)
    assert torch.allclose(torch.from_numpy(pearl.load(tmp_path / "export").encode(texts)), want, atol=1e-5)

    result = CliRunner().invoke(app, ["embed", "--model", str(tmp_path / "export"), "new york times", "NYTimes"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["text"] for line in lines] == ["new york times", "NYTimes"]
    assert torch.allclose(torch.tensor(lines[0]["vector"]), want[0], atol=1e-4)
    missing = CliRunner().invoke(app, ["embed", "--model", str(tmp_path), "x"])
    assert missing.exit_code == 1 and missing.output.startswith(f"error: --model='{tmp_path}' could not be loaded (")

    # with a spelling block the vectors grow, and the type head still reads the vector it was trained on
    spelled = dataclasses.replace(params, average=dataclasses.replace(params.average, spelling_weight=0.4,
                                                                      spelling_features=32))
    numbers = run_average(spelled, tmp_path / "model", tmp_path / "spelled", tmp_path / "spelled.json", toy["typed"])
    assert numbers["dimension"] == 32 + 8 + 32 and numbers["spelling_weight"] == 0.4
    assert numbers["heldout_type_accuracy"] == accuracy
    assert predict_types(tmp_path / "spelled", heldout)["label"].to_list() == shipped


def test_a_batch_larger_than_the_phrases_is_a_one_line_error_before_the_model_loads(make_params, tiny_encoder, toy,
                                                                                    tmp_path, monkeypatch):
    from pearl.errors import PearlError
    from pearl.train import loop

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded before the inputs were checked")

    monkeypatch.setattr(loop, "PhraseModel", no_model)
    params = _params(make_params, tiny_encoder, tmp_path, train__batch_size=500)
    with pytest.raises(PearlError, match=r"train.batch_size \(500\) exceeds the \d+ training phrases: lower it"):
        _train(params, toy, tmp_path)
    assert not (tmp_path / "model").exists() and not (tmp_path / "train.json").exists()


class _Payload:
    """Pickled as a call that makes a folder: a full unpickler runs it while loading."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


def test_a_checkpoint_holding_an_arbitrary_object_is_refused(tmp_path):
    from pearl.train.checkpoint import LATEST, load_checkpoint

    marker = tmp_path / "ran"
    torch.save({"step": 2, "fingerprint": "run", "log": [_Payload(marker)]}, tmp_path / LATEST)
    assert load_checkpoint(tmp_path, "run") is None and not marker.exists()


def test_the_inputs_check_reads_the_teacher_vectors_only_where_training_uses_them(make_params, toy):
    from pearl.errors import PearlError
    from pearl.train.inputs import TrainInputs

    toy["teacher"].unlink()
    inputs = TrainInputs(toy["typed"], toy["variants"], toy["negatives"], toy["teacher"], toy["evaluation"])
    inputs.check(make_params(model__teacher=None))
    inputs.check(make_params(model__teacher="toy-teacher", train__distill_weight=0.0, train__view_min_cos=None))
    for used in ({"train__distill_weight": 1.0}, {"train__distill_weight": 0.0, "train__view_min_cos": 0.5}):
        with pytest.raises(PearlError, match="teacher.parquet is missing"):
            inputs.check(make_params(model__teacher="toy-teacher", **used))
    toy["negatives"].write_bytes(b"not parquet")
    with pytest.raises(PearlError, match="negatives.parquet is not a readable Parquet file"):
        inputs.check(make_params(model__teacher=None))


def test_pearl_base_is_the_recipe_on_its_own_backbone_batch_steps_and_checkpoints(make_params):
    from pearl.pearl_base import recipe

    params = make_params(pearl_base__backbone="org/big", pearl_base__prefix="query: ", pearl_base__batch_size=8,
                         pearl_base__max_steps=None, train__checkpoint_dir="ck")
    base = recipe(params)
    assert (base.model.backbone, base.model.prefix) == ("org/big", "query: ")
    assert (base.train.batch_size, base.train.max_steps, base.train.checkpoint_dir) == (8, None, "ck-pearl-base")
    assert dataclasses.replace(base, model=params.model, train=params.train) == params  # the rest is PEARL-small's


def test_a_small_only_run_leaves_pearl_base_a_note_that_every_reader_names(make_params, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pearl.report import summary as report
    from pearl.cli import app
    from pearl import pearl_base
    from pearl.index.encoder import load_encoder

    monkeypatch.chdir(tmp_path)
    params = make_params(pearl_base__enabled=False)
    # neither stage reads its inputs (there are none here) nor loads a model
    assert pearl_base.run_train(params)["enabled"] is False and pearl_base.run_average(params)["enabled"] is False
    assert os.listdir("models/pearl-base") == ["NOT_TRAINED.json"]
    assert json.loads(open("metrics/pearl-base/train.json").read())["enabled"] is False
    with pytest.raises(PearlError, match=r"^models/pearl-base: holds no model \(pearl_base.enabled was false: "
                                         r"`dvc exp run -S pearl_base.enabled=true` trains PEARL-base\)$"):
        load_encoder("models/pearl-base")
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    assert CliRunner().invoke(app, ["bench-task", "pearl-base", "turney", "-S", "pearl_base.enabled=false"]).exit_code == 0
    assert json.loads((tmp_path / "metrics/bench/pearl-base/turney.json").read_text()) == {"skipped": pearl_base.DISABLED}
    assert report.summarise(tmp_path / "metrics", ["turney"], [], []) == {}
    enabled = CliRunner().invoke(app, ["bench-task", "pearl-base", "turney"])  # over the note a small-only run left
    assert enabled.exit_code == 1 and "holds no model (pearl_base.enabled was false" in enabled.output
