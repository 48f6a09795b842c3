"""Artifact IO in one place: Parquet and JSON written atomically, with a meta record beside.

A write goes to a hidden temp file in the destination folder and is renamed over the final
name only once complete, so a crash never leaves a half-written artifact under its real name.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pearl.errors import PearlError


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; rename it to `path` if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_parquet(df: pl.DataFrame, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        df.write_parquet(tmp, compression="zstd", statistics=True)


class ParquetStreamWriter:
    """Append record batches to one Parquet file without holding it in memory; atomic."""

    def __init__(self, path: str | Path, schema: pa.Schema):
        self._path = path
        self._schema = schema
        self._context: contextlib.AbstractContextManager[Path] | None = None
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0

    def __enter__(self) -> "ParquetStreamWriter":
        self._context = atomic_path(self._path)
        tmp = self._context.__enter__()
        self._writer = pq.ParquetWriter(tmp, self._schema, compression="zstd")
        return self

    def write(self, columns: dict[str, list]) -> None:
        table = pa.table(columns, schema=self._schema)
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._writer.close()
        return bool(self._context.__exit__(exc_type, exc, tb))


def read_parquet(path: str | Path, columns: list[str], producer: str) -> pl.DataFrame:
    """Read an upstream artifact, or fail in one line naming the stage that makes it."""
    path = Path(path)
    if not path.is_file():
        raise PearlError(f"{path} is missing: run `dvc repro {producer}` first")
    try:
        df = pl.read_parquet(path)
    except Exception as error:  # polars raises several types for corrupt files
        raise PearlError(
            f"{path} is not a readable Parquet file ({type(error).__name__}): "
            f"delete it and run `dvc repro {producer}`"
        ) from None
    absent = [c for c in columns if c not in df.columns]
    if absent:
        raise PearlError(
            f"{path} lacks column(s) {', '.join(absent)}: re-run `dvc repro {producer}`"
        )
    return df


def write_json(obj: Any, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def meta_path(artifact: str | Path) -> Path:
    artifact = Path(artifact)
    return artifact.with_name(artifact.name.split(".")[0] + ".meta.json")


def write_meta(artifact: str | Path, meta: dict[str, Any]) -> None:
    """Record what produced an artifact. Kept free of timings so reruns are byte-identical."""
    write_json(meta, meta_path(artifact))
