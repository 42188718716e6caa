"""Prompt distributions that mix several kinds of prompts (chapter 5, algorithm
selection).

* :func:`noise_mixture_regression`: linear regression whose label noise ``sigma`` is
  drawn per prompt from a finite set (Bai et al. 2023, Section 4.1: one model, several
  noise levels, so the best ridge penalty depends on the prompt);
* :func:`linear_classification`: logistic labels ``y in {-1, +1}`` with
  ``P(y = +1 | x) = sigmoid(<w, x>)``;
* :func:`family_mixture`: each prompt is a regression prompt or a classification prompt
  (Bai et al. 2023, Section 4.2, pre-ICL testing).

Every batch keeps its task vectors ``w (B, d)`` and which kind each prompt is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._checks import check_dtype, check_real, check_sizes
from ..runtime import make_generator
from .regression import RegressionBatch

FAMILIES = ("regression", "classification")


@dataclass(frozen=True)
class NoiseMixtureBatch(RegressionBatch):
    """Regression prompts with a noise level per prompt.

    Attributes:
        component: index into ``noise_levels`` of each prompt, ``(B,)`` int64.
        sigmas: the noise level of each prompt, ``(B,)``.
        noise_std: NaN (the level varies per prompt: see ``sigmas``).
    """

    component: torch.Tensor
    sigmas: torch.Tensor


@dataclass(frozen=True)
class FamilyBatch(RegressionBatch):
    """Prompts of several families; ``family (B,)`` int64 indexes :data:`FAMILIES`
    (0: regression, 1: classification)."""

    family: torch.Tensor


def _check_levels(noise_levels) -> tuple[float, ...]:
    if not isinstance(noise_levels, (tuple, list)) or not noise_levels:
        raise TypeError(
            "noise_levels: expected a non-empty tuple of noise levels, got "
            f"{noise_levels!r}"
        )
    return tuple(
        check_real(f"noise_levels[{i}]", s, minimum=0.0, strict=True)
        for i, s in enumerate(noise_levels)
    )


def noise_mixture_regression(
    batch_size: int,
    n_points: int,
    dim: int,
    noise_levels,
    *,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> NoiseMixtureBatch:
    """Linear regression prompts whose noise level is drawn per prompt, uniformly from
    ``noise_levels``: ``x, w ~ N(0, I_d)``, ``y = <w, x> + sigma eps``.

    Args:
        batch_size: number of prompts ``B``.
        n_points: points per prompt ``n`` (context plus query).
        dim: input dimension ``d``.
        noise_levels: the possible ``sigma > 0``, e.g. ``(0.1, 1.0)``.
        seed: an int or a ``torch.Generator``.
        dtype: float32 or float64.

    Bai et al. (2023) train on four levels at ``d = 20``; chapter 5 uses two at
    ``d = 5``.
    """
    check_sizes(batch_size, n_points, dim)
    levels = _check_levels(noise_levels)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    w = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    xs = torch.randn(batch_size, n_points, dim, generator=gen, dtype=dtype)
    component = torch.randint(len(levels), (batch_size,), generator=gen)
    sigmas = torch.tensor(levels, dtype=dtype)[component]
    eps = torch.randn(batch_size, n_points, generator=gen, dtype=dtype)
    ys = torch.einsum("bnd,bd->bn", xs, w) + sigmas[:, None] * eps
    return NoiseMixtureBatch(xs, ys, w, math.nan, component, sigmas)


def _logistic_labels(xs, w, gen):
    logits = torch.einsum("bnd,bd->bn", xs, w)
    u = torch.rand(logits.shape, generator=gen, dtype=xs.dtype)
    return torch.where(u < torch.sigmoid(logits), 1.0, -1.0).to(xs.dtype)


def linear_classification(
    batch_size: int,
    n_points: int,
    dim: int,
    *,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> RegressionBatch:
    """Logistic classification prompts: ``x, w ~ N(0, I_d)`` and ``y in {-1, +1}``
    with ``P(y = +1 | x) = sigmoid(<w, x>)``.

    Bai et al.'s code draws ``y = sign(<w, x>)`` by default (the limit of an infinitely
    large ``w``); logistic labels make logistic regression the well-specified learner
    (chapter 5). ``noise_std`` of the batch is NaN (the noise is in the link).
    """
    check_sizes(batch_size, n_points, dim)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    w = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    xs = torch.randn(batch_size, n_points, dim, generator=gen, dtype=dtype)
    return RegressionBatch(xs, _logistic_labels(xs, w, gen), w, math.nan)


def family_mixture(
    batch_size: int,
    n_points: int,
    dim: int,
    *,
    classification_prob: float = 0.5,
    noise_std: float = 0.5,
    seed=0,
    dtype: torch.dtype = torch.float32,
) -> FamilyBatch:
    """Each prompt is, independently, a classification prompt (probability
    ``classification_prob``; labels as :func:`linear_classification`) or a regression
    prompt (``y = <w, x> + noise_std eps``); ``x, w ~ N(0, I_d)`` for both.

    ``classification_prob = 0`` or ``1`` gives a single family (the one-family models
    of chapter 5). Returns a :class:`FamilyBatch`.
    """
    check_sizes(batch_size, n_points, dim)
    p = check_real("classification_prob", classification_prob, minimum=0.0)
    if p > 1:
        raise ValueError(f"classification_prob: expected a number <= 1, got {p}")
    noise_std = check_real("noise_std", noise_std, minimum=0.0)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    w = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    xs = torch.randn(batch_size, n_points, dim, generator=gen, dtype=dtype)
    family = (torch.rand(batch_size, generator=gen) < p).long()
    regression = torch.einsum("bnd,bd->bn", xs, w)
    regression = regression + noise_std * torch.randn(
        regression.shape, generator=gen, dtype=dtype
    )
    classification = _logistic_labels(xs, w, gen)
    ys = torch.where(family[:, None] == 1, classification, regression)
    return FamilyBatch(xs, ys, w, noise_std, family)
