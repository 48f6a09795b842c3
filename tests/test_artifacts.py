import polars as pl
import pyarrow as pa
import pytest

from pearl.artifacts import (
    ParquetStreamWriter, atomic_path, meta_path, read_parquet, write_json, write_parquet,
)
from pearl.errors import PearlError


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir())


def test_atomic_path_renames_on_success(tmp_path):
    target = tmp_path / "sub" / "a.txt"
    with atomic_path(target) as tmp:
        tmp.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"
    assert _leftovers(target.parent) == ["a.txt"]


def test_failure_leaves_neither_artifact_nor_temp_file(tmp_path):
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert _leftovers(tmp_path) == []


def test_failure_keeps_the_previous_artifact_intact(tmp_path):
    target = tmp_path / "out.parquet"
    write_parquet(pl.DataFrame({"a": [1]}), target)
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError
    assert pl.read_parquet(target)["a"].to_list() == [1]


def test_stream_writer_writes_all_batches_or_nothing(tmp_path):
    schema = pa.schema([("x", pa.int32())])
    target = tmp_path / "s.parquet"
    with ParquetStreamWriter(target, schema) as writer:
        writer.write({"x": [1, 2]})
        writer.write({"x": []})
        writer.write({"x": [3]})
    assert pl.read_parquet(target)["x"].to_list() == [1, 2, 3]
    broken = tmp_path / "broken.parquet"
    with pytest.raises(ValueError):
        with ParquetStreamWriter(broken, schema) as writer:
            writer.write({"x": [1]})
            raise ValueError
    assert not broken.exists() and _leftovers(tmp_path) == ["s.parquet"]


def test_read_parquet_errors_name_the_file_and_the_stage(tmp_path):
    with pytest.raises(PearlError, match=r"missing\.parquet is missing: run `dvc repro corpus`"):
        read_parquet(tmp_path / "missing.parquet", ["text"], producer="corpus")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(PearlError, match="not a readable Parquet file"):
        read_parquet(corrupt, ["text"], producer="corpus")
    good = tmp_path / "good.parquet"
    write_parquet(pl.DataFrame({"other": ["x"]}), good)
    with pytest.raises(PearlError, match="lacks column"):
        read_parquet(good, ["text"], producer="corpus")


def test_json_and_meta_paths(tmp_path):
    write_json({"b": 1, "a": "é"}, tmp_path / "m.json")
    assert (tmp_path / "m.json").read_text() == '{\n  "a": "é",\n  "b": 1\n}\n'
    assert meta_path(tmp_path / "phrases.parquet").name == "phrases.meta.json"
