"""Embedder: batches cut by token count, vectors as sentence-transformers gives them, in the input order."""

import numpy as np

from pearl.embedder import Embedder, token_sorted_batches

# the tiny tokenizer reads characters as tokens and skips spaces: characters and tokens disagree on the order
TEXTS = ["a b c d e f", "abcdefgh", "xy", "x y z w", "abcdefghijk", "q", "abcdefgh", "p q"]


def test_batches_run_longest_first_by_tokens_and_cover_each_text_once(tiny_encoder):
    embedder = Embedder(str(tiny_encoder), "", 3, 64, "cpu")
    model = embedder.model
    batches = token_sorted_batches(model, TEXTS, 3)
    tokens = [len(ids) for ids in model.tokenizer(TEXTS)["input_ids"]]
    order = np.concatenate(batches)
    assert sorted(order.tolist()) == list(range(len(TEXTS)))
    assert [len(b) for b in batches] == [3, 3, 2]
    assert [tokens[i] for i in order] == sorted(tokens, reverse=True)
    by_chars = np.argsort([-len(t) for t in TEXTS], kind="stable")
    padded = lambda order: sum(len(b) * max(tokens[i] for i in b) for b in np.array_split(order, [3, 6]))  # noqa: E731
    assert padded(order) < padded(by_chars)
    # texts that fit in one batch keep their order: that batch's padding is the same in any order
    assert [b.tolist() for b in token_sorted_batches(model, TEXTS, len(TEXTS))] == [list(range(len(TEXTS)))]


def test_vectors_match_one_sentence_transformers_call_in_the_input_order(tiny_encoder):
    embedder = Embedder(str(tiny_encoder), "", 3, 64, "cpu")
    expected = embedder.model.encode(TEXTS, batch_size=len(TEXTS), normalize_embeddings=True)
    vectors = embedder.embed(TEXTS)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
