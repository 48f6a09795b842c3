"""The design screen behind `pearl link`'s string evidence (pearl.linking.link: RERANKED, STRING_SCORER,
STRING_WEIGHT): each mention's top 20 by the index re-ordered by (1 − w) · the index's score + w · a rapidfuzz
similarity, and the top-1 accuracy of every (similarity, w), per encoder, on the design sets only:
- the generated GeoNames forms of benchmarks/verbs_scale.py at its design seed 0 (20,000 right rows, those
  with a match on the left);
- the first 25 AutoFJ datasets by name (the join's design half), macro-averaged.
The peers' test seed, the held-out 25 AutoFJ datasets and the alias set are never read.

    python benchmarks/link_string_evidence.py --models string,models/pearl \
        --markdown metrics/screens/link_string_evidence.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from pearl.bench.data import autofj_names, load_autofj
from pearl.index.encoder import load_encoder
from pearl.index.phrase_index import Index
from pearl.scores import with_string_evidence

WIDE = 20
SCORERS = ("ratio", "token_sort_ratio", "token_set_ratio")
WEIGHTS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0)
DESIGN_SEED, DESIGN_ROWS, DESIGN_AUTOFJ = 0, 20_000, 25


def top1(encoder, left: list[str], right: list[str], right_answer) -> dict[tuple[str, float], float]:
    """Top-1 accuracy per (similarity, weight); `right_answer(i, name)` says whether name is mention i's."""
    index = Index.build(left, encoder=encoder, dedupe=True)
    scores, rows = index.search(right, WIDE)
    accuracy = {}
    for scorer in SCORERS:
        string = with_string_evidence(np.zeros_like(scores), rows, right, index.names, 1.0, scorer)
        for weight in WEIGHTS:
            mixed = np.where(rows >= 0, (1 - weight) * scores + weight * string, -np.inf)
            best = rows[np.arange(len(right)), np.argmax(mixed, axis=1)]
            accuracy[scorer, weight] = float(np.mean([right_answer(i, index.names[b]) for i, b in enumerate(best)]))
    return accuracy


def screen(model: str) -> dict[str, dict]:
    from verbs_scale import Names, right_table

    encoder = load_encoder(model)
    names = Names()
    texts, _, cities = right_table(names, DESIGN_ROWS, DESIGN_SEED)
    kept = [i for i in range(len(texts)) if cities[i]]
    generated = top1(encoder, names.left, [texts[i] for i in kept],
                     lambda i, name: bool(cities[kept[i]] & names.cities_of[name]))
    per_set = []
    for name in autofj_names()[:DESIGN_AUTOFJ]:
        data = load_autofj(name)
        per_set.append(top1(encoder, data.left, data.right, lambda i, left, data=data: left == data.gold[i]))
    autofj = {key: float(np.mean([p[key] for p in per_set])) for key in per_set[0]}
    return {"generated (design seed)": generated, f"AutoFJ design {DESIGN_AUTOFJ}": autofj}


def markdown(results: dict[str, dict[str, dict]]) -> str:
    lines = [f"Top-1 of `pearl link` with each mention's top {WIDE} re-ordered by (1 − w) · score + w · similarity, "
             "on the design sets. `python benchmarks/link_string_evidence.py`.", "",
             "| encoder | similarity | set | " + " | ".join(f"w = {w}" for w in WEIGHTS) + " |",
             "|---|---|---|" + "---:|" * len(WEIGHTS)]
    for model, sets in results.items():
        for scorer in SCORERS:
            for set_name, accuracy in sets.items():
                lines.append(f"| {model} | {scorer} | {set_name} | "
                             + " | ".join(f"{accuracy[scorer, w]:.4f}" for w in WEIGHTS) + " |")
            mean = {w: np.mean([a[scorer, w] for a in sets.values()]) for w in WEIGHTS}
            lines.append(f"| {model} | {scorer} | mean | " + " | ".join(f"{mean[w]:.4f}" for w in WEIGHTS) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="string,models/pearl,models/pearl-static")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    results = {}
    for model in args.models.split(","):
        results[model] = screen(model)
        print(markdown({model: results[model]}), flush=True)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(results))


if __name__ == "__main__":
    main()
