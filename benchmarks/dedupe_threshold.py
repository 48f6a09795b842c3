"""The design screen behind `pearl cluster --threshold auto` (pearl.clustering.cluster.auto_threshold): per
encoder, the pairwise F1 of average linkage at the cut `auto` chooses without labels, at the cut it chooses with
AutoFJ's radius (twice the distance) in place of its own, at the fixed cut benchmarks/verbs_scale.py gives each
encoder (`--cluster-thresholds`), and at the best cut of a grid (chosen on the labels: an oracle row), on the
design sets only:
- the generated GeoNames forms of benchmarks/verbs_scale.py at its design seed 0 (20,000 right rows), grouped
  by the left name each came from;
- the first 25 AutoFJ datasets by name (the join's design half), left and right titles grouped by the left
  title they are, macro-averaged.
The peers' test seed, the held-out 25 AutoFJ datasets and the alias set are never read.

    python benchmarks/dedupe_threshold.py --models string,models/pearl \
        --markdown metrics/screens/dedupe_threshold.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from pearl.clustering.cluster import NEIGHBOURS, _threshold_clusters, auto_threshold
from pearl.index.encoder import STRING, load_encoder
from pearl.index.phrase_index import Index

DESIGN_SEED, DESIGN_ROWS, DESIGN_AUTOFJ = 0, 20_000, 25
FIXED = {"string": 0.6, "models/pearl": 0.8, "models/pearl-static": 0.9}
GRID = {"string": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8), "vectors": (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)}


def scores(names: list[str], groups: np.ndarray, encoder, cuts: list[float]) -> dict[str, tuple[float, float]]:
    """(F1, cut) at `auto`, at `auto` with AutoFJ's radius of twice the distance, and at each of `cuts`."""
    from sklearn.metrics.cluster import pair_confusion_matrix

    distinct = list(dict.fromkeys(names))
    position = {name: i for i, name in enumerate(distinct)}
    index = Index.build(distinct, encoder=encoder)
    neighbours = index.search_own_names(NEIGHBOURS + 1)
    autos = [(label, auto_threshold(*neighbours, radius)[0]) for label, radius in (("auto", 1.0), ("auto 2d", 2.0))]
    result = {}
    for label, cut in [(label, 1.0 if cut is None else cut) for label, cut in autos] + [(f"{c:g}", c) for c in cuts]:
        labels, _ = _threshold_clusters(distinct, None if encoder.kind == STRING else index, cut)
        (_, fp), (fn, tp) = pair_confusion_matrix(groups, labels[[position[n] for n in names]]) // 2
        result[label] = (float(2 * tp / max(2 * tp + fp + fn, 1)), cut)
    return result


def screen(model: str) -> dict[str, dict[str, tuple[float, float]]]:
    from peers import autofj, generated

    encoder = load_encoder(model)
    cuts = sorted(set(GRID["string" if encoder.kind == STRING else "vectors"]) | {FIXED[model]})
    sets = {"generated (design seed)": generated(DESIGN_ROWS, DESIGN_SEED)}
    sets[f"AutoFJ design {DESIGN_AUTOFJ}"] = autofj(DESIGN_AUTOFJ)
    out = {}
    for set_name, datasets in sets.items():
        per = [scores(d.dedupe, d.groups, encoder, cuts) for d in datasets]
        out[set_name] = {key: (float(np.mean([p[key][0] for p in per])), float(np.mean([p[key][1] for p in per])))
                         for key in per[0]}
        print(model, set_name, {k: round(v[0], 3) for k, v in out[set_name].items()}, flush=True)
    return out


def markdown(results: dict[str, dict], fixed: dict[str, float]) -> str:
    lines = ["<!-- written by `python benchmarks/dedupe_threshold.py`: design sets only -->", "",
             "| encoder | set | F1 at auto (its cut, mean) | F1 at auto, AutoFJ's 2d | F1 at the fixed cut "
             "| best F1 of the grid (oracle) |", "|---|---|---:|---:|---:|---:|"]
    for model, per_set in results.items():
        for set_name, row in per_set.items():
            grid = {k: v for k, v in row.items() if not k.startswith("auto")}
            best = max(grid, key=lambda k: grid[k][0])
            lines.append(f"| {model} | {set_name} | {row['auto'][0]:.3f} ({row['auto'][1]:.3f}) "
                         f"| {row['auto 2d'][0]:.3f} ({row['auto 2d'][1]:.3f}) "
                         f"| {row[f'{fixed[model]:g}'][0]:.3f} ({fixed[model]:g}) | {grid[best][0]:.3f} ({best}) |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="string,models/pearl")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    results = {model: screen(model) for model in args.models.split(",")}
    text = markdown(results, FIXED)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
