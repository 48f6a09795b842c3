"""The PEARL phrase model: encoder, character encoder, loss, averaging and export."""

from pathlib import Path

# Names kept apart from the torch code, so that a command checks its files and flags before torch loads (3.5 s)
EXPORT = Path("models/pearl")  # where the `average` stage writes the export
STATIC_EXPORT = Path("models/pearl-static")  # where the `static` stage writes PEARL-static
CONFIG = "pearl_model.json"  # an export's (and a fine-tuned model's) PEARL config
