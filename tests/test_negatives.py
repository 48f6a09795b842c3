"""Edit-similar candidates and hard negatives, on the issue's expected behaviours."""

import dataclasses
import json

import numpy as np
import polars as pl
import pytest

from pearl.negatives import stage
from pearl.negatives import candidates
from pearl.negatives.candidates import CandidateSettings, mine_candidates, score_pairs, shared_word_pairs, top_k
from pearl.negatives.hard_negatives import hard_negative_mask
from phrase_pool import phrases_of_size
from candidate_recall import brute_force_top_k, recall_at_k

NYT_SET = ["The New York Times", "New York Post", "New York", "The New York Times Company", "nytimes",
           "the capital of France", "a red car", "red cars", "Stanley Kubrick", "Stanley Cup", "in 1968"]
SETTINGS = CandidateSettings(top_k=10, min_edit_sim=0.7, scorer="lookalike", block_top_m=50, block_key_cap=10,
                             block_dim=256, block_nprobe=32, n_threads=2, seed=0)


def edit_similarity(a: str, b: str, scorer: str = "lookalike") -> float:
    return float(score_pairs([a], [b], scorer, 1)[0])


def test_top_k_keeps_the_best_per_row_and_breaks_ties_by_index():
    rows = np.array([0, 0, 0, 0, 1, 1])
    cols = np.array([3, 1, 2, 4, 0, 2])
    scores = np.array([0.9, 0.8, 0.8, 0.5, 0.75, 0.6], dtype=np.float32)
    r, c, s = top_k(rows, cols, scores, k=2, min_score=0.7)
    assert r.tolist() == [0, 0, 1] and c.tolist() == [3, 1, 0]


def test_edit_similarity_of_the_example():
    q = "The New York Times"
    assert edit_similarity(q, "New York") == pytest.approx(0.95)
    assert edit_similarity(q, "New York Post") == pytest.approx(0.724, abs=1e-3)
    assert edit_similarity(q, "nytimes") < 0.7
    assert edit_similarity(q, "New York Post", "levenshtein") == pytest.approx(0.5)
    assert edit_similarity(q, "New York", "wratio") == pytest.approx(0.90)
    # WRatio's partial-token branch: one shared word between strings of unequal length
    assert edit_similarity("the aftermath of World War II", "the earth", "wratio") == pytest.approx(0.855)
    assert edit_similarity("the aftermath of World War II", "the earth") < 0.7
    assert edit_similarity("2009 Armenian Cup", "men", "wratio") == pytest.approx(0.9)
    assert edit_similarity("2009 Armenian Cup", "men") < 0.7


def test_candidates_of_the_new_york_times():
    rows, cols, scores = mine_candidates(NYT_SET, SETTINGS)
    found = {NYT_SET[c] for r, c in zip(rows, cols) if r == 0}
    assert found == {"New York Post", "New York", "The New York Times Company"}
    assert all(r != c for r, c in zip(rows, cols)) and (scores >= 0.7).all()


def _generated_phrases(n, seed=0):
    rng = np.random.default_rng(seed)
    words = ["new", "york", "times", "post", "city", "bank", "central", "river", "red", "car", "empire",
             "roman", "holy", "capital", "france", "paris", "united", "states", "the", "of"]
    phrases = set()
    while len(phrases) < n:
        tokens = list(rng.choice(words, size=rng.integers(1, 5)))
        if rng.random() < 0.3:  # a typo
            t = tokens[0]
            i = rng.integers(len(t))
            tokens[0] = t[:i] + t[i + 1:] or t
        phrases.add(" ".join(tokens))
    return sorted(phrases)


def test_shared_word_keys_pair_phrases_made_mostly_of_shared_words():
    phrases = ["War", "World War II", "PC Magazine", "Rock Australia Magazine", "Magazine of the Rockies", "nytimes"]
    rows, cols = shared_word_pairs(phrases, 0.7 / 0.95, cap=20)
    pairs = {(phrases[r], phrases[c]) for r, c in zip(rows, cols)}
    # "War" is all of itself; "Magazine" is most of "PC Magazine" (token_set_ratio 84) but not of
    # "Magazine of the Rockies" (49), so the last two do not meet
    assert pairs == {("War", "World War II"), ("World War II", "War"), ("PC Magazine", "Rock Australia Magazine"),
                     ("Rock Australia Magazine", "PC Magazine"), ("PC Magazine", "Magazine of the Rockies"),
                     ("Magazine of the Rockies", "PC Magazine")}
    assert all(edit_similarity(phrases[r], phrases[c]) >= 0.7 for r, c in zip(rows, cols))


def test_shared_word_cap_keeps_the_closest_phrases():
    phrases = ["Rock Australia Magazine", "Time Magazine", "PC Magazine"]
    rows, cols = shared_word_pairs(phrases, 0.7 / 0.95, cap=1)
    pairs = {(phrases[r], phrases[c]) for r, c in zip(rows, cols)}
    # under "Magazine", "PC Magazine" has the least left over: every holder meets it, and no
    # holder meets "Time Magazine", which scores less against "Rock Australia Magazine"
    assert pairs == {("Rock Australia Magazine", "PC Magazine"), ("PC Magazine", "Rock Australia Magazine"),
                     ("Time Magazine", "PC Magazine"), ("PC Magazine", "Time Magazine")}
    assert edit_similarity(phrases[0], phrases[2]) > edit_similarity(phrases[0], phrases[1]) >= 0.7


@pytest.mark.parametrize("inverted_file", [False, True])
def test_blocking_finds_the_true_top_k(inverted_file, monkeypatch):
    if inverted_file:  # the faiss IVF path that sets of 50K phrases and more take
        monkeypatch.setattr(candidates, "EXACT_BELOW", 0)
    phrases = _generated_phrases(600)
    settings = dataclasses.replace(SETTINGS, top_k=5)
    rows, cols, scores = mine_candidates(phrases, settings)
    queries = list(range(0, 600, 7))
    found = [np.sort(scores[rows == q])[::-1] for q in queries]
    assert recall_at_k(found, brute_force_top_k(queries, phrases, settings)) >= 0.95  # the target


def test_the_searcher_actor_finds_what_the_driver_finds_in_a_copy_of_the_index(monkeypatch):
    import faiss
    import pyarrow as pa

    monkeypatch.setattr(candidates, "EXACT_BELOW", 0)  # the IVF index, whose nprobe must survive the copy

    def in_the_actor(index, vectors, m):  # what engine: ray sends: the serialised index, vectors as Arrow
        searcher = candidates.NeighbourSearcher(faiss.serialize_index(index), m, 1)
        out = searcher.process(pa.table({"vector": pa.FixedSizeListArray.from_arrays(vectors.ravel(), vectors.shape[1])}))
        return out["found"].combine_chunks().flatten().to_numpy().reshape(len(vectors), m)

    phrases = _generated_phrases(600)
    for local, actor in zip(mine_candidates(phrases, SETTINGS), mine_candidates(phrases, SETTINGS, neighbours=in_the_actor)):
        np.testing.assert_array_equal(local, actor)


def test_recall_counts_ties_at_the_kth_score():
    assert recall_at_k([np.array([0.9, 0.8])], [np.array([0.9, 0.8])]) == 1.0
    assert recall_at_k([np.array([0.9, 0.7])], [np.array([0.9, 0.8])]) == 0.5
    assert recall_at_k([np.array([])], [np.array([])]) == 1.0


def test_a_phrase_list_past_the_real_pool_is_the_pool_then_distinct_variants():
    pool = ["New York", "Paris", "the capital of France"]
    phrases, real = phrases_of_size(10, pool, seed=0)
    assert phrases[:3] == pool and real == 3 and len(set(phrases)) == 10
    assert phrases_of_size(2, pool, seed=0)[1] == 2


@pytest.mark.parametrize("phrases", [
    ["a", "b"], ["x"], [], ["東京", "東京都", "Москва", "Москвa", "🎉", "🎉🎉"], ["word " * 300, "word " * 299 + "x"],
])
def test_hard_inputs_pass_through_mining(phrases):
    rows, cols, scores = mine_candidates(phrases, SETTINGS)
    assert len(rows) == len(cols) == len(scores)
    assert all(phrases[r] != phrases[c] for r, c in zip(rows, cols))


def test_rules():
    edit = np.array([0.72, 0.90, 0.95])
    cos = np.array([0.67, 0.49, 0.89])
    assert hard_negative_mask(edit, cos, "max_cos", 0.8, 0.3).tolist() == [True, True, False]
    assert hard_negative_mask(edit, cos, "margin", 0.8, 0.3).tolist() == [False, True, False]


@pytest.mark.slow
def test_negatives_stage_on_the_example(make_params, tmp_path):
    phrases = tmp_path / "phrases.parquet"
    pl.DataFrame({"phrase": NYT_SET, "label_id": pl.Series([0] * len(NYT_SET), dtype=pl.Int16)}).write_parquet(phrases)
    candidates = tmp_path / "candidates.parquet"
    params = make_params(model__teacher=None)  # scored by the backbone, whose cosines the rule was set for
    stage.run_candidates(params, source=phrases, output=candidates, metrics=tmp_path / "c.json")
    variants = tmp_path / "variants.parquet"
    pl.DataFrame(schema=dict.fromkeys(("phrase", "level", "method", "variant"), pl.String)).write_parquet(variants)
    out = tmp_path / "hard_negatives.parquet"
    numbers = stage.run_negatives(params, source=phrases, candidates=candidates, output=out,
                                  metrics=tmp_path / "n.json", variants=variants)
    table = pl.read_parquet(out)
    of_nyt = set(table.filter(pl.col("phrase") == "The New York Times")["negative"].to_list())
    assert of_nyt == {"New York Post", "New York"}
    # no hard negative: one row with a null negative, never the phrase itself
    lonely = table.filter(pl.col("phrase") == "the capital of France")
    assert lonely.height == 1 and lonely["negative"][0] is None
    assert (table["phrase"] != table["negative"]).fill_null(True).all()
    assert numbers["phrases"] == len(NYT_SET) == table["phrase"].n_unique()
    meta = json.loads((tmp_path / "hard_negatives.meta.json").read_text())
    assert meta["rule"] == "cos <= 0.8" and meta["hard_negatives"] == numbers["hard_negatives"]

    stricter = make_params(negatives__min_edit_sim=0.8)
    fewer = stage.run_candidates(stricter, source=phrases, output=candidates, metrics=tmp_path / "c.json")
    assert fewer["pairs"] < json.loads((tmp_path / "n.json").read_text())["candidate_pairs"]


def test_a_phrases_own_variants_are_never_its_hard_negatives(make_params, tmp_path):
    from pearl.teacher.vectors import TeacherVectors

    phrases = ["The New York Times", "NY Times", "New York Post"]
    paths = {name: tmp_path / f"{name}.parquet" for name in ("typed", "candidates", "variants", "vectors")}
    pl.DataFrame({"phrase": phrases, "label_id": pl.Series([0] * 3, dtype=pl.Int16)}).write_parquet(paths["typed"])
    pl.DataFrame({"phrase": phrases[:1] * 2, "candidate": phrases[1:],
                  "edit_sim": pl.Series([0.8, 0.72], dtype=pl.Float32)}).write_parquet(paths["candidates"])
    # a view mined by the backbone (cos >= 0.8) that the teacher reads as unlike its phrase (cos 0 <= max_cos)
    pl.DataFrame({"phrase": phrases[:1], "level": ["phrase"], "method": ["mined"], "variant": ["NY Times"]}
                 ).write_parquet(paths["variants"])
    TeacherVectors("toy/teacher", phrases, np.eye(3, dtype=np.float32)).save(paths["vectors"], {})
    out = tmp_path / "hard_negatives.parquet"
    numbers = stage.run_negatives(make_params(model__teacher="toy/teacher"), paths["typed"], paths["candidates"], out,
                                  tmp_path / "n.json", paths["vectors"], variants=paths["variants"])
    assert pl.read_parquet(out).filter(pl.col("phrase") == phrases[0])["negative"].to_list() == ["New York Post"]
    meta = json.loads((tmp_path / "hard_negatives.meta.json").read_text())
    metrics = json.loads((tmp_path / "n.json").read_text())
    assert numbers["own_variants_removed"] == meta["own_variants_removed"] == metrics["own_variants_removed"] == 1


def test_the_mining_module_holds_only_what_the_pipeline_runs():
    """Recall checks and other helpers of tests and benchmarks live in benchmarks/, which no stage reads."""
    import ast
    import re
    from pathlib import Path

    source = Path(candidates.__file__).read_text()
    library = "\n".join(path.read_text() for path in Path(candidates.__file__).parents[1].rglob("*.py"))
    defined = [node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert [name for name in defined if len(re.findall(rf"\b{name}\b", library)) < 2] == []


def test_mining_leaves_the_processs_thread_count_as_it_found_it():
    """faiss and torch share the OpenMP runtime: a stage after candidates in the same process trained on two
    threads instead of one, to other bytes."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        candidates.character_neighbour_pairs(NYT_SET, dataclasses.replace(SETTINGS, n_threads=2))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
