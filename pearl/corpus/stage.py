"""The corpus stage: documents → sentences.parquet (doc_id, sent_id, text)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from tqdm import tqdm

from pearl.artifacts import ParquetStreamWriter, write_json, write_meta
from pearl.corpus.sentences import SentenceFilter, SplitCounts, split_sentences
from pearl.corpus.sources import describe_source, iter_documents
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.params import Params
from pearl.spacy_models import describe, load_spacy

OUTPUT = Path("data/corpus/sentences.parquet")
METRICS = Path("metrics/corpus.json")
SCHEMA = pa.schema([("doc_id", pa.string()), ("sent_id", pa.int32()), ("text", pa.string())])
_FLUSH_ROWS = 20_000

log = get_logger("corpus")


def run(params: Params, output: Path = OUTPUT, metrics: Path = METRICS) -> dict:
    p = params.corpus
    nlp = load_spacy(p.spacy_model, keep=("senter",))
    rules = SentenceFilter(p.min_sentence_chars, p.max_sentence_chars, p.long_sentences)
    counts = SplitCounts()
    clock = Stopwatch()
    log.info("source: %s", describe_source(p))
    buffer: dict[str, list] = {name: [] for name in SCHEMA.names}
    with ParquetStreamWriter(output, SCHEMA) as writer:
        sentences = split_sentences(nlp, iter_documents(p), rules, counts, p.batch_size)
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
        "sentence_splitter": describe(nlp),
        **numbers,
    })
    write_json({**numbers, **timing}, metrics)
    return numbers
