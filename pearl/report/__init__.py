"""The `report` stage: the benchmark summary of every system."""
