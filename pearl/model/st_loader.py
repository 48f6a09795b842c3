"""The SentenceTransformer behind `pearl.load`: it runs no code from the model directory."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer

from pearl.errors import PearlError
from pearl.model import st_modules
from pearl.model.export import OUR_REFS


class PearlSentenceTransformer(SentenceTransformer):
    """Our refs resolve to this installed package (the export's shipped copies are never imported),
    sentence_transformers.* refs as usual, and any other ref is refused before it is imported.

    trust_remote_code stays False, so nothing the directory names (a backbone's auto_map, a
    Router's modules) is trusted either."""

    def __init__(self, path: str, device: str | None = None):
        # local_files_only: else sentence-transformers asks the hub whether a folder name like "models/pearl" is a model
        super().__init__(path, device=device, trust_remote_code=False, local_files_only=True)

    def _load_module_class_from_ref(self, class_ref: str, *args, **kwargs) -> type:
        if class_ref in OUR_REFS:
            return getattr(st_modules, OUR_REFS[class_ref])
        if class_ref.startswith("sentence_transformers."):
            return super()._load_module_class_from_ref(class_ref, *args, **kwargs)
        raise PearlError(f"module type {class_ref!r} is neither PEARL's nor sentence-transformers'; "
                         "pearl.load runs no code from a model directory")
