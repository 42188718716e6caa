"""The bootstrap standard error of a statistic of sampled prompts.

A claim decided on sampled prompts carries the standard error of its number
(:mod:`icl_lib.claims`). For a mean that is the sample standard deviation over sqrt(n);
for a ratio of means, a maximum over context sizes, or a difference of two learners on
the same prompts, it is the bootstrap's (Efron and Tibshirani 1993, ch. 6): draw the
``n`` prompts with replacement, recompute the statistic, and take the standard deviation
over the draws. A *paired* bootstrap draws the same rows for every learner, so the
prompts' shared difficulty cancels in a difference or a ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._checks import check_positive_int


def bootstrap_se(
    statistic: Callable[[torch.Tensor], object],
    n: int,
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> float | np.ndarray:
    """Standard deviation of ``statistic(rows)`` over ``resamples`` draws of ``n``
    row indices with replacement (a LongTensor of shape ``(n,)`` each draw).

    ``statistic`` indexes every learner's per-prompt numbers with the same ``rows``
    (which makes the bootstrap paired) and returns a number, or an array of numbers
    (then the result is an array of their standard errors, shape of one return).
    Deterministic for a given ``seed``.
    """
    if not callable(statistic):
        raise TypeError(
            f"statistic: expected a function of the resampled rows, got "
            f"{type(statistic).__name__}"
        )
    n = check_positive_int("n", n, minimum=2)
    resamples = check_positive_int("resamples", resamples, minimum=2)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed: expected an int >= 0, got {seed}")
    generator = torch.Generator().manual_seed(seed)
    draws = torch.randint(0, n, (resamples, n), generator=generator)
    values = []
    for rows in draws:
        value = statistic(rows)
        value = value.detach().cpu().numpy() if torch.is_tensor(value) else value
        value = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(value)):
            raise ValueError(
                f"statistic: expected finite values on every resample, got {value}"
            )
        values.append(value)
    shapes = {v.shape for v in values}
    if len(shapes) != 1:
        raise ValueError(
            f"statistic: expected the same shape on every resample, got {shapes}"
        )
    se = np.std(np.stack(values), axis=0, ddof=1)
    return float(se) if se.ndim == 0 else se


def bootstrap_se_of_means(
    statistic: Callable[..., torch.Tensor],
    columns: Sequence[torch.Tensor],
    *,
    resamples: int = 400,
    seed: int = 0,
) -> float | np.ndarray:
    """Standard error of ``statistic(*means)``, where ``means`` are the column means
    of the tensors in ``columns`` (each of shape ``(n, ...)``, one row per prompt or
    group of prompts) over the same resampled rows: a paired bootstrap, vectorised.

    ``statistic`` receives one tensor per column, of shape ``(resamples, ...)`` (a
    resample's mean in each row) and returns a tensor of shape ``(resamples,)`` or
    ``(resamples, m)``; the result is its standard deviation over the resamples, a
    float or an array of shape ``(m,)``. Deterministic for a given ``seed``.
    """
    if not callable(statistic):
        raise TypeError(
            f"statistic: expected a function of the resampled means, got "
            f"{type(statistic).__name__}"
        )
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence):
        raise TypeError(
            f"columns: expected a list of tensors, got {type(columns).__name__}"
        )
    if not columns:
        raise ValueError("columns: expected at least one tensor of per-row numbers")
    for i, column in enumerate(columns):
        if not torch.is_tensor(column) or column.ndim < 1:
            raise TypeError(
                f"columns: expected tensors with one row per prompt, got "
                f"{type(column).__name__} at position {i}"
            )
        if not torch.isfinite(column).all():
            raise ValueError(f"columns: expected finite values, column {i} has some")
    n = columns[0].shape[0]
    if any(column.shape[0] != n for column in columns):
        raise ValueError(
            f"columns: expected the same number of rows in each (paired), got "
            f"{[column.shape[0] for column in columns]}"
        )
    check_positive_int("rows of columns", n, minimum=2)
    resamples = check_positive_int("resamples", resamples, minimum=2)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected an int >= 0, got {seed!r}")
    rows = torch.randint(
        n, (resamples, n), generator=torch.Generator().manual_seed(seed)
    )
    # Each resample as the counts of its rows: the mean is a weighted sum.
    weights = torch.zeros(resamples, n, dtype=torch.float64)
    weights.scatter_add_(1, rows, torch.ones(resamples, n, dtype=torch.float64))
    means = [
        (weights @ column.double().reshape(n, -1) / n).reshape(
            resamples, *column.shape[1:]
        )
        for column in columns
    ]
    values = torch.as_tensor(statistic(*means), dtype=torch.float64)
    if values.ndim == 0 or values.shape[0] != resamples:
        raise ValueError(
            f"statistic: expected one value per resample (first dimension "
            f"{resamples}), got shape {tuple(values.shape)}"
        )
    if not torch.isfinite(values).all():
        raise ValueError("statistic: expected finite values on every resample")
    se = values.std(0).numpy()
    return float(se) if se.ndim == 0 else se
