"""The `train` and `average` stages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from pearl.artifacts import TYPED_PHRASES_SCHEMA, artifact_files, atomic_dir, atomic_path, read_artifact, write_json
from pearl.labels import LABELS
from pearl.log import get_logger
from pearl.model import EXPORT
from pearl.model.finetuned import check_finetuned
from pearl.model_ids import load_failure, resolve_model
from pearl.params import Params
from pearl.teacher.vectors import VECTORS
from pearl.train.inputs import TrainInputs

log = get_logger("train")

INPUTS = TrainInputs(Path("data/typed/phrases.parquet"), Path("data/augment/variants.parquet"),
                     Path("data/negatives/hard_negatives.parquet"), VECTORS, Path("data/typed/evaluation_texts.parquet"))
FINETUNED = Path("models/finetuned")


def _mean(rows: list[dict], key: str, first: bool, n: int) -> float | None:
    chosen = [r[key] for r in (rows[:n] if first else rows[-n:]) if r[key] is not None]
    return round(float(np.mean(chosen)), 4) if chosen else None


def run_train(params: Params, inputs: TrainInputs = INPUTS, out_dir: Path = FINETUNED,
              metrics: Path = Path("metrics/train.json"), log_path: Path = Path("metrics/train_log.csv")) -> dict:
    inputs.check(params)
    from pearl.train.loop import train, training_seed, type_accuracy  # torch: after the inputs' check

    result = train(params, inputs)
    if not result.world.main:
        return {}
    data = result.data
    heldout = [data.phrases[i] for i in data.heldout]
    heldout_labels = data.labels[data.heldout]
    majority = int(np.bincount(data.labels[data.train]).argmax())
    window = max(1, len(result.log_rows) // 10)
    numbers = {
        "backbone": params.model.backbone,
        "seed": training_seed(params),
        "char_encoder": params.model.char_encoder,
        "teacher": params.model.teacher or "none",
        "distill_weight": params.train.distill_weight if data.teacher is not None else 0.0,
        "distill_loss": params.train.distill_loss if data.teacher is not None else "none",
        "device": result.device,
        "precision": result.precision,
        "cpu_threads": params.train.cpu_threads if result.device == "cpu" else None,
        "world_size": result.world.size,
        "phrases_train": len(data.train),
        "phrases_heldout": len(heldout),
        "steps": result.steps,
        "steps_per_epoch": result.steps_per_epoch,
        "epochs": round(result.steps / result.steps_per_epoch, 3),
        "resumed_from_step": result.started_at,
        "loss_first_tenth": _mean(result.log_rows, "loss", True, window),
        "loss_last_tenth": _mean(result.log_rows, "loss", False, window),
        "distill_last_tenth": _mean(result.log_rows, "distill", False, window),
        "heldout_type_accuracy": round(type_accuracy(result.model, heldout, heldout_labels), 4),
        "heldout_majority_share": round(float(np.mean(heldout_labels == majority)), 4),
    }
    if result.burt:  # keys of their own, so that a run without BURT's objectives records what it did before them
        numbers["burt"] = {task: {"weight": params.burt.weights[task], **record,
                                  "loss_first_tenth": _mean(result.log_rows, task, True, window),
                                  "loss_last_tenth": _mean(result.log_rows, task, False, window)}
                           for task, record in result.burt.items()}
        numbers["burt_features"] = params.burt.features
    if params.model.pooling != "mean":
        numbers["pooling"] = params.model.pooling
    if result.view_filter is not None:
        numbers["views_kept"] = result.view_filter.kept
        numbers["views_dropped"] = result.view_filter.dropped
    run_steps = result.steps - result.started_at
    timing = {"seconds": round(result.seconds, 1), "steps_per_s": round(run_steps / max(result.seconds, 1e-9), 3)}
    log.info("held-out type accuracy %.3f (majority class %.3f); loss %s → %s",
             numbers["heldout_type_accuracy"], numbers["heldout_majority_share"],
             numbers["loss_first_tenth"], numbers["loss_last_tenth"])
    with atomic_dir(out_dir) as staged:
        result.model.save(staged)
    with atomic_path(log_path) as tmp:
        pl.DataFrame(result.log_rows).write_csv(tmp)
    write_json({**numbers, **timing}, metrics)
    return numbers


def run_average(params: Params, source: Path = FINETUNED, out_dir: Path = EXPORT,
                metrics: Path = Path("metrics/average.json"), phrases: Path = INPUTS.typed) -> dict:
    check_finetuned(source)
    artifact_files(phrases, TYPED_PHRASES_SCHEMA)
    # torch and transformers: after the inputs' checks
    from pearl.model.phrase_model import PhraseModel, saved_config

    model = PhraseModel.load(source)
    from transformers import AutoModel

    from pearl.model.averaging import average_state
    from pearl.model.export import export_sentence_transformer, load as load_export
    from pearl.train.data import heldout_split
    from pearl.train.loop import training_seed, type_accuracy
    from pearl.types.predict import TypeHead

    typed = read_artifact(phrases, TYPED_PHRASES_SCHEMA)
    _, rows = heldout_split(typed.height, params.train.heldout_fraction, training_seed(params))
    heldout, heldout_labels = typed["phrase"].gather(rows).to_list(), typed["label_id"].to_numpy()[rows]
    trained_head = params.train.type_weight > 0  # else the head is its random start: the export ships none
    tuned_accuracy = type_accuracy(model, heldout, heldout_labels) if trained_head else None
    try:
        original = AutoModel.from_pretrained(resolve_model(model.config.backbone, "model.backbone")).state_dict()
    except Exception as error:  # the backbone that was fine-tuned, needed again for its original weights
        raise load_failure("model.backbone", model.config.backbone, error) from None
    merged, averaged = average_state(original, model.backbone.state_dict(), params.average.alpha)
    model.backbone.load_state_dict(merged)
    with atomic_dir(out_dir) as staged:
        export_sentence_transformer(model, staged, params.average.spelling_weight, params.average.spelling_features,
                                    type_head=trained_head)
    # the shipped model is the export, read as `pearl types` reads it; loaded once for the types and the probe
    exported = load_export(out_dir)
    if trained_head:
        predicted = TypeHead(out_dir).predict(heldout, exported.encode(heldout, convert_to_tensor=True))
        shipped = round(float(np.mean(predicted["label"].to_numpy() == np.asarray(LABELS)[heldout_labels])), 4)
    probe = ["The New York Times", "NYTimes", "New York Post", "adult male", "grown man"]
    vectors = exported.encode(probe)
    numbers = {
        "alpha": params.average.alpha,
        "spelling_weight": params.average.spelling_weight,
        "spelling_features": params.average.spelling_features if params.average.spelling_weight > 0 else 0,
        "tensors_averaged": averaged,
        "tensors_kept": len(merged) - averaged,
        "dimension": exported.get_embedding_dimension(),
        "config": saved_config(model.config),
        "cos_nytimes": round(float(vectors[0] @ vectors[1]), 4),
        "cos_ny_post": round(float(vectors[0] @ vectors[2]), 4),
        "cos_adult_male_grown_man": round(float(vectors[3] @ vectors[4]), 4),
    }
    if trained_head:  # keys of their own, so that the default's metrics stay what they were
        numbers["heldout_type_accuracy"] = shipped
        numbers["heldout_type_accuracy_before_averaging"] = round(tuned_accuracy, 4)
    else:
        numbers["type_head"] = "none: train.type_weight was 0"
    log.info("averaged %d backbone tensors (alpha %.2f) → %s", averaged, params.average.alpha, out_dir)
    write_json(numbers, metrics)
    return numbers
