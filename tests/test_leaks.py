"""No text that a test or tune task of the committed data scores is a training phrase or a positive."""

import polars as pl
import pytest

from pearl.augment.stage import without_leaks
from pearl.bench.geonames_aliases import fold
from pearl.bench.run import build_context
from pearl.bench.texts import evaluation_texts
from pearl.entity_typing.stage import without_evaluation_texts
from pearl.params import load_params
from pearl.train.data import Sampling, TrainingSet
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def committed():
    """The default params and the folded texts their test and tune suites score, from data/reference."""
    params = load_params(ROOT / "params.yaml", {})
    return params, evaluation_texts(build_context(params, None, ""), (*params.bench.tasks, *params.bench.tune_tasks))


def test_typing_keeps_no_phrase_that_a_test_or_tune_task_scores(committed):
    params, blocked = committed
    scored = sorted(blocked)[::5000]
    phrases = pl.DataFrame({"phrase": [text.upper() for text in scored] + ["zqx phrase nobody scores"],
                            "lex_type": ["NP"] * (len(scored) + 1), "freq": [2] * (len(scored) + 1)})
    kept, texts = without_evaluation_texts(params, phrases)
    assert kept["phrase"].to_list() == ["zqx phrase nobody scores"] and set(texts) == blocked and len(scored) > 40


def test_no_cached_view_of_any_level_has_a_side_that_a_task_scores(committed):
    _, blocked = committed
    scored = sorted(blocked)[::20000]
    rows = [("a clean phrase", level, "m", text) for level in ("char", "token", "phrase", "alias") for text in scored]
    rows += [(text, "token", "m", "a clean view") for text in scored] + [("a clean phrase", "token", "m", "a clean view")]
    variants = pl.DataFrame(rows, schema=["phrase", "level", "method", "variant"], orient="row")
    kept, dropped = without_leaks(variants, blocked)
    assert kept.rows() == [("a clean phrase", "token", "m", "a clean view")]
    n = len(scored)
    assert dropped == {"leak_dropped_char": n, "leak_dropped_token": 2 * n, "leak_dropped_phrase": n, "leak_dropped_alias": n}


def test_no_character_view_made_in_training_is_a_text_a_task_scores(committed, tmp_path):
    _, blocked = committed
    # one-letter edits of scored words ("catt" → "cat"): their character views often are scored words
    words = sorted(text for text in blocked if text.isalpha() and len(text) == 4)[:300]
    phrases = [word + word[-1] for word in words]
    phrases = [p for p in dict.fromkeys(phrases) if fold(p) not in blocked]
    typed, variants, negatives = (tmp_path / f"{name}.parquet" for name in ("typed", "variants", "negatives"))
    pl.DataFrame({"phrase": phrases, "label_id": [0] * len(phrases)}).write_parquet(typed)
    pl.DataFrame(schema={"phrase": pl.String, "level": pl.String, "method": pl.String, "variant": pl.String}
                 ).write_parquet(variants)
    pl.DataFrame({"phrase": phrases, "negative": [None] * len(phrases)}, schema={"phrase": pl.String, "negative": pl.String}
                 ).write_parquet(negatives)
    sampling = Sampling(0, 32, 0, {"char": 1.0, "none": 0.0})

    def views(data: TrainingSet) -> list[tuple[str, str]]:
        found = []
        for step in range(data.steps_per_epoch(32)):
            texts, n, *_ = data.batch_texts(sampling, step)
            found += zip(texts[:n], texts[n:2 * n])
        return found

    unfiltered = views(TrainingSet.load(typed, variants, negatives, 0.1, 0))
    assert sum(fold(view) in blocked for _, view in unfiltered) > 10  # the check below could fail
    filtered = views(TrainingSet.load(typed, variants, negatives, 0.1, 0, blocked=blocked))
    assert not [view for _, view in filtered if fold(view) in blocked]
    assert sum(view != anchor for anchor, view in filtered) > 0.9 * len(filtered)  # character views, not the phrase
