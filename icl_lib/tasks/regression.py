"""Seeded prompt samplers: the in-context tasks the book trains and evaluates on.

Each prompt ``(x_1, y_1), ..., (x_n, y_n)`` is drawn with one hidden task vector ``w``;
a :class:`RegressionBatch` is a :class:`~icl_lib.prompts.PromptBatch` that also keeps
``w``.

Following Garg et al. (2022), ``x ~ N(0, Sigma)`` (``Sigma = I`` by default),
``w ~ N(0, I_d)`` and ``y = <w, x> + noise`` with ``noise ~ N(0, sigma^2)``. Used in
every chapter.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .._checks import (
    check_dtype,
    check_finite,
    check_memory,
    check_positive_int,
    check_real,
    check_sizes,
    check_tensor,
)
from ..prompts import PromptBatch
from ..runtime import make_generator


@dataclass(frozen=True)
class RegressionBatch(PromptBatch):
    """``B`` prompts of one regression task each.

    Attributes:
        xs: inputs, shape ``(B, n, d)``.
        ys: labels, shape ``(B, n)``, noise included.
        w: the task vector of each prompt, shape ``(B, d)``.
        noise_std: the label noise ``sigma`` the labels were drawn with (NaN: no
            single Gaussian level, e.g. logistic labels).
    """

    w: torch.Tensor
    noise_std: float

    def __post_init__(self):
        super().__post_init__()
        B, _, d = self.xs.shape
        check_tensor("w", self.w, 2)
        if tuple(self.w.shape) != (B, d):
            raise ValueError(
                f"w: expected one task vector per prompt, shape (B, d) = {(B, d)} to "
                f"match xs, got {tuple(self.w.shape)}"
            )
        self._check_noise_std()

    def _check_noise_std(self) -> None:
        # NaN means "no single Gaussian level": the noise is in the link (logistic
        # labels) or varies per prompt (NoiseMixtureBatch.sigmas).
        value = self.noise_std
        if isinstance(value, float) and math.isnan(value):
            return
        check_real("noise_std", value, minimum=0.0)


def _gaussian_inputs(batch_size, n_points, dim, cov, gen, dtype):
    xs = torch.randn(batch_size, n_points, dim, generator=gen, dtype=dtype)
    if cov is None:
        return xs
    check_tensor("cov", cov, 2)
    if tuple(cov.shape) != (dim, dim):
        raise ValueError(
            f"cov: expected shape (dim, dim) = {(dim, dim)}, got {tuple(cov.shape)}"
        )
    if not torch.allclose(cov, cov.T):
        raise ValueError("cov: expected a symmetric matrix, got an asymmetric one")
    chol, info = torch.linalg.cholesky_ex(cov.to(dtype))
    if info.item() != 0:
        raise ValueError(
            "cov: expected a positive definite matrix, its Cholesky factorisation "
            "failed"
        )
    return xs @ chol.T  # rows x = L z have covariance L L^T = cov


def _labels(xs, w, noise_std, gen):
    ys = torch.einsum("bnd,bd->bn", xs, w)
    if noise_std > 0:
        ys = ys + noise_std * torch.randn(ys.shape, generator=gen, dtype=xs.dtype)
    return ys


def linear_regression(
    batch_size: int,
    n_points: int,
    dim: int,
    *,
    noise_std: float = 0.0,
    cov: torch.Tensor | None = None,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> RegressionBatch:
    """Noisy linear regression prompts: ``x ~ N(0, cov)``, ``w ~ N(0, I)``,
    ``y = <w, x> + sigma eps``.

    Args:
        batch_size: number of prompts ``B``.
        n_points: points per prompt ``n`` (context plus query).
        dim: input dimension ``d``.
        noise_std: label noise ``sigma >= 0``.
        cov: input covariance ``Sigma``, shape ``(d, d)``, symmetric positive definite;
            ``None`` for the identity.
        seed: an int or a ``torch.Generator``.
        dtype: float32 or float64.
    """
    check_sizes(batch_size, n_points, dim)
    noise_std = check_real("noise_std", noise_std, minimum=0.0)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    w = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    xs = _gaussian_inputs(batch_size, n_points, dim, cov, gen, dtype)
    return RegressionBatch(xs, _labels(xs, w, noise_std, gen), w, noise_std)


def uniform_linear_regression(
    batch_size: int,
    n_points: int,
    dim: int,
    *,
    input_range: float = 1.0,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> RegressionBatch:
    """Noiseless prompts with uniform inputs: ``x ~ U(-r/2, r/2)^d``, ``w ~ N(0, I)``,
    ``y = <w, x>``.

    The setup of von Oswald et al. (2023)'s code (``input_range = 1``, so
    ``E[x x^T] = I / 12``); their paper's text says ``U(-1, 1)`` but every reported
    number matches ``r = 1``. Chapter 2.

    Args:
        batch_size: number of prompts ``B``.
        n_points: points per prompt ``n`` (context plus query).
        dim: input dimension ``d``.
        input_range: width ``r > 0`` of the input interval.
        seed: an int or a ``torch.Generator``.
        dtype: float32 or float64.
    """
    check_sizes(batch_size, n_points, dim)
    r = check_real("input_range", input_range, minimum=0.0, strict=True)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    w = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    xs = (torch.rand(batch_size, n_points, dim, generator=gen, dtype=dtype) - 0.5) * r
    return RegressionBatch(xs, _labels(xs, w, 0.0, gen), w, 0.0)


def sparse_linear_regression(
    batch_size: int,
    n_points: int,
    dim: int,
    sparsity: int,
    *,
    noise_std: float = 0.0,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> RegressionBatch:
    """Linear regression whose task vector has ``sparsity`` non-zero N(0, 1)
    coordinates.

    The support is uniform over the ``dim choose sparsity`` subsets (Garg et al. 2022, s
    = 3).
    """
    check_sizes(batch_size, n_points, dim)
    check_positive_int("sparsity", sparsity)
    if sparsity > dim:
        raise ValueError(
            f"sparsity: expected at most dim = {dim} non-zeros, got {sparsity}"
        )
    noise_std = check_real("noise_std", noise_std, minimum=0.0)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    w = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    support = torch.rand(batch_size, dim, generator=gen).argsort(dim=1)[:, :sparsity]
    mask = torch.zeros(batch_size, dim, dtype=dtype).scatter_(1, support, 1.0)
    w = w * mask
    xs = _gaussian_inputs(batch_size, n_points, dim, None, gen, dtype)
    return RegressionBatch(xs, _labels(xs, w, noise_std, gen), w, noise_std)


class TaskPool:
    """A finite pool of ``M`` task vectors ``w_1..w_M ~ N(0, I_d)``, fixed at
    construction.

    Prompts draw their task uniformly from the pool (Raventos et al. 2023). With few
    tasks the Bayes predictor is the pool's posterior mean (dMMSE); with many, ridge
    regression.

    Args:
        n_tasks: pool size ``M``.
        dim: input dimension ``d``.
        seed: an int or a ``torch.Generator`` that fixes the pool.
        dtype: float32 or float64.
    """

    def __init__(
        self, n_tasks: int, dim: int, *, seed=0, dtype: torch.dtype = torch.float32
    ):
        check_positive_int("n_tasks", n_tasks)
        check_positive_int("dim", dim)
        check_memory("n_tasks, dim", n_tasks * dim, "n_tasks * dim")
        check_dtype("dtype", dtype)
        self.weights = torch.randn(
            n_tasks, dim, generator=make_generator(seed), dtype=dtype
        )  # (M, d)

    @property
    def n_tasks(self) -> int:
        return self.weights.shape[0]

    @property
    def dim(self) -> int:
        return self.weights.shape[1]

    def sample(
        self, batch_size: int, n_points: int, *, noise_std: float = 0.0, seed=0
    ) -> RegressionBatch:
        """Prompts whose task vectors are drawn uniformly (with replacement) from the
        pool."""
        check_sizes(batch_size, n_points, self.dim)
        noise_std = check_real("noise_std", noise_std, minimum=0.0)
        gen = make_generator(seed)
        idx = torch.randint(self.n_tasks, (batch_size,), generator=gen)
        w = self.weights[idx]
        xs = torch.randn(batch_size, n_points, self.dim, generator=gen, dtype=w.dtype)
        return RegressionBatch(xs, _labels(xs, w, noise_std, gen), w, noise_std)


@dataclass(frozen=True)
class MixtureRegressionBatch(RegressionBatch):
    """Regression prompts whose task vector comes from a Gaussian-mixture prior; also
    keeps the component of each prompt, ``component (B,)`` (int64)."""

    component: torch.Tensor


def mixture_prior(dim: int, offset: float = 3.0):
    """Panwar et al. (2024)'s two-component prior: ``w = (+-offset, v)`` with equal
    weights, ``v ~ N(0, I_{d-1})`` and no variance in the first coordinate.

    Returns ``(means (2, d), covs (2, d, d), weights (2,))`` in float64, the arguments
    of :func:`mixture_linear_regression` and :func:`icl_lib.learners.mixture_posterior`.
    """
    check_positive_int("dim", dim, minimum=2)
    offset = check_real("offset", offset, minimum=0.0, strict=True)
    means = torch.zeros(2, dim, dtype=torch.float64)
    means[:, 0] = torch.tensor([offset, -offset], dtype=torch.float64)
    cov = torch.eye(dim, dtype=torch.float64)
    cov[0, 0] = 0.0
    return means, torch.stack((cov, cov)), torch.full((2,), 0.5, dtype=torch.float64)


def sparse_prior(dim: int, sparsity: int):
    """The prior of :func:`sparse_linear_regression` as a Gaussian mixture: one
    component per support of ``sparsity`` coordinates, ``N(0, diag(support))``, all
    with equal weight.

    Returns ``(means (C, d), covs (C, d, d), weights (C,))`` in float64 with
    ``C = dim choose sparsity``; with :func:`icl_lib.learners.mixture_posterior_mean`
    it gives the exact Bayes predictor for sparse tasks (chapter 5's ceiling).
    """
    check_positive_int("dim", dim)
    check_positive_int("sparsity", sparsity)
    if sparsity > dim:
        raise ValueError(
            f"sparsity: expected at most dim = {dim} non-zeros, got {sparsity}"
        )
    supports = list(itertools.combinations(range(dim), sparsity))
    covs = torch.zeros(len(supports), dim, dim, dtype=torch.float64)
    for c, support in enumerate(supports):
        covs[c, list(support), list(support)] = 1.0
    weights = torch.full((len(supports),), 1 / len(supports), dtype=torch.float64)
    return torch.zeros(len(supports), dim, dtype=torch.float64), covs, weights


def mixture_linear_regression(
    batch_size: int,
    n_points: int,
    *,
    means: torch.Tensor,
    covs: torch.Tensor,
    weights: torch.Tensor,
    noise_std: float = 0.0,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> MixtureRegressionBatch:
    """Linear regression prompts with ``w ~ sum_c weights[c] N(means[c], covs[c])``,
    ``x ~ N(0, I)`` and ``y = <w, x> + sigma eps`` (Panwar et al. 2024; chapter 4).

    Args:
        means: ``(C, d)``; covs: ``(C, d, d)`` symmetric positive semi-definite;
        weights: ``(C,)`` positive, summing to 1 (see :func:`mixture_prior`).
    """
    means = check_tensor("means", means, 2)
    covs = check_tensor("covs", covs, 3)
    weights = check_tensor("weights", weights, 1)
    C, dim = means.shape
    if tuple(covs.shape) != (C, dim, dim) or weights.shape[0] != C:
        raise ValueError(
            f"covs, weights: expected shapes {(C, dim, dim)} and ({C},) to match "
            f"means {tuple(means.shape)}, got {tuple(covs.shape)} and "
            f"{tuple(weights.shape)}"
        )
    for name, value in (("means", means), ("covs", covs), ("weights", weights)):
        check_finite(name, value)
    if bool((weights <= 0).any()) or abs(weights.sum().item() - 1) > 1e-6:
        raise ValueError(
            f"weights: expected positive weights summing to 1, got {weights.tolist()}"
        )
    check_sizes(batch_size, n_points, dim)
    noise_std = check_real("noise_std", noise_std, minimum=0.0)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    # Square roots by eigendecomposition: a singular covariance is allowed.
    evals, evecs = torch.linalg.eigh(covs.to(torch.float64))
    if bool((evals < -1e-9).any()):
        raise ValueError(
            "covs: expected positive semi-definite matrices, got an eigenvalue "
            f"{evals.min().item():.3g}"
        )
    roots = evecs * evals.clamp(min=0).sqrt().unsqueeze(-2)  # (C, d, d), R R^T = S
    component = torch.multinomial(
        weights.to(torch.float64), batch_size, replacement=True, generator=gen
    )
    z = torch.randn(batch_size, dim, generator=gen, dtype=torch.float64)
    w = (
        means.to(torch.float64)[component]
        + (roots[component] @ z.unsqueeze(-1))[..., 0]
    )
    w = w.to(dtype)
    xs = _gaussian_inputs(batch_size, n_points, dim, None, gen, dtype)
    return MixtureRegressionBatch(
        xs, _labels(xs, w, noise_std, gen), w, noise_std, component
    )
