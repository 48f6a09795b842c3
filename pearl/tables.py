"""Users' tables in and out of the product verbs (index, link, join, cluster, types).

Inputs: CSV, TSV, Parquet, or plain text with one name per line (its column is `text`), or a
polars / pandas DataFrame through the Python API. Outputs: Parquet or CSV, written atomically
into a folder that must already exist.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pearl.errors import PearlError

READ_FORMATS = (".csv", ".tsv", ".parquet", ".txt")
WRITE_FORMATS = (".csv", ".parquet")
TEXT_COLUMN = "text"  # the one column of a .txt input


def read_table(path: str | Path) -> pl.DataFrame:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in READ_FORMATS:
        raise PearlError(f"{path}: unknown table format {suffix or '(none)'}; use {', '.join(READ_FORMATS)}")
    if not path.is_file():
        raise PearlError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise PearlError(f"{path} is empty: give a table with a header row and at least one row")
    if suffix == ".parquet":
        try:
            return pl.read_parquet(path)
        except Exception as error:  # polars raises several types for corrupt files
            raise PearlError(f"{path} is not a readable Parquet file ({type(error).__name__}): re-export it") from None
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise PearlError(f"{path}: line {line} is not UTF-8 (byte {error.start} of the file); "
                         "re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8`") from None
    if suffix == ".txt":
        return pl.DataFrame({TEXT_COLUMN: text.splitlines()}, schema={TEXT_COLUMN: pl.String})
    try:
        # every column as text: ids such as "007" keep their zeros, names are never parsed as numbers
        return pl.read_csv(raw, separator="\t" if suffix == ".tsv" else ",", infer_schema=False,
                           quote_char=None if suffix == ".tsv" else '"')
    except pl.exceptions.PolarsError as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise PearlError(f"{path} is not a readable {suffix[1:].upper()} table ({first})") from None


def as_polars(table) -> pl.DataFrame:
    """A polars DataFrame from a polars or pandas one (the Python API takes both)."""
    if isinstance(table, pl.DataFrame):
        return table
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None and isinstance(table, pd.DataFrame):
        return pl.from_pandas(table)
    raise PearlError(f"expected a polars or pandas DataFrame, got {type(table).__name__}")


def like_input(result: pl.DataFrame, original) -> object:
    """Give the result back in the caller's DataFrame library."""
    return result if isinstance(original, pl.DataFrame) else result.to_pandas()


def require_column(df: pl.DataFrame, column: str, where: str) -> None:
    if column not in df.columns:
        raise PearlError(f"{where} has no column {column!r}; its columns are: {', '.join(df.columns) or '(none)'}")


@dataclass(frozen=True)
class TextColumn:
    """A column's cells as strings; null and blank cells are left out and counted."""

    texts: list[str]
    rows: list[int]  # the row of each text in the table
    blank: int  # null, empty or whitespace-only cells


def text_column(df: pl.DataFrame, column: str, where: str, numbers: bool = False,
                require_names: bool = False) -> TextColumn:
    """The column's names. Unless `numbers`, a column that holds only numbers is refused: it is the wrong column
    (ids, quantities), and its digits would embed and match as if they were names. With `require_names`, so is
    one without a single name (the wrong file or column)."""
    require_column(df, column, where)
    values = df.get_column(column).cast(pl.String, strict=False).to_list()
    texts, rows = [], []
    for row, value in enumerate(values):
        if value is not None and value.strip():
            texts.append(value)
            rows.append(row)
    if require_names and not texts:
        raise PearlError(f"{where}'s column {column!r} has no names: every cell is null or blank")
    if texts and not numbers and pl.Series(texts).str.strip_chars().cast(pl.Float64, strict=False).null_count() == 0:
        raise PearlError(f"{where}'s column {column!r} holds only numbers ({texts[0].strip()!r}, …), not names: "
                         "give the column of names")
    return TextColumn(texts, rows, len(values) - len(texts))


def check_output_folder(path: str | Path) -> Path:
    """Fail before any work when `path`'s folder is missing or read-only."""
    path = Path(path)
    if not path.parent.is_dir():
        raise PearlError(f"--out {path}: folder {path.parent} does not exist; create it first")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise PearlError(f"--out {path}: folder {path.parent} is read-only; choose a writable folder")
    return path


def check_output(path: str | Path) -> Path:
    """Fail before any work when the output cannot be written."""
    path = Path(path)
    if path.suffix.lower() not in WRITE_FORMATS:
        raise PearlError(f"--out {path}: write .parquet or .csv")
    return check_output_folder(path)


def write_table(df: pl.DataFrame, path: str | Path) -> None:
    from pearl.artifacts import atomic_path

    path = check_output(path)
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".parquet":
            df.write_parquet(tmp, compression="zstd")
        else:
            df.write_csv(tmp)


def write_table_chunks(chunks: Iterable[pl.DataFrame], path: str | Path) -> int:
    """Write `write_table`'s file from tables of one schema as they come, holding one at a time; the rows written.
    Nothing is left at `path` if a chunk fails."""
    from pearl.artifacts import ParquetStreamWriter, atomic_path

    path = check_output(path)
    chunks = iter(chunks)
    first = next(chunks)
    if path.suffix.lower() == ".parquet":
        with ParquetStreamWriter(path, first.to_arrow().schema) as writer:
            for df in itertools.chain([first], chunks):
                writer.write_table(df.to_arrow())
        return writer.rows
    rows = 0
    with atomic_path(path) as tmp, open(tmp, "wb") as file:
        for df in itertools.chain([first], chunks):
            df.write_csv(file, include_header=rows == 0)
            rows += df.height
    return rows
