"""The `pearl` command line: one command per pipeline stage, and the product verbs (index, link, join, cluster, types)."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import yaml

from pearl.errors import MissingModelError, PearlError
from pearl.extras import missing_extra
from pearl.lone_surrogates import reject_lone_surrogate
from pearl.log import configure_logging

if TYPE_CHECKING:  # the schema (pydantic, 0.4 s) loads with the commands that read params.yaml, not with the verbs
    from pearl.params import Params

app = typer.Typer(
    help="PEARL phrase embeddings: pipeline stages (run by `dvc repro`) and model tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _options(verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="also show the libraries' logs and progress bars (model loading, downloads); "
                                "give it before the command: pearl -v link …")] = False) -> None:
    configure_logging(verbose)  # here, before any command imports the libraries that read these settings


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


class Terminated(BaseException):
    """SIGTERM, raised where the process is, so that `finally` blocks remove temp files; a BaseException so that
    no `except Exception` mistakes it for a load failure."""


def _raise_terminated(signum, frame) -> None:
    if _in_finaliser(frame):  # Python prints and drops an exception raised in __del__: deliver the signal again
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    raise Terminated


def _in_finaliser(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def _one_line_errors() -> Iterator[None]:
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except PearlError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    except ModuleNotFoundError as error:
        if (missing := missing_extra(error)) is None:
            raise
        typer.echo(f"error: {missing}", err=True)
        raise typer.Exit(1) from None
    except (Terminated, Exception) as error:
        if not _stopped_by_sigterm(error):
            raise
        typer.echo("error: stopped by SIGTERM; outputs are as before the run (written only when complete)", err=True)
        raise typer.Exit(128 + signal.SIGTERM) from None


def _stopped_by_sigterm(error: BaseException | None) -> bool:
    """Whether SIGTERM is the error or behind it: pybind11 raises ImportError("initialization failed") from
    whatever stops an extension module's import (scipy's lazy ones)."""
    while error is not None:
        if isinstance(error, Terminated):
            return True
        error = error.__cause__ or error.__context__
    return False


def _run(stage: Callable[[Params], object], params_path: Path, assignments: list[str] | None) -> None:
    with _one_line_errors():
        from pearl.params import load_params

        stage(load_params(params_path, _overrides(assignments)))


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
    "train-pearl-base": ("pearl.pearl_base", "run_train",
                         "Fine-tune pearl_base.backbone on the same data, the recipe otherwise PEARL-small's → "
                         "models/pearl-base-finetuned."),
    "average-pearl-base": ("pearl.pearl_base", "run_average",
                           "Average and export PEARL-base as `average` does PEARL-small → models/pearl-base."),
    "train-burt-small": ("pearl.burt_small", "run_train",
                         "Train model.backbone with BURT's objectives alone (burt_small.*, burt.*) on the same data → "
                         "models/burt-small-finetuned."),
    "average-burt-small": ("pearl.burt_small", "run_average",
                           "Export BURT-small as `average` exports PEARL-small, without averaging → models/burt-small."),
    "static": ("pearl.static.stage", "run",
               "Distil models/pearl's transformer into static token vectors with model2vec → models/pearl-static."),
    "figure4": ("pearl.experiments.tsne", "run",
                "t-SNE of typed phrases, untuned backbone beside the model, with silhouettes → metrics/figure4/*.png."),
}


def _stage_command(module: str, function: str) -> Callable[..., None]:
    def command(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
        # params first: a bad param fails before the stage's heavy imports
        _run(lambda p: getattr(importlib.import_module(module), function)(p), params, set_)

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
    from pearl.bench.tasks import TASKS

    def evaluate(p: Params) -> None:
        chosen = [t.strip() for t in tasks.split(",") if t.strip()] or _suite_tasks(suite, p)
        unknown = [t for t in chosen if t not in TASKS]
        if unknown:
            raise PearlError(f"--tasks: unknown task {unknown[0]!r} (valid: {', '.join(TASKS)})")
        results = run_tasks(build_context(p, model, _prefix_for(model, p)), chosen, out)
        width = max(map(len, results))
        typer.echo(f"{'task':<{width}}  score    std      n")
        for task, r in results.items():
            std = f"{r['std']:6.2f}" if "std" in r else "     –"
            typer.echo(f"{task:<{width}}  {r['score']:6.2f}  {std}  {r['n']}")

    _run(evaluate, params, set_)


@app.command("bench-task", hidden=True)
def bench_task(
    system: Annotated[str, typer.Argument(help="base (the untuned backbone), model (models/pearl), pearl-base "
                                               "(models/pearl-base), static (models/pearl-static), burt-small "
                                               "(models/burt-small), string (Jaccard) or ref (each of "
                                               "bench.reference_models)")],
    task: Annotated[str, typer.Argument(help="one of the suite's tasks")],
    suite: SuiteOption = "test",
    params: ParamsOption = Path("params.yaml"),
    set_: SetOption = None,
) -> None:
    """One task for one system → metrics/{bench,tune}/<system>/<task>.json (the DVC bench stages)."""
    from pearl.artifacts import write_json
    from pearl.bench.run import build_context, run_reference, run_tasks
    from pearl.model import EXPORT, STATIC_EXPORT
    from pearl import burt_small, pearl_base

    def evaluate(p: Params) -> None:
        # BURT's tasks beyond the suites run as the suites' do, into the same folders
        allowed = [*_suite_tasks(suite, p), *(p.bench.burt_tasks if suite == "test" else p.bench.burt_tune_tasks)]
        if task not in allowed:
            raise PearlError(f"task {task!r} is not in the {suite} suite or BURT's ({', '.join(allowed)})")
        out_dir = Path("metrics/bench" if suite == "test" else "metrics/tune") / system
        if system == "ref":
            run_reference(p, p.bench.reference_models, task, out_dir / f"{task}.json")
            return
        models = {"base": (p.model.backbone, "model.backbone"), "string": (None, ""), "model": (str(EXPORT), ""),
                  "pearl-base": (str(pearl_base.EXPORT), ""), "static": (str(STATIC_EXPORT), ""),
                  "burt-small": (str(burt_small.EXPORT), "")}
        if system not in models:
            raise PearlError(f"unknown system {system!r}: base, model, pearl-base, static, burt-small, string or ref")
        model, param = models[system]
        if system == "pearl-base" and not p.pearl_base.enabled:
            write_json({"skipped": pearl_base.DISABLED}, out_dir / f"{task}.json")  # the report leaves it out
            return
        stage = {"model": "average", "pearl-base": "average_pearl_base", "static": "static",
                 "burt-small": "average_burt_small"}.get(system)
        if stage:
            if not Path(model).is_dir():
                raise MissingModelError(f"{model} is missing: run `dvc repro {stage}`")
            pearl_base.check_trained(model)
        prefix = "" if model is None else _prefix_for(model, p)
        run_tasks(build_context(p, model, prefix, param), [task], out_dir)

    _run(evaluate, params, set_)


@app.command()
def embed(
    texts: Annotated[list[str] | None, typer.Argument(help="phrases to embed; none: read one per line from --input")] = None,
    model: Annotated[str, typer.Option(help="a PEARL export, or a sentence-transformers / Hugging Face id or "
                                            "directory (not `string`, which has no vectors)")] = "models/pearl",
    input_file: Annotated[Path | None, typer.Option("--input", help="text file, one phrase per line")] = None,
    out: Annotated[Path | None, typer.Option(help="write a .npy matrix here instead of JSON lines on stdout")] = None,
    batch_size: Annotated[int, typer.Option(min=1)] = 128,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = 2,
) -> None:
    """Embed phrases: JSON lines {"text", "vector"} or a .npy matrix of L2-normalised rows."""
    import json

    import numpy as np

    with _one_line_errors(), _ray_encoding(engine, ray_address, ray_workers) as ray:
        if input_file is not None:
            if not input_file.is_file():
                raise PearlError(f"--input {input_file}: no such file")
            try:
                texts = input_file.read_text(encoding="utf-8").splitlines()
            except UnicodeDecodeError:
                raise PearlError(f"--input {input_file}: not UTF-8 text; re-save it as UTF-8") from None
        # a blank line would be embedded as "" and shift every later row of a .npy that has no ids
        blank = next((number for number, text in enumerate(texts or [], start=1) if not text.strip()), None)
        if blank is not None:
            where = f"--input {input_file}: line {blank}" if input_file is not None else f"phrase {blank}"
            raise PearlError(f"{where} is blank; remove blank lines (every row of the output is one phrase)")
        if not texts:
            raise PearlError("nothing to embed: give phrases as arguments or --input FILE")
        for number, text in enumerate(texts, start=1):
            reject_lone_surrogate(text, f"phrase {number}")
        if out is not None:
            from pearl.tables import check_output_folder

            check_output_folder(out)
        from pearl.index.encoder import STRING, load_encoder

        if model == STRING:
            raise PearlError("--model string has no vectors: give a PEARL export or a sentence-transformers model")
        # the verbs' own encoder, so these vectors are the ones `pearl index` and `pearl link` compare
        vectors = load_encoder(model, batch_size=batch_size, ray=ray).encode(texts)
        if out is not None:
            from pearl.artifacts import atomic_path

            with atomic_path(out) as tmp, tmp.open("wb") as handle:
                np.save(handle, vectors)
            typer.echo(f"{len(texts)} × {vectors.shape[1]} → {out}")
            return
    for text, vector in zip(texts, vectors):
        typer.echo(json.dumps({"text": text, "vector": [round(float(x), 6) for x in vector]}, ensure_ascii=False))


# ---- the product verbs: any encoder, on users' tables; no params.yaml needed -------------------

ModelOption = Annotated[str, typer.Option(
    "--model", help="a PEARL export (models/pearl, PEARL-small: fast; models/pearl-base: PEARL-base, the quality "
                    "choice), a sentence-transformers / Hugging Face id or directory, or `string` (character 3-gram "
                    "Jaccard)")]
InputOption = Annotated[Path, typer.Option("--input", help="a .csv, .tsv, .parquet, or .txt (one name per line, column `text`)")]
OutOption = Annotated[Path, typer.Option("--out", help="a .parquet or .csv file, in an existing folder")]
EngineOption = Annotated[str, typer.Option(
    "--engine", help="local, or ray: the names encoded, and their nearest names searched, by Ray actors, into the "
                     "local engine's output byte for byte (docs/cluster.md)")]
RayAddressOption = Annotated[str | None, typer.Option(
    "--ray-address", envvar="PEARL_RAY_ADDRESS", help="with --engine ray: a running Ray cluster (`ray start --head`); "
                                                      "default: a Ray started on this machine")]
RayWorkersOption = Annotated[int, typer.Option("--ray-workers", min=1,
                                               help="with --engine ray: the actors that encode, and those that search")]


def _product(work: Callable[[], None]) -> None:
    with _one_line_errors():
        work()


@contextlib.contextmanager
def _ray_encoding(engine: str, address: str | None, workers: int):
    """--engine's RayEncoding, or None for the local engine (checked before any input is read); the Ray it
    started is stopped when the verb ends."""
    if engine not in ("local", "ray"):
        raise PearlError(f"--engine {engine!r}: local or ray")
    if engine == "local":
        yield None
        return
    from pearl.ray_encoding import RayEncoding

    ray = RayEncoding(address=address, workers=workers)
    try:
        yield ray
    finally:
        ray.close()


def _encoder_loader(model: str, ray) -> Callable:
    """The loader of the encoder (on Ray with `ray`) that a verb calls once its inputs pass their checks."""
    from functools import partial

    from pearl.index.encoder import load_encoder

    return partial(load_encoder, model, ray=ray)


def _table(path: Path, where: str, *columns: str | None):
    """A verb's input table, with the columns it names checked before the verb loads its model."""
    from pearl.tables import read_table, require_column

    table = read_table(path)
    for column in columns:
        if column is not None:
            require_column(table, column, where)
    return table


index_app = typer.Typer(help="A persistent faiss index of names: build it once, link against it often.",
                        no_args_is_help=True)
app.add_typer(index_app, name="index")


@index_app.command("build")
def index_build(
    input_file: InputOption,
    column: Annotated[str, typer.Option(help="the names column")],
    out: Annotated[Path, typer.Option(help="the index folder to write (replaced if it is an index)")],
    model: ModelOption = "models/pearl",
    id_column: Annotated[str | None, typer.Option(help="ids column; default: the row number")] = None,
    dedupe: Annotated[bool, typer.Option(help="keep each duplicate name's first row instead of failing")] = False,
    exact_below: Annotated[int, typer.Option(min=0, help="exact search below this many names, HNSW above")] = 100_000,
    prefix: Annotated[str, typer.Option(help="text put before every name, e.g. 'query: ' for E5")] = "",
    batch_size: Annotated[int, typer.Option(min=1)] = 128,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = 2,
) -> None:
    """Embed a table's names into an index folder: rows.parquet, index.faiss, manifest.json."""
    from pearl.index.encoder import load_encoder
    from pearl.index.phrase_index import Index, IndexSettings
    from pearl.tables import check_output_folder

    def work() -> None:
        with _ray_encoding(engine, ray_address, ray_workers) as ray:
            check_output_folder(out)
            table = _table(input_file, "the names table", column, id_column)
            index = Index.from_table(table, column, id_column, encoder=load_encoder(model, prefix, batch_size, ray=ray),
                                     dedupe=dedupe, settings=IndexSettings(exact_below=exact_below))
            index.save(out)
            typer.echo(f"{len(index)} names ({index.kind}, {index.encoder.card.dimension or 'no'} dimensions) → {out}")

    _product(work)


@index_app.command("add")
def index_add(
    index_dir: Annotated[Path, typer.Option("--index", help="an index folder from `pearl index build`")],
    input_file: InputOption,
    column: Annotated[str, typer.Option(help="the names column")],
    id_column: Annotated[str | None, typer.Option(help="ids column; default: the row number, counted on")] = None,
    dedupe: Annotated[bool, typer.Option(help="skip names already indexed or repeated instead of failing")] = False,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = 2,
) -> None:
    """Append a table's names to an index; the names already there are not embedded again."""
    from pearl.index.phrase_index import Index

    def work() -> None:
        with _ray_encoding(engine, ray_address, ray_workers) as ray:
            table = _table(input_file, "the names table", column, id_column)
            index = Index.load(index_dir, ray=ray)
            added = index.add_table(table, column, id_column, dedupe=dedupe)
            index.save(index_dir)
            typer.echo(f"+{added} names → {len(index)} in {index_dir} ({index.kind})")

    _product(work)


@app.command()
def link(
    index_dir: Annotated[Path, typer.Option("--index", help="an index folder from `pearl index build`")],
    input_file: InputOption,
    out: OutOption,
    column: Annotated[str, typer.Option(help="the mentions column")] = "mention",
    k: Annotated[int, typer.Option("--k", help="candidates per mention")] = 5,
    min_score: Annotated[float | None, typer.Option(help="below this score a mention gets a no-match row")] = None,
    string_weight: Annotated[float, typer.Option(
        help="weight of rapidfuzz string similarity mixed into the score of the index's best candidates "
             "(0: the index's score alone)")] = 0.5,
    model: Annotated[str | None, typer.Option(help="must be the index's model; default: the index's own")] = None,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = 2,
) -> None:
    """Entity linking: the top-k index entries of each mention → rank, id, name, score, matched."""
    from pearl.index.phrase_index import Index
    from pearl.linking.link import check_link_flags, link_chunks
    from pearl.tables import check_output, write_table_chunks

    def work() -> None:
        with _ray_encoding(engine, ray_address, ray_workers) as ray:
            check_output(out)
            check_link_flags(k, min_score, string_weight)  # before the index loads its model
            mentions = _table(input_file, "the mentions table", column)
            matched = 0

            def counted(chunks):
                nonlocal matched
                for chunk in chunks:
                    matched += chunk["matched"].sum()
                    yield chunk

            chunks = link_chunks(lambda: Index.load(index_dir, model, ray=ray), mentions, column, k, min_score,
                                 string_weight=string_weight)
            write_table_chunks(counted(chunks), out)
            typer.echo(f"{len(mentions)} mentions, {matched} candidate rows → {out}")

    _product(work)


@app.command()
def join(
    left: Annotated[Path, typer.Argument(help="the reference table (its names are indexed)")],
    right: Annotated[Path, typer.Argument(help="the table whose rows each get their best left row")],
    left_on: Annotated[str, typer.Option(help="the left table's names column")],
    right_on: Annotated[str, typer.Option(help="the right table's names column")],
    out: Annotated[Path | None, typer.Option(help="a .parquet or .csv file; optional with --explain")] = None,
    model: ModelOption = "models/pearl",
    how: Annotated[str, typer.Option(help="inner: matched right rows only; left: every right row")] = "inner",
    threshold: Annotated[float | None, typer.Option(
        help="a fixed cut on the cosine (+ string) score, instead of the cut chosen for --precision-target")] = None,
    calibration_quantile: Annotated[float | None, typer.Option(
        help="instead, the cut at this quantile of the left names' scores with their nearest other left name "
             "(0.9 with --string-weight alone)")] = None,
    string_weight: Annotated[float, typer.Option(help="weight of rapidfuzz string similarity in a fixed score")] = 0.0,
    candidates: Annotated[int, typer.Option(help="left candidates per right row, from the index")] = 10,
    precision_target: Annotated[float | None, typer.Option(
        help="choose the scoring and cut per pair of tables for this estimated precision (AutoFJ's estimate, no "
             "labels); score becomes each join's estimated probability [default: 0.9 unless --threshold, "
             "--calibration-quantile or --string-weight is given]")] = None,
    sample: Annotated[int, typer.Option(
        help="right rows the join functions and cuts are chosen on, drawn at random from a larger right table; "
             "the choice then joins every row, a chunk at a time")] = 20_000,
    explain: Annotated[bool, typer.Option(help="print the score distribution and the chosen cut")] = False,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = 2,
) -> None:
    """Fuzzy join: each RIGHT row gets its best LEFT row, by join functions and a cut chosen for precision 0.9."""
    from pearl.joining.join import assemble, best_matches, check_how, explain as explain_scores
    from pearl.tables import check_output, read_table, write_table

    def work() -> None:
        with _ray_encoding(engine, ray_address, ray_workers) as ray:
            if out is None and not explain:
                raise PearlError("give --out FILE for the joined table, or --explain to see the scores")
            if out is not None:
                check_output(out)
            check_how(how)
            left_df, right_df = read_table(left), read_table(right)
            matches = best_matches(left_df, right_df, left_on, right_on, _encoder_loader(model, ray), threshold,
                                   string_weight, candidates, calibration_quantile, precision_target, sample)
            if explain:
                typer.echo(explain_scores(matches))
            if out is not None:
                result = assemble(left_df, right_df, matches, how)
                write_table(result, out)
                typer.echo(f"{result['matched'].sum()} of {len(right_df)} right rows matched → {out}")

    _product(work)


@app.command()
def cluster(
    input_file: Annotated[Path, typer.Argument(help="a .csv, .tsv, .parquet or .txt table")],
    column: Annotated[str, typer.Option(help="the names column")],
    out: OutOption,
    model: ModelOption = "models/pearl",
    k: Annotated[int | None, typer.Option("--k", help="this many clusters (KMeans)")] = None,
    threshold: Annotated[str | None, typer.Option(
        help="merge while the mean cosine similarity is at least this (average-linkage agglomerative); auto: "
             "a cut chosen from the names' own neighbours, without labels (the log states it)")] = None,
    string_weight: Annotated[float | None, typer.Option(
        help="weight of rapidfuzz string similarity mixed into each pair's score, as `pearl link` mixes it "
             "(0: the model's cosine or `string`'s 3-gram Jaccard alone)  [default: 0.5 with a model, 0 with "
             "string]", show_default=False)] = None,
    seed: int = 0,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = 2,
) -> None:
    """Group near-duplicate names: adds cluster, representative and cluster_size to each row."""
    from pearl.clustering.cluster import cluster as cluster_table
    from pearl.tables import check_output, read_table, write_table

    def work() -> None:
        with _ray_encoding(engine, ray_address, ray_workers) as ray:
            check_output(out)
            result = cluster_table(read_table(input_file), column, model, k, threshold, seed,
                                   encoder=_encoder_loader(model, ray), string_weight=string_weight)
            write_table(result, out)
            typer.echo(f"{len(result)} rows in {result['cluster'].n_unique() - result['cluster'].has_nulls()} clusters → {out}")

    _product(work)


@app.command()
def types(
    texts: Annotated[list[str] | None, typer.Argument(help="phrases; none: read --input")] = None,
    model: Annotated[Path, typer.Option(help="a PEARL export (it carries the type head)")] = Path("models/pearl"),
    input_file: Annotated[Path | None, typer.Option("--input", help="a table of phrases")] = None,
    column: Annotated[str, typer.Option(help="the phrases column of --input")] = "text",
    out: Annotated[Path | None, typer.Option(help="write a .parquet or .csv instead of printing")] = None,
) -> None:
    """The lexical (NP, VP, …) and entity (PERSON, ORG, …) type of each phrase, with probabilities."""
    from pearl.tables import check_output, read_table, text_column, write_table
    from pearl.types.predict import predict_types

    def work() -> None:
        if out is not None:
            check_output(out)
        phrases = [reject_lone_surrogate(text, f"phrase {number}") for number, text in enumerate(texts or [], start=1)]
        if input_file is not None:
            phrases += text_column(read_table(input_file), column, str(input_file), numbers=True).texts  # '1968' is a DATE
        if not phrases:
            raise PearlError("no phrases: give them as arguments or --input FILE")
        result = predict_types(model, phrases)
        if out is not None:
            write_table(result, out)
            typer.echo(f"{len(result)} phrases → {out}")
            return
        for row in result.iter_rows(named=True):
            typer.echo(f"{row['text']}\t{row['lex_type']} {row['lex_prob']:.2f}\t{row['entity_type']} {row['entity_prob']:.2f}")

    _product(work)


@app.command()
def serve(
    index_dir: Annotated[Path, typer.Option("--index", help="an index folder from `pearl index build`")],
    host: Annotated[str, typer.Option(help="the address to listen on; 0.0.0.0 for every interface")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    model: Annotated[str | None, typer.Option(help="must be the index's model; default: the index's own")] = None,
    types_model: Annotated[Path | None, typer.Option(
        help="a PEARL export for POST /types; default: the index's model when it is one")] = None,
    max_texts: Annotated[int, typer.Option(min=1, help="texts per request, at most")] = 1000,
    max_chars: Annotated[int, typer.Option(min=1, help="characters per text, at most")] = 1000,
    batch_texts: Annotated[int, typer.Option(min=1, help="texts per model call, over concurrent requests")] = 1024,
    max_body_bytes: Annotated[int, typer.Option(min=1, help="bytes per request body, at most (more: 413)")] = 2_000_000,
    max_queued_texts: Annotated[int, typer.Option(
        min=1, help="texts admitted and not yet answered, over all requests; more: 429 with Retry-After")] = 8192,
    max_candidates: Annotated[int, typer.Option(
        min=1, help="a /link request's mentions × k, at most (more: 413): the answer's size")] = 100_000,
    max_queued_candidates: Annotated[int, typer.Option(
        min=1, help="/link candidates admitted and not yet answered, over all requests; more: 429")] = 200_000,
    request_timeout: Annotated[float, typer.Option(
        help="seconds a request may wait and run; past them: 503, and its work is dropped")] = 30.0,
    max_connections: Annotated[int, typer.Option(
        min=1, help="open connections at once (uvicorn's limit_concurrency); more: 503")] = 64,
    api_key: Annotated[str | None, typer.Option(
        envvar="PEARL_API_KEY", show_default=False,
        help="a Bearer token every route but /health requires (default: none; prefer the variable to the flag)")] = None,
) -> None:
    """Serve an index and its model over HTTP: POST /embed, /link, /types and OpenAI's /v1/embeddings; GET /health
    and /metrics; OpenAPI page at /docs."""
    def work() -> None:
        from pearl.serve.app import ServeSettings
        from pearl.serve.run import serve as run_server

        run_server(index_dir, host, port, model, types_model,
                   ServeSettings(max_texts=max_texts, max_chars=max_chars, batch_texts=batch_texts,
                                 max_body_bytes=max_body_bytes, max_queued_texts=max_queued_texts,
                                 max_candidates=max_candidates, max_queued_candidates=max_queued_candidates,
                                 request_timeout=request_timeout, max_connections=max_connections, api_key=api_key))

    _product(work)


@app.command()
def report(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
    """Summarise the benchmark metrics → metrics/summary.json and metrics/summary.md."""
    from pearl.report.summary import write_params_report

    def summarise(p: Params) -> None:
        write_params_report(p, Path("metrics"), Path("metrics/summary.json"), Path("metrics/summary.md"))
        typer.echo(Path("metrics/summary.md").read_text())

    _run(summarise, params, set_)


experiments_app = typer.Typer(help="The papers' experiments (experiments/*.yaml) as DVC experiments, and their tables.",
                               no_args_is_help=True)
app.add_typer(experiments_app, name="experiments")


def _csv(value: str | None, option: str, kind: str, cast: Callable = str) -> tuple | None:
    """A comma-separated flag's values, each `cast` (a ValueError or an empty one: a one-line error)."""
    if value is None:
        return None
    try:
        values = tuple(cast(v) if v.strip() else "" for v in value.split(","))
    except ValueError:
        values = ("",)
    if "" in values:
        raise PearlError(f"{option} {value!r}: expected comma-separated {kind}")
    return values


def _seed(value: str) -> int:
    if (seed := int(value)) < 0:
        raise ValueError(value)
    return seed


@experiments_app.command("run")
def experiments_run(
    table: Annotated[str, typer.Argument(help="a table of experiments/: table3, table4, figure5, figure5full, "
                                              "burt-table3")],
    rows: Annotated[str | None, typer.Option(help="comma-separated rows; default: all")] = None,
    seeds: Annotated[str | None, typer.Option(help="comma-separated training seeds; default: the table's")] = None,
    suite: Annotated[str, typer.Option(help="tune, test or both: which bench stages each experiment runs")] = "tune",
    dry_run: Annotated[bool, typer.Option(help="print the `dvc exp run` commands instead")] = False,
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Run a table's rows × seeds one by one as `dvc exp run -n TABLE-ROW-sSEED`, skipping those finished
    on this commit; then `pearl experiments results`."""
    from pearl.experiments import shell
    from pearl.experiments.definitions import EXPERIMENTS_DIR, load_table
    from pearl.experiments.results import finished_experiments
    from pearl.experiments.runner import run_all
    from pearl.experiments.systems import SYSTEMS

    def work() -> None:
        if suite not in ("tune", "test", "both"):
            raise PearlError(f"--suite {suite!r}: tune, test or both")
        chosen_seeds = _csv(seeds, "--seeds", "integers >= 0 (train.seed)", _seed)
        chosen_rows = _csv(rows, "--rows", "row names")
        loaded = load_table(EXPERIMENTS_DIR / f"{table}.yaml", params)
        system = SYSTEMS[loaded.system]
        targets = system.targets("tune") + system.targets("test") if suite == "both" else system.targets(suite)
        runs = loaded.runs(chosen_seeds, chosen_rows)
        head = shell.run(["git", "rev-parse", "HEAD"]).strip()
        done = set() if dry_run else {f.name for f in finished_experiments() if f.baseline == head}
        from pearl.params import load_params

        run_all(runs, load_params(params).base.seed, targets, done, dry_run)

    _product(work)


@experiments_app.command("results")
def experiments_results(params: ParamsOption = Path("params.yaml")) -> None:
    """Gather the finished experiments → metrics/experiments.{json,md} and the sweeps' plot files."""
    from pearl.experiments.definitions import load_tables
    from pearl.experiments.results import finished_experiments, write_results

    def work() -> None:
        from pearl.params import load_params

        write_results(load_tables(params_path=params), load_params(params), finished_experiments(),
                      Path("metrics/experiments.json"), Path("metrics/experiments.md"), Path("metrics/experiments"))
        typer.echo(Path("metrics/experiments.md").read_text())

    _product(work)


def main(args: list[str] | None = None) -> None:
    app(args=args)
