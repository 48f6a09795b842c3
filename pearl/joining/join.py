"""Fuzzy join: each right row gets its best left row, searched in an index of the left names.

- Candidates: the `candidates` nearest left names of each right name (no all-pairs scoring).
- Score: cosine, or with `string_weight` w > 0 the hybrid (1 − w) · cosine + w · rapidfuzz's
  normalised Indel similarity of the lower-cased, punctuation-stripped strings.
- By default, `precision_target` P (0.9, AutoFJ's own): join functions (the encoder's cosine,
  3-gram and word TF-IDF cosines, rapidfuzz's measures, AutoFJ's set similarities, and mixes) and
  their cuts, chosen per pair of tables by AutoFJ's label-free precision estimate and greedy search
  (pearl.joining.select), after AutoFJ's negative rules struck the candidate pairs that differ as
  two left names do ("2008" / "2012");
  `score` is then each join's estimated probability of being right. AutoFJ's estimates are means over right
  rows, so past `sample` (20,000) right rows the choice is made on a random sample of them and then applied
  to every row, a chunk at a time: the choice's memory grows with the left table and the sample. The right
  table still costs memory, more slowly: both tables are read whole, and the 3-gram vocabulary is fitted on
  both (metrics/verbs_scale.md: from 10,000 to 1,000,000 right rows, peak memory rose by a third for `string`
  and by half for PEARL-small). On the 50 AutoFJ datasets it
  recalls far more than the calibrated cut below at about the same precision (the README's
  join table, from benchmarks/join_autofj.py).
- Fixed scoring instead, when `threshold`, `calibration_quantile` or `string_weight` is given:
  the cut is `threshold`, or else one calibrated on the left table itself. A
  reference table holds (almost) no duplicates, so the score of each left name with its
  nearest *other* left name shows how close two different entities come; the cut is the
  `calibration_quantile` (0.9) quantile of those scores, as AutoFJ uses the left table as
  negative evidence. (A mixture model of the best scores would fit the spike of exact matches
  that real joins have, and cut above every inexact match.) `explain` shows the scores and
  the cut. The right names are encoded and searched a chunk (select.CHUNK) at a time.
- Output: the right table's columns, the left table's (a name taken by both gets `_left`;
  a join where that name is taken too is refused), `score` and `matched`. `how="inner"` keeps
  matched rows only; `how="left"` keeps every right row, with null left columns when
  unmatched. A left name that occurs in several rows joins to its first row. Null or blank
  right names stay unmatched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from pearl.errors import PearlError
from pearl.index.encoder import STRING, Encoder, loaded
from pearl.index.phrase_index import Index
from pearl.joining.select import CHUNK, SAMPLE, choose
from pearl.latin import latin_all
from pearl.log import get_logger
from pearl.scores import at_least, check_score, with_string_evidence
from pearl.tables import as_polars, like_input, text_column

log = get_logger("join")

HOW = ("inner", "left")
ADDED = ("score", "matched")  # the join's own columns


@dataclass(frozen=True)
class JoinScores:
    """Each right row's best left row and score (-1 / NaN where the right name is blank)."""

    left_row: np.ndarray
    score: np.ndarray
    threshold: float
    threshold_source: str  # "given", or how it was calibrated or chosen
    estimate: str = ""  # with a precision target: the configurations chosen and what they are estimated to give


CALIBRATION_QUANTILE = 0.9
PRECISION_TARGET = 0.9
SHOWN_FUNCTIONS = 5  # --explain names the join functions that gave the most joins


def best_matches(left: pl.DataFrame, right: pl.DataFrame, left_on: str, right_on: str,
                 encoder: Encoder | str | Callable[[], Encoder],
                 threshold: float | None = None, string_weight: float = 0.0, candidates: int = 10,
                 calibration_quantile: float | None = None, precision_target: float | None = None,
                 sample: int = SAMPLE) -> JoinScores:
    """Each right row's best left row, chosen for `precision_target` (default PRECISION_TARGET) on a sample of
    `sample` right rows unless a fixed scoring is asked for. `encoder` may be a model to load (its name, or a
    loader): it loads once the inputs pass their checks."""
    check_score(threshold, "--threshold")
    if sample < 1:
        raise PearlError(f"--sample {sample}: at least 1 right row to choose on")
    fixed = threshold is not None or calibration_quantile is not None or string_weight > 0
    if precision_target is not None:
        if not 0.0 < precision_target <= 1.0:
            raise PearlError(f"--precision-target {precision_target}: a precision in (0, 1]")
        if fixed:
            raise PearlError("--precision-target chooses its own scoring and cut: leave out --threshold, "
                             "--calibration-quantile and --string-weight")
    elif not fixed:
        precision_target = PRECISION_TARGET
    if calibration_quantile is None:
        calibration_quantile = CALIBRATION_QUANTILE
    if not 0.0 <= string_weight <= 1.0:
        raise PearlError(f"--string-weight {string_weight}: a weight in [0, 1]")
    if candidates < 1:
        raise PearlError(f"--candidates {candidates}: at least 1")
    if not 0.0 <= calibration_quantile <= 1.0:
        raise PearlError(f"--calibration-quantile {calibration_quantile}: a quantile in [0, 1]")
    clash = [c for c in ADDED if c in right.columns]
    if clash:  # checked before any encoding: the right table's column would be overwritten
        raise PearlError(f"the right table has a column {clash[0]!r}, which the join adds: rename it")
    left_renamed(left.columns, right.columns)
    left_cells = text_column(left, left_on, "the left table", require_names=True)
    right_cells = text_column(right, right_on, "the right table", require_names=True)
    encoder = loaded(encoder)
    if precision_target is not None:
        return _chosen(left_cells, right_cells, len(right), encoder, precision_target, candidates, sample)
    index = Index.build(left_cells.texts, [str(r) for r in left_cells.rows], encoder=encoder, dedupe=True)
    left_row = np.full(len(right), -1, dtype=np.int64)
    score = np.full(len(right), np.nan, dtype=np.float32)
    right_rows = np.asarray(right_cells.rows)
    # CHUNK right names encoded and searched at a time, as the chooser applies its choice: memory stays a chunk's
    for start in range(0, len(right_cells.texts), CHUNK):
        names, at = right_cells.texts[start:start + CHUNK], right_rows[start:start + CHUNK]
        scores, rows = index.search(names, candidates if string_weight > 0 else 1)
        if string_weight > 0:
            scores = with_string_evidence(scores, rows, latin_all(names), index.latin_names, string_weight)
        best = np.argmax(scores, axis=1)  # the first of equal scores: the nearer candidate
        found = np.take_along_axis(rows, best[:, None], axis=1).ravel()
        left_row[at] = [int(index.ids[r]) if r >= 0 else -1 for r in found]  # HNSW may find fewer
        score[at] = np.take_along_axis(scores, best[:, None], axis=1).ravel()
    if threshold is not None:
        return JoinScores(left_row, score, threshold, "given")
    return JoinScores(left_row, score, left_neighbour_cut(index, string_weight, calibration_quantile),
                      f"the {calibration_quantile} quantile of the left names' scores with their nearest other left name")


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _chosen(left_cells, right_cells, n_right: int, encoder: Encoder, precision_target: float,
            candidates: int, sample: int) -> JoinScores:
    first_row = dict(zip(reversed(left_cells.texts), reversed(left_cells.rows)))  # a repeated name: its first row
    names = list(dict.fromkeys(left_cells.texts))
    choice = choose(names, right_cells.texts, None if encoder.kind == STRING else encoder, precision_target, candidates,
                    sample)
    joined = choice.left_row >= 0
    left_row = np.full(n_right, -1, dtype=np.int64)
    score = np.full(n_right, np.nan, dtype=np.float32)
    right_rows = np.asarray(right_cells.rows)
    left_row[right_rows[joined]] = [first_row[names[i]] for i in choice.left_row[joined]]
    score[right_rows] = choice.confidence
    lowest = {}  # a function's configurations join what its lowest cut joins
    for function, cut in choice.configurations:
        lowest[function] = min(cut, lowest.get(function, cut))
    shown = list(choice.joined_by.items())[:SHOWN_FUNCTIONS]
    configurations = (f"{_counted(len(choice.configurations), 'configuration')} of "
                      f"{_counted(len(lowest), 'join function')}, the joins from "
                      + ", ".join(f"{function} ≥ {lowest[function]:.3f} ({n})" for function, n in shown))
    if len(choice.joined_by) > len(shown):
        rest = list(choice.joined_by.values())[len(shown):]
        configurations += f" and {len(rest)} more ({sum(rest)})"
    n = len(right_cells.texts)
    # AutoFJ's recall estimate: a right name without a match on the left counts as missed
    estimate = (f"chosen for precision {precision_target}: {configurations}; estimated precision "
                f"{choice.estimated_precision:.3f} and recall {choice.estimated_true_positives / n:.3f} "
                f"({choice.estimated_true_positives:.1f} true joins of {n} right names)" if choice.reached_target else
                f"no join function reaches precision {precision_target} by AutoFJ's estimate (the best reaches "
                f"{choice.estimated_precision:.3f}): nothing joined; lower --precision-target or give --threshold")
    if choice.sample < n:
        estimate += f"; chosen on a random sample of {choice.sample} of the {n} right names, then applied to all"
    if encoder.kind != STRING:
        estimate += f"; encoding took {choice.encode_seconds:.1f} s"
    estimate += (f"; negative rules (token pairs that tell two left names apart): {choice.negative_rules}, "
                 f"striking {_counted(choice.ruled_out, 'candidate pair')}")
    cut = float(choice.confidence[joined].min()) if joined.any() else 1.0
    return JoinScores(left_row, score, cut, "each join's estimated probability of being right", estimate)


def left_renamed(left_columns: list[str], right_columns: list[str]) -> dict[str, str]:
    """The left columns that take `_left` in the output (those the right table or the join also has)."""
    renamed = {c: f"{c}_left" for c in left_columns if c in right_columns or c in ADDED}
    for column, new in renamed.items():
        for side, columns in (("right", right_columns), ("left", left_columns)):
            if new in columns:
                raise PearlError(f"{column!r} of the left table would become {new!r}, which the {side} table has: "
                                 "rename one of them")
    return renamed


def left_neighbour_cut(index: Index, string_weight: float, quantile: float) -> float:
    """The `quantile` of each left name's score with its nearest other left name (same scoring)."""
    if len(index) < 2:
        raise PearlError("one left name leaves nothing to calibrate a cut on: give --threshold")
    scores, rows = index.search_own_names(2)
    if string_weight > 0:
        scores = with_string_evidence(scores, rows, index.names, index.names, string_weight)
    other = np.where(rows[:, 0] == np.arange(len(index)), scores[:, 1], scores[:, 0])  # skip the name itself
    return float(np.quantile(other, quantile))


def check_how(how: str) -> None:
    if how not in HOW:
        raise PearlError(f"--how {how!r}: inner or left")


def join(left, right, left_on: str, right_on: str, model: str = "models/pearl", how: str = "inner",
         threshold: float | None = None, string_weight: float = 0.0, candidates: int = 10,
         calibration_quantile: float | None = None, *, encoder: Encoder | None = None,
         precision_target: float | None = None, sample: int = SAMPLE):
    """Join polars or pandas DataFrames; returns the right rows with their best left rows. By default the scoring
    and cut are chosen for precision 0.9 (`precision_target`), on `sample` right rows at most; `threshold`,
    `calibration_quantile` or `string_weight` asks for a fixed scoring instead."""
    check_how(how)
    left_pl, right_pl = as_polars(left), as_polars(right)
    matches = best_matches(left_pl, right_pl, left_on, right_on, encoder or model, threshold, string_weight,
                           candidates, calibration_quantile, precision_target, sample)
    return like_input(assemble(left_pl, right_pl, matches, how), right)


def assemble(left: pl.DataFrame, right: pl.DataFrame, matches: JoinScores, how: str) -> pl.DataFrame:
    matched = (matches.left_row >= 0) & at_least(matches.score, matches.threshold)
    taken = left[np.where(matched, matches.left_row, 0)].rename(left_renamed(left.columns, right.columns))
    result = pl.concat([right, taken], how="horizontal").with_columns(
        pl.Series("score", matches.score, dtype=pl.Float32).fill_nan(None), pl.Series("matched", matched))
    result = result.with_columns([pl.when(pl.col("matched")).then(pl.col(c)).otherwise(None).alias(c)
                                  for c in taken.columns])
    if how == "inner":
        result = result.filter(pl.col("matched"))
    log.info("joined %d of %d right rows at cut %.3f (%s)", int(matched.sum()), len(right), matches.threshold,
             matches.threshold_source)
    return result


def explain(matches: JoinScores, bins: int = 20) -> str:
    """The best scores' histogram, with the cut and how many rows fall on each side."""
    scores = matches.score[~np.isnan(matches.score)]
    counts, edges = np.histogram(scores, bins=bins)
    width = max(counts.max(), 1)
    lines = [f"best score per right row: n={len(scores)}, min {scores.min():.3f}, median {np.median(scores):.3f}, "
             f"max {scores.max():.3f}"]
    cut_bin = min(max(int(np.searchsorted(edges, matches.threshold, side="right")) - 1, 0), bins - 1)
    for i, (count, low, high) in enumerate(zip(counts, edges[:-1], edges[1:])):
        mark = "  ← cut" if i == cut_bin else ""
        lines.append(f"  [{low:6.3f}, {high:6.3f})  {count:6d}  {'█' * int(40 * count / width)}{mark}")
    above = int(at_least(scores, matches.threshold).sum())
    lines.append(f"cut {matches.threshold:.3f} ({matches.threshold_source}): "
                 f"{above} rows matched, {len(scores) - above} below, {len(matches.score) - len(scores)} blank")
    if matches.estimate:
        lines.append(matches.estimate)
    return "\n".join(lines)
