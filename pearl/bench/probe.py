"""The MLP probe of the classification tasks: frozen features, one hidden layer, early stopping,
and the learning rate chosen on the probe's own validation split."""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from pearl.bench.probe_settings import ProbeResult, ProbeSettings
from pearl.device import resolve_device


def _model(dim: int, classes: int, hidden: int) -> nn.Module:
    # Two classes: one logit and a sigmoid (BCE), as in Phrase-BERT's and PEARL's probe.
    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 1 if classes == 2 else classes))


def _predict(model: nn.Module, x: torch.Tensor, classes: int) -> torch.Tensor:
    with torch.no_grad():
        logits = model(x)
    return (logits.squeeze(1) > 0).long() if classes == 2 else logits.argmax(1)


def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, classes: int) -> float:
    return float((_predict(model, x, classes) == y).float().mean())


def probe_accuracy(
    train: tuple[np.ndarray, np.ndarray],
    valid: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    classes: int,
    seed: int,
    settings: ProbeSettings,
) -> ProbeResult:
    """Test accuracy of the probe whose lr reached the best validation accuracy (the first lr on
    a tie), at its best validation epoch: test labels never choose anything."""
    device = resolve_device(settings.device)
    tensors = [
        (torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device),
         torch.from_numpy(np.asarray(y, dtype=np.int64)).to(device))
        for x, y in (train, valid, test)
    ]
    best_valid, chosen = -1.0, None
    for lr in settings.lrs:
        valid_accuracy, model = _fit(*tensors[:2], classes, seed, lr, settings)
        if valid_accuracy > best_valid:
            best_valid, chosen = valid_accuracy, (lr, model)
    lr, model = chosen
    return ProbeResult(_accuracy(model, *tensors[2], classes), lr)


def _fit(train: tuple[torch.Tensor, torch.Tensor], valid: tuple[torch.Tensor, torch.Tensor], classes: int,
         seed: int, lr: float, settings: ProbeSettings) -> tuple[float, nn.Module]:
    """The model at its best validation epoch, and that accuracy."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    (x_tr, y_tr), (x_va, y_va) = train, valid
    model = _model(x_tr.shape[1], classes, settings.hidden).to(x_tr.device)  # initialised on the CPU, as without a GPU
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss() if classes == 2 else nn.CrossEntropyLoss()
    best, best_state, waited = -1.0, None, 0
    for _ in range(settings.max_epochs):
        model.train()
        order = torch.randperm(len(x_tr), generator=generator).to(x_tr.device)
        for start in range(0, len(order), settings.batch_size):
            batch = order[start:start + settings.batch_size]
            logits = model(x_tr[batch])
            target = y_tr[batch]
            loss = loss_fn(logits.squeeze(1), target.float()) if classes == 2 else loss_fn(logits, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        accuracy = _accuracy(model, x_va, y_va, classes)
        if accuracy > best:
            best, best_state, waited = accuracy, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= settings.patience:
                break
    model.load_state_dict(best_state)
    return best, model
