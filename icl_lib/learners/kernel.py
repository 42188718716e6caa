"""The kernel learners that in-context attention is compared with (chapter 8).

The kernels themselves are in :mod:`icl_lib.kernels`. Learners (batched,
``xs (B, N, d)``, ``ys (B, N)``, ``x_query (B, d)`` -> ``(B,)``):

* :func:`nadaraya_watson`: the kernel-weighted average
  ``sum_i K(x_q, x_i) y_i / sum_i K(x_q, x_i)`` (Nadaraya 1964, Watson 1964);
* :func:`attention_regression`: one softmax attention head whose keys are the inputs and
  whose values are the labels, computed by PyTorch's ``scaled_dot_product_attention``.
  On the unit sphere, or with a key bias, it *is* Gaussian Nadaraya-Watson with
  ``bandwidth^2 = temperature``;
* :func:`kernel_ridge`: ``K(x_q, X) (K(X, X) + lam I)^{-1} y``, the posterior mean of a
  Gaussian process with covariance ``K`` and noise variance ``lam``;
* :func:`functional_gd`: gradient descent in the RKHS of ``K`` on the in-context squared
  loss, the algorithm that non-linear attention layers implement (Cheng, Chen and Sra,
  ICML 2024);
* :func:`majority_vote`: the mean label, Nadaraya-Watson with a flat kernel.

Two fitting helpers: :func:`fit_attention_temperature` (the temperature of a softmax
smoother that best agrees with a classifier) and :func:`best_nadaraya_watson_error`
(Gaussian Nadaraya-Watson at its best bandwidth on regression prompts).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._checks import (
    check_batch,
    check_bool,
    check_finite,
    check_per_prompt,
    check_positive_int,
    check_prompt,
    check_real,
    check_sequence,
    check_tensor,
)
from ..kernels import KERNELS, kernel_matrix, log_kernel


def _smoother_weights(xs, x_query, kernel, params):
    """Unnormalised Nadaraya-Watson weights ``(B, N)``, rescaled per prompt so they
    cannot underflow."""
    unknown = set(params) - {"temperature", "bandwidth"}
    if unknown:
        raise TypeError(
            f"params: expected only 'temperature' or 'bandwidth', got {sorted(unknown)}"
        )
    if kernel not in ("exp", "gaussian"):
        return kernel_matrix(x_query.unsqueeze(1), xs, kernel, **params).squeeze(1)
    inner = x_query.unsqueeze(1) @ xs.transpose(1, 2)  # log_kernel checks the pair
    log_k = log_kernel(
        x_query.unsqueeze(1),
        xs,
        inner,
        kernel,
        params.get("temperature", 1.0),
        params.get("bandwidth", 1.0),
    ).squeeze(1)
    # K(x_q, x_i) / max_j K(x_q, x_j): the common factor cancels in the ratio
    return torch.exp(log_k - log_k.max(-1, keepdim=True).values)


def nadaraya_watson(
    xs, ys, x_query, kernel: str = "gaussian", **params
) -> torch.Tensor:
    """Nadaraya-Watson kernel regression ``sum_i K(x_q, x_i) y_i / sum_i K(x_q, x_i)``:
    ``(B,)``.

    The kernel must be non-negative (``gaussian``, ``exp`` or ``relu``) so that the
    weights are a probability vector; ``params`` go to :func:`kernel_matrix`. The
    weights come from the kernel formula (divided by their largest value, which cancels,
    so a small bandwidth cannot underflow), not from a softmax routine: an independent
    check of :func:`attention_regression`.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    if kernel == "linear":
        raise ValueError(
            "kernel: expected a non-negative kernel ('gaussian', 'exp' or 'relu'), got "
            "'linear'"
        )
    if N == 0:
        raise ValueError("xs: expected at least one context example, got N = 0")
    weights = _smoother_weights(xs, x_query, kernel, params)  # (B, N)
    total = weights.sum(-1)
    if bool((total <= 0).any()):
        raise ValueError(
            "x_query: every kernel weight is 0 for some prompt; Nadaraya-Watson is "
            "undefined there"
        )
    return (weights * ys).sum(-1) / total


def nadaraya_watson_weights(
    xs, x_query, kernel: str = "gaussian", **params
) -> torch.Tensor:
    """The normalised weights ``K(x_q, x_i) / sum_j K(x_q, x_j)`` of
    :func:`nadaraya_watson`: ``(B, N)``."""
    check_tensor("xs", xs, 3)
    check_tensor("x_query", x_query, 2)
    if x_query.shape != (xs.shape[0], xs.shape[2]):
        raise ValueError(
            f"x_query: expected shape (B, d) = {(xs.shape[0], xs.shape[2])} to match "
            f"xs, got {tuple(x_query.shape)}"
        )
    check_finite("xs", xs)
    check_finite("x_query", x_query)
    if kernel not in KERNELS or kernel == "linear":
        raise ValueError(
            "kernel: expected a non-negative kernel ('gaussian', 'exp' or 'relu'), got "
            f"{kernel!r}"
        )
    weights = _smoother_weights(xs, x_query, kernel, params)
    return weights / weights.sum(-1, keepdim=True)


def attention_regression(
    xs, ys, x_query, temperature: float = 1.0, *, key_bias: bool = True
) -> torch.Tensor:
    """One softmax attention head: query ``x_q``, keys ``x_i``, values ``y_i``; returns
    ``(B,)``.

    The head computes ``sum_i softmax_i(<q, k_i> / temperature) y_i`` with PyTorch's
    ``scaled_dot_product_attention``. With ``key_bias`` the query and keys are augmented
    to ``q = (x_q, -1/2)`` and ``k_i = (x_i, ||x_i||^2)``, so the score is
    ``(<x_q, x_i> - ||x_i||^2 / 2) / temperature = (||x_q||^2 - ||x_q - x_i||^2) / (2
    temperature)``; the ``||x_q||^2`` term cancels in the softmax and the head equals
    Gaussian Nadaraya-Watson with ``bandwidth = sqrt(temperature)``. Without the bias
    this holds when every ``||x_i||`` is equal (inputs on a sphere). Chapter 8, Theorem
    "attention is Nadaraya-Watson".
    """
    B, N, d = check_prompt(xs, ys, x_query)
    tau = check_real("temperature", temperature, minimum=0.0, strict=True)
    if N == 0:
        raise ValueError("xs: expected at least one context example, got N = 0")
    q, k = x_query.unsqueeze(1), xs  # (B, 1, d), (B, N, d)
    if check_bool("key_bias", key_bias):
        q = torch.cat((q, q.new_full((B, 1, 1), -0.5)), dim=-1)
        k = torch.cat((k, (xs * xs).sum(-1, keepdim=True)), dim=-1)
    v = ys.unsqueeze(-1)  # (B, N, 1)
    out = F.scaled_dot_product_attention(q, k, v, scale=1.0 / tau)  # (B, 1, 1)
    return out.reshape(B)


def attention_regression_curve(xs, ys, grid, temperature: float) -> torch.Tensor:
    """:func:`attention_regression` on one-dimensional data, queried at every point of
    ``grid``.

    ``xs (N,)``, ``ys (N,)`` are the demonstrations and ``grid (G,)`` the query points;
    returns the fitted curve ``(G,)``: Gaussian Nadaraya-Watson with bandwidth
    ``sqrt(temperature)``.
    """
    check_tensor("xs", xs, 1)
    check_tensor("ys", ys, 1)
    check_finite("grid", check_batch("grid", check_tensor("grid", grid, 1)))
    G = grid.shape[0]
    return attention_regression(
        xs.reshape(1, -1, 1).expand(G, -1, 1),
        ys.reshape(1, -1).expand(G, -1),
        grid.reshape(G, 1),
        temperature,
    )


def kernel_ridge(
    xs, ys, x_query, kernel: str = "exp", lam: float = 1e-2, **params
) -> torch.Tensor:
    """Kernel ridge regression ``K(x_q, X) (K(X, X) + lam I)^{-1} y``: ``(B,)``.

    With ``lam = sigma^2`` this is the posterior mean of ``y_q`` when ``f ~ GP(0, K)``
    and the labels carry ``N(0, sigma^2)`` noise: the Bayes-optimal prediction under
    squared loss. ``lam > 0``.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    lam = check_real("lam", lam, minimum=0.0, strict=True)
    if N == 0:
        return x_query.new_zeros(B)
    gram = kernel_matrix(xs, xs, kernel, **params) + lam * torch.eye(
        N, dtype=xs.dtype, device=xs.device
    )
    k_q = kernel_matrix(x_query.unsqueeze(1), xs, kernel, **params)  # (B, 1, N)
    alpha = torch.linalg.solve(gram, ys.unsqueeze(-1))  # (B, N, 1)
    return (k_q @ alpha).reshape(B)


def functional_gd_path(
    xs, ys, x_query, kernel: str = "exp", lr: float = 1.0, steps: int = 1, **params
) -> torch.Tensor:
    """Predictions at ``x_q`` of ``t = 0..steps`` steps of functional gradient descent:
    ``(B, steps + 1)``.

    Gradient descent in the RKHS of ``K`` on ``L(f) = 1/(2N) sum_i (f(x_i) - y_i)^2``
    from ``f_0 = 0``: ``f_{t+1} = f_t + (lr / N) sum_i (y_i - f_t(x_i)) K(x_i, .)``. The
    residuals ``r_t = y - f_t(X)`` obey ``r_{t+1} = (I - (lr / N) K(X, X)) r_t``. For
    ``0 < lr < 2N / lambda_max(K(X, X))`` and a positive semi-definite ``K``,
    ``f_t(x_q) -> K(x_q, X) K(X, X)^+ y`` (pseudo-inverse: the minimum-norm
    least-squares fit, the interpolant when ``K(X, X)`` is invertible); a fixed step
    never gives kernel ridge. One step is the unnormalised kernel sum
    ``(lr / N) sum_i K(x_q, x_i) y_i``. One layer of Cheng et al.'s attention with
    non-linearity ``K`` computes one step (chapter 8).
    """
    B, N, d = check_prompt(xs, ys, x_query)
    lr = check_real("lr", lr)
    check_positive_int("steps", steps, minimum=0)
    preds = [x_query.new_zeros(B)]
    if N == 0:
        return torch.stack(preds * (steps + 1), dim=1)
    gram = kernel_matrix(xs, xs, kernel, **params)  # (B, N, N)
    k_q = kernel_matrix(x_query.unsqueeze(1), xs, kernel, **params).squeeze(1)  # (B, N)
    residual = ys
    for _ in range(steps):
        preds.append(preds[-1] + lr / N * (k_q * residual).sum(-1))
        residual = residual - lr / N * (gram @ residual.unsqueeze(-1)).squeeze(-1)
    return torch.stack(preds, dim=1)


def functional_gd(
    xs, ys, x_query, kernel: str = "exp", lr: float = 1.0, steps: int = 1, **params
) -> torch.Tensor:
    """The prediction after ``steps`` steps of :func:`functional_gd_path`: ``(B,)``."""
    return functional_gd_path(xs, ys, x_query, kernel, lr, steps, **params)[:, -1]


def majority_vote(xs, ys, x_query) -> torch.Tensor:
    """The mean label ``(1/N) sum_i y_i``: ``(B,)``; for labels in ``{-1, +1}`` its sign
    is the majority label (ties: +1 under :func:`icl_lib.analysis.curves.sign`).

    Nadaraya-Watson with a flat kernel (bandwidth to infinity): the baseline that
    ignores the query.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    if N == 0:
        raise ValueError("xs: expected at least one context example, got N = 0")
    return ys.mean(-1)


def fit_attention_temperature(xs, ys, x_query, target, temperatures):
    """The temperature of a softmax smoother (:func:`attention_regression`, no key
    bias) whose sign agrees most often with ``target`` labels ``(B,)`` in
    ``{-1, +1}``.

    Returns ``(temperature, agreement)``: the best of ``temperatures`` (the first on a
    tie) and its agreement rate.
    """
    check_per_prompt("target", target, check_prompt(xs, ys, x_query)[0])
    temperatures = [
        check_real("temperatures[i]", t)
        for t in check_sequence("temperatures", temperatures, "a sequence of numbers")
    ]
    if not temperatures:
        raise ValueError("temperatures: expected at least one value, got none")
    agreement = [
        (
            torch.where(
                attention_regression(xs, ys, x_query, t, key_bias=False) >= 0, 1.0, -1.0
            )
            == target
        )
        .double()
        .mean()
        .item()
        for t in temperatures
    ]
    best = max(range(len(temperatures)), key=agreement.__getitem__)
    return temperatures[best], agreement[best]


def best_nadaraya_watson_error(xs, ys, x_query, y_query, bandwidths):
    """Gaussian Nadaraya-Watson at the bandwidth with the smallest mean squared error
    on ``y_query (B,)``.

    Returns ``(error, bandwidth)``; the bandwidth is chosen on the same prompts, so the
    error is optimistic for the smoother (a favour to the baseline).
    """
    check_per_prompt("y_query", y_query, check_prompt(xs, ys, x_query)[0])
    bandwidths = [
        check_real("bandwidths[i]", h)
        for h in check_sequence("bandwidths", bandwidths, "a sequence of numbers")
    ]
    if not bandwidths:
        raise ValueError("bandwidths: expected at least one value, got none")
    errors = [
        ((nadaraya_watson(xs, ys, x_query, "gaussian", bandwidth=h) - y_query) ** 2)
        .mean()
        .item()
        for h in bandwidths
    ]
    best = min(range(len(bandwidths)), key=errors.__getitem__)
    return errors[best], bandwidths[best]
