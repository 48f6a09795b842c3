"""The PEARL phrase model: encoder, character encoder, loss, averaging and export."""

from pathlib import Path

from pearl.errors import MissingModelError

# Names kept apart from the torch code, so that a command checks its files and flags before torch loads (3.5 s)
EXPORT = Path("models/pearl")  # where the `average` stage writes the export
CONFIG = "pearl_model.json"  # an export's (and a fine-tuned model's) PEARL config
EXTRA_WEIGHTS = "pearl_heads.pt"  # a fine-tuned model's character encoder and type head, beside the backbone's files


def check_finetuned(directory: Path) -> None:
    """A fine-tuned model's own files, before torch loads: a missing one fails in one line."""
    for name in (CONFIG, EXTRA_WEIGHTS):
        if not (directory / name).is_file():
            raise MissingModelError(f"{directory / name} is missing: run `dvc repro train` "
                                    "(is this a model written by `pearl train`?)")
