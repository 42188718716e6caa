"""Error stability, measured: how much one replaced example moves a prediction.

Li, Ildiz, Papailiopoulos and Oymak (ICML 2023) call an in-context learner stable when
replacing one of the ``m`` examples of its prompt moves its loss by at most ``K / m``.
:func:`replacement_stability` measures the mean change of the prediction and of the
squared loss at the query for every context size ``m``, for any predictor (a learner or
a model); :func:`replace_example` makes the perturbed prompts, either a fresh example of
the same task or Li et al.'s adversarial one (their ``eval_batch_robust``: the label's
sign flipped). Chapter 3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from .._checks import check_bool, check_positive_int
from ..runtime import make_generator
from ..tasks import RegressionBatch
from .curves import _context_sizes, predictions


def replace_example(
    batch: RegressionBatch, position: int, *, seed=0, adversarial: bool = False
) -> RegressionBatch:
    """The same prompts with example ``position`` (0-based) replaced in every prompt.

    The new input is ``x' ~ N(0, I)`` and its label ``y' = <w, x'> + sigma eps`` with
    the prompt's own task ``w`` and noise ``sigma``; ``adversarial`` flips its sign,
    ``y' = -(<w, x'> + sigma eps)`` (Li et al.'s test of robustness). Every other
    example is unchanged.
    """
    if not isinstance(batch, RegressionBatch):
        raise TypeError(
            f"batch: expected a RegressionBatch, got {type(batch).__name__}"
        )
    position = check_positive_int("position", position, minimum=0)
    if position >= batch.n_points:
        raise ValueError(
            f"position: expected an index below n_points = {batch.n_points}, got "
            f"{position}"
        )
    adversarial = check_bool("adversarial", adversarial)
    gen = make_generator(seed)
    B, _, d = batch.xs.shape
    x_new = torch.randn(B, d, generator=gen, dtype=batch.xs.dtype)
    eps = torch.randn(B, generator=gen, dtype=batch.xs.dtype)
    x_new, eps = x_new.to(batch.xs.device), eps.to(batch.xs.device)
    y_new = (x_new * batch.w).sum(-1) + batch.noise_std * eps
    if adversarial:
        y_new = -y_new
    xs, ys = batch.xs.clone(), batch.ys.clone()
    xs[:, position], ys[:, position] = x_new, y_new
    return dataclasses.replace(batch, xs=xs, ys=ys)


class StabilityCurve(NamedTuple):
    """Mean effect of replacing one example, per context size ``m`` (float64, CPU).

    ``prediction_change[i] = E|y_hat' - y_hat|`` and
    ``loss_change[i] = E|(y_hat' - y)^2 - (y_hat - y)^2|`` at the query that follows
    ``ms[i]`` examples. ``prompt_prediction_change`` and ``prompt_loss_change`` hold
    the same changes prompt by prompt, ``(B, len(ms))``, whose means over prompts
    are the two curves (for standard errors by resampling prompts); None for a
    curve built from means alone.
    """

    ms: np.ndarray
    prediction_change: np.ndarray
    loss_change: np.ndarray
    prompt_prediction_change: np.ndarray | None = None
    prompt_loss_change: np.ndarray | None = None


def replacement_stability(
    predictor,
    batch: RegressionBatch,
    ms: Sequence[int],
    *,
    position: int | str = 0,
    seed=0,
    adversarial: bool = False,
) -> StabilityCurve:
    """Replace one example and measure how the prediction of the next query moves.

    Args:
        predictor: a learner or a model (see :func:`icl_lib.analysis.predictions`).
        batch: prompts with at least ``max(ms) + 1`` points.
        ms: context sizes ``m``; the query is example ``m`` (0-based).
        position: the replaced example, an index below ``min(ms)``, or ``"last"`` for
            the example just before the query (index ``m - 1``).
        seed: fixes the replacement examples.
        adversarial: flip the new label's sign (see :func:`replace_example`).
    """
    ms = _context_sizes(batch, ms, "ms")  # numpy integers too (an np.arange)
    if min(ms) < 1:
        raise ValueError(
            f"ms[i]: expected context sizes >= 1 (an example to replace), got {min(ms)}"
        )
    if position != "last":
        position = check_positive_int("position", position, minimum=0)
        if position >= min(ms):
            raise ValueError(
                f"position: expected an index below min(ms) = {min(ms)} (or 'last'), "
                f"got {position}"
            )
    before = predictions(predictor, batch, ms)  # (B, len(ms))
    if position == "last":
        after = torch.cat(
            [
                predictions(
                    predictor,
                    replace_example(batch, m - 1, seed=seed, adversarial=adversarial),
                    [m],
                )
                for m in ms
            ],
            dim=1,
        )
    else:
        perturbed = replace_example(batch, position, seed=seed, adversarial=adversarial)
        after = predictions(predictor, perturbed, ms)
    target = batch.ys[:, ms]
    pred_change = (after - before).abs().double().cpu().numpy()
    loss_change = ((after - target) ** 2 - (before - target) ** 2).abs().double()
    loss_change = loss_change.cpu().numpy()
    return StabilityCurve(
        np.asarray(ms),
        pred_change.mean(0),
        loss_change.mean(0),
        pred_change,
        loss_change,
    )


def dilution_ratio(curve: StabilityCurve, start: int, stop: int) -> float:
    """``stop * change(stop) / (start * change(start))`` for the mean change of the
    prediction: 1 for a learner whose change falls like ``K / m``, ``sqrt(stop /
    start)`` for one whose change falls like ``m^(-1/2)``."""
    if not isinstance(curve, StabilityCurve):
        raise TypeError(f"curve: expected a StabilityCurve, got {type(curve).__name__}")
    ms = list(curve.ms)
    for name, m in (("start", start), ("stop", stop)):
        if m not in ms:
            raise ValueError(f"{name}: expected one of the curve's sizes {ms}, got {m}")
    change = curve.prediction_change
    return float(stop * change[ms.index(stop)] / (start * change[ms.index(start)]))


def _float_array(name: str, values) -> np.ndarray:
    """A sequence of numbers as a float array, or an error naming it."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name}: expected a sequence of numbers, got a string")
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{name}: expected a sequence of numbers, got {type(values).__name__}"
        ) from error


def loglog_slope(ms: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``log values`` against ``log ms`` (-1 for ``K / m``)."""
    ms, values = _float_array("ms", ms), _float_array("values", values)
    if ms.shape != values.shape or ms.ndim != 1 or ms.size < 2:
        raise ValueError(
            "values: expected a 1-D array of the shape of ms, with at least 2 points, "
            f"got shapes {values.shape} and {ms.shape}"
        )
    for name, array in (("ms", ms), ("values", values)):
        if not (np.all(np.isfinite(array)) and np.all(array > 0)):
            raise ValueError(
                f"{name}: expected finite positive numbers (a log-log fit), got "
                f"{array[~(np.isfinite(array) & (array > 0))][:3].tolist()}"
            )
    return float(np.polyfit(np.log(ms), np.log(values), 1)[0])


def position_influence(
    predictor, batch: RegressionBatch, m: int, *, seed=0, adversarial: bool = False
) -> np.ndarray:
    """``E|y_hat' - y_hat|`` at the query after ``m`` examples when example ``j`` is
    replaced, for every ``j < m``: ``(m,)``, the mean over prompts of
    :func:`position_changes`.

    A learner that treats its examples alike (least squares, ridge: any function of the
    set of examples) gives a flat profile; a causal model need not.
    """
    return position_changes(
        predictor, batch, m, seed=seed, adversarial=adversarial
    ).mean(0)


def position_changes(
    predictor, batch: RegressionBatch, m: int, *, seed=0, adversarial: bool = False
) -> np.ndarray:
    """``|y_hat' - y_hat|`` at the query after ``m`` examples when example ``j`` is
    replaced, prompt by prompt: ``(B, m)`` float64, column ``j`` for example ``j``
    (kept per prompt for standard errors by resampling prompts)."""
    check_positive_int("m", m)
    (m,) = _context_sizes(batch, [m], "m")
    before = predictions(predictor, batch, [m])
    return np.concatenate(
        [
            (
                predictions(
                    predictor,
                    replace_example(batch, j, seed=seed, adversarial=adversarial),
                    [m],
                )
                - before
            )
            .abs()
            .double()
            .cpu()
            .numpy()
            for j in range(m)
        ],
        axis=1,
    )
