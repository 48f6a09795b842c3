"""The teacher stage, its vectors, and their uses: negative scoring, the view filter, distillation."""

import errno

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
import torch

from pearl.errors import PearlError
from pearl.model.loss import cosine_logits, distill_correlation, distill_kl
from pearl.teacher.vectors import TeacherVectors

PHRASES = ["The New York Times", "New York Post", "New York", "adult male", "grown man", "river bank"]


def _inputs(tmp_path):
    paths = {name: tmp_path / f"{name}.parquet" for name in ("typed", "candidates", "variants")}
    pl.DataFrame({"phrase": PHRASES, "label_id": pl.Series([0] * len(PHRASES), dtype=pl.Int16)}).write_parquet(paths["typed"])
    pl.DataFrame({"phrase": PHRASES[:3], "candidate": ["New York Post", "New York", "New York City"],
                  "edit_sim": pl.Series([0.8, 0.7, 0.9], dtype=pl.Float32)}).write_parquet(paths["candidates"])
    pl.DataFrame({"phrase": PHRASES[:2], "level": ["token", "phrase"], "method": ["swap", "mined"],
                  "variant": ["Times New York The", "NY Post"]}).write_parquet(paths["variants"])
    return paths



@pytest.mark.parametrize("shard_rows", [None, 2], ids=["one file", "shards"])
def test_a_failed_write_leaves_the_previous_vectors_beside_their_own_teacher(tmp_path, monkeypatch, shard_rows):
    path = tmp_path / "vectors.parquet"
    TeacherVectors("old/teacher", PHRASES[:3], np.eye(3, dtype=np.float32)).save(path, {}, shard_rows)

    def disk_full(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", disk_full)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", disk_full)
    with pytest.raises(PearlError, match="could not be written"):
        TeacherVectors("new/teacher", PHRASES, np.eye(6, dtype=np.float32)).save(path, {}, shard_rows)
    assert len(TeacherVectors.load(path, "old/teacher")) == 3

@pytest.mark.slow
def test_the_stage_encodes_phrases_candidates_and_chosen_variants_once(make_params, tiny_encoder, tmp_path):
    from pearl.teacher.stage import run

    paths = _inputs(tmp_path)
    out = tmp_path / "teacher" / "vectors.parquet"
    params = make_params(model__teacher=str(tiny_encoder), teacher__variant_levels=["token"])
    numbers = run(params, paths["typed"], paths["candidates"], paths["variants"], out, tmp_path / "t.json")
    assert (numbers["phrases"], numbers["candidates"], numbers["token_variants"]) == (6, 1, 1)
    vectors = TeacherVectors.load(out, str(tiny_encoder))
    assert len(vectors) == 8 and "New York City" in vectors and "Times New York The" in vectors
    assert "NY Post" not in vectors  # the phrase level was not asked for
    assert np.allclose(np.linalg.norm(vectors.matrix, axis=1), 1, atol=1e-5)
    with pytest.raises(PearlError, match="run `dvc repro teacher`"):
        TeacherVectors.load(out, "sentence-transformers/all-mpnet-base-v2")
    with pytest.raises(PearlError, match="no teacher vector for 'unseen'"):
        vectors.vectors(["unseen"])

    # negatives are scored by the teacher's cached vectors, not the backbone
    from pearl.negatives.stage import run_negatives

    negatives = tmp_path / "hard_negatives.parquet"
    result = run_negatives(params, paths["typed"], paths["candidates"], negatives, tmp_path / "n.json", out,
                           paths["variants"])
    assert result["encoder"] == str(tiny_encoder)
    scored = pl.read_parquet(negatives).drop_nulls("negative")
    expected = vectors.pair_cosine(scored["phrase"].to_list(), scored["negative"].to_list())
    assert np.allclose(scored["cos"].to_numpy(), expected, atol=1e-6)

    none = run(make_params(model__teacher=None), paths["typed"], paths["candidates"], paths["variants"], out,
               tmp_path / "t.json")
    assert none == {"teacher": "none", "texts": 0} and pl.read_parquet(out).height == 0


def test_distillation_is_zero_when_the_student_ranks_like_the_teacher_and_finite_with_exclusions():
    torch.manual_seed(0)
    anchors, candidates = torch.randn(4, 8, requires_grad=True), torch.randn(6, 8)
    same = cosine_logits(anchors, candidates, 1.0).detach()
    assert distill_kl(anchors, candidates, same, None, 0.07).item() == pytest.approx(0, abs=1e-5)
    exclude = torch.zeros(4, 6, dtype=torch.bool)
    exclude[0, 3] = exclude[2, 1] = True
    other = torch.rand(4, 6) * 2 - 1
    loss = distill_kl(anchors, candidates, other, exclude, 0.07)
    loss.backward()
    assert loss.item() > 0.1 and torch.isfinite(anchors.grad).all()
    # neither an excluded candidate's teacher cosine nor the positive's matters
    moved = other.clone()
    moved[0, 3] = moved[1, 1] = 0.99
    assert distill_kl(anchors, candidates, moved, exclude, 0.07).item() == pytest.approx(loss.item(), rel=1e-6)
    moved[1, 2] = 0.99
    assert distill_kl(anchors, candidates, moved, exclude, 0.07).item() != pytest.approx(loss.item(), rel=1e-3)


def test_correlation_distillation_ignores_each_rows_offset_and_scale_but_not_its_order():
    torch.manual_seed(0)
    anchors, candidates = torch.randn(4, 8, requires_grad=True), torch.randn(6, 8)
    student = cosine_logits(anchors, candidates, 1.0).detach()
    exclude = torch.zeros(4, 6, dtype=torch.bool)
    exclude[0, 3] = exclude[2, 1] = True
    # a teacher whose cosines are the student's shifted and scaled per row: nothing to learn
    rescaled = 0.3 * student - torch.arange(4.0).unsqueeze(1) * 0.1
    assert distill_correlation(anchors, candidates, rescaled, exclude).item() == pytest.approx(0, abs=1e-5)
    other = torch.rand(4, 6) * 2 - 1
    loss = distill_correlation(anchors, candidates, other, exclude)
    loss.backward()
    assert 0.1 < loss.item() <= 2 and torch.isfinite(anchors.grad).all() and anchors.grad.abs().sum() > 0
    # neither an excluded candidate's teacher cosine nor the positive's matters; another one does
    moved = other.clone()
    moved[0, 3] = moved[1, 1] = 0.99
    assert distill_correlation(anchors, candidates, moved, exclude).item() == pytest.approx(loss.item(), rel=1e-6)
    moved[1, 2] = 0.99
    assert distill_correlation(anchors, candidates, moved, exclude).item() != pytest.approx(loss.item(), rel=1e-3)


def test_view_filter_keeps_views_the_teacher_reads_as_their_phrase(tmp_path):
    from pearl.train.data import TrainingSet, ViewFilter

    phrases = ["alpha beta", "gamma delta", "epsilon", "zeta eta"]
    pl.DataFrame({"phrase": phrases, "label_id": pl.Series([0, 1, 0, 1], dtype=pl.Int16)}).write_parquet(tmp_path / "t.parquet")
    variants = pl.DataFrame({"phrase": phrases[:2] * 2, "level": ["token"] * 2 + ["phrase"] * 2,
                             "method": ["m"] * 4, "variant": ["beta alpha", "delta gamma", "alpha", "omega"]})
    variants.write_parquet(tmp_path / "v.parquet")
    pl.DataFrame({"phrase": phrases, "negative": [None] * 4}, schema={"phrase": pl.String, "negative": pl.String}
                 ).write_parquet(tmp_path / "n.parquet")
    basis = np.eye(4, dtype=np.float32)
    # each phrase its own axis; "beta alpha" and "alpha" close to theirs, "delta gamma" and "omega" not
    texts = phrases + ["beta alpha", "delta gamma", "alpha", "omega"]
    close = (basis[0] + 0.2 * basis[1]) / np.linalg.norm(basis[0] + 0.2 * basis[1])
    teacher = TeacherVectors("t", texts, np.stack([*basis, basis[0], basis[2], close, basis[3]]))
    view_filter = ViewFilter(0.9, ("token", "phrase"), teacher)
    data = TrainingSet.load(tmp_path / "t.parquet", tmp_path / "v.parquet", tmp_path / "n.parquet", 0.25, 0,
                            None, view_filter)
    assert data.variants["token"][0] == ["beta alpha"] and data.variants["token"][1] == []
    assert data.variants["phrase"][0] == ["alpha"] and data.variants["phrase"][1] == []
    assert view_filter.kept == {"token": 1, "phrase": 1} and view_filter.dropped == {"token": 1, "phrase": 1}

    unencoded = TeacherVectors("t", phrases, basis)
    with pytest.raises(PearlError, match="add token to teacher.variant_levels"):
        TrainingSet.load(tmp_path / "t.parquet", tmp_path / "v.parquet", tmp_path / "n.parquet", 0.25, 0,
                         None, ViewFilter(0.9, ("token",), unencoded))


def test_batches_carry_the_teachers_cosines_with_each_view_scored_as_its_phrase(tmp_path):
    from pearl.train.data import Sampling, TrainingSet

    phrases = [f"phrase {c}" for c in "abcdefghij"]
    pl.DataFrame({"phrase": phrases, "label_id": pl.Series([0] * 10, dtype=pl.Int16)}).write_parquet(tmp_path / "t.parquet")
    pl.DataFrame({"phrase": phrases, "level": ["token"] * 10, "method": ["m"] * 10,
                  "variant": [p.upper() for p in phrases]}).write_parquet(tmp_path / "v.parquet")
    pl.DataFrame({"phrase": phrases, "negative": phrases[1:] + phrases[:1]}).write_parquet(tmp_path / "n.parquet")
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(10, 16)).astype(np.float32)
    teacher = TeacherVectors("t", phrases, matrix / np.linalg.norm(matrix, axis=1, keepdims=True))
    data = TrainingSet.load(tmp_path / "t.parquet", tmp_path / "v.parquet", tmp_path / "n.parquet", 0.1, 0, teacher)
    texts, n, _, _, cos, _ = data.batch_texts(Sampling(0, 4, 1, {"char": 0.0, "token": 1.0, "phrase": 0.0}), 0)
    assert cos.shape == (n, len(texts) - n)
    assert texts[n:2 * n] == [a.upper() for a in texts[:n]] and np.allclose(np.diag(cos[:, :n]), 1, atol=1e-6)
    anchors, negatives = texts[:n], texts[2 * n:]
    assert np.allclose(cos[:, n:], teacher.vectors(anchors) @ teacher.vectors(negatives).T, atol=1e-6)
