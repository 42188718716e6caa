"""Closed-form expected errors of the baseline learners on Gaussian linear regression.

Setting: ``x, x_q ~ N(0, I_d)``, ``w ~ N(0, I_d)``, ``y = <w, x> + N(0, sigma^2)``, a
context of ``k`` examples. Every function returns the expected squared error of the
prediction of the *noisy* query label, divided by ``d`` (the book's "error / d"); with
``sigma = 0`` that is the error against ``<w, x_q>``. Derivations are in chapter 1;
tests compare each with Monte Carlo.
"""

from __future__ import annotations

import math

import torch

from .._checks import check_float_tensor, check_positive_int, check_real


def _check(d, k, noise_std):
    check_positive_int("d", d)
    check_positive_int("k", k, minimum=0)
    return check_real("noise_std", noise_std, minimum=0.0)


def gd_step_error(d: int, k: int, step: float, noise_std: float = 0.0) -> float:
    """One GD step from 0 with the prediction ``step * <x_q, (1/k) X^T y>``.

    ``E||c m - w||^2 = c^2 (d + d(d + 1 + sigma^2)/k) - 2 c d + d`` with
    ``m = (1/k) X^T y``, because ``E m = w`` and
    ``E||m - w||^2 = d (d + 1 + sigma^2) / k`` for Gaussian inputs.
    """
    sigma = _check(d, k, noise_std)
    step = check_real("step", step)
    if k == 0:
        return 1.0 + sigma**2 / d
    spread = (d + 1 + sigma**2) / k
    return step**2 * (1 + spread) - 2 * step + 1 + sigma**2 / d


def averaging_error(d: int, k: int, noise_std: float = 0.0) -> float:
    """The averaging estimator (one GD step of size 1):
    ``(d + 1 + sigma^2) / k + sigma^2 / d``."""
    _check(d, k, noise_std)
    return (
        gd_step_error(d, k, 1.0, noise_std)
        if k > 0
        else 1.0 + _check(d, k, noise_std) ** 2 / d
    )


def best_gd_step(d: int, k: int, noise_std: float = 0.0) -> float:
    """The step minimising :func:`gd_step_error`: ``k / (k + d + 1 + sigma^2)``."""
    sigma = _check(d, k, noise_std)
    return k / (k + d + 1 + sigma**2)


def best_gd_step_error(d: int, k: int, noise_std: float = 0.0) -> float:
    """Error of one GD step with the best step size:
    ``(d + 1 + sigma^2)/(k + d + 1 + sigma^2) + sigma^2/d``."""
    return gd_step_error(d, k, best_gd_step(d, k, noise_std), noise_std)


def iid_best_gd_step(
    d: int, k: int, variance: float = 1.0, kurtosis: float = 3.0
) -> tuple[float, float]:
    """The best step size of one GD step from 0, and its expected squared error
    ``E(y_hat - y_q)^2``, for noiseless labels, ``w ~ N(0, I)`` and inputs with i.i.d.
    coordinates of ``variance`` and ``kurtosis`` (``E x^4 / variance^2``): ``(eta,
    error)``.

    The prediction is ``(eta / k) x_q^T X^T y``. With ``S = X^T X / k``,
    ``E[S^2] = variance^2 (k + d - 2 + kurtosis) / k I``, so
    ``eta* = k / (variance (k + d - 2 + kurtosis))`` and the error is
    ``variance d (d - 2 + kurtosis) / (k + d - 2 + kurtosis)``. Gaussian inputs
    (kurtosis 3) give :func:`best_gd_step` and ``d`` times :func:`best_gd_step_error`;
    chapter 2's uniform inputs on ``[-1/2, 1/2]`` have variance 1/12 and kurtosis 9/5.
    """
    _check(d, k, 0.0)
    variance = check_real("variance", variance, minimum=0.0, strict=True)
    kurtosis = check_real("kurtosis", kurtosis, minimum=1.0)
    if k == 0:
        raise ValueError("k: expected at least 1 example for a gradient step, got 0")
    effective = k + d - 2 + kurtosis
    return k / (variance * effective), variance * d * (d - 2 + kurtosis) / effective


def ols_error(d: int, k: int, noise_std: float = 0.0) -> float:
    """Minimum-norm least squares; ``math.inf`` where the expectation diverges.

    - ``k < d``: the estimate is the projection of ``w`` on the row space of ``X`` plus
      noise through ``X^+``: ``[(d - k) + sigma^2 k / (d - k - 1) + sigma^2] / d``
      (``E (X X^T)^{-1} = I/(d-k-1)``);
    - ``k > d``: ``sigma^2 (1 + d / (k - d - 1)) / d`` (``E (X^T X)^{-1} = I/(k-d-1)``);
    - with noise the expectation is infinite for ``k in {d - 1, d, d + 1}``: the
      inverse-Wishart moments diverge. Without noise the error is ``(d - k)/d`` for
      ``k < d`` and 0 after.
    """
    sigma = _check(d, k, noise_std)
    if sigma == 0:
        return max(d - k, 0) / d
    if k < d - 1:
        return ((d - k) + sigma**2 * k / (d - k - 1) + sigma**2) / d
    if k <= d + 1:
        return math.inf
    return sigma**2 * (1 + d / (k - d - 1)) / d


def noise_floor(d: int, noise_std: float = 0.0) -> float:
    """The error / d that no predictor can beat: the query label's noise,
    ``sigma^2 / d``."""
    return _check(d, 0, noise_std) ** 2 / d


def _check_errors(name: str, errors) -> None:
    """A finite error: a real number or a float tensor (one value per ``k``)."""
    if isinstance(errors, torch.Tensor):
        check_float_tensor(name, errors)
    else:
        check_real(name, errors)


def excess_error(errors, d: int, noise_std: float = 0.0):
    """Error / d minus :func:`noise_floor`: ``E(<w_hat - w, x_q>)^2 / d``, the part of
    the error a better learner could remove. ``errors`` is a number or a tensor (one
    value per ``k``); the result has the same type."""
    _check_errors("errors", errors)
    return errors - noise_floor(d, noise_std)


def excess_ratio(errors, reference, d: int, noise_std: float = 0.0):
    """``excess_error(errors) / excess_error(reference)``, e.g. a model against the
    Bayes predictor at every ``k``: 1 means no excess over the reference."""
    _check_errors("errors", errors)
    _check_errors("reference", reference)
    if isinstance(errors, torch.Tensor) and isinstance(reference, torch.Tensor):
        if errors.shape != reference.shape:
            raise ValueError(
                f"reference: expected the shape of errors {tuple(errors.shape)}, got "
                f"{tuple(reference.shape)}"
            )
    return excess_error(errors, d, noise_std) / excess_error(reference, d, noise_std)
