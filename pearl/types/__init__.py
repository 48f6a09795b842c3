"""Phrase types predicted by an exported PEARL model's type head."""
