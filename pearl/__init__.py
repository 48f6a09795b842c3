"""PEARL phrase embeddings: the pipeline library behind `dvc repro` and the `pearl` CLI.

The product verbs, on polars or pandas DataFrames with any encoder:
`pearl.Index`, `pearl.link`, `pearl.join`, `pearl.cluster`, `pearl.predict_types` and `pearl.load`.
They are imported on first use, so `import pearl` stays light.
"""

_VERBS = {
    "Index": ("pearl.index.phrase_index", "Index"),
    "link": ("pearl.linking.link", "link"),
    "join": ("pearl.joining.join", "join"),
    "cluster": ("pearl.clustering.cluster", "cluster"),
    "predict_types": ("pearl.types.predict", "predict_types"),
}


def load(path, device=None):
    """An exported PEARL model as a SentenceTransformer: `pearl.load(path).encode(texts)`."""
    from pearl.model.export import load as load_export

    return load_export(path, device)


def __getattr__(name):
    if name in _VERBS:
        import importlib

        module, attribute = _VERBS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'pearl' has no attribute {name!r}")
