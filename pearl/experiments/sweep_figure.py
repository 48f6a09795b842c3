"""A sweep table drawn as one image, one line plot per swept param: what docs/experiments.md embeds, where
`dvc plots show` draws the same points from the CSV files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pearl.artifacts import atomic_path
from pearl.experiments.definitions import param_key


def draw_sweeps(title: str, lines: dict[str, list[dict]], defaults: dict[str, Any], path: Path) -> None:
    """`lines`: param → [{param_key(param): value, tune_mean, tune_std, seeds}] (sweep_points);
    `defaults`: each param's value in the recipe swept around, marked on its panel."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from matplotlib import pyplot as plt

    drawn = {param: line for param, line in lines.items() if line}
    columns = min(len(drawn), 3)
    rows = -(-len(drawn) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 3.0 * rows + 0.3), sharey=True, squeeze=False)
    for axis in axes.flat[len(drawn):]:
        axis.set_visible(False)
    for axis, (param, line) in zip(axes.flat, drawn.items()):
        leaf = param_key(param)
        xs = [point[leaf] for point in line]
        axis.errorbar(xs, [p["tune_mean"] for p in line], yerr=[p["tune_std"] for p in line], marker="o", capsize=3)
        for point in line:
            axis.annotate(f"{point['seeds']}", (point[leaf], point["tune_mean"]), textcoords="offset points",
                          xytext=(4, 4), fontsize=7, color="grey")
        axis.axvline(defaults[param], color="grey", linestyle=":", linewidth=1)
        if min(xs) > 0 and max(xs) / min(xs) >= 10:  # a learning rate's decades
            axis.set_xscale("log")
        axis.set_xlabel(param, fontsize=9)
        axis.tick_params(labelsize=8)
    for axis in axes[:, 0]:
        axis.set_ylabel("tune mean ± seed std", fontsize=9)
    figure.suptitle(f"{title}: dotted, the value swept around; grey, the seeds run", fontsize=9)
    figure.tight_layout()
    with atomic_path(path) as tmp:
        figure.savefig(tmp, dpi=90, format="png")
    plt.close(figure)
