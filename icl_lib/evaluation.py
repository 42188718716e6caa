"""Error of an in-context learner as a function of the number of context examples.

The curve ``k -> E[(prediction - y_{k+1})^2] / d`` is the book's basic measurement (Garg et al.
2022, Figure 2): the same prompts serve every learner and every ``k``, so curves are comparable
point by point. Used in chapter 1 and later chapters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ._checks import check_positive_int
from .tasks import RegressionBatch


def learner_error_curve(
    learner: Callable, batch: RegressionBatch, ks: Sequence[int], *, normalise: bool = True
) -> torch.Tensor:
    """Mean squared error of ``learner(xs[:, :k], ys[:, :k], xs[:, k]) `` against ``ys[:, k]``, per ``k``.

    Args:
        learner: ``f(xs (B, k, d), ys (B, k), x_query (B, d)) -> (B,)``, e.g. from :mod:`icl_lib.learners`.
        batch: prompts with at least ``max(ks) + 1`` points.
        ks: context sizes.
        normalise: divide by ``d`` (so that predicting 0 scores about 1 for ``w, x ~ N(0, I)``).

    Returns:
        errors of shape ``(len(ks),)``, float64.
    """
    out = []
    for k in ks:
        check_positive_int("ks[i]", k, minimum=0)
        xs, ys, xq, yq = batch.prompt(k)
        out.append(((learner(xs, ys, xq) - yq) ** 2).double().mean())
    errors = torch.stack(out)
    return errors / batch.dim if normalise else errors


@torch.no_grad()
def model_error_curve(model, batch: RegressionBatch, ks: Sequence[int], *, normalise: bool = True) -> torch.Tensor:
    """The same curve for a sequence model ``model(xs, ys) -> (B, n)`` that predicts every ``y_i``.

    One forward pass gives every context size; prediction ``k`` only sees the first ``k`` examples
    (the model is causal), so it is directly comparable with :func:`learner_error_curve`.
    """
    model.eval()
    pred = model(batch.xs, batch.ys)  # (B, n)
    sq = ((pred - batch.ys) ** 2).double().mean(0)  # (n,)
    errors = torch.stack([sq[k] for k in ks])
    return errors / batch.dim if normalise else errors
