import polars as pl
import pyarrow as pa
import pytest

from pearl.artifacts import (
    HARD_NEGATIVES_SCHEMA, PHRASES_SCHEMA, SENTENCES_SCHEMA, TEACHER_VECTORS_SCHEMA, VARIANTS_SCHEMA,
    ParquetStreamWriter, ShardedParquetWriter, artifact_files, atomic_path, meta_path, read_artifact, write_json, write_parquet,
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


SENTENCE_TYPES = pa.schema([("doc_id", pa.string()), ("sent_id", pa.int32()), ("text", pa.string())])
SENTENCE_ROWS = {"doc_id": ["a"] * 7, "sent_id": list(range(7)), "text": [f"Sentence {i}." for i in range(7)]}


def _write_shards(target, shard_rows=3):
    with ShardedParquetWriter(target, SENTENCE_TYPES, shard_rows) as writer:
        writer.write({k: v[:5] for k, v in SENTENCE_ROWS.items()})
        writer.write({k: v[5:] for k, v in SENTENCE_ROWS.items()})


def test_the_sharded_layout_reads_as_the_single_file_and_replaces_it_both_ways(tmp_path):
    target = tmp_path / "sentences.parquet"
    with ParquetStreamWriter(target, SENTENCE_TYPES) as writer:
        writer.write(SENTENCE_ROWS)
    single = read_artifact(target, SENTENCES_SCHEMA)
    _write_shards(target)  # the folder takes the file's place, and back
    assert sorted(p.name for p in target.iterdir()) == ["manifest.json", "part-00000.parquet", "part-00001.parquet",
                                                       "part-00002.parquet"]
    assert read_artifact(target, SENTENCES_SCHEMA).equals(single)
    with ParquetStreamWriter(target, SENTENCE_TYPES) as writer:
        writer.write(SENTENCE_ROWS)
    assert target.is_file() and read_artifact(target, SENTENCES_SCHEMA).equals(single)
    with pytest.raises(ValueError):
        with ShardedParquetWriter(target, SENTENCE_TYPES, 3) as writer:
            writer.write(SENTENCE_ROWS)
            raise ValueError("crash mid-write")
    assert target.is_file() and _leftovers(tmp_path) == ["sentences.parquet"]
    empty = tmp_path / "empty.parquet"
    with ShardedParquetWriter(empty, SENTENCE_TYPES, 3):
        pass  # no rows: one empty shard keeps the columns
    assert read_artifact(empty, SENTENCES_SCHEMA).columns == ["doc_id", "sent_id", "text"]


def test_a_mixed_or_tampered_shard_folder_is_named_in_one_line(tmp_path):
    target = tmp_path / "sentences.parquet"
    _write_shards(target)
    write_parquet(pl.DataFrame(SENTENCE_ROWS), target / "part-00003.parquet")  # a shard of another run
    with pytest.raises(PearlError, match=r"sentences\.parquet mixes layouts: part-00003\.parquet not in its manifest"):
        read_artifact(target, SENTENCES_SCHEMA)
    (target / "part-00003.parquet").unlink()
    (target / "part-00001.parquet").unlink()
    with pytest.raises(PearlError, match=r"part-00001\.parquet listed but missing: delete .* and run `dvc repro corpus`"):
        read_artifact(target, SENTENCES_SCHEMA)
    write_parquet(pl.DataFrame(SENTENCE_ROWS), target / "part-00001.parquet")
    with pytest.raises(PearlError, match=r"part-00001\.parquet does not match the hash in manifest\.json"):
        read_artifact(target, SENTENCES_SCHEMA)
    (target / "manifest.json").unlink()
    with pytest.raises(PearlError, match=r"is a folder without manifest\.json") as error:
        read_artifact(target, SENTENCES_SCHEMA)
    assert "\n" not in str(error.value)


def test_artifact_files_lists_and_counts_without_reading_rows_and_names_a_bad_file(tmp_path):
    target = tmp_path / "sentences.parquet"
    _write_shards(target)
    assert artifact_files(target, SENTENCES_SCHEMA) == ([target / f"part-0000{i}.parquet" for i in range(3)], 7)
    single = tmp_path / "single.parquet"
    write_parquet(pl.DataFrame(SENTENCE_ROWS).with_columns(text=pl.col("sent_id")), single)
    with pytest.raises(PearlError, match=r"single\.parquet: column text has type Int\d+, expected text: run `dvc repro corpus`"):
        artifact_files(single, SENTENCES_SCHEMA)
    single.write_bytes(b"not parquet")
    with pytest.raises(PearlError, match=r"single\.parquet is not a readable Parquet file"):
        artifact_files(single, SENTENCES_SCHEMA)
    with pytest.raises(PearlError, match=r"missing\.parquet is missing: run `dvc repro corpus` first"):
        artifact_files(tmp_path / "missing.parquet", SENTENCES_SCHEMA)


def test_read_artifact_errors_name_the_file_and_the_stage(tmp_path):
    with pytest.raises(PearlError, match=r"missing\.parquet is missing: run `dvc repro corpus`"):
        read_artifact(tmp_path / "missing.parquet", SENTENCES_SCHEMA)
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(PearlError, match="not a readable Parquet file .*footer"):
        read_artifact(corrupt, SENTENCES_SCHEMA)
    good = tmp_path / "good.parquet"
    write_parquet(pl.DataFrame({"other": ["x"]}), good)
    with pytest.raises(PearlError, match="lacks column"):
        read_artifact(good, SENTENCES_SCHEMA)


PHRASE_ROWS = {"phrase": ["the cat", "a dog"], "lex_type": ["NP", "NP"], "freq": [2, 3]}


@pytest.mark.parametrize(("change", "message"), [
    ({"freq": ["2", "3"]}, "column freq has type String, expected int"),
    ({"phrase": ["the cat", None]}, "row 1 has a null phrase"),
    ({"phrase": ["the cat", "the cat"]}, r"row 1 repeats the key \(phrase\) = \('the cat'\)"),
    ({"phrase": ["the cat", " "]}, "row 1 has a blank phrase"),
    ({"lex_type": ["NP", "XP"]}, "row 1 has lex_type='XP', not one of NP, VP"),
    ({"freq": [2, 0]}, "row 1 has freq=0, outside 1..inf"),
    ({"phrase": [], "lex_type": [], "freq": []}, "has no rows"),
])
def test_read_artifact_checks_types_nulls_values_and_keys(tmp_path, change, message):
    path = tmp_path / "phrases.parquet"
    write_parquet(pl.DataFrame({**PHRASE_ROWS, **change}, schema_overrides={"freq": pl.Int64} if change.get("freq") == [] else None), path)
    with pytest.raises(PearlError, match=f"phrases.parquet: {message}|phrases.parquet {message}") as error:
        read_artifact(path, PHRASES_SCHEMA)
    assert "run `dvc repro parse`" in str(error.value)
    write_parquet(pl.DataFrame(PHRASE_ROWS), path)
    assert read_artifact(path, PHRASES_SCHEMA).height == 2


def test_read_artifact_allows_declared_nulls_and_checks_vectors(tmp_path):
    negatives = tmp_path / "hard_negatives.parquet"
    write_parquet(pl.DataFrame({"phrase": ["a", "b"], "negative": ["c", None]}), negatives)
    assert read_artifact(negatives, HARD_NEGATIVES_SCHEMA).height == 2
    vectors = tmp_path / "vectors.parquet"
    write_parquet(pl.DataFrame({"text": ["a", "b"], "vector": [[0.1, 0.2], [0.3]]}), vectors)
    with pytest.raises(PearlError, match="vectors of different lengths"):
        read_artifact(vectors, TEACHER_VECTORS_SCHEMA)


def test_two_methods_may_make_the_same_variant_but_one_method_only_once(tmp_path):
    path = tmp_path / "variants.parquet"
    rows = {"phrase": ["the southwest"] * 2, "level": ["token"] * 2, "method": ["wordnet", "embedding_synonym"],
            "variant": ["the south-west"] * 2}
    write_parquet(pl.DataFrame(rows), path)
    assert read_artifact(path, VARIANTS_SCHEMA).height == 2
    write_parquet(pl.DataFrame({**rows, "method": ["wordnet"] * 2}), path)
    with pytest.raises(PearlError, match=r"row 1 repeats the key \(phrase, level, method, variant\)"):
        read_artifact(path, VARIANTS_SCHEMA)


def test_read_artifact_names_the_corrupt_row_group(tmp_path):
    path = tmp_path / "sentences.parquet"
    table = pa.table({"doc_id": ["d"] * 3000, "sent_id": pa.array(range(3000), pa.int32()),
                      "text": [f"sentence number {i} " * 20 for i in range(3000)]})
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=1000, compression="none")
    data = bytearray(path.read_bytes())
    middle = pq.ParquetFile(path).metadata.row_group(1).column(2).data_page_offset
    data[middle + 40: middle + 4000] = b"\xff" * 3960
    path.write_bytes(bytes(data))
    with pytest.raises(PearlError, match="row group 1 of 3 is corrupt"):
        read_artifact(path, SENTENCES_SCHEMA)


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path):
    stale = tmp_path / ".phrases.parquet.abc123.tmp"
    stale.write_bytes(b"half")
    write_parquet(pl.DataFrame(PHRASE_ROWS), tmp_path / "phrases.parquet")
    assert _leftovers(tmp_path) == ["phrases.parquet"]


def test_json_and_meta_paths(tmp_path):
    write_json({"b": 1, "a": "é"}, tmp_path / "m.json")
    assert (tmp_path / "m.json").read_text() == '{\n  "a": "é",\n  "b": 1\n}\n'
    assert meta_path(tmp_path / "phrases.parquet").name == "phrases.meta.json"
