"""Classical in-context learners: what a transformer's prediction is compared against.

Every learner takes a batch of prompts ``xs (B, N, d)``, ``ys (B, N)``,
``x_query (B, d)`` and returns predictions ``(B,)`` (the Bayesian one returns a mean and
a variance). They are batched torch, work in float32 and float64, and accept an empty
context (``N = 0``), where every linear learner predicts 0. Closed forms are in chapter
1 (overview) and chapter 2.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .._checks import check_finite, check_positive_int, check_prompt, check_real
from ..prompts import prompt_matrix


def _predict(w: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
    return (w * x_query).sum(-1)  # (B, d) . (B, d) -> (B,)


def ols(xs, ys, x_query) -> torch.Tensor:
    """Minimum-norm least squares on the context: ``w = X^+ y`` (pseudo-inverse).

    For ``N >= d`` (and ``X`` of full rank) this is the usual ``(X^T X)^{-1} X^T y``;
    for ``N < d`` it is the interpolating ``w`` of smallest norm, the ``lam -> 0`` limit
    of ridge.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    if N == 0:
        return x_query.new_zeros(B)
    w = (torch.linalg.pinv(xs) @ ys.unsqueeze(-1)).squeeze(-1)  # (B, d, N) @ (B, N, 1)
    return _predict(w, x_query)


def ridge(xs, ys, x_query, lam: float) -> torch.Tensor:
    """Ridge regression: ``w = argmin sum_i (<w, x_i> - y_i)^2 + lam ||w||^2``.

    ``w = (X^T X + lam I)^{-1} X^T y``. With ``lam = sigma^2 / tau^2`` it is the
    posterior mean under the prior ``w ~ N(0, tau^2 I)`` and noise ``sigma^2`` (see
    :func:`bayes_posterior_predictive`). ``lam = 0`` gives the limit ``lam -> 0+``,
    which is :func:`ols`.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    lam = check_real("lam", lam, minimum=0.0)
    if lam == 0.0:
        return ols(xs, ys, x_query)
    gram = xs.transpose(1, 2) @ xs + lam * torch.eye(
        d, dtype=xs.dtype, device=xs.device
    )
    rhs = xs.transpose(1, 2) @ ys.unsqueeze(-1)  # (B, d, 1)
    w = torch.linalg.solve(gram, rhs).squeeze(-1)
    return _predict(w, x_query)


def gd(xs, ys, x_query, lr: float, steps: int = 1) -> torch.Tensor:
    """``steps`` steps of gradient descent from ``w = 0`` on the in-context loss.

    ``L(w) = 1/(2N) sum_i (<w, x_i> - y_i)^2`` and ``w <- w - lr * grad L(w)``, so one
    step gives ``w_1 = (lr / N) X^T y``: ``lr`` times :func:`averaging`. This is the
    step that one linear self-attention layer computes (von Oswald et al. 2023,
    Proposition 1; chapter 2).
    """
    B, N, d = check_prompt(xs, ys, x_query)
    lr = check_real("lr", lr)
    check_positive_int("steps", steps, minimum=0)
    if N == 0:
        return x_query.new_zeros(B)
    w = xs.new_zeros(B, d)
    for _ in range(steps):
        residual = torch.einsum("bnd,bd->bn", xs, w) - ys  # (B, N)
        w = w - lr * torch.einsum("bnd,bn->bd", xs, residual) / N
    return _predict(w, x_query)


def linear_attention_readout(xs, ys, x_query, scale: float = 1.0) -> torch.Tensor:
    """The label entry, at the query column, of one linear attention layer on ``Z``.

    ``Z`` is the prompt matrix (:func:`icl_lib.prompts.prompt_matrix`, query label
    0). Keys and queries read the ``x`` rows, values read the label row, there is no
    softmax, and the output is ``scale * sum_i <x_q, x_i> y_i``. It equals one GD step
    from 0 with ``lr = scale * N`` (:func:`gd`): ``scale = eta / N`` is von Oswald et
    al.'s layer read at the query, ``scale = 1`` is the seed notes'
    ``LinearAttentionGD`` (GD with ``eta = N``).
    """
    B, N, d = check_prompt(xs, ys, x_query)
    scale = check_real("scale", scale)
    Z = prompt_matrix(xs, ys, x_query)  # (B, d + 1, N + 1)
    keys, labels = Z[:, :d, :N], Z[:, d, :N]  # (B, d, N), (B, N)
    query = Z[:, :d, N:]  # (B, d, 1)
    scores = (keys * query).sum(1)  # <x_i, x_q>, (B, N)
    return scale * (scores * labels).sum(1)


def similarity_slope(xs, ys, x_query) -> torch.Tensor:
    """The seed notes' "attention prediction" ``s^T y / s^T s`` with
    ``s_i = <x_i, x_q>``.

    It is the slope of a one-dimensional least-squares fit of the labels on the
    similarities ``s``, not an attention output; for large ``N`` it tends to
    ``y_q / ||x_q||^2`` (chapter 1). An empty context predicts 0.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    if N == 0:
        return x_query.new_zeros(B)
    s = torch.einsum("bnd,bd->bn", xs, x_query)  # (B, N)
    return (s * ys).sum(1) / (s * s).sum(1)


def averaging(xs, ys, x_query) -> torch.Tensor:
    """The averaging estimator ``<x_q, (1/N) sum_i y_i x_i>`` (one GD step with step
    size 1).

    Unbiased for ``E[x x^T] = I`` but its variance decays only like ``(d + 1) / N``.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    if N == 0:
        return x_query.new_zeros(B)
    w = torch.einsum("bnd,bn->bd", xs, ys) / N
    return _predict(w, x_query)


def knn(xs, ys, x_query, k: int = 3) -> torch.Tensor:
    """The mean label of the ``k`` context inputs nearest (Euclidean) to the query."""
    B, N, d = check_prompt(xs, ys, x_query)
    check_positive_int("k", k)
    if k > N:
        raise ValueError(
            f"k: expected at most N = {N} neighbours (the context size), got {k}"
        )
    dist = ((xs - x_query.unsqueeze(1)) ** 2).sum(-1)  # (B, N)
    nearest = dist.topk(k, dim=1, largest=False).indices  # (B, k)
    return ys.gather(1, nearest).mean(1)


class PosteriorPredictive(NamedTuple):
    """Mean and variance ``(B,)`` of the posterior predictive distribution of
    ``y_query``."""

    mean: torch.Tensor
    var: torch.Tensor


def bayes_posterior_predictive(
    xs, ys, x_query, *, prior_std: float = 1.0, noise_std: float
) -> PosteriorPredictive:
    """Posterior predictive of ``y_query`` for ``w ~ N(0, tau^2 I)`` and
    ``y = <w, x> + N(0, sigma^2)``.

    With ``A = X^T X / sigma^2 + I / tau^2`` the posterior is
    ``w | D ~ N(A^{-1} X^T y / sigma^2, A^{-1})``, so the predictive mean is ridge with
    ``lam = sigma^2 / tau^2`` and the variance is ``x_q^T A^{-1} x_q + sigma^2``. The
    mean is the Bayes-optimal prediction under squared loss.

    Args:
        prior_std: ``tau > 0``.
        noise_std: ``sigma > 0`` (the noiseless limit of the mean is :func:`ols`).
    """
    B, N, d = check_prompt(xs, ys, x_query)
    tau = check_real("prior_std", prior_std, minimum=0.0, strict=True)
    sigma = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    eye = torch.eye(d, dtype=xs.dtype, device=xs.device)
    precision = xs.transpose(1, 2) @ xs / sigma**2 + eye / tau**2  # (B, d, d)
    cov = torch.linalg.inv(precision)
    w_mean = (cov @ (xs.transpose(1, 2) @ ys.unsqueeze(-1))).squeeze(-1) / sigma**2
    var = torch.einsum("bd,bde,be->b", x_query, cov, x_query) + sigma**2
    return PosteriorPredictive(_predict(w_mean, x_query), var)


def _per_step(name: str, value, steps: int) -> list:
    """A hyperparameter given once for every step, or as a sequence of ``steps`` values.

    A value is a real number or a 0-dim float tensor (so that a line search can
    differentiate through the learner).
    """

    def one(label, v):
        if isinstance(v, torch.Tensor) and v.ndim == 0 and v.is_floating_point():
            return v
        return check_real(label, v)

    if isinstance(value, (list, tuple)):
        if len(value) != steps:
            raise ValueError(
                f"{name}: expected one value per step ({steps}), got {len(value)}"
            )
        return [one(f"{name}[{k}]", v) for k, v in enumerate(value)]
    return [one(name, value)] * steps


def gd_plus_plus(xs, ys, x_query, lr, gamma, steps: int = 1) -> torch.Tensor:
    """GD++ (von Oswald et al. 2023): GD on the labels plus a transformation of the
    inputs.

    Each step ``k`` does, from the current inputs ``x_j`` (context and query) and the
    current residual labels ``r_j`` (initially ``y_j``; the query's starts at 0):

    * ``r_j <- r_j - (lr_k / N) sum_i r_i x_i^T x_j`` (one GD step on ``r``, as one LSA
      layer does),
    * ``x_j <- (I - gamma_k H) x_j`` for every token, query included, with
      ``H = sum_i x_i x_i^T``,

    and the prediction is minus the query's residual. With ``gamma = 0`` it is
    :func:`gd`. The input map turns each eigenvalue ``mu`` of ``H`` into
    ``mu (1 - gamma mu)^2``, which improves the conditioning of the next steps; it is
    neither momentum nor a Newton step.

    Args:
        lr: step size ``eta`` (one float for every step, or a sequence of ``steps``
        floats; a
            0-dim tensor is accepted too, to differentiate through the learner).
        gamma: the input-transformation coefficient, same convention.
        steps: number of steps ``K >= 0``.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    check_positive_int("steps", steps, minimum=0)
    lrs, gammas = _per_step("lr", lr, steps), _per_step("gamma", gamma, steps)
    if N == 0:
        return x_query.new_zeros(B)
    x, xq, r, q = xs, x_query, ys, x_query.new_zeros(B)
    for k, (eta, g) in enumerate(zip(lrs, gammas, strict=True)):
        v = torch.einsum("bnd,bn->bd", x, r)  # sum_i r_i x_i, (B, d)
        r, q = (
            r - eta / N * torch.einsum("bnd,bd->bn", x, v),
            q - eta / N * (xq * v).sum(-1),
        )
        if k < steps - 1:  # the last step's input map no longer reaches the prediction
            H = x.transpose(1, 2) @ x  # (B, d, d)
            x, xq = x - g * x @ H, xq - g * (H @ xq.unsqueeze(-1)).squeeze(-1)
    return -q


def preconditioned_gd(
    xs, ys, x_query, precond: torch.Tensor, steps: int = 1, lr: float = 1.0
) -> torch.Tensor:
    """``steps`` steps of preconditioned GD from ``w = 0``:
    ``w <- w - lr * G grad L(w)``.

    ``L(w) = 1/(2N) sum_i (<w, x_i> - y_i)^2``, so one step gives
    ``w_1 = lr * G X^T y / N``. Ahn et al. (2023, Theorem 1) show that the best
    one-layer linear transformer for ``x ~ N(0, Sigma)`` is one such step with
    ``G = ((N+1)/N Sigma + tr(Sigma)/N I)^{-1}``
    (:func:`icl_lib.theory.gd_construction.ahn_preconditioner`). Chapter 2.

    Args:
        precond: ``G``, shape ``(d, d)`` or one per prompt ``(B, d, d)``.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    check_positive_int("steps", steps, minimum=0)
    lr = check_real("lr", lr)
    if not isinstance(precond, torch.Tensor):
        raise TypeError(
            f"precond: expected a torch.Tensor, got {type(precond).__name__}"
        )
    if tuple(precond.shape) not in ((d, d), (B, d, d)):
        raise ValueError(
            f"precond: expected shape (d, d) = {(d, d)} or (B, d, d), got "
            f"{tuple(precond.shape)}"
        )
    check_finite("precond", precond)
    if precond.dtype != xs.dtype:
        raise TypeError(
            f"precond: expected dtype {xs.dtype} (the dtype of xs), got {precond.dtype}"
        )
    if N == 0:
        return x_query.new_zeros(B)
    G = precond.expand(B, d, d)
    w = xs.new_zeros(B, d)
    for _ in range(steps):
        grad = (
            torch.einsum("bnd,bn->bd", xs, torch.einsum("bnd,bd->bn", xs, w) - ys) / N
        )
        w = w - lr * (G @ grad.unsqueeze(-1)).squeeze(-1)
    return _predict(w, x_query)
