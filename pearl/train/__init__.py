"""Training: batches, the loop, checkpoints, multi-process support, and the train/average stages."""
