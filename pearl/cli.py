"""The `pearl` command line: one command per pipeline stage (and, later, the model's uses)."""

from __future__ import annotations

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


@app.command()
def corpus(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
    """Extract sentences from the corpus source → data/corpus/sentences.parquet."""
    from pearl.corpus import stage

    _run(stage.run, params, set_)


@app.command()
def parse(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
    """Extract NP/VP/PP/ADVP/ADJP phrases and count them → data/phrases/phrases.parquet."""
    from pearl.parse import stage

    _run(stage.run, params, set_)


@app.command("typing")
def typing_(params: ParamsOption = Path("params.yaml"), set_: SetOption = None) -> None:
    """Give each phrase an OntoNotes entity type and its 95-way label → data/typed/phrases.parquet."""
    from pearl.entity_typing import stage

    _run(stage.run, params, set_)


def main(args: list[str] | None = None) -> None:
    app(args=args)
