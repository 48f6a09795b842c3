"""PEARL-static: PEARL-small's transformer distilled into static token vectors with model2vec."""
