"""A fine-tuned model's own files (`pearl train`'s output), named apart from the torch code so that `average`
checks them before torch loads."""

from pathlib import Path

from pearl.errors import MissingModelError
from pearl.model import CONFIG

EXTRA_WEIGHTS = "pearl_heads.pt"  # a fine-tuned model's character encoder and type head, beside the backbone's files


def check_finetuned(directory: Path) -> None:
    """A fine-tuned model's own files, before torch loads: a missing one fails in one line."""
    for name in (CONFIG, EXTRA_WEIGHTS):
        if not (directory / name).is_file():
            raise MissingModelError(f"{directory / name} is missing: run `dvc repro train` "
                                    "(is this a model written by `pearl train`?)")
