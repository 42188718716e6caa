"""How close is a trained model to a learner? Alignment metrics and step-size line
searches.

von Oswald et al. (2023) compare a trained transformer ``f`` with a learner ``g`` (GD
with a line-searched step size) on fresh prompts by three numbers:

* the prediction difference ``mean |f - g|``,
* the cosine between the sensitivities ``df/dx_q`` and ``dg/dx_q`` (for GD from
  ``W_0 = 0`` the sensitivity is the learned weight vector ``w_1``), averaged over
  prompts,
* the model difference ``mean ||df/dx_q - dg/dx_q||``.

The line searches here are deterministic: golden-section search on a fixed batch of
prompts. Chapter 2 uses them; the loss is von Oswald's
``0.5 * mean (prediction - y)^2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._checks import (
    check_finite,
    check_per_prompt,
    check_positive_int,
    check_prompt,
    check_real,
    check_same_shape,
    check_seed,
    check_sequence,
)
from ..learners.kernel import functional_gd_path
from ..learners.linear import gd, gd_plus_plus, ridge

GOLDEN = (math.sqrt(5) - 1) / 2


def half_mse(pred: torch.Tensor, target: torch.Tensor) -> float:
    """``0.5 * mean (pred - target)^2`` as a float (von Oswald et al.'s loss)."""
    check_same_shape("pred", pred, "target", target)
    check_finite("pred", pred)
    check_finite("target", target)
    return 0.5 * float(((pred - target) ** 2).double().mean())


def sensitivity(predict: Callable, xs, ys, x_query) -> torch.Tensor:
    """``d predict(xs, ys, x_q) / d x_q`` for every prompt: shape ``(B, d)``
    (autograd)."""
    _check_callable("predict", predict)
    check_prompt(xs, ys, x_query)
    if not callable(predict):
        raise TypeError(
            "predict: expected a callable (xs, ys, x_query) -> (B,), got "
            f"{type(predict).__name__}"
        )
    xq = x_query.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        out = predict(xs, ys, xq)
        (grad,) = torch.autograd.grad(out.sum(), xq)
    return (
        grad.detach()
    )  # predictions are per prompt, so the sum's gradient is per-prompt


def compare(f: Callable, g: Callable, xs, ys, x_query) -> dict:
    """von Oswald et al.'s three alignment metrics between predictors ``f`` and ``g`` on
    a batch.

    Returns ``{"prediction_difference", "sensitivity_cosine", "model_difference"}`` as
    floats.
    """
    _check_callable("f", f)
    _check_callable("g", g)
    check_prompt(xs, ys, x_query)
    with torch.no_grad():
        pf, pg = f(xs, ys, x_query), g(xs, ys, x_query)
    sf, sg = sensitivity(f, xs, ys, x_query), sensitivity(g, xs, ys, x_query)
    cos = torch.nn.functional.cosine_similarity(sf, sg, dim=-1, eps=1e-12)
    return {
        "prediction_difference": float((pf - pg).abs().mean()),
        "sensitivity_cosine": float(cos.mean()),
        "model_difference": float((sf - sg).norm(dim=-1).mean()),
    }


def _interval(name: str, value) -> tuple[float, float]:
    """A search interval ``(lo, hi)``: two finite numbers, ``lo < hi``."""
    check_sequence(name, value, "two numbers (lo, hi)")
    value = tuple(value)
    if len(value) != 2:
        raise ValueError(f"{name}: expected two numbers (lo, hi), got {len(value)}")
    lo, hi = (check_real(f"{name}[{i}]", v) for i, v in enumerate(value))
    if not hi > lo:
        raise ValueError(f"{name}: expected lo < hi, got ({lo}, {hi})")
    return lo, hi


def golden_section(
    f: Callable[[float], float],
    lo: float,
    hi: float,
    *,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> tuple[float, float]:
    """Minimise a unimodal ``f`` on ``[lo, hi]`` by golden-section search:
    ``(argmin, min)``."""
    _check_callable("f", f)
    lo, hi = check_real("lo", lo), check_real("hi", hi)
    if not hi > lo:
        raise ValueError(f"hi: expected a number > lo = {lo}, got {hi}")
    tol = check_real("tol", tol, minimum=0.0, strict=True)
    check_positive_int("max_iter", max_iter)

    def value(t: float) -> float:  # a NaN would make every comparison False
        v = f(t)
        if not (_is_number(v) and math.isfinite(v)):
            raise ValueError(f"f: expected a finite number at t = {t:.6g}, got {v!r}")
        return float(v)

    a, b = lo, hi
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = value(c), value(d)
    for _ in range(max_iter):
        if b - a <= tol:
            break
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = value(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = value(d)
    x = (a + b) / 2
    return x, value(x)


def _is_number(v) -> bool:
    """A real number: Python's, numpy's or a one-element tensor's."""
    if isinstance(v, torch.Tensor):
        return v.numel() == 1 and v.is_floating_point()
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, bool
    )


def _check_labelled_prompt(xs, ys, x_query, y_query) -> None:
    """A prompt and the label of each query: ``y_query (B,)``, finite."""
    B, _, _ = check_prompt(xs, ys, x_query)
    check_per_prompt("y_query", y_query, B)


def _labelled_prompt(name: str, prompt) -> tuple:
    """``prompt = (xs, ys, x_query, y_query)``, checked; ``name`` is its argument."""
    if not isinstance(prompt, (tuple, list)) or len(prompt) != 4:
        raise TypeError(
            f"{name}: expected a tuple (xs, ys, x_query, y_query), got "
            f"{type(prompt).__name__}"
        )
    try:
        _check_labelled_prompt(*prompt)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{name}: {error}") from error
    return tuple(prompt)


def _check_callable(name: str, f) -> None:
    if not callable(f):
        raise TypeError(f"{name}: expected a function, got {type(f).__name__}")


def tune_gd(
    xs,
    ys,
    x_query,
    y_query,
    *,
    steps: int = 1,
    bounds: tuple[float, float] = (0.0, 50.0),
) -> tuple[float, float]:
    """The step size of ``steps`` GD steps (same ``eta`` each step) that minimises the
    loss: ``(eta, loss)``.

    For one step the prediction is linear in ``eta`` and the optimum is exact:
    ``eta* = <a, y> / <a, a>`` with ``a`` the prediction at ``eta = 1``. For more steps
    it is a golden-section search on ``bounds``.
    """
    _check_labelled_prompt(xs, ys, x_query, y_query)
    check_positive_int("steps", steps)
    bounds = _interval("bounds", bounds)
    if steps == 1:
        a = gd(xs, ys, x_query, 1.0).double()
        eta = float((a * y_query.double()).sum() / (a * a).sum())
    else:
        eta, _ = golden_section(
            lambda e: half_mse(gd(xs, ys, x_query, e, steps), y_query),
            *bounds,
            tol=1e-5,
        )
    return eta, half_mse(gd(xs, ys, x_query, eta, steps), y_query)


def gd_plus_plus_moments(xs, ys, x_query) -> torch.Tensor:
    """``u_k = x_q^T H^k X^T y`` for ``k = 0, 1, 2, 3``: shape ``(B, 4)``, float64.

    Two GD++ steps (one ``eta``, one ``gamma``, ``s = eta / N``) predict
    ``s [2 u_0 - (2 gamma + s) u_1 + (gamma^2 + 2 gamma s) u_2 - gamma^2 s u_3]``
    (:func:`icl_lib.theory.gd_construction.gd_plus_plus_preconditioner` with two
    steps), so these four numbers per prompt are all a two-step line search needs.
    """
    check_prompt(xs, ys, x_query)
    x, y, q = xs.double(), ys.double(), x_query.double()
    H = x.transpose(1, 2) @ x  # (B, d, d)
    v = torch.einsum("bnd,bn->bd", x, y)  # X^T y, (B, d)
    moments = []
    for _ in range(4):
        moments.append((q * v).sum(-1))
        v = (H @ v.unsqueeze(-1)).squeeze(-1)
    return torch.stack(moments, -1)


def _two_step_prediction(u: torch.Tensor, n: int, eta, gamma) -> torch.Tensor:
    s = eta / n
    return s * (
        2 * u[:, 0]
        - (2 * gamma + s) * u[:, 1]
        + (gamma**2 + 2 * gamma * s) * u[:, 2]
        - gamma**2 * s * u[:, 3]
    )


def _lbfgs(loss_fn, start, max_iter: int) -> tuple[float, float]:
    params = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS(
        [params],
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
        line_search_fn="strong_wolfe",
    )

    def closure():
        optimiser.zero_grad()
        loss = loss_fn(params[0], params[1])
        loss.backward()
        return loss

    optimiser.step(closure)
    eta, gamma = (float(v) for v in params.detach())
    return eta, gamma


def tune_gd_plus_plus(
    xs,
    ys,
    x_query,
    y_query,
    *,
    steps: int = 2,
    lr_bounds=(0.0, 50.0),
    gamma_init: float = 0.1,
    max_iter: int = 100,
) -> tuple[float, float, float]:
    """``(eta, gamma, loss)`` of the best looped GD++ (one ``eta``, one ``gamma`` for
    every step).

    Starts from the tuned plain GD step (:func:`tune_gd`) and ``gamma_init``, then
    minimises the loss jointly in ``(eta, gamma)`` with L-BFGS in float64. The two are
    strongly coupled (a larger ``gamma`` shrinks the inputs, so the best ``eta``
    grows), which defeats one-at-a-time searches. For two steps the loss is a
    polynomial in ``(eta, gamma)`` over :func:`gd_plus_plus_moments`, which is what
    L-BFGS differentiates; for other step counts it differentiates through
    :func:`icl_lib.learners.gd_plus_plus`. The returned loss is always that of the
    learner.
    """
    _check_labelled_prompt(xs, ys, x_query, y_query)
    check_positive_int("steps", steps)
    gamma_init = check_real("gamma_init", gamma_init)
    check_positive_int("max_iter", max_iter)
    lr_bounds = _interval("lr_bounds", lr_bounds)
    data = [t.detach().double() for t in (xs, ys, x_query, y_query)]
    eta0, _ = tune_gd(*data, steps=steps, bounds=lr_bounds)
    if steps == 2:
        u, n = gd_plus_plus_moments(*data[:3]), data[0].shape[1]

        def loss_fn(eta, gamma):
            pred = _two_step_prediction(u, n, eta, gamma)
            return 0.5 * ((pred - data[3]) ** 2).mean()

    else:

        def loss_fn(eta, gamma):
            pred = gd_plus_plus(*data[:3], eta, gamma, steps)
            return 0.5 * ((pred - data[3]) ** 2).mean()

    eta, gamma = _lbfgs(loss_fn, [eta0, gamma_init], max_iter)
    return eta, gamma, half_mse(gd_plus_plus(*data[:3], eta, gamma, steps), data[3])


def bootstrap_gd_plus_plus(
    xs,
    ys,
    x_query,
    y_query,
    *,
    n_boot: int = 200,
    seed: int = 0,
    start: tuple[float, float] | None = None,
    max_iter: int = 50,
) -> dict:
    """Bootstrap of the two-step GD++ line search: ``{"eta", "gamma"}``, each of shape
    ``(n_boot,)``.

    Each replicate resamples the prompts with replacement and re-tunes ``(eta,
    gamma)`` as :func:`tune_gd_plus_plus` does (two steps), from the full-sample
    optimum (``start = (eta, gamma)`` if the caller has it, else tuned here). The
    spread says how much the tuned ``gamma`` moves with the test set; chapter 2 uses
    it to set the tolerance of its comparison with von Oswald et al.'s value.
    """
    _check_labelled_prompt(xs, ys, x_query, y_query)
    check_positive_int("n_boot", n_boot)
    check_seed("seed", seed)
    check_positive_int("max_iter", max_iter)
    if start is None:
        eta0, gamma0, _ = tune_gd_plus_plus(xs, ys, x_query, y_query, steps=2)
    else:
        start = tuple(check_sequence("start", start, "two numbers (eta, gamma)"))
        if len(start) != 2:
            raise ValueError(
                f"start: expected two numbers (eta, gamma), got {len(start)}"
            )
        eta0, gamma0 = (check_real(f"start[{i}]", v) for i, v in enumerate(start))
    u, y = gd_plus_plus_moments(xs, ys, x_query), y_query.detach().double()
    n, B = xs.shape[1], xs.shape[0]
    gen = torch.Generator().manual_seed(seed)
    etas, gammas = [], []
    for _ in range(n_boot):
        idx = torch.randint(B, (B,), generator=gen)
        ub, yb = u[idx], y[idx]

        def loss_fn(eta, gamma, ub=ub, yb=yb):
            return 0.5 * ((_two_step_prediction(ub, n, eta, gamma) - yb) ** 2).mean()

        eta, gamma = _lbfgs(loss_fn, [eta0, gamma0], max_iter)
        etas.append(eta)
        gammas.append(gamma)
    return {
        "eta": torch.tensor(etas, dtype=torch.float64),
        "gamma": torch.tensor(gammas, dtype=torch.float64),
    }


def closest_ridge(
    pred: torch.Tensor, xs, ys, x_query, *, log10_bounds=(-6.0, 3.0)
) -> tuple[float, float]:
    """The ridge ``lam`` whose predictions are closest (mean squared) to ``pred``:
    ``(lam, mean |pred - ridge|)``.

    Akyurek et al. (2023) read the algorithm a model implements off which learner its
    predictions match; a shrinking ``lam`` with depth is their move from GD towards
    least squares.
    """
    B, _, _ = check_prompt(xs, ys, x_query)
    pred = check_per_prompt("pred", pred, B).detach()
    log10_bounds = _interval("log10_bounds", log10_bounds)

    def gap(log_lam):
        return float(
            ((ridge(xs, ys, x_query, 10.0**log_lam) - pred) ** 2).double().mean()
        )

    log_lam, _ = golden_section(gap, *log10_bounds, tol=1e-4)
    lam = 10.0**log_lam
    return lam, float((ridge(xs, ys, x_query, lam) - pred).abs().mean())


def tuned_functional_gd(
    train, test, kernel: str, *, max_steps: int, grid: Sequence[float]
) -> list[float]:
    """Test error of ``t = 0..max_steps`` steps of functional GD, each ``t`` with its
    best step size.

    ``train`` and ``test`` are ``(xs, ys, x_query, y_query)`` prompts; for every ``t``
    the step size is picked from ``grid`` by the mean squared error on ``train``, then
    scored on ``test`` (:func:`icl_lib.learners.kernel.functional_gd_path`). Returns
    ``max_steps + 1`` errors.
    """
    check_positive_int("max_steps", max_steps)
    check_sequence("grid", grid, "step sizes")
    grid = [check_real("grid[i]", lr, minimum=0.0, strict=True) for lr in grid]
    if not grid:
        raise ValueError("grid: expected at least one step size, got none")
    txs, tys, txq, tyq = _labelled_prompt("train", train)
    xs, ys, xq, yq = _labelled_prompt("test", test)

    def mse(pred, target):
        return ((pred - target) ** 2).mean().item()

    paths = {
        lr: functional_gd_path(txs, tys, txq, kernel, lr=lr, steps=max_steps)
        for lr in grid
    }
    best = [
        min(grid, key=lambda lr: mse(paths[lr][:, t], tyq))
        for t in range(max_steps + 1)
    ]
    return [
        mse(functional_gd_path(xs, ys, xq, kernel, lr=best[t], steps=t)[:, t], yq)
        for t in range(max_steps + 1)
    ]
