"""`pearl index`: a persistent faiss index of names embedded by any encoder."""
