"""The MLP probe of the classification tasks: frozen features, one hidden layer, early stopping."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class ProbeSettings:
    hidden: int = 256
    lr: float = 1e-4
    batch_size: int = 200
    max_epochs: int = 100
    patience: int = 5


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
) -> float:
    """Test accuracy of the probe at the epoch with the best validation accuracy."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    (x_tr, y_tr), (x_va, y_va), (x_te, y_te) = (
        (torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), torch.from_numpy(np.asarray(y, dtype=np.int64)))
        for x, y in (train, valid, test)
    )
    model = _model(x_tr.shape[1], classes, settings.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr)
    loss_fn = nn.BCEWithLogitsLoss() if classes == 2 else nn.CrossEntropyLoss()
    best, best_state, waited = -1.0, None, 0
    for _ in range(settings.max_epochs):
        model.train()
        order = torch.randperm(len(x_tr), generator=generator)
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
    return _accuracy(model, x_te, y_te, classes)
