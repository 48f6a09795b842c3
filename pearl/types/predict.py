"""The 95-way type head of a PEARL export applied to phrases (labels `<LEX>-<ENTITY>`, pearl.labels)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import torch

from pearl.embedder import PROGRESS_BAR_ABOVE
from pearl.errors import MissingModelError, PearlError
from pearl.model.export import TYPE_HEAD, is_pearl_export, load
from pearl.model import CONFIG

SCHEMA = {"text": pl.String, "lex_type": pl.String, "lex_prob": pl.Float64, "entity_type": pl.String,
          "entity_prob": pl.Float64, "label": pl.String, "label_prob": pl.Float64}


def predict_types(model_path: str | Path, texts: list[str], batch_size: int = 128) -> pl.DataFrame:
    """One row per text: text, lex_type, lex_prob, entity_type, entity_prob, label, label_prob.

    `label` is the argmax of the head's 95-way softmax and `label_prob` its probability.
    `lex_prob` and `entity_prob` are marginals of that softmax: a lexical type's probability is
    the sum over its 19 labels, an entity type's the sum over its 5; `lex_type` and
    `entity_type` are the argmaxes of those marginals, so they can differ from the two halves
    of `label`.
    """
    head = TypeHead(Path(model_path))
    if not texts:
        return pl.DataFrame(schema=SCHEMA)
    vectors = load(model_path).encode(texts, batch_size=batch_size, convert_to_tensor=True,
                                      show_progress_bar=len(texts) > PROGRESS_BAR_ABOVE)
    return head.predict(texts, vectors)


class TypeHead:
    """A PEARL export's type head, read once, applied to that export's vectors of phrases."""

    def __init__(self, model_path: Path):
        self.head, self.labels, self.scale = _type_head(model_path)

    @staticmethod
    def available(model_path: Path) -> bool:
        return is_pearl_export(model_path) and (model_path / TYPE_HEAD).is_file()

    def predict(self, texts: list[str], vectors) -> pl.DataFrame:
        """`predict_types`'s table for `texts` and their exported vectors (a tensor or an array)."""
        vectors = torch.as_tensor(vectors)
        with torch.no_grad():
            # the spelling block, if any, follows the vector the head was trained on
            trained = vectors.float().cpu()[:, : self.head.in_features]
            probs = torch.softmax(self.head(trained * self.scale), dim=-1).double()
        lex, entity = zip(*(label.split("-", 1) for label in self.labels))
        lex_names, lex_probs = _marginal(probs, lex)
        entity_names, entity_probs = _marginal(probs, entity)
        best = probs.max(dim=-1)
        return pl.DataFrame({
            "text": texts,
            "lex_type": lex_names, "lex_prob": lex_probs,
            "entity_type": entity_names, "entity_prob": entity_probs,
            "label": [self.labels[i] for i in best.indices.tolist()], "label_prob": best.values.tolist(),
        }, schema=SCHEMA)


def _type_head(path: Path) -> tuple[torch.nn.Linear, list[str], float]:
    """The head, its label names, and the factor turning an exported vector into the head's input.

    Training applies the head to combine()'s (u/|u|, w·v/|v|), whose norm is sqrt(1 + w²) with a
    character encoder and 1 without; the export normalises that vector, so scaling it back by
    the constant norm gives the training input. A spelling block (SpellingNgrams) scales that
    normalised vector by √(1 − spelling_weight) and appends its own; exports before it have none."""
    from safetensors.torch import load_file

    if not TypeHead.available(path):
        raise MissingModelError(f"{path}: no type head ({TYPE_HEAD}); phrase types need a PEARL export "
                         "written by `dvc repro average`")
    config = json.loads((path / CONFIG).read_text(encoding="utf-8"))
    weights = load_file(path / TYPE_HEAD)
    labels = config.get("type_labels") or []
    if len(labels) != len(weights["weight"]):
        raise PearlError(f"{path / CONFIG}: type_labels names {len(labels)} labels but the type head "
                         f"has {len(weights['weight'])}; re-export with `dvc repro average`")
    head = torch.nn.Linear(weights["weight"].shape[1], len(labels))
    head.load_state_dict(weights)
    scale = math.sqrt(1 + config["char_weight"] ** 2) if config["char_encoder"] else 1.0
    return head, labels, scale / math.sqrt(1 - config.get("spelling_weight", 0.0))


def _marginal(probs: torch.Tensor, groups: tuple[str, ...]) -> tuple[list[str], list[float]]:
    """Per row, the group with the most probability mass and that mass."""
    names = list(dict.fromkeys(groups))
    member = torch.tensor([[g == name for name in names] for g in groups], dtype=probs.dtype)
    mass = (probs @ member).max(dim=-1)
    return [names[i] for i in mass.indices.tolist()], mass.values.tolist()
