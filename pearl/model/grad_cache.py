"""Gradient caching (Gao et al., 2021): a large contrastive batch in small-memory chunks.

1. Encode the batch chunk by chunk without autograd; remember each chunk's RNG state.
2. Compute the loss on the detached vectors; its backward gives d loss / d vector, and the
   gradients of everything after the encoder (here the type head).
3. Re-encode each chunk with autograd under the same RNG state (same dropout masks) and
   backpropagate the cached vector gradients through it.
The parameter gradients equal those of one big backward pass; memory holds one chunk's graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


def _rng_state(device: torch.device) -> tuple:
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state: tuple, device: torch.device) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


def cached_backward(encode: Callable[[Any], torch.Tensor], chunks: Sequence[Any], device: torch.device,
                    loss_of: Callable[[torch.Tensor], Any]) -> Any:
    """Backpropagate loss_of(cat(encode(c) for c in chunks)) chunk by chunk; returns loss_of's result.

    `loss_of` takes the vectors and returns an object whose `.total` is the scalar loss.
    """
    states, pieces = [], []
    with torch.no_grad():
        for chunk in chunks:
            states.append(_rng_state(device))
            pieces.append(encode(chunk))
    after = _rng_state(device)
    vectors = torch.cat(pieces).detach().requires_grad_(True)
    result = loss_of(vectors)
    result.total.backward()
    cached = vectors.grad.split([len(p) for p in pieces])
    for chunk, state, grad in zip(chunks, states, cached):
        _set_rng_state(state, device)
        torch.autograd.backward(encode(chunk), grad_tensors=grad)
    _set_rng_state(after, device)  # the next step draws as it would have without caching
    return result
