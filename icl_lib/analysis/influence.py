"""How much each example of the context moves a prediction: the label influence.

For a predictor ``f`` and a prompt with ``k`` examples, the influence of example ``j``
is ``|d f(x_query) / d y_j|``, the sensitivity of the prediction to that label. For
least squares it is ``|x_query^T (X^T X)^{-1} x_j|``, and because the examples of a
prompt are exchangeable its mean over prompts is the same for every position ``j``. A
trained model that ignores position ``j`` has influence near 0 there, whatever its
error: the probe that found the positions the book's first models skipped.
"""

from __future__ import annotations

import torch

from .._checks import check_positive_int
from ..prompts import PromptBatch


def label_influence(predictor, batch: PromptBatch, k: int) -> torch.Tensor:
    """Mean over prompts of ``|d prediction / d y_j|`` for ``j = 0..k-1``: ``(k,)``.

    The prediction is ``predictor.predict(xs[:, :k], ys[:, :k], xs[:, k])`` (any
    differentiable predictor: a model, or a learner of :mod:`icl_lib.learners` wrapped
    with ``predict``); ``batch`` must hold more than ``k`` points.
    """
    return _label_influence(predictor, batch, k, "predictor")


def _label_influence(predictor, batch, k: int, name: str) -> torch.Tensor:
    """:func:`label_influence`, an error naming the predictor's argument ``name``."""
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    check_positive_int("k", k)
    if k >= batch.n_points:
        raise ValueError(
            f"k: expected fewer than the batch's {batch.n_points} points, got {k}"
        )
    predict = getattr(predictor, "predict", predictor)
    if not callable(predict):
        raise TypeError(
            f"{name}: expected a model with predict(xs, ys, x_query) or a callable, "
            f"got {type(predictor).__name__}"
        )
    ys = batch.ys[:, :k].detach().clone().requires_grad_(True)
    with torch.enable_grad():
        prediction = predict(batch.xs[:, :k], ys, batch.xs[:, k])
        # Prompts are independent, so the gradient of the sum is each prompt's own.
        (grad,) = torch.autograd.grad(prediction.sum(), ys)
    return grad.abs().mean(0).detach()


def influence_ratio(predictor, reference, batch: PromptBatch, k: int) -> torch.Tensor:
    """``label_influence(predictor) / label_influence(reference)`` per position
    ``j < k``: ``(k,)``, 1 where the predictor uses example ``j`` as the reference
    does, near 0 where it ignores it."""
    return label_influence(predictor, batch, k) / _label_influence(
        reference, batch, k, "reference"
    )
