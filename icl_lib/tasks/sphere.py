"""Prompt samplers on the unit sphere: the kernel view of in-context learning (chapter
8).

* :func:`sphere_inputs`: inputs uniform on the unit sphere of ``R^d``.
* :func:`gp_regression`: labels from a Gaussian process with a dot-product kernel on the
  sphere, the setting of Cheng, Chen and Sra (ICML 2024; ``d = 5``, kernels linear,
  ReLU, exp). The batch knows the covariance it was drawn from, so
  :meth:`KernelBatch.bayes_prediction` is the exact Bayes-optimal (posterior mean)
  prediction.
* :func:`sphere_classification`: labels ``sign(f(x))`` with ``f`` such a Gaussian
  process, the in-context classification task of the trained transformer in chapter 8.
* :func:`nearest_demonstrations`: demonstration retrieval, the ``k`` pool examples most
  similar to the query.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import (
    check_batch,
    check_dtype,
    check_finite,
    check_positive_int,
    check_real,
    check_sizes,
    check_tensor,
)
from ..kernels import KERNELS, kernel_matrix
from ..prompts import PromptBatch
from ..runtime import make_generator


def sphere_inputs(
    batch_size: int,
    n_points: int,
    dim: int,
    *,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Points uniform on the unit sphere of ``R^dim``: shape
    ``(batch_size, n_points, dim)``."""
    check_sizes(batch_size, n_points, dim)
    check_dtype("dtype", dtype)
    z = torch.randn(
        batch_size, n_points, dim, generator=make_generator(seed), dtype=dtype
    )
    return z / z.norm(dim=-1, keepdim=True)


def psd_projection(cov: torch.Tensor) -> torch.Tensor:
    """The nearest positive semi-definite matrix (Frobenius norm) to each symmetric
    ``cov (B, n, n)``.

    Negative eigenvalues are set to 0. Needed for ``max(<u, v>, 0)``, which is not a
    positive definite kernel on the sphere: its Gram matrices have negative eigenvalues.
    """
    check_finite("cov", check_batch("cov", check_tensor("cov", cov, 3)))
    if cov.shape[1] != cov.shape[2]:
        raise ValueError(
            f"cov: expected square matrices (B, n, n), got shape {tuple(cov.shape)}"
        )
    evals, evecs = torch.linalg.eigh(cov)
    return (evecs * evals.clamp(min=0).unsqueeze(-2)) @ evecs.transpose(-1, -2)


@dataclass(frozen=True)
class KernelBatch(PromptBatch):
    """``B`` prompts whose labels are a Gaussian-process draw plus noise.

    Attributes:
        xs: inputs ``(B, n, d)`` on the unit sphere.
        ys: labels ``(B, n)``: ``f(x_i) + sigma eps_i``.
        cov: the covariance ``(B, n, n)`` that ``f(x_1..x_n)`` was drawn from.
        noise_std: ``sigma``.
        kernel: the name of the generating kernel.
    """

    cov: torch.Tensor
    noise_std: float
    kernel: str

    def __post_init__(self):
        super().__post_init__()
        B, n, _ = self.xs.shape
        if tuple(self.cov.shape) != (B, n, n):
            raise ValueError(
                f"cov: expected shape (B, n, n) = {(B, n, n)}, got "
                f"{tuple(self.cov.shape)}"
            )
        check_real("noise_std", self.noise_std, minimum=0.0)
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel: expected one of {KERNELS}, got {self.kernel!r}")

    def bayes_prediction(self, k: int) -> torch.Tensor:
        """The posterior mean of ``y_k`` given the first ``k`` labels: ``(B,)``.

        ``E[f(x_q) | y] = C_{qX} (C_{XX} + sigma^2 I)^{-1} y`` with ``C`` the generating
        covariance (a pseudo-inverse when ``sigma = 0`` and ``C_{XX}`` is singular). It
        is the Bayes-optimal prediction under squared loss, and equals
        :func:`icl_lib.kernels.kernel_ridge` with ``lam = sigma^2`` when ``C`` is the
        kernel's own Gram matrix.
        """
        xs, ys, _, _ = self.prompt(k)
        if k == 0:
            return ys.new_zeros(ys.shape[0])
        c_xx = self.cov[:, :k, :k] + self.noise_std**2 * torch.eye(
            k, dtype=ys.dtype, device=ys.device
        )
        c_qx = self.cov[:, k, :k]  # (B, k)
        if self.noise_std > 0:
            alpha = torch.linalg.solve(c_xx, ys.unsqueeze(-1)).squeeze(-1)
        else:
            alpha = (
                torch.linalg.pinv(c_xx, hermitian=True) @ ys.unsqueeze(-1)
            ).squeeze(-1)
        return (c_qx * alpha).sum(-1)


def _gp_draw(xs, kernel, gen, **params):
    cov = psd_projection(kernel_matrix(xs, xs, kernel, **params))
    evals, evecs = torch.linalg.eigh(cov)
    z = torch.randn(xs.shape[0], xs.shape[1], 1, generator=gen, dtype=xs.dtype)
    f = (evecs @ (evals.clamp(min=0).sqrt().unsqueeze(-1) * z)).squeeze(
        -1
    )  # cov^{1/2} z
    return f, cov


def gp_regression(
    batch_size: int,
    n_points: int,
    dim: int = 5,
    kernel: str = "exp",
    *,
    noise_std: float = 0.1,
    seed=0,
    dtype: torch.dtype = torch.float32,
    **params,
) -> KernelBatch:
    """Gaussian-process regression prompts on the unit sphere (Cheng, Chen and Sra
    2024).

    ``x_i`` uniform on the sphere of ``R^dim``; ``(f(x_1), ..., f(x_n)) ~ N(0, C)`` with
    ``C`` the kernel's Gram matrix, projected onto the positive semi-definite cone (only
    ``relu`` needs it); ``y_i = f(x_i) + noise_std * eps_i``. ``params`` go to
    :func:`icl_lib.kernels.kernel_matrix`.
    """
    check_sizes(batch_size, n_points, dim)
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {KERNELS}, got {kernel!r}")
    noise_std = check_real("noise_std", noise_std, minimum=0.0)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    xs = sphere_inputs(batch_size, n_points, dim, seed=gen, dtype=dtype)
    f, cov = _gp_draw(xs, kernel, gen, **params)
    ys = (
        f + noise_std * torch.randn(f.shape, generator=gen, dtype=dtype)
        if noise_std > 0
        else f
    )
    return KernelBatch(xs, ys, cov, noise_std, kernel)


@dataclass(frozen=True)
class ClassificationBatch(PromptBatch):
    """``B`` prompts of binary labels ``y_i = sign(f(x_i)) in {-1, +1}``; ``latent``
    holds ``f(x_i)``."""

    latent: torch.Tensor  # (B, n), the Gaussian-process values whose sign is the label

    def __post_init__(self):
        super().__post_init__()
        if self.latent.shape != self.ys.shape:
            raise ValueError(
                f"latent: expected shape {tuple(self.ys.shape)} to match ys, got "
                f"{tuple(self.latent.shape)}"
            )


def sphere_classification(
    batch_size: int,
    n_points: int,
    dim: int = 5,
    kernel: str = "exp",
    *,
    seed=0,
    dtype: torch.dtype = torch.float32,
    **params,
) -> ClassificationBatch:
    """In-context binary classification: ``y = sign(f(x))``, ``f`` a Gaussian process on
    the sphere.

    Each prompt has its own ``f`` (its own decision boundary), so the labels of the
    context are the only way to learn it; nearby inputs tend to share a label. Chapter
    8.
    """
    check_sizes(batch_size, n_points, dim)
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {KERNELS}, got {kernel!r}")
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    xs = sphere_inputs(batch_size, n_points, dim, seed=gen, dtype=dtype)
    f, _ = _gp_draw(xs, kernel, gen, **params)
    ys = torch.where(f >= 0, 1.0, -1.0).to(dtype)
    return ClassificationBatch(xs, ys, f)


def nearest_demonstrations(pool_xs, pool_ys, x_query, k: int):
    """Retrieval: the ``k`` pool examples with the largest ``<x_i, x_q>`` (cosine on the
    sphere).

    Args:
        pool_xs: candidate inputs ``(B, P, d)``; pool_ys: their labels ``(B, P)``;
        x_query ``(B, d)``.
        k: how many to keep, ``1 <= k <= P``.

    Returns ``(xs (B, k, d), ys (B, k))`` ordered from the least to the most similar, so
    the most similar demonstration stands right before the query (as in
    retrieval-augmented prompting).
    """
    check_tensor("pool_xs", pool_xs, 3)
    check_tensor("pool_ys", pool_ys, 2)
    check_tensor("x_query", x_query, 2)
    B, P, d = pool_xs.shape
    if tuple(pool_ys.shape) != (B, P) or tuple(x_query.shape) != (B, d):
        raise ValueError(
            f"pool_ys, x_query: expected shapes {(B, P)} and {(B, d)} to match "
            f"pool_xs {tuple(pool_xs.shape)}, got {tuple(pool_ys.shape)} and "
            f"{tuple(x_query.shape)}"
        )
    for name, value in (
        ("pool_xs", pool_xs),
        ("pool_ys", pool_ys),
        ("x_query", x_query),
    ):
        check_finite(name, value)
    check_positive_int("k", k)
    if k > P:
        raise ValueError(f"k: expected at most the pool size P = {P}, got {k}")
    sim = (pool_xs * x_query.unsqueeze(1)).sum(-1)  # (B, P)
    idx = sim.topk(k, dim=1).indices.flip(1)  # least similar first
    return pool_xs.gather(1, idx.unsqueeze(-1).expand(B, k, d)), pool_ys.gather(1, idx)
