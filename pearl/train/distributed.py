"""Multi-GPU training under `torchrun`: process group set-up and an all-gather that keeps gradients.

Every rank builds the same global batch, encodes its contiguous share of the texts and gathers
all vectors, so each rank computes the full-batch loss. `torch.distributed.nn.all_gather`
carries gradients back to the rank that produced each vector (summed over the ranks' identical
losses), and averaging the gradients over ranks then yields exactly the single-process
full-batch gradient. The averaging is one all-reduce after backward rather than DDP's hooks:
DDP's bucketed all-reduces fire during backward and interleave with the gather's own backward
collectives, which gave wrong gradients on gloo (tests/test_distributed.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_world(device: str) -> World:
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if device == "cuda" else "gloo")
    return World(dist.get_rank(), size, local_rank)


def share(n: int, world: World) -> tuple[int, int, int]:
    """(start, stop, padded share) of n rows for this rank."""
    per = -(-n // world.size)
    start = min(world.rank * per, n)
    return start, min(start + per, n), per


def gather_rows(local: torch.Tensor, n: int, world: World) -> torch.Tensor:
    """All ranks' rows (rank order, n in total) with gradients flowing back to their owners."""
    if world.size == 1:
        return local
    from torch.distributed.nn.functional import all_gather

    _, _, per = share(n, world)
    padded = torch.cat([local, local.new_zeros((per - len(local), *local.shape[1:]))]) if len(local) < per else local
    return torch.cat(all_gather(padded))[:n]  # only trailing ranks are short, so padding is last


def close_world(world: World) -> None:
    if world.size > 1:
        dist.destroy_process_group()


def average_gradients(model: torch.nn.Module, world: World) -> None:
    """Mean of each gradient over ranks, in one flat all-reduce."""
    if world.size == 1:
        return
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world.size
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
