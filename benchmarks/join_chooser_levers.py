"""The join chooser's levers, side by side on the first AutoFJ datasets by name (the design half).

`pearl join` chooses a union of configurations (a join function and its cut) by AutoFJ's label-free
precision estimate (pearl.joining.select). Three levers, every combination, each encoder's vectors
computed once per dataset:
- candidates: 10 left names per name (pearl's default), or AutoFJ's √(left names), 10 to 50;
- join functions: the first five signals (cosine, char3, tokens, token_set, ratio) and mixes, or
  all of them (Jaro-Winkler and AutoFJ's set similarities as well);
- union: the search pearl used first, which adds the configuration with the most estimated true
  positives while the union holds the target, or AutoFJ's greedy search (`select._greedy_union`).
Macro precision, recall and F1 against gt.csv; the join never reads the labels.

    python benchmarks/join_chooser_levers.py --markdown metrics/screens/join_chooser_levers.md
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from join_autofj import prf, truth  # noqa: E402

from pearl.bench import data  # noqa: E402
from pearl.index.encoder import STRING, load_encoder  # noqa: E402
from pearl.joining import select  # noqa: E402

FIRST_FIVE = ("cosine", "char3", "tokens", "token_set", "ratio")
TARGET = 0.9


class EncodeOnce:
    """An encoder that encodes each list of names once: every lever combination reads the same vectors."""

    def __init__(self, encoder):
        self.encoder, self.last = encoder, (None, None)

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.last[0] != texts:
            self.last = (list(texts), self.encoder.encode(texts))
        return self.last[1]


def autofj_candidates(n_left: int) -> int:
    return max(10, min(int(n_left ** 0.5), 50))


def most_true_positives_at_target(configurations: select._Configurations, target: float) -> np.ndarray:
    """The union pearl chose first: each step, the configuration whose right names not yet joined add the most
    estimated true positives while the union's estimated precision stays at the target."""
    precision, left_rows, function = configurations.precision, configurations.left_row, configurations.function
    left_row, joined, true_positives = np.full(precision.shape[1], -1), np.zeros(precision.shape[1], dtype=bool), 0.0
    while True:
        new = (precision > 0) & ~joined
        gain = np.where(new, precision, 0).sum(axis=1, dtype=np.float64)
        fits = (gain > 0) & (true_positives + gain >= target * (joined.sum() + new.sum(axis=1)))
        if not fits.any():
            return left_row
        c = int(np.argmax(np.where(fits, gain, -1.0)))
        left_row[new[c]] = left_rows[function[c], new[c]]
        joined |= new[c]
        true_positives += gain[c]


UNIONS = {"most true positives at P": most_true_positives_at_target,
          "AutoFJ's greedy": lambda configurations, target: select._greedy_union(configurations, target).left_row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="string,sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--datasets", type=int, default=25, help="the first N datasets by name")
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()
    from autofj.datasets import load_data

    names = data.autofj_names()[: args.datasets]
    rows: dict[tuple, list[tuple[float, float, float]]] = {}
    for model in args.models.split(","):
        loaded = load_encoder(model)
        encoder = None if loaded.kind == STRING else EncodeOnce(loaded)
        every = select.join_functions(encoder is not None)
        spaces = {"first five": {f: w for f, w in every.items() if set(w) <= set(FIRST_FIVE)}, "all": every}
        for name in names:
            left, right, gt = load_data(name)
            left_names, right_names = [str(t) for t in left["title"]], [str(t) for t in right["title"]]
            gold, right_ids, left_ids = truth(gt), right["id"].to_numpy(), left["id"].to_numpy()
            for k, space in itertools.product(("10", "AutoFJ's"), spaces):
                candidates = 10 if k == "10" else autofj_candidates(len(left_names))
                configurations, _, _ = select._configurations(left_names, right_names, encoder, candidates,
                                                              spaces[space])
                for union, search in UNIONS.items():
                    left_row = search(configurations, TARGET)
                    predicted = np.where(left_row >= 0, left_ids[np.maximum(left_row, 0)], -1)
                    rows.setdefault((model, k, space, union), []).append(
                        prf(predicted, right_ids, gold, left_row >= 0))
            print(f"{model} {name}", flush=True)
    lines = [f"First {len(names)} AutoFJ datasets by name, precision target {TARGET}, macro means "
             "(benchmarks/join_chooser_levers.py)", "",
             "| encoder | candidates | join functions | union | P | R | F1 |", "|---|---|---|---|---|---|---|"]
    for (model, k, space, union), scores in rows.items():
        p, r, f = np.mean(scores, axis=0)
        lines.append(f"| {model} | {k} | {space} | {union} | {p:.3f} | {r:.3f} | {f:.3f} |")
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
