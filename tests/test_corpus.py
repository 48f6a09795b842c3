import json

import polars as pl
import pytest

from pearl.corpus import stage
from pearl.corpus.sentences import clean_text, paragraphs
from pearl.corpus.sources import iter_documents, iter_hf_dataset, iter_wiki_vital
from pearl.errors import PearlError


def _run(make_params, tmp_path, **overrides):
    params = make_params(**overrides)
    out = tmp_path / "out" / "sentences.parquet"
    numbers = stage.run(params, output=out, metrics=tmp_path / "metrics.json")
    return out, numbers


def test_clean_text_normalises_and_keeps_scripts_and_emoji():
    assert clean_text("Cafe\u0301\u0000 is\t\tnice") == "Café is nice"
    assert clean_text("a\u200bb") == "a b"  # zero-width space is a format char
    family = "👨\u200d👩\u200d👧"
    assert family in clean_text(f"The {family} emoji, Москва and 東京.")


def test_pathological_paragraph_is_cut_into_windows():
    chunks = list(paragraphs("word " * 50_000))
    assert len(chunks) == 3 and all(len(c) <= 100_000 for c in chunks)


def test_wiki_vital_is_read_from_the_installed_package(make_params):
    first = list(iter_documents(make_params(corpus__max_docs=3).corpus))
    assert len(first) == 3
    assert all(doc_id and len(text) > 100 for doc_id, text in first)
    assert sum(1 for _ in iter_wiki_vital()) > 9_000


def test_files_source_reads_txt_jsonl_parquet(make_params, tmp_path):
    (tmp_path / "a.txt").write_text("Paris is the capital of France. It is large.\n\nBerlin is in Germany.")
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"id": "j1", "text": "Rome is old."}) + "\n\n" + json.dumps({"text": "Oslo is cold."}) + "\n"
    )
    pl.DataFrame({"text": ["Madrid is sunny."]}).write_parquet(tmp_path / "c.parquet")
    out, numbers = _run(make_params, tmp_path, corpus__source="files", corpus__files=[str(tmp_path / "*.*")])
    df = pl.read_parquet(out)
    assert df.columns == ["doc_id", "sent_id", "text"]
    assert df.filter(pl.col("doc_id").str.ends_with("a.txt"))["sent_id"].to_list() == [0, 1, 2]
    assert "Rome is old." in df["text"].to_list() and "Madrid is sunny." in df["text"].to_list()
    assert "j1" in df["doc_id"].to_list()
    assert numbers["documents"] == 4 and numbers["sentences"] == 6
    meta = json.loads((out.parent / "sentences.meta.json").read_text())
    assert meta["source"] == "files" and meta["sentences"] == 6 and "senter" in meta["sentence_splitter"]


def test_missing_file_and_bad_jsonl_fail_in_one_line(make_params, tmp_path, monkeypatch):
    def no_spacy(*args, **kwargs):
        raise AssertionError("spaCy loaded before corpus.files was checked")

    with monkeypatch.context() as patch:
        patch.setattr(stage, "load_spacy", no_spacy)
        with pytest.raises(PearlError, match="matches no file"):
            _run(make_params, tmp_path, corpus__source="files", corpus__files=[str(tmp_path / "nope*.txt")])
    (tmp_path / "bad.jsonl").write_text('{"text": "ok."}\n{broken\n')
    with pytest.raises(PearlError, match=r"bad\.jsonl:2: not valid JSON"):
        _run(make_params, tmp_path, corpus__source="files", corpus__files=[str(tmp_path / "bad.jsonl")])
    assert not (tmp_path / "out" / "sentences.parquet").exists()


def test_empty_corpus_is_an_error_and_leaves_no_artifact(make_params, tmp_path):
    (tmp_path / "empty.txt").write_text("  \n\n ")
    with pytest.raises(PearlError, match="no sentences"):
        _run(make_params, tmp_path, corpus__source="files", corpus__files=[str(tmp_path / "empty.txt")])
    assert list((tmp_path / "out").iterdir()) == []


def test_a_100k_character_sentence_is_skipped_and_counted_or_an_error(make_params, tmp_path):
    (tmp_path / "doc.txt").write_text("Paris is in France. " + "x" * 100_000 + " and so on.")
    files = [str(tmp_path / "doc.txt")]
    out, numbers = _run(make_params, tmp_path, corpus__source="files", corpus__files=files)
    assert numbers["sentences_dropped_long"] == 1
    kept = pl.read_parquet(out)["text"].to_list()
    assert "Paris is in France." in kept and max(map(len, kept)) < 2_000
    out.unlink()
    with pytest.raises(PearlError, match="sentence of 1000.. characters"):
        _run(make_params, tmp_path, corpus__source="files", corpus__files=files, corpus__long_sentences="error")
    assert not out.exists()


def test_hugging_face_source_streams_rows(monkeypatch):
    import datasets

    calls = {}

    def fake_load_dataset(name, config, split, streaming):
        calls.update(name=name, config=config, split=split, streaming=streaming)
        return iter([{"id": "12", "text": "Anarchism is a philosophy."}, {"id": "25", "text": "Autism."}])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    docs = list(iter_hf_dataset("wikimedia/wikipedia", "20231101.en", "text"))
    assert docs == [("12", "Anarchism is a philosophy."), ("25", "Autism.")]
    assert calls == {"name": "wikimedia/wikipedia", "config": "20231101.en", "split": "train", "streaming": True}


def test_unreachable_hub_is_a_one_line_error(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'wikimedia/wikipedia' on the Hub (LocalEntryNotFoundError)\nmore")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(PearlError, match="could not be loaded: Couldn't reach") as error:
        list(iter_hf_dataset("wikimedia/wikipedia", "20231101.en", "text"))
    assert "\n" not in str(error.value)
