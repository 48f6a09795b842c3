"""The character encoder (the paper's LOVE-style component): each word's UTF-8 bytes → a vector.

Bytes rather than a character vocabulary, so any script or emoji has an input id and nothing is
out of vocabulary. Per word: byte embeddings → convolutions of widths 2..5 → max over positions
(as LOVE's CNN variant). Word vectors are averaged over the phrase and projected to `dim`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

# Architecture constants, not params: the exported model must tokenise exactly as it trained.
MAX_WORDS = 16
MAX_WORD_BYTES = 24
PAD, BOW, EOW = 0, 1, 2  # byte b has id b + 3
VOCAB = 256 + 3


def char_ids(texts: list[str]) -> torch.Tensor:
    """(batch, words, bytes) int64 ids; a text without words gets one empty word (BOW, EOW)."""
    words = [(text.split() or [""])[:MAX_WORDS] for text in texts]
    width = max(len(w) for w in words)
    # numpy, not a torch.tensor per word: this runs in the DataLoader workers on every batch, and
    # the per-word tensors were a fifth of a batch's build time
    ids = np.zeros((len(texts), width, MAX_WORD_BYTES), dtype=np.int64)
    for i, phrase_words in enumerate(words):
        for j, word in enumerate(phrase_words):
            encoded = np.frombuffer(word.encode("utf-8")[: MAX_WORD_BYTES - 2], dtype=np.uint8)
            ids[i, j, 0], ids[i, j, len(encoded) + 1] = BOW, EOW
            ids[i, j, 1 : len(encoded) + 1] = encoded + 3
    return torch.from_numpy(ids)


class CharEncoder(nn.Module):
    def __init__(self, dim: int, byte_dim: int = 32, channels: int = 64, widths: tuple[int, ...] = (2, 3, 4, 5)):
        super().__init__()
        self.dim = dim
        self.embed = nn.Embedding(VOCAB, byte_dim, padding_idx=PAD)
        self.convs = nn.ModuleList(nn.Conv1d(byte_dim, channels, w, padding=w - 1) for w in widths)
        self.norm = nn.LayerNorm(channels * len(widths))
        self.project = nn.Linear(channels * len(widths), dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch, words, length = ids.shape
        flat = ids.reshape(batch * words, length)
        x = self.embed(flat).transpose(1, 2)  # (B*W, byte_dim, L)
        pad = (flat == PAD).unsqueeze(1)
        pooled = []
        for conv in self.convs:
            y = torch.relu(conv(x))[..., :length]  # output i sees bytes i-w+1..i
            pooled.append(y.masked_fill(pad, 0.0).amax(dim=2))
        word_vectors = self.norm(torch.cat(pooled, dim=1)).reshape(batch, words, -1)
        present = (ids[:, :, 0] != PAD).unsqueeze(-1).to(word_vectors.dtype)
        phrase = (word_vectors * present).sum(1) / present.sum(1).clamp(min=1.0)
        return self.project(phrase)


def combine(pooled: torch.Tensor, char: torch.Tensor | None, char_weight: float) -> torch.Tensor:
    """(u/|u|, w · v/|v|): the character vector's share of a cosine is fixed by w, not by how
    large its raw vector happens to grow (unscaled, it swamped the backbone within 300 steps)."""
    u = nn.functional.normalize(pooled, dim=-1)
    if char is None:
        return u
    return torch.cat([u, char_weight * nn.functional.normalize(char.to(u.dtype), dim=-1)], dim=-1)
