"""The phrase model's parts: character encoder, loss, gradient caching, averaging."""

import pytest
import torch

from pearl.model.averaging import average_state
from pearl.model.char_encoder import BOW, EOW, MAX_WORD_BYTES, MAX_WORDS, CharEncoder, char_ids, combine
from pearl.model.grad_cache import cached_backward
from pearl.model.loss import info_nce, pearl_loss
from pearl.model.phrase_model import ModelConfig, PhraseModel
from pearl.errors import PearlError


def test_char_ids_cover_any_script_and_clip_long_input():
    ids = char_ids(["ab", "東京 🗾", "", "w " * 40, "x" * 100])
    assert ids.shape == (5, MAX_WORDS, MAX_WORD_BYTES)
    assert ids[0, 0, :4].tolist() == [BOW, ord("a") + 3, ord("b") + 3, EOW]
    assert ids[1, 0, 1:7].tolist() == [b + 3 for b in "東京".encode()]  # bytes, never out of vocabulary
    assert ids[2, 0, :2].tolist() == [BOW, EOW]  # an empty text is one empty word
    assert (ids[3, :, 0] == BOW).all()  # 40 words clipped to MAX_WORDS
    assert ids[4, 0, -1] == EOW


def test_char_vector_has_a_fixed_share_of_the_embedding():
    torch.manual_seed(0)
    encoder = CharEncoder(8)
    v = encoder(char_ids(["New York", "NYTimes", "York New"]))
    assert not torch.allclose(v[0], v[1])
    assert torch.allclose(v[0], v[2], atol=1e-6)  # words are averaged: word order is the backbone's job
    u = torch.randn(3, 5) * 100
    joint = combine(u, v, 0.5)
    assert joint.shape == (3, 13)
    assert torch.allclose(joint[:, :5].norm(dim=-1), torch.ones(3))
    assert torch.allclose(joint[:, 5:].norm(dim=-1), torch.full((3,), 0.5))
    assert torch.allclose(combine(u, None, 0.5), torch.nn.functional.normalize(u, dim=-1))


def test_info_nce_matches_hand_computation_and_drops_excluded():
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    candidates = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # third: same text as anchor 0's positive
    t = 0.5
    logits = anchors @ candidates.T / t
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1]))
    assert torch.isclose(info_nce(anchors, candidates, None, t), expected)
    exclude = torch.tensor([[False, False, True], [False, False, False]])
    masked = torch.nn.functional.cross_entropy(logits.masked_fill(exclude, float("-inf")), torch.tensor([0, 1]))
    assert torch.isclose(info_nce(anchors, candidates, exclude, t), masked)
    assert info_nce(anchors, candidates, exclude, t) < expected


def test_info_nce_logits_stay_fp32_under_bf16_autocast():
    torch.manual_seed(0)
    anchors, candidates = torch.randn(16, 32), torch.randn(40, 32)
    exact = info_nce(anchors, candidates, None, 0.07)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        autocast = info_nce(anchors, candidates, None, 0.07)
    assert autocast.dtype == torch.float32
    assert torch.isclose(autocast, exact, atol=1e-5)  # bf16 logits at τ = 0.07 are off by ~0.05


def test_each_rank_and_step_draws_its_own_dropout_masks():
    from pearl.train.loop import seed_dropout

    def mask(rank, step):
        seed_dropout(42, rank, step)
        return torch.nn.functional.dropout(torch.ones(64), 0.5)

    assert torch.equal(mask(0, 3), mask(0, 3))
    assert not torch.equal(mask(0, 3), mask(1, 3))
    assert not torch.equal(mask(0, 3), mask(0, 4))


def test_type_weight_zero_leaves_the_contrastive_loss_alone():
    torch.manual_seed(0)
    vectors, head = torch.randn(7, 4), torch.nn.Linear(4, 95)
    labels = torch.tensor([1, 2, 3])
    off = pearl_loss(vectors, 3, labels, None, head, 0.07, 0.0)
    on = pearl_loss(vectors, 3, labels, None, head, 0.07, 2.0)
    assert torch.isclose(off.total, off.contrastive)
    assert torch.isclose(on.total, on.contrastive + 2.0 * on.type_loss)
    no_contrastive = pearl_loss(vectors, 3, labels, None, head, 0.07, 2.0, contrastive_weight=0.0)
    assert torch.isclose(no_contrastive.total, 2.0 * on.type_loss)
    assert torch.isclose(no_contrastive.contrastive, on.contrastive)  # still logged


def test_grad_cache_gives_the_loss_and_gradients_of_one_big_pass(tiny_encoder):
    texts = ["new york", "york new", "the times", "times", "a b c", "zurich", "cafe", "naive art", "x", "y"]
    labels = torch.tensor([0, 1, 2, 3])
    exclude = torch.zeros(4, 6, dtype=torch.bool)
    exclude[0, 5] = True

    def run(cached: bool):
        torch.manual_seed(0)
        model = PhraseModel(ModelConfig(str(tiny_encoder), "", 16, True, 8, 0.5))
        torch.nn.init.normal_(model.char.project.weight)
        model.eval()  # no dropout: one big pass and chunks then see the same network
        features = model.tokenize(texts)

        def loss_of(vectors):
            return pearl_loss(vectors, 4, labels, exclude, model.type_head, 0.07, 1.0)

        if cached:
            spans = [(0, 3), (3, 6), (6, 9), (9, 10)]
            parts = cached_backward(lambda s: model({k: v[s[0]:s[1]] for k, v in features.items()}), spans,
                                    torch.device("cpu"), loss_of)
        else:
            parts = loss_of(model(features))
            parts.total.backward()
        return parts.total.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    plain_loss, plain = run(cached=False)
    cached_loss, cached = run(cached=True)
    assert torch.isclose(plain_loss, cached_loss, atol=1e-6)
    assert plain.keys() == cached.keys() and len(plain) > 20
    for name in plain:
        assert torch.allclose(plain[name], cached[name], atol=1e-5), name


def test_average_moves_float_tensors_only():
    original = {"w": torch.zeros(2), "ids": torch.arange(3)}
    tuned = {"w": torch.ones(2), "ids": torch.arange(3) + 10}
    merged, averaged = average_state(original, tuned, 0.5)
    assert torch.equal(merged["w"], torch.full((2,), 0.5)) and averaged == 1
    assert torch.equal(merged["ids"], tuned["ids"])
    assert torch.equal(average_state(original, tuned, 0.0)[0]["w"], original["w"])
    with pytest.raises(PearlError, match="differ in tensors"):
        average_state(original, {"w": torch.ones(2)}, 0.5)


def test_unloadable_backbone_is_one_line_error(tmp_path):
    with pytest.raises(PearlError, match="model.backbone=.*missing': no such folder"):
        PhraseModel(ModelConfig(str(tmp_path / "missing"), "", 16, False, 8, 0.5))


def test_damaged_head_weights_fail_before_the_backbone_loads(tiny_encoder, tmp_path, monkeypatch):
    from pearl.errors import MissingModelError
    from pearl.model.finetuned import EXTRA_WEIGHTS

    PhraseModel(ModelConfig(str(tiny_encoder), "", 16, True, 8, 0.5)).save(tmp_path)
    heads = tmp_path / EXTRA_WEIGHTS
    heads.write_bytes(heads.read_bytes()[:100])

    def no_backbone(*args, **kwargs):
        raise AssertionError("the backbone loaded before the head weights were read")

    monkeypatch.setattr(PhraseModel, "__init__", no_backbone)
    with pytest.raises(MissingModelError, match="the saved model is unreadable") as error:
        PhraseModel.load(tmp_path)
    assert "AssertionError" not in str(error.value)
