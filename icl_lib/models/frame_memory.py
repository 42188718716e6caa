"""A constructed linear associative memory: ``P`` unit keys forming a tight frame of
``R^N``, each pair read with its own key (chapter 9, the exercise on the recall bound).

A *unit-norm tight frame* is a set of ``P >= N`` unit vectors ``kappa_s`` in ``R^N``
with ``sum_s kappa_s kappa_s^T = (P / N) I``: the keys spread as evenly as ``P`` unit
vectors can, so that the crosstalk ``sum_{s != q} (kappa_s^T kappa_q)^2 = (P - N) / N``
is the same for every query and as small as it can be on average. With values that are
independent uniform signs, Hoeffding's inequality bounds the failure of each query by
``exp(-N / (2 (P - N)))``; for ``P = N + 1`` the frame is the simplex (up to signs) and
a query fails exactly when the other ``N`` values all line up against its own, with
probability ``2^-N``. For ``P <= N`` the keys are orthonormal and every pair is
recalled.

A random frame is drawn by alternating projections (Tropp, Dhillon, Heath and
Strohmer 2005): from Gaussian keys, make the rows orthogonal with equal norms (the
nearest tight frame, the polar factor scaled by ``sqrt(P / N)``), then give every key
unit norm, until both hold to ``tol``.
"""

from __future__ import annotations

import math

import torch

from .._checks import check_memory, check_positive_int, check_real, check_seed
from ..runtime import make_generator
from .associative_memory import AssociativeMemory

__all__ = ["frame_memory", "frame_recall_accuracy", "unit_norm_tight_frame"]

MAX_FRAME_ENTRIES = 1 << 16  # N * P: the frames of chapter 9 hold at most 768 entries


def _check_sizes(state_dim, n_pairs) -> tuple[int, int]:
    N = check_positive_int("state_dim", state_dim)
    P = check_positive_int("n_pairs", n_pairs)
    if N * P > MAX_FRAME_ENTRIES:
        raise ValueError(
            f"n_pairs: expected state_dim * n_pairs <= {MAX_FRAME_ENTRIES} (a frame "
            f"is built by repeated decompositions), got {N} * {P} = {N * P}"
        )
    return N, P


def unit_norm_tight_frame(
    state_dim: int,
    n_pairs: int,
    *,
    seed: int = 0,
    tol: float = 1e-12,
    max_iter: int = 20_000,
) -> torch.Tensor:
    """``P`` unit keys in ``R^N`` as the columns of an ``(N, P)`` float64 matrix.

    For ``P <= N``: orthonormal keys (the first ``P`` columns of a random orthogonal
    matrix). For ``P > N``: a random unit-norm tight frame, ``K K^T = (P / N) I`` and
    unit columns to ``tol``, by alternating projections from Gaussian keys drawn with
    ``seed``. Raises ``RuntimeError`` if they have not met ``tol`` after ``max_iter``
    rounds."""
    N, P = _check_sizes(state_dim, n_pairs)
    tol = check_real("tol", tol, minimum=0, strict=True)
    max_iter = check_positive_int("max_iter", max_iter)
    gen = make_generator(check_seed("seed", seed))
    if P <= N:
        square = torch.randn(N, N, generator=gen, dtype=torch.float64)
        q, r = torch.linalg.qr(square)
        return (q * torch.sign(r.diagonal()))[:, :P]  # Haar-distributed columns
    keys = torch.randn(N, P, generator=gen, dtype=torch.float64)
    keys = keys / keys.norm(dim=0)
    target = (P / N) * torch.eye(N, dtype=torch.float64)
    for _ in range(max_iter):
        # the nearest tight frame: (K K^T)^(-1/2) K, scaled to K K^T = (P / N) I
        values, vectors = torch.linalg.eigh(keys @ keys.T)
        inverse_root = vectors @ torch.diag(values.rsqrt()) @ vectors.T
        keys = math.sqrt(P / N) * inverse_root @ keys
        keys = keys / keys.norm(dim=0)
        if (keys @ keys.T - target).abs().max().item() < tol:
            return keys
    raise RuntimeError(
        f"unit_norm_tight_frame: the alternating projections did not reach tol = "
        f"{tol} in max_iter = {max_iter} rounds (state_dim = {N}, n_pairs = {P})"
    )


def frame_memory(state_dim: int, n_pairs: int, *, seed: int = 0) -> AssociativeMemory:
    """The memory whose keys are :func:`unit_norm_tight_frame` and whose queries are
    the keys themselves (``rho_q = kappa_q``)."""
    keys = unit_norm_tight_frame(state_dim, n_pairs, seed=seed)
    return AssociativeMemory(keys, keys.clone())


def frame_recall_accuracy(
    state_dim: int,
    n_pairs: int,
    *,
    frames: int = 4,
    n_prompts: int = 8192,
    seed: int = 0,
) -> float:
    """Fraction of the answers with the right sign when the values are independent
    uniform signs, averaged over ``frames`` random frames (:func:`frame_memory`, seeds
    ``seed, seed + 1, ...``).

    Exact over all ``2^P`` sign vectors when there are at most ``n_prompts`` of them,
    as :func:`icl_lib.analysis.recall.sign_recall_accuracy` counts; otherwise estimated
    on ``n_prompts`` random ones. A read-out within ``1e-9`` of zero counts as wrong:
    in exact arithmetic it is a tie (the simplex, ``P = N + 1``, ties whenever the
    other ``N`` values all oppose the query's), and rounding must not break it."""
    N, P = _check_sizes(state_dim, n_pairs)
    frames = check_positive_int("frames", frames)
    n_prompts = check_positive_int("n_prompts", n_prompts)
    check_memory("n_prompts", n_prompts * P, "n_prompts * n_pairs")
    seed = check_seed("seed", seed)
    gen = make_generator(seed)
    if 2**P <= n_prompts:
        bits = (torch.arange(2**P)[:, None] >> torch.arange(P)) & 1
    else:
        bits = torch.randint(0, 2, (n_prompts, P), generator=gen)
    values = bits.double() * 2 - 1  # (prompts, P)
    right = []
    for i in range(frames):
        memory = frame_memory(N, P, seed=(seed + i) % 2**64)
        right.append((values * memory.read(values) > 1e-9).double().mean().item())
    return sum(right) / frames
