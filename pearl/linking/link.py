"""Entity linking: the top-k index entries of each mention, with an explicit "no match".

Output, one row per (mention, candidate), mentions in input order, candidates best first:
`mention_row` (the mention's row in its table), `mention`, `rank` (1…k), `id`, `name`, `score`
(cosine, or Jaccard for the `string` encoder) and `matched`. A mention with no candidate at or
above `min_score`, and a null or blank mention, gets one row with `matched` false, null
`rank`/`id`/`name`, and its best score (null when blank), so no input row disappears.
Equal scores are ordered by index row: the name added first comes first.
"""

from __future__ import annotations

import polars as pl

from pearl.errors import PearlError
from pearl.index.phrase_index import Index
from pearl.log import get_logger
from pearl.scores import at_least, check_score
from pearl.tables import as_polars, like_input, text_column

log = get_logger("link")

SCHEMA = {"mention_row": pl.Int64, "mention": pl.String, "rank": pl.Int32, "id": pl.String, "name": pl.String,
          "score": pl.Float32, "matched": pl.Boolean}


def check_link_flags(k: int, min_score: float | None) -> None:
    if k < 1:
        raise PearlError(f"--k {k}: ask for at least 1 candidate")
    check_score(min_score, "--min-score")


def kept_candidates(scores, rows, min_score: float | None) -> list[tuple[float, int]]:
    """(score, index row) of one mention's search results that reach `min_score`, best first."""
    return [(float(s), int(r)) for s, r in zip(scores, rows) if r >= 0 and (min_score is None or at_least(s, min_score))]


def link(index: Index, mentions, column: str = "mention", k: int = 5, min_score: float | None = None):
    """Top-k per mention of `mentions` (a polars or pandas DataFrame, or a list of strings).

    `column` names the mentions column of a table; `k` is the candidates per mention; `min_score`,
    when given, drops candidates below it (a mention left without any gets a `matched` false row).
    Returns a table of the caller's kind with the module's columns: mention_row, mention, rank, id,
    name, score, matched."""
    check_link_flags(k, min_score)
    table = pl.DataFrame({column: list(mentions)}, schema={column: pl.String}) if isinstance(mentions, list) \
        else as_polars(mentions)
    cells = text_column(table, column, "the mentions table", require_names=True)
    scores, rows = index.search(cells.texts, k)
    rows_out = []
    position = {row: i for i, row in enumerate(cells.rows)}
    unmatched = 0
    for row, mention in enumerate(table.get_column(column).cast(pl.String, strict=False).to_list()):
        if row not in position:  # null or blank
            rows_out.append((row, mention, None, None, None, None, False))
            continue
        i = position[row]
        kept = kept_candidates(scores[i], rows[i], min_score)
        if not kept:
            unmatched += 1
            rows_out.append((row, mention, None, None, None, float(scores[i][0]) if len(scores[i]) else None, False))
        rows_out += [(row, mention, rank, index.ids[r], index.names[r], float(s), True)
                     for rank, (s, r) in enumerate(kept, 1)]
    log.info("linked %d mentions: %d without a match%s, %d blank", len(cells.texts), unmatched,
             "" if min_score is None else f" at or above {min_score}", cells.blank)
    result = pl.DataFrame(rows_out, schema=SCHEMA, orient="row")
    return like_input(result, table if isinstance(mentions, list) else mentions)
