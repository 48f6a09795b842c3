"""PEARL phrase embeddings: the pipeline library behind `dvc repro` and the `pearl` CLI."""


def load(path, device=None):
    """An exported PEARL model as a SentenceTransformer: `pearl.load(path).encode(texts)`."""
    from pearl.model.export import load as load_export

    return load_export(path, device)
