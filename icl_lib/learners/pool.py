"""The Bayes predictor for a finite pool of tasks: Raventos et al. (2023)'s dMMSE.

When every prompt's task vector is drawn uniformly from a pool ``w^(1..M)`` and
``y = <w, x> + N(0, sigma^2)``, the posterior over the pool after ``k`` examples is a
softmax of the log-likelihoods, and the posterior mean of ``w`` (Raventos et al., Eq. 2)
gives the Bayes-optimal prediction under squared loss. With no context it is the pool's
mean; as ``M -> infinity`` with ``w ~ N(0, I)`` it tends to ridge with
``lam = sigma^2`` (:func:`icl_lib.learners.ridge`). Chapter 3.
"""

from __future__ import annotations

import torch

from .._checks import (
    check_batch,
    check_finite,
    check_prompt,
    check_real,
    check_sequences,
    check_tensor,
)

_CHUNK = 1 << 24  # residual entries (prompts x examples x tasks) held at once


def pool_posterior(xs, ys, pool, noise_std: float) -> torch.Tensor:
    """Posterior probabilities of each pool task given the context: ``(B, M)``.

    ``p(i | D) = softmax_i(-sum_j (y_j - <w^(i), x_j>)^2 / (2 sigma^2))`` for a uniform
    prior over the pool.

    Args:
        xs: context inputs ``(B, N, d)``; ys: labels ``(B, N)``.
        pool: task vectors ``(M, d)``.
        noise_std: the label noise ``sigma > 0`` the prompts were drawn with.
    """
    B, N, d = check_sequences(xs, ys)
    pool = check_finite("pool", check_batch("pool", check_tensor("pool", pool, 2)))
    if pool.shape[1] != d:
        raise ValueError(
            f"pool: expected shape (M, d) with d = {d} to match xs, got "
            f"{tuple(pool.shape)}"
        )
    sigma = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    pool = pool.to(dtype=xs.dtype, device=xs.device)
    log_lik = xs.new_zeros(B, pool.shape[0])
    step = max(1, _CHUNK // max(1, N * pool.shape[0]))
    for start in range(0, B, step):  # chunks keep the (b, N, M) residuals small
        part = slice(start, start + step)
        resid = ys[part].unsqueeze(-1) - xs[part] @ pool.T  # (b, N, M)
        log_lik[part] = -(resid**2).sum(1) / (2 * sigma**2)
    return torch.softmax(log_lik, dim=-1)


def dmmse(xs, ys, x_query, pool, noise_std: float) -> torch.Tensor:
    """The posterior-mean prediction for tasks drawn uniformly from ``pool``: ``(B,)``.

    ``w_hat = sum_i p(i | D) w^(i)`` (:func:`pool_posterior`), prediction
    ``<w_hat, x_query>``; with an empty context, ``w_hat`` is the pool's mean.
    """
    check_prompt(xs, ys, x_query)
    weights = pool_posterior(xs, ys, pool, noise_std)  # (B, M)
    w_hat = weights @ pool.to(dtype=xs.dtype, device=xs.device)  # (B, d)
    return (w_hat * x_query).sum(-1)
