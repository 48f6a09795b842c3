"""The teacher's vectors, looked up by text: written once by the `teacher` stage, read by
`negatives` (hard-negative scoring) and `train` (view filter, distillation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from pearl.artifacts import TEACHER_VECTORS_SCHEMA, meta_path, read_artifact, write_artifact
from pearl.errors import PearlError

VECTORS = Path("data/teacher/vectors.parquet")


class TeacherVectors:
    """L2-normalised float32 rows, one per distinct text."""

    def __init__(self, model_id: str, texts: list[str], matrix: np.ndarray):
        self.model_id = model_id
        self.matrix = matrix
        self._row = {text: i for i, text in enumerate(texts)}

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, text: str) -> bool:
        return text in self._row

    def rows(self, texts: list[str]) -> np.ndarray:
        try:
            return np.fromiter((self._row[t] for t in texts), dtype=np.int64, count=len(texts))
        except KeyError as missing:
            raise PearlError(f"{VECTORS.name} has no teacher vector for {missing.args[0]!r}: "
                             f"run `dvc repro teacher`") from None

    def vectors(self, texts: list[str]) -> np.ndarray:
        return self.matrix[self.rows(texts)]

    def pair_cosine(self, left: list[str], right: list[str]) -> np.ndarray:
        return np.einsum("ij,ij->i", self.vectors(left), self.vectors(right))

    def save(self, path: Path, meta: dict, shard_rows: int | None = None) -> None:
        texts = sorted(self._row, key=self._row.get)
        dim = self.matrix.shape[1]
        table = pl.DataFrame({"text": texts, "vector": self.matrix},
                             schema={"text": pl.String, "vector": pl.Array(pl.Float32, dim)})
        write_artifact(table, path, {"teacher": self.model_id, "dimension": dim, "texts": len(texts), **meta},
                       shard_rows)

    @classmethod
    def load(cls, path: Path, expected_model: str) -> TeacherVectors:
        """The stage's vectors, or a one-line error if they are missing or from another teacher."""
        table = read_artifact(path, TEACHER_VECTORS_SCHEMA)
        try:
            made_by = json.loads(meta_path(path).read_text())["teacher"]
        except (OSError, ValueError, KeyError):
            raise PearlError(f"{meta_path(path)} is missing or unreadable: run `dvc repro teacher`") from None
        if made_by != expected_model:
            raise PearlError(f"{path} holds vectors of {made_by!r} but model.teacher is {expected_model!r}: "
                             f"run `dvc repro teacher`")
        matrix = table["vector"].to_numpy().astype(np.float32, copy=False)
        return cls(made_by, table["text"].to_list(), matrix.reshape(table.height, -1))
