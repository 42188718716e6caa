"""Exact Bayesian in-context learners for linear regression with Gaussian and
Gaussian-mixture priors (chapter 4).

For ``y = <w, x> + N(0, sigma^2)`` and a prior ``w ~ N(m, S)``, the ``k`` labels of a
context are jointly Gaussian, ``y ~ N(X m, X S X^T + sigma^2 I)``, and conditioning
gives the posterior in the *observation-space* form

    G = X S X^T + sigma^2 I,   mean = m + S X^T G^{-1} (y - X m),
    cov = S - S X^T G^{-1} X S,

which needs no inverse of ``S``: a prior with a zero-variance coordinate (Panwar et
al.'s mixture components) is allowed. For a mixture prior ``sum_c alpha_c N(m_c, S_c)``
the posterior is the mixture of the components' posteriors with weights
``beta_c ~ alpha_c N(y; X m_c, G_c)`` (Panwar et al. 2024), and the posterior mean is
``sum_c beta_c mean_c``. With ``S_c = 0`` the components are points and the mixture
posterior mean is Raventos et al.'s dMMSE (:func:`icl_lib.learners.dmmse`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .._checks import (
    check_finite,
    check_prompt,
    check_real,
    check_sequences,
    check_tensor,
)


class GaussianPosterior(NamedTuple):
    """``w | context ~ N(mean (B, d), cov (B, d, d))`` and the log evidence
    ``log p(ys) (B,)``."""

    mean: torch.Tensor
    cov: torch.Tensor
    log_evidence: torch.Tensor


class MixturePosterior(NamedTuple):
    """The posterior weights ``(B, C)`` of the components, their posterior means
    ``(B, C, d)`` and the mixture's posterior mean ``(B, d)``."""

    weights: torch.Tensor
    means: torch.Tensor
    mean: torch.Tensor


def _prior(name, mean, cov, d, like):
    mean = check_tensor(f"{name}_mean", mean, 1).to(like)
    cov = check_tensor(f"{name}_cov", cov, 2).to(like)
    if tuple(mean.shape) != (d,) or tuple(cov.shape) != (d, d):
        raise ValueError(
            f"{name}_mean, {name}_cov: expected shapes ({d},) and ({d}, {d}) to match "
            f"xs (d = {d}), got {tuple(mean.shape)} and {tuple(cov.shape)}"
        )
    check_finite(f"{name}_mean", mean)
    check_finite(f"{name}_cov", cov)
    return mean, cov


def gaussian_posterior(
    xs, ys, *, prior_mean, prior_cov, noise_std: float
) -> GaussianPosterior:
    """The posterior of ``w`` under the prior ``N(prior_mean (d,), prior_cov (d, d))``
    after the context ``xs (B, k, d)``, ``ys (B, k)`` (``k = 0`` allowed).

    Args:
        prior_cov: symmetric positive semi-definite (a singular one is allowed).
        noise_std: the label noise ``sigma > 0``.
    """
    B, k, d = check_sequences(xs, ys)
    m, S = _prior("prior", prior_mean, prior_cov, d, xs)
    sigma = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    return _conditioned(xs, ys, m, S, sigma, "prior_cov")


def _conditioned(xs, ys, m, S, sigma: float, cov_name: str) -> GaussianPosterior:
    """:func:`gaussian_posterior` of checked arguments; ``cov_name`` is what an error
    calls the prior covariance ``S``."""
    k = xs.shape[1]
    SX = S @ xs.transpose(1, 2)  # (B, d, k)
    G = xs @ SX + sigma**2 * torch.eye(k, dtype=xs.dtype, device=xs.device)
    chol, info = torch.linalg.cholesky_ex(G)  # (B, k, k)
    if bool(info.any()):  # sigma^2 I + X S X^T fails only for an S that is not PSD
        raise ValueError(
            f"{cov_name}: expected a positive semi-definite covariance, got one that "
            "is not"
        )
    resid = (ys - xs @ m).unsqueeze(-1)  # (B, k, 1)
    alpha = torch.cholesky_solve(resid, chol)  # G^{-1} (y - X m)
    mean = m + (SX @ alpha).squeeze(-1)
    cov = S - SX @ torch.cholesky_solve(SX.transpose(1, 2), chol)
    log_det = 2 * chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    quad = (resid * alpha).sum((1, 2))
    log_evidence = -0.5 * (quad + log_det + k * math.log(2 * math.pi))
    return GaussianPosterior(mean, cov, log_evidence)


def gaussian_posterior_mean(
    xs, ys, x_query, *, prior_mean, prior_cov, noise_std: float
) -> torch.Tensor:
    """The Bayes prediction (squared loss) under the prior
    ``N(prior_mean, prior_cov)``: ``<E[w | context], x_query>``, ``(B,)``
    (:func:`gaussian_posterior`)."""
    check_prompt(xs, ys, x_query)
    post = gaussian_posterior(
        xs, ys, prior_mean=prior_mean, prior_cov=prior_cov, noise_std=noise_std
    )
    return (post.mean * x_query).sum(-1)


def mixture_posterior(
    xs, ys, *, means, covs, weights, noise_std: float
) -> MixturePosterior:
    """The posterior under the mixture prior ``sum_c weights[c] N(means[c], covs[c])``.

    Args:
        xs, ys: the context ``(B, k, d)``, ``(B, k)``.
        means: ``(C, d)``; covs: ``(C, d, d)``, each positive semi-definite;
        weights: ``(C,)``, positive, summing to 1.
        noise_std: the label noise ``sigma > 0``.
    """
    B, k, d = check_sequences(xs, ys)
    means = check_finite("means", check_tensor("means", means, 2)).to(xs)
    covs = check_finite("covs", check_tensor("covs", covs, 3)).to(xs)
    weights = check_finite("weights", check_tensor("weights", weights, 1)).to(xs)
    sigma = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    if bool((weights <= 0).any()) or abs(weights.sum().item() - 1) > 1e-6:
        raise ValueError(
            f"weights: expected positive weights summing to 1, got {weights.tolist()}"
        )
    C = weights.shape[0]
    if means.shape[0] != C or covs.shape[0] != C:
        raise ValueError(
            f"means, covs: expected {C} components (one per weight), got "
            f"{means.shape[0]} means and {covs.shape[0]} covariances"
        )
    if means.shape[1:] != (d,) or covs.shape[1:] != (d, d):
        raise ValueError(
            f"means, covs: expected shapes (C, {d}) and (C, {d}, {d}) to match xs "
            f"(d = {d}), got {tuple(means.shape)} and {tuple(covs.shape)}"
        )
    parts = [
        _conditioned(xs, ys, means[c], covs[c], sigma, f"covs[{c}]") for c in range(C)
    ]
    log_post = torch.stack([p.log_evidence for p in parts], 1) + weights.log()
    beta = torch.softmax(log_post, dim=1)  # (B, C)
    comp_means = torch.stack([p.mean for p in parts], 1)  # (B, C, d)
    return MixturePosterior(beta, comp_means, (beta.unsqueeze(-1) * comp_means).sum(1))


def mixture_posterior_mean(
    xs, ys, x_query, *, means, covs, weights, noise_std: float
) -> torch.Tensor:
    """The Bayes prediction (squared loss) under a Gaussian-mixture prior: ``(B,)``,
    ``<sum_c beta_c mean_c, x_query>`` (:func:`mixture_posterior`)."""
    check_prompt(xs, ys, x_query)
    post = mixture_posterior(
        xs, ys, means=means, covs=covs, weights=weights, noise_std=noise_std
    )
    return (post.mean * x_query).sum(-1)


def _check_gaussians(**tensors) -> None:
    """Means ``(..., d)`` and covariances ``(..., d, d)`` of one batch shape, float and
    finite: the keyword names (``mean_p``, ``cov_p``, ``mean_q``, ``cov_q``) say which
    is which, and each ``_q`` tensor must have the shape of its ``_p`` partner."""
    for name, value in tensors.items():
        extra = 1 if name.startswith("cov") else 0
        if not isinstance(value, torch.Tensor) or value.ndim < 1 + extra:
            raise TypeError(
                f"{name}: expected a tensor with at least {1 + extra} dimensions, got "
                f"{type(value).__name__}"
            )
        check_tensor(name, value, value.ndim)  # a float dtype
    for name, value in tensors.items():
        ref_name = name[:-1] + "p"
        if name.endswith("_q") and value.shape != tensors[ref_name].shape:
            raise ValueError(
                f"{name}: expected the shape of {ref_name} "
                f"{tuple(tensors[ref_name].shape)}, got {tuple(value.shape)}"
            )
    mean_p, cov_p = tensors["mean_p"], tensors["cov_p"]
    if cov_p.shape != mean_p.shape + mean_p.shape[-1:]:
        raise ValueError(
            f"cov_p: expected shape (..., d, d) to match mean_p {tuple(mean_p.shape)}, "
            f"got {tuple(cov_p.shape)}"
        )
    for name, value in tensors.items():
        check_finite(name, value)


def gaussian_kl(mean_p, cov_p, mean_q, cov_q) -> torch.Tensor:
    """``KL(N(mean_p, cov_p) || N(mean_q, cov_q))`` in nats for batches of Gaussians:
    means ``(..., d)``, covariances ``(..., d, d)`` positive definite; returns
    ``(...)``."""
    _check_gaussians(mean_p=mean_p, cov_p=cov_p, mean_q=mean_q, cov_q=cov_q)
    d = mean_p.shape[-1]
    chol_q, info = torch.linalg.cholesky_ex(cov_q)
    if bool(info.any()):
        raise ValueError("cov_q: expected positive definite covariances, got one not")
    trace = torch.cholesky_solve(cov_p, chol_q).diagonal(dim1=-2, dim2=-1).sum(-1)
    diff = (mean_q - mean_p).unsqueeze(-1)
    quad = (diff * torch.cholesky_solve(diff, chol_q)).sum((-2, -1))
    log_det_q = 2 * chol_q.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    log_det_p = torch.linalg.slogdet(cov_p).logabsdet
    return 0.5 * (trace + quad - d + log_det_q - log_det_p)


def best_covariance_kl(mean_p, cov_p, mean_q) -> torch.Tensor:
    """The smallest ``KL(N(mean_p, cov_p) || N(mean_q, cov_q))`` over all covariances
    ``cov_q``, in nats: ``(1/2) log(1 + delta^T cov_p^{-1} delta)`` with
    ``delta = mean_q - mean_p``, attained at ``cov_q = cov_p + delta delta^T``.

    What a Gaussian whose mean is off by ``delta`` costs at least, however its
    covariance is chosen (chapter 4, Experiment 4); with the exact covariance it costs
    ``delta^T cov_p^{-1} delta / 2`` instead. Means ``(..., d)``, ``cov_p``
    ``(..., d, d)`` positive definite; returns ``(...)``.
    """
    _check_gaussians(mean_p=mean_p, cov_p=cov_p, mean_q=mean_q)
    chol_p, info = torch.linalg.cholesky_ex(cov_p)
    if bool(info.any()):
        raise ValueError("cov_p: expected positive definite covariances, got one not")
    diff = (mean_q - mean_p).unsqueeze(-1)
    quad = (diff * torch.cholesky_solve(diff, chol_p)).sum((-2, -1))
    return 0.5 * torch.log1p(quad)
