"""`pearl cluster`: group near-duplicate names (dedup) with sklearn clustering over embeddings."""
