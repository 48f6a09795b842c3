"""The papers' experiments as DVC experiments: committed tables (`experiments/*.yaml`), their runner, the
results gathered from `dvc exp show`, and the t-SNE of phrase types (Figure 4)."""
