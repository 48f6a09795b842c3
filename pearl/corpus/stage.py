"""The corpus stage: documents → sentences.parquet (doc_id, sent_id, text)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from tqdm import tqdm

from pearl.artifacts import ParquetStreamWriter, ShardedParquetWriter, write_json, write_meta
from pearl.corpus.sentences import SentenceFilter, SentenceSplitter, SplitCounts, split_sentences
from pearl.corpus.sources import describe_source, iter_documents
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.params import CorpusParams, Params
from pearl.ray_engine import RayRun, ray_session, stream_through_actors
from pearl.spacy_models import describe, load_spacy

OUTPUT = Path("data/corpus/sentences.parquet")
METRICS = Path("metrics/corpus.json")
SCHEMA = pa.schema([("doc_id", pa.string()), ("sent_id", pa.int32()), ("text", pa.string())])
_FLUSH_ROWS = 20_000

log = get_logger("corpus")


def sentences_on_ray(params: Params, counts: SplitCounts, run: RayRun) -> Iterator[tuple[str, int, str]]:
    """What split_sentences yields, from Ray actors that split shards of the streamed documents."""
    documents = ({"doc_id": doc_id, "text": text} for doc_id, text in iter_documents(params.corpus))
    current, sent_id = None, 0
    for split in stream_through_actors(documents, SentenceSplitter, (params.corpus,), params.ray.corpus, "corpus",
                                       describe_source(params.corpus), run):
        for doc_id, sentences, words, short, long in zip(*(split[c].to_pylist() for c in _SPLIT_COLUMNS)):
            counts.documents += 1
            counts.sentences += len(sentences)
            counts.words += words
            counts.dropped_short += short
            counts.dropped_long += long
            if sentences or short or long:  # numbered as split_sentences does: per run of a doc_id
                if doc_id != current:
                    current, sent_id = doc_id, 0
            for text in sentences:
                yield doc_id, sent_id, text
                sent_id += 1


_SPLIT_COLUMNS = ("doc_id", "sentences", "words", "dropped_short", "dropped_long")


def _write(sentences: Iterator[tuple[str, int, str]], writer: ParquetStreamWriter | ShardedParquetWriter,
           p: CorpusParams, counts: SplitCounts) -> None:
    buffer: dict[str, list] = {name: [] for name in SCHEMA.names}
    with writer:
        for doc_id, sent_id, text in tqdm(sentences, desc="corpus", unit=" sent", mininterval=2):
            buffer["doc_id"].append(doc_id)
            buffer["sent_id"].append(sent_id)
            buffer["text"].append(text)
            if len(buffer["text"]) >= _FLUSH_ROWS:
                writer.write(buffer)
                buffer = {name: [] for name in SCHEMA.names}
        writer.write(buffer)
        if writer.rows == 0:
            raise PearlError(
                f"corpus: no sentences from source {p.source!r} ({counts.documents} documents read); "
                "check corpus.source / corpus.files"
            )


def run(params: Params, output: Path = OUTPUT, metrics: Path = METRICS) -> dict:
    p = params.corpus
    log.info("source: %s", describe_source(p))
    nlp = load_spacy(p.spacy_model, keep=("senter",))
    counts = SplitCounts()
    clock = Stopwatch()
    if params.engine == "ray":
        log.info("splitting sentences on Ray, %d actor(s), %d documents per batch", params.ray.corpus.workers,
                 params.ray.corpus.batch_size)
        with ray_session(params.ray) as ray_run:
            _write(sentences_on_ray(params, counts, ray_run), ShardedParquetWriter(output, SCHEMA, params.ray.shard_rows),
                   p, counts)
        timing = {**clock.report(log, counts.sentences, "sentences"), **ray_run.metrics()}
    else:
        rules = SentenceFilter(p.min_sentence_chars, p.max_sentence_chars, p.long_sentences)
        _write(split_sentences(nlp, iter_documents(p), rules, counts, p.batch_size), ParquetStreamWriter(output, SCHEMA),
               p, counts)
        timing = clock.report(log, counts.sentences, "sentences")
    if counts.dropped_long:
        log.warning(
            "skipped %d sentences longer than corpus.max_sentence_chars=%d",
            counts.dropped_long, p.max_sentence_chars,
        )
    numbers = {
        "documents": counts.documents,
        "sentences": counts.sentences,
        "words": counts.words,
        "sentences_dropped_short": counts.dropped_short,
        "sentences_dropped_long": counts.dropped_long,
    }
    write_meta(output, {
        "stage": "corpus",
        "source": p.source,
        "source_detail": describe_source(p),
        "max_docs": p.max_docs,
        "engine": params.engine,
        "sentence_splitter": describe(nlp),
        **numbers,
    })
    write_json({**numbers, **timing}, metrics)
    return numbers
