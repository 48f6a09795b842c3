"""torchrun's path on CPU (gloo): two ranks give the single-process full-batch gradient."""

import contextlib
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from tests.test_train import _params, _toy_inputs


def _gradients(params, toy, world_size: int, rank: int) -> dict[str, torch.Tensor]:
    from pearl.train.data import Sampling, StepBatches, TrainingSet
    from pearl.train.distributed import average_gradients, close_world, init_world
    from pearl.train.loop import _phrase_step, model_config, teacher_inputs
    from pearl.model.phrase_model import PhraseModel

    world = init_world("cpu")
    assert world.size == world_size and world.rank == rank
    torch.manual_seed(0)
    model = PhraseModel(model_config(params))
    torch.nn.init.normal_(model.char.project.weight)
    model.eval()  # dropout masks would differ between one big pass and two shares
    teacher, _ = teacher_inputs(params, toy["teacher"])
    data = TrainingSet.load(toy["typed"], toy["variants"], toy["negatives"], 0.1, 3, teacher)
    batch = StepBatches(data, Sampling(3, 8, 2, {"char": 1.0, "token": 1.0, "phrase": 1.0}), model.tokenize, 0, 1)[0].phrases
    _phrase_step(model, batch, params, torch.device("cpu"), contextlib.nullcontext, world)
    average_gradients(model, world)
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    close_world(world)
    return grads


def _rank_main(rank, world_size, port, params, toy, out):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    torch.save(_gradients(params, toy, world_size, rank), out / f"rank{rank}.pt")


@pytest.mark.slow
@pytest.mark.parametrize("taught", [{}, {"model__teacher": "toy-teacher", "train__distill_weight": 1.0}],
                         ids=["plain", "distillation"])
def test_two_ranks_match_one_process(make_params, tiny_encoder, tmp_path, taught):
    toy = _toy_inputs(tmp_path)
    params = _params(make_params, tiny_encoder, tmp_path, **taught)
    single = _gradients(params, toy, 1, 0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_rank_main, args=(2, port, params, toy, tmp_path), nprocs=2, join=True)
    for rank in range(2):
        ranked = torch.load(tmp_path / f"rank{rank}.pt")
        assert ranked.keys() == single.keys() and len(single) > 20
        for name in single:
            assert torch.allclose(ranked[name], single[name], atol=1e-5), (rank, name)
