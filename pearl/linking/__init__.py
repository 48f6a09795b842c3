"""`pearl link`: each mention's nearest names in an index (entity linking against a dictionary)."""
