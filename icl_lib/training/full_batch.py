"""Full-batch L-BFGS: empirical risk minimisation on one fixed sample of prompts.

Where the population loss is very flat along some directions (inputs with small
variance, as in Ahn et al. 2023's experiment), Adam on fresh mini-batches creeps along
them, while L-BFGS reaches the minimiser of the sample loss. Chapter 2.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._checks import check_module, check_positive_int
from ..prompts import PromptBatch


def fit_full_batch(
    model: torch.nn.Module,
    batch: PromptBatch,
    loss: Callable[[torch.nn.Module, PromptBatch], torch.Tensor],
    *,
    max_iter: int = 200,
) -> list[float]:
    """Minimise ``loss(model, batch)`` on the fixed ``batch`` with L-BFGS; returns the
    losses."""
    check_module("model", model)
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    if not callable(loss):
        raise TypeError(
            "loss: expected a callable (model, batch) -> tensor, got "
            f"{type(loss).__name__}"
        )
    check_positive_int("max_iter", max_iter)
    param = next(model.parameters())
    batch = batch.to(device=param.device, dtype=param.dtype)
    optimiser = torch.optim.LBFGS(
        model.parameters(),
        lr=1.0,
        max_iter=max_iter,
        history_size=50,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        line_search_fn="strong_wolfe",
    )
    losses = []

    def closure():
        optimiser.zero_grad(set_to_none=True)
        value = loss(model, batch)
        value.backward()
        losses.append(value.item())
        return value

    model.train()
    optimiser.step(closure)
    model.eval()
    return losses
