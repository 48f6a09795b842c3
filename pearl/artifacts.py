"""Artifact IO in one place: Parquet and JSON written atomically, with a meta record beside, and
every Parquet artifact checked against its schema when a stage reads it.

A write goes to a hidden temp file in the destination folder and is renamed over the final
name only once complete, so a crash never leaves a half-written artifact under its real name.

A Parquet artifact is one file, or (what `engine: ray` writes for large outputs) a folder of the
same name holding Parquet shards and a manifest of their names, row counts and hashes. Readers
take either.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pearl.errors import PearlError
from pearl.labels import LABELS, LEX_TYPES


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; rename it to `path` if the block succeeds."""
    path = Path(path)
    tmp_path = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):  # left by a run killed with -9
            stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        yield tmp_path
        if path.is_dir() and (path / SHARD_MANIFEST).is_file():  # the sharded form of the same artifact
            shutil.rmtree(path)
        os.replace(tmp_path, path)
    except (OSError, pl.exceptions.PolarsError) as error:  # disk full, file-size limit, read-only folder
        raise _unwritable(path, error) from None
    finally:
        if tmp_path is not None:
            tmp_path.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_dir(path: str | Path, replaces: Callable[[Path], bool] = lambda old: True) -> Iterator[Path]:
    """Yield an empty staging folder beside `path`; swap it in for `path` if the block succeeds.

    Two renames (old aside, new in): no reader ever sees half a folder. `replaces(old)` guards an
    existing `path` that is not ours to replace."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(f".{glob_escape(path.name)}.*.staging"):  # left by a run killed with -9
            shutil.rmtree(stale, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.", suffix=".staging") as scratch:
            staged = Path(scratch) / path.name
            staged.mkdir()
            yield staged
            if path.exists():
                if not replaces(path):
                    raise PearlError(f"{path} exists and was not written by pearl: choose another output")
                path.rename(Path(scratch) / "replaced")
            staged.rename(path)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise _unwritable(path, error) from None


def _unwritable(path: Path, error: OSError | pl.exceptions.PolarsError) -> Exception:
    """A failed write as a one-line error; polars reports one as "... (os error N)", its other errors stay."""
    if not isinstance(error, OSError):
        found = re.search(r"\(os error (\d+)\)", str(error))
        if found is None:
            return error
        error = OSError(int(found[1]), os.strerror(int(found[1])))
    return PearlError(f"{path} could not be written ({error.strerror or error}); free space or make {path.parent} "
                      "writable, then run again")


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def write_parquet(df: pl.DataFrame, path: str | Path, shard_rows: int | None = None) -> None:
    """One file, or with `shard_rows` a folder of shards and a manifest (see ShardedParquetWriter)."""
    if shard_rows is None:
        with atomic_path(path) as tmp:
            df.write_parquet(tmp, compression="zstd", statistics=True)
        return
    table = df.to_arrow()
    with ShardedParquetWriter(path, table.schema, shard_rows) as writer:
        writer.write_table(table)


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
        self.write_table(pa.table(columns, schema=self._schema))

    def write_table(self, table: pa.Table) -> None:
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._writer.close()
        return bool(self._context.__exit__(exc_type, exc, tb))


SHARD_MANIFEST = "manifest.json"
SHARD_FORMAT = "pearl.parquet-shards/1"


class ShardedParquetWriter:
    """ParquetStreamWriter's interface, writing a folder of shards of `shard_rows` rows and a manifest;
    atomic as a whole. Rows keep their order across shards."""

    def __init__(self, path: str | Path, schema: pa.Schema, shard_rows: int):
        self._path = Path(path)
        self._schema = schema
        self._shard_rows = shard_rows
        self._context: contextlib.AbstractContextManager[Path] | None = None
        self._folder: Path | None = None
        self._writer: pq.ParquetWriter | None = None
        self._shards: list[dict] = []
        self.rows = 0

    def __enter__(self) -> "ShardedParquetWriter":
        self._context = atomic_dir(self._path, replaces=lambda old: old.is_file() or (old / SHARD_MANIFEST).is_file())
        self._folder = self._context.__enter__()
        return self

    def write(self, columns: dict[str, list]) -> None:
        self.write_table(pa.table(columns, schema=self._schema))

    def write_table(self, table: pa.Table) -> None:
        while table.num_rows:
            if self._writer is None:
                name = f"part-{len(self._shards):05d}.parquet"
                self._writer = pq.ParquetWriter(self._folder / name, self._schema, compression="zstd")
                self._shards.append({"file": name, "rows": 0})
            room = self._shard_rows - self._shards[-1]["rows"]
            self._writer.write_table(table.slice(0, room))
            written = min(room, table.num_rows)
            self._shards[-1]["rows"] += written
            self.rows += written
            table = table.slice(written)
            if self._shards[-1]["rows"] == self._shard_rows:
                self._close_shard()

    def _close_shard(self) -> None:
        self._writer.close()
        self._writer = None
        self._shards[-1]["sha256"] = _sha256(self._folder / self._shards[-1]["file"])

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and not self._shards:  # no rows: one empty shard keeps the schema
            self._writer = pq.ParquetWriter(self._folder / "part-00000.parquet", self._schema, compression="zstd")
            self._shards.append({"file": "part-00000.parquet", "rows": 0})
        if self._writer is not None:
            self._close_shard()
        if exc_type is None:
            manifest = {"format": SHARD_FORMAT, "rows": self.rows, "schema": self._schema.to_string(), "shards": self._shards}
            (self._folder / SHARD_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        return bool(self._context.__exit__(exc_type, exc, tb))


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def shard_files(path: Path, redo: str) -> list[Path]:
    """The shards of a sharded artifact in order, checked against its manifest, or a one-line error."""
    try:
        manifest = json.loads((path / SHARD_MANIFEST).read_text())
        listed = {shard["file"]: shard["sha256"] for shard in manifest["shards"]} if manifest["format"] == SHARD_FORMAT else None
    except FileNotFoundError:
        raise PearlError(f"{path} is a folder without {SHARD_MANIFEST}: neither a Parquet file nor pearl's sharded "
                         f"layout (a run stopped while moving it, or files copied in by hand); delete it and {redo}") from None
    except (ValueError, KeyError, TypeError):
        listed = None
    if listed is None:
        raise PearlError(f"{path / SHARD_MANIFEST} is not a manifest of {SHARD_FORMAT}: delete {path} and {redo}")
    present = {p.name for p in path.iterdir() if not p.name.startswith(".")} - {SHARD_MANIFEST}
    named = set(listed)
    if present != named:
        extra, missing = sorted(present - named), sorted(named - present)
        raise PearlError(f"{path} mixes layouts: " + "; ".join(
            ([f"{', '.join(extra[:3])} not in its manifest"] if extra else [])
            + ([f"{', '.join(missing[:3])} listed but missing"] if missing else [])) + f": delete {path} and {redo}")
    for name, sha256 in listed.items():
        if _sha256(path / name) != sha256:
            raise PearlError(f"{path / name} does not match the hash in {SHARD_MANIFEST} (changed after it was "
                             f"written): delete {path} and {redo}")
    return [path / name for name in listed]


@dataclass(frozen=True)
class Column:
    kind: str  # text | int | float | vector
    nullable: bool = False
    values: tuple[str, ...] | None = None  # the allowed values of a text column
    bounds: tuple[float, float] | None = None  # inclusive range of a number column


@dataclass(frozen=True)
class ArtifactSchema:
    """What a stage may rely on in an upstream Parquet file: types, nulls and a unique key."""

    producer: str  # the DVC stage that writes it
    columns: dict[str, Column]
    key: tuple[str, ...] = ()  # no two rows share these columns' values
    min_rows: int = 0
    extra: dict[str, Column] = field(default_factory=dict)  # checked only when present


SENTENCES_SCHEMA = ArtifactSchema(
    "corpus", {"doc_id": Column("text"), "sent_id": Column("int", bounds=(0, 2**31 - 1)), "text": Column("text")},
    key=("doc_id", "sent_id"))
PHRASES_SCHEMA = ArtifactSchema(
    "parse", {"phrase": Column("text"), "lex_type": Column("text", values=LEX_TYPES),
              "freq": Column("int", bounds=(1, float("inf")))},
    key=("phrase",), min_rows=1)
TYPED_PHRASES_SCHEMA = ArtifactSchema(
    "typing", {"phrase": Column("text"), "label_id": Column("int", bounds=(0, len(LABELS) - 1))},
    key=("phrase",), min_rows=1,
    extra={"lex_type": Column("text", values=LEX_TYPES), "label": Column("text", values=LABELS)})
# every text a test or tune task scores, folded (pearl.bench.texts): what no training text may be
EVALUATION_TEXTS_SCHEMA = ArtifactSchema("typing", {"text": Column("text")}, key=("text",))
# two methods may make the same variant of a phrase (a WordNet and an embedding synonym): one row each
VARIANTS_SCHEMA = ArtifactSchema(
    "augment", {"phrase": Column("text"), "level": Column("text", values=("char", "token", "phrase", "alias")),
                "method": Column("text"), "variant": Column("text")},
    key=("phrase", "level", "method", "variant"))
CANDIDATES_SCHEMA = ArtifactSchema(
    "candidates", {"phrase": Column("text"), "candidate": Column("text"), "edit_sim": Column("float", bounds=(0, 1))},
    key=("phrase", "candidate"))
TEACHER_VECTORS_SCHEMA = ArtifactSchema("teacher", {"text": Column("text"), "vector": Column("vector")}, key=("text",))
# a phrase without any hard negative has one row with a null negative
HARD_NEGATIVES_SCHEMA = ArtifactSchema(
    "negatives", {"phrase": Column("text"), "negative": Column("text", nullable=True)}, key=("phrase", "negative"))

_KINDS = {
    "text": lambda t: t == pl.String,
    "int": lambda t: t.is_integer(),
    "float": lambda t: t.is_float(),
    "vector": lambda t: isinstance(t, (pl.Array, pl.List)) and t.inner.is_float(),
}


def read_artifact(path: str | Path, schema: ArtifactSchema) -> pl.DataFrame:
    """Read an upstream artifact and check it, or fail in one line naming the file, column or row."""
    path, redo, files = _located(path, schema)
    frames = []
    for file in files:
        try:
            frames.append(pl.read_parquet(file))
        except Exception as error:  # polars raises several types for corrupt files
            raise _unreadable(file, path, redo, error) from None
    df = pl.concat(frames)
    _check_present(path, df.columns, schema, redo)
    _check_rows(df.height, path, schema, redo)
    checked = {**schema.columns, **{c: k for c, k in schema.extra.items() if c in df.columns}}
    for name, column in checked.items():
        _check_column(path, df[name], column, redo)
    if schema.key:
        keys = df.select(schema.key)
        repeated = ~keys.select(pl.struct(schema.key).is_first_distinct()).to_series()
        if repeated.any():
            row = int(repeated.arg_max())
            first = keys.rows().index(keys.row(row))
            values = ", ".join(repr(v) for v in keys.row(row))
            raise PearlError(f"{path}: row {row} repeats the key ({', '.join(schema.key)}) = ({values}) of "
                             f"row {first}; each must be unique: {redo}")
    return df


def artifact_files(path: str | Path, schema: ArtifactSchema) -> tuple[list[Path], int]:
    """The Parquet files of an artifact and its row count, for readers that take the files themselves
    (Ray's nodes): the manifest, each file's footer and its columns' types are checked, not its rows."""
    path, redo, files = _located(path, schema)
    rows = 0
    for file in files:
        try:
            rows += pq.ParquetFile(file).metadata.num_rows
            types = pl.read_parquet_schema(file)
        except Exception as error:
            raise _unreadable(file, path, redo, error) from None
        _check_present(file, types, schema, redo)
        for name, column in schema.columns.items():
            if not _KINDS[column.kind](types[name]):
                raise PearlError(f"{file}: column {name} has type {types[name]}, expected {column.kind}: {redo}")
    _check_rows(rows, path, schema, redo)
    return files, rows


def _located(path: str | Path, schema: ArtifactSchema) -> tuple[Path, str, list[Path]]:
    """(path, what to run to redo it, its Parquet files), or a one-line error if it is missing."""
    path = Path(path)
    redo = f"run `dvc repro {schema.producer}`"
    if not path.exists():
        raise PearlError(f"{path} is missing: {redo} first")
    return path, redo, shard_files(path, redo) if path.is_dir() else [path]


def _unreadable(file: Path, path: Path, redo: str, error: Exception) -> PearlError:
    return PearlError(f"{file} is not a readable Parquet file ({_unreadable_part(file, error)}): "
                      f"delete {path} and {redo}")


def _check_present(where: Path, columns: Collection[str], schema: ArtifactSchema, redo: str) -> None:
    absent = [c for c in schema.columns if c not in columns]
    if absent:
        raise PearlError(f"{where} lacks column(s) {', '.join(absent)}: {redo}")


def _check_rows(rows: int, path: Path, schema: ArtifactSchema, redo: str) -> None:
    if rows < schema.min_rows:
        raise PearlError(f"{path} has no rows: nothing upstream survived; check the `{schema.producer}` "
                         f"stage's params and inputs, then {redo}")


def _check_column(path: Path, values: pl.Series, column: Column, redo: str) -> None:
    name = values.name
    if not _KINDS[column.kind](values.dtype):
        raise PearlError(f"{path}: column {name} has type {values.dtype}, expected {column.kind}: {redo}")
    if not column.nullable and values.null_count():
        raise PearlError(f"{path}: row {int(values.is_null().arg_max())} has a null {name}: {redo}")
    if column.kind == "text":
        blank = values.str.strip_chars().str.len_chars() == 0
        if blank.any():
            raise PearlError(f"{path}: row {int(blank.arg_max())} has a blank {name}: {redo}")
        if column.values is not None:
            unknown = ~values.is_in(list(column.values)) & values.is_not_null()
            if unknown.any():
                row = int(unknown.arg_max())
                raise PearlError(f"{path}: row {row} has {name}={values[row]!r}, not one of "
                                 f"{', '.join(column.values[:8])}{', …' if len(column.values) > 8 else ''}: {redo}")
    if column.bounds is not None:
        low, high = column.bounds
        outside = ~values.is_between(low, high) & values.is_not_null()
        if outside.any():
            row = int(outside.arg_max())
            raise PearlError(f"{path}: row {row} has {name}={values[row]}, outside {low:g}..{high:g}: {redo}")
    if isinstance(values.dtype, pl.List) and values.drop_nulls().list.len().n_unique() > 1:
        raise PearlError(f"{path}: column {name} holds vectors of different lengths: {redo}")


def _unreadable_part(path: Path, error: Exception) -> str:
    """Name the first row group that fails, where the footer is intact enough to list them."""
    try:
        parquet = pq.ParquetFile(path)
    except Exception:
        return f"{type(error).__name__}; the footer is unreadable"
    for group in range(parquet.num_row_groups):
        try:
            parquet.read_row_group(group)
        except Exception:
            return f"row group {group} of {parquet.num_row_groups} is corrupt"
    return type(error).__name__


def write_json(obj: Any, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(_json_text(obj))


def _json_text(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def meta_path(artifact: str | Path) -> Path:
    artifact = Path(artifact)
    return artifact.with_name(artifact.name.split(".")[0] + ".meta.json")


def write_meta(artifact: str | Path, meta: dict[str, Any]) -> None:
    """Record what produced an artifact (written after it: the corpus streams its data). Kept free of timings so
    reruns are byte-identical."""
    write_json(meta, meta_path(artifact))


def write_artifact(df: pl.DataFrame, path: str | Path, meta: dict[str, Any], shard_rows: int | None = None) -> None:
    """A Parquet artifact (write_parquet) and its meta record (write_meta) as one unit: the record is staged first
    and renamed in only after the data, so a failed write leaves both as they were and a record never describes
    data that is not there. Only a kill between the two renames leaves the new data beside the old record."""
    with atomic_path(meta_path(path)) as record:
        record.write_text(_json_text(meta))
        write_parquet(df, path, shard_rows)
