"""The `pearl` command line: one command per pipeline stage (and, later, the model's uses)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
import yaml

from pearl.errors import PearlError
from pearl.log import configure_logging
from pearl.params import Params, load_params

app = typer.Typer(
    help="PEARL phrase embeddings: pipeline stages (run by `dvc repro`) and model tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ParamsOption = Annotated[Path, typer.Option("--params", help="params file to read")]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-S", help="override a param for this run, e.g. -S parse.min_freq=3"),
]


def _overrides(assignments: list[str] | None) -> dict:
    parsed = {}
    for assignment in assignments or []:
        key, sep, value = assignment.partition("=")
        if not sep or not key:
            raise PearlError(f"--set {assignment!r}: expected section.key=value")
        parsed[key] = yaml.safe_load(value)  # the same typing DVC applies to -S values
    return parsed


def _run(stage: Callable[[Params], object], params_path: Path, assignments: list[str] | None) -> None:
    configure_logging()
    try:
        stage(load_params(params_path, _overrides(assignments)))
    except PearlError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None


@app.command("params")
def check_params(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
    """Validate the params file against the typed schema; print the first problem in one line."""
    _run(lambda p: typer.echo("params OK"), params, set_)


# Each pipeline stage as a command: name → (module, function, help).
_STAGES = {
    "corpus": ("pearl.corpus.stage", "run", "Extract sentences from the corpus source → data/corpus/sentences.parquet."),
    "parse": ("pearl.parse.stage", "run", "Extract NP/VP/PP/ADVP/ADJP phrases and count them → data/phrases/phrases.parquet."),
    "typing": ("pearl.entity_typing.stage", "run",
               "Give each phrase an OntoNotes entity type and its 95-way label → data/typed/phrases.parquet."),
    "augment": ("pearl.augment.stage", "run",
                "Character-, token- and phrase-level variants of each phrase → data/augment/variants.parquet."),
    "candidates": ("pearl.negatives.stage", "run_candidates",
                   "Each phrase's top-k edit-similar phrases → data/negatives/candidates.parquet."),
    "teacher": ("pearl.teacher.stage", "run",
                "Encode phrases, candidates and chosen variants once with model.teacher → data/teacher/vectors.parquet."),
    "negatives": ("pearl.negatives.stage", "run_negatives",
                  "Candidates that look alike but mean otherwise → data/negatives/hard_negatives.parquet."),
    "train": ("pearl.train.stage", "run_train",
              "Fine-tune the backbone with the character encoder and type head → models/finetuned."),
    "average": ("pearl.train.stage", "run_average",
                "Average original and fine-tuned weights; export for sentence-transformers → models/pearl."),
}


def _stage_command(module: str, function: str) -> Callable[..., None]:
    def command(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
        _run(getattr(importlib.import_module(module), function), params, set_)

    return command


for _name, (_module, _function, _help) in _STAGES.items():
    app.command(_name, help=_help)(_stage_command(_module, _function))


def _prefix_for(model: str, params: Params) -> str:
    """An exported PEARL model applies its prefix itself, as its default prompt."""
    from pearl.model.export import is_pearl_export

    return "" if is_pearl_export(model) else params.model.prefix


SuiteOption = Annotated[str, typer.Option(help="test (the reported benchmark) or tune (choose defaults here)")]


def _suite_tasks(suite: str, p: Params) -> list[str]:
    if suite not in ("test", "tune"):
        raise PearlError(f"--suite {suite!r}: test or tune")
    return p.bench.tasks if suite == "test" else p.bench.tune_tasks


@app.command()
def bench(
    model: Annotated[str, typer.Option(help="HF model id or sentence-transformers directory")],
    tasks: Annotated[str, typer.Option(help="comma-separated tasks; default: the suite's (bench.tasks or bench.tune_tasks)")] = "",
    suite: SuiteOption = "test",
    out: Annotated[Path | None, typer.Option(help="write <task>.json files here")] = None,
    params: ParamsOption = Path("params.yaml"),
    set_: SetOption = None,
) -> None:
    """Evaluate any phrase encoder on the benchmark tasks, outside DVC; prints a table."""
    from pearl.bench.run import build_context, run_tasks

    def evaluate(p: Params) -> None:
        chosen = [t.strip() for t in tasks.split(",") if t.strip()] or _suite_tasks(suite, p)
        results = run_tasks(build_context(p, model, _prefix_for(model, p)), chosen, out)
        width = max(map(len, results))
        typer.echo(f"{'task':<{width}}  score    std      n")
        for task, r in results.items():
            std = f"{r['std']:6.2f}" if "std" in r else "     –"
            typer.echo(f"{task:<{width}}  {r['score']:6.2f}  {std}  {r['n']}")

    _run(evaluate, params, set_)


@app.command("bench-task", hidden=True)
def bench_task(
    system: Annotated[str, typer.Argument(help="base (the untuned backbone), model (models/pearl), string (Jaccard) "
                                               "or ref (each of bench.reference_models)")],
    task: Annotated[str, typer.Argument(help="one of the suite's tasks")],
    suite: SuiteOption = "test",
    params: ParamsOption = Path("params.yaml"),
    set_: SetOption = None,
) -> None:
    """One task for one system → metrics/{bench,tune}/<system>/<task>.json (the DVC bench stages)."""
    from pearl.bench.run import build_context, run_reference, run_tasks
    from pearl.train.stage import EXPORT

    def evaluate(p: Params) -> None:
        if task not in _suite_tasks(suite, p):
            raise PearlError(f"task {task!r} is not in the {suite} suite ({', '.join(_suite_tasks(suite, p))})")
        out_dir = Path("metrics/bench" if suite == "test" else "metrics/tune") / system
        if system == "ref":
            run_reference(p, p.bench.reference_models, task, out_dir / f"{task}.json")
            return
        models = {"base": p.model.backbone, "string": None, "model": str(EXPORT)}
        if system not in models:
            raise PearlError(f"unknown system {system!r}: base, model, string or ref")
        model = models[system]
        prefix = "" if model is None else _prefix_for(model, p)
        run_tasks(build_context(p, model, prefix), [task], out_dir)

    _run(evaluate, params, set_)


@app.command()
def embed(
    texts: Annotated[list[str] | None, typer.Argument(help="phrases to embed; none: read one per line from --input")] = None,
    model: Annotated[Path, typer.Option(help="an exported PEARL model (sentence-transformers directory)")] = Path("models/pearl"),
    input_file: Annotated[Path | None, typer.Option("--input", help="text file, one phrase per line")] = None,
    out: Annotated[Path | None, typer.Option(help="write a .npy matrix here instead of JSON lines on stdout")] = None,
    batch_size: Annotated[int, typer.Option(min=1)] = 128,
) -> None:
    """Embed phrases with a trained model: JSON lines {"text", "vector"} or a .npy matrix."""
    import json

    import numpy as np

    configure_logging()
    try:
        if input_file is not None:
            if not input_file.is_file():
                raise PearlError(f"--input {input_file}: no such file")
            texts = input_file.read_text(encoding="utf-8").splitlines()
        if not texts:
            raise PearlError("nothing to embed: give phrases as arguments or --input FILE")
        from pearl.model.export import load

        vectors = load(model).encode(texts, batch_size=batch_size, convert_to_numpy=True).astype(np.float32)
    except PearlError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    if out is not None:
        from pearl.artifacts import atomic_path

        with atomic_path(out) as tmp, tmp.open("wb") as handle:
            np.save(handle, vectors)
        typer.echo(f"{len(texts)} × {vectors.shape[1]} → {out}")
        return
    for text, vector in zip(texts, vectors):
        typer.echo(json.dumps({"text": text, "vector": [round(float(x), 6) for x in vector]}, ensure_ascii=False))


@app.command()
def report(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
    """Summarise the benchmark metrics → metrics/summary.json and metrics/summary.md."""
    from pearl.bench.report import write_report

    def summarise(p: Params) -> None:
        write_report(Path("metrics"), p.bench.tasks, p.bench.tune_tasks, p.bench.string_tasks, p.model.backbone,
                     Path("metrics/summary.json"), Path("metrics/summary.md"))
        typer.echo(Path("metrics/summary.md").read_text())

    _run(summarise, params, set_)


def main(args: list[str] | None = None) -> None:
    app(args=args)
