"""Entity linking: the top-k index entries of each mention, with an explicit "no match".

Output, one row per (mention, candidate), mentions in input order, candidates best first:
`mention_row` (the mention's row in its table), `mention`, `rank` (1…k), `id`, `name`, `score`
(cosine, or Jaccard for the `string` encoder, mixed with string similarity: `search`) and `matched`.
A mention with no candidate at or above `min_score`, and a null or blank mention, gets one row with
`matched` false, null `rank`/`id`/`name`, and its best score (null when blank), so no input row disappears.
Equal scores are ordered by index row: the name added first comes first.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

import numpy as np
import polars as pl
from tqdm import tqdm

from pearl.errors import PearlError
from pearl.index.encoder import STRING
from pearl.index.phrase_index import Index
from pearl.latin import latin_all
from pearl.log import get_logger
from pearl.scores import at_least, check_score, rank, with_string_evidence
from pearl.tables import TextColumn, as_polars, like_input, text_column

log = get_logger("link")

SCHEMA = {"mention_row": pl.Int64, "mention": pl.String, "rank": pl.Int32, "id": pl.String, "name": pl.String,
          "score": pl.Float32, "matched": pl.Boolean}
# table rows searched at once: 50,000 PEARL-small vectors are 77 MB, and a 1M-row table searched whole held
# 7.9 GB (docs/measurements.md#verbs-scale)
CHUNK = 50_000
# the index's candidates per mention that string evidence re-orders, the similarity and its weight: chosen on
# the design sets (docs/measurements.md#link-string-evidence)
RERANKED = 20
STRING_SCORER = "token_set_ratio"
STRING_WEIGHT = 0.5


def check_link_flags(k: int, min_score: float | None, string_weight: float = 0.0) -> None:
    if k < 1:
        raise PearlError(f"--k {k}: ask for at least 1 candidate")
    check_score(min_score, "--min-score")
    if not 0.0 <= string_weight <= 1.0:
        raise PearlError(f"--string-weight {string_weight}: a weight in [0, 1]")


def search(index: Index, texts: list[str], k: int, string_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows) of each text's top k: the index's own, or with `string_weight` w > 0 its RERANKED best
    re-ordered by (1 − w) · score + w · STRING_SCORER's similarity; ties by index row. An index of vectors adds
    the RERANKED best by 3-grams to its own (`pooled`)."""
    if string_weight == 0:
        return index.search(texts, k)
    if index.encoder.kind == STRING:
        scores, rows = index.search(texts, max(k, RERANKED))
    else:
        scores, rows = pooled(index, texts, max(k, RERANKED))
    return mixed_top(scores, rows, latin_all(texts), index.latin_names, k, string_weight)


def mixed_top(scores: np.ndarray, rows: np.ndarray, queries: list[str], names: list[str], k: int,
              string_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """The k best of each query's candidates (`rows` of `names`, -1: none) by (1 − w) · score + w · STRING_SCORER's
    similarity, w = `string_weight`; ties by row of `names`."""
    by_row = np.argsort(np.where(rows < 0, len(names), rows), axis=1, kind="stable")
    scores, rows = np.take_along_axis(scores, by_row, axis=1), np.take_along_axis(rows, by_row, axis=1)
    mixed = np.where(rows < 0, -np.inf, with_string_evidence(scores, rows, queries, names, string_weight, STRING_SCORER))
    order = rank(mixed, min(k, rows.shape[1]))
    return np.take_along_axis(mixed, order, axis=1), np.take_along_axis(rows, order, axis=1)


def pooled(index: Index, texts: list[str], k: int, block: int = 2048,
           vectors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each text's k nearest names by cosine and its k nearest by 3-grams (Index.search_strings), rows in
    ascending order (-1 for a repeat or a name not found), each scored by its cosine. A name the encoder reads
    badly (another script, a typo that splits its tokens) still reaches the string evidence through its letters,
    as the join's candidates do. `block` texts' candidate vectors are gathered at once; `vectors`: the texts' own,
    where the caller has them."""
    vectors = np.asarray(index.encoder.encode(texts) if vectors is None else vectors, dtype=np.float32)
    rows = np.sort(np.concatenate([index.search(texts, k, vectors)[1], index.search_strings(texts, k)[1]], axis=1),
                   axis=1)
    rows[:, 1:][rows[:, 1:] == rows[:, :-1]] = -1
    scores = np.full(rows.shape, -np.inf, dtype=np.float32)
    for start in range(0, len(texts), block):
        part = rows[start:start + block]
        cosines = np.einsum("nd,nkd->nk", vectors[start:start + block], index.vectors[np.maximum(part, 0)])
        scores[start:start + block] = np.where(part < 0, -np.inf, cosines)
    return scores, rows


def kept_candidates(scores, rows, min_score: float | None) -> list[tuple[float, int]]:
    """(score, index row) of one mention's search results that reach `min_score`, best first."""
    return [(float(s), int(r)) for s, r in zip(scores, rows) if r >= 0 and (min_score is None or at_least(s, min_score))]


def link(index: Index, mentions, column: str = "mention", k: int = 5, min_score: float | None = None,
         string_weight: float = STRING_WEIGHT):
    """Top-k per mention of `mentions` (a polars or pandas DataFrame, or a list of strings).

    `column` names the mentions column of a table; `k` is the candidates per mention; `min_score`,
    when given, drops candidates below it (a mention left without any gets a `matched` false row);
    `string_weight` mixes string similarity into the score (`search`; 0: the index's score alone).
    Returns a table of the caller's kind with the module's columns: mention_row, mention, rank, id,
    name, score, matched."""
    table = _mentions_table(mentions, column)
    result = pl.concat(list(link_chunks(index, table, column, k, min_score, string_weight=string_weight)),
                       how="vertical")
    return like_input(result, table if isinstance(mentions, list) else mentions)


def link_chunks(index: Index | Callable[[], Index], table: pl.DataFrame, column: str = "mention", k: int = 5,
                min_score: float | None = None, chunk: int = CHUNK,
                string_weight: float = STRING_WEIGHT) -> Iterator[pl.DataFrame]:
    """`link`'s rows for a polars table, `chunk` table rows at a time, so that a caller can write them as
    they come: memory holds the index, the mentions table and one chunk's vectors and candidates.
    The flags and mentions are checked now, before `index`, when it is a loader, loads its model."""
    check_link_flags(k, min_score, string_weight)
    cells = text_column(table, column, "the mentions table", require_names=True)
    index = index if isinstance(index, Index) else index()
    return _linked_chunks(index, table, column, cells, k, min_score, chunk, string_weight)


def _linked_chunks(index: Index, table: pl.DataFrame, column: str, cells: TextColumn, k: int,
                   min_score: float | None, chunk: int, string_weight: float) -> Iterator[pl.DataFrame]:
    values = table.get_column(column).cast(pl.String, strict=False)
    unmatched = 0
    with tqdm(total=len(cells.texts), desc="link", unit=" mentions", mininterval=2,
              disable=len(cells.texts) <= chunk) as progress:
        for start in range(0, table.height, chunk):
            first, last = bisect_left(cells.rows, start), bisect_left(cells.rows, start + chunk)
            scores, rows = search(index, cells.texts[first:last], k, string_weight)
            position = {row: i for i, row in enumerate(cells.rows[first:last])}
            rows_out = []
            for row, mention in enumerate(values.slice(start, chunk).to_list(), start):
                if row not in position:  # null or blank
                    rows_out.append((row, mention, None, None, None, None, False))
                    continue
                i = position[row]
                kept = kept_candidates(scores[i], rows[i], min_score)
                if not kept:
                    unmatched += 1
                    rows_out.append((row, mention, None, None, None, float(scores[i][0]) if len(scores[i]) else None,
                                     False))
                rows_out += [(row, mention, place, index.ids[r], index.names[r], float(s), True)
                             for place, (s, r) in enumerate(kept, 1)]
            progress.update(last - first)
            yield pl.DataFrame(rows_out, schema=SCHEMA, orient="row")
    log.info("linked %d mentions: %d without a match%s, %d blank", len(cells.texts), unmatched,
             "" if min_score is None else f" at or above {min_score}", cells.blank)


def _mentions_table(mentions, column: str) -> pl.DataFrame:
    if isinstance(mentions, list):
        return pl.DataFrame({column: mentions}, schema={column: pl.String})
    return as_polars(mentions)
