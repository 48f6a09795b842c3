"""The PEARL phrase model: encoder, character encoder, loss, averaging and export."""
