"""Weights that make a linear self-attention model compute a classical learner exactly.

* :func:`gd_products`: one LSA layer = one GD step on
  ``L(W) = 1/(2N) sum_i ||W x_i - y_i||^2`` from ``W_0`` (von Oswald et al. 2023,
  Proposition 1); :func:`gd_factors` gives their four matrices ``W_Q, W_K, W_V, P``.
* :func:`gd_plus_plus_products`: one GD++ step (GD on the labels plus
  ``x <- (I - gamma H) x``).
* :func:`preconditioned_gd_products`: one preconditioned GD step ``w = G X^T y / N``.
* :func:`ahn_preconditioner`: Ahn et al. (2023, Theorem 1)'s optimal ``G`` for
  ``x ~ N(0, Sigma)``.
* :func:`gd_plus_plus_preconditioner`: ``K`` GD++ steps as one polynomial
  preconditioner ``p(H)`` of the input Gram matrix (plain GD: a truncated Neumann
  series).
* :func:`gd_plus_plus_eigenvalue_map`, :func:`gd_plus_plus_condition_number` and
  :func:`gd_plus_plus_spectra`: what the GD++ input map does to the conditioning of
  ``H``.

Only the products ``W_KQ = W_K^T W_Q`` and ``W_PV = P W_V`` are identifiable, so most
constructions are given as these two ``(d+1, d+1)`` matrices. Chapter 2.
"""

from __future__ import annotations

import torch

from .._checks import (
    check_batch,
    check_dtype,
    check_finite,
    check_float_tensor,
    check_positive_int,
    check_real,
    check_seed,
    check_sequence,
    check_tensor,
)
from ..models.lsa import LinearSelfAttention


def _w0(w0, dim, dtype):
    if w0 is None:
        return torch.zeros(dim, dtype=dtype)
    check_finite("w0", check_tensor("w0", w0, 1))
    if w0.shape[0] != dim:
        raise ValueError(f"w0: expected shape (d,) = {(dim,)}, got {tuple(w0.shape)}")
    return w0.to(dtype)


def gd_products(dim: int, lr: float, n_context: int, *, w0=None, dtype=torch.float64):
    """``(W_KQ, W_PV)`` of the layer that performs one GD step with step size ``lr``
    from ``w0``.

    ``W_KQ = [[I, 0], [0, 0]]`` (scores ``x_i^T x_j``) and
    ``W_PV = (lr/N) [[0, 0], [w0^T, -1]]``. Token ``j`` becomes ``(x_j, y_j - dW x_j)``
    with ``dW = -lr grad L(w0)``; a query entered as ``(x_q, -w0^T x_q)`` becomes
    ``(x_q, -(w0 + dW)^T x_q)``: minus the prediction of the updated model.
    """
    check_positive_int("dim", dim)
    lr = check_real("lr", lr)
    check_positive_int("n_context", n_context)
    check_dtype("dtype", dtype)
    D = dim + 1
    kq = torch.zeros(D, D, dtype=dtype)
    kq[:dim, :dim] = torch.eye(dim, dtype=dtype)
    pv = torch.zeros(D, D, dtype=dtype)
    pv[dim, :dim] = _w0(w0, dim, dtype)
    pv[dim, dim] = -1.0
    return kq, pv * (lr / n_context)


def gd_factors(
    dim: int, lr: float, n_context: int, *, w0=None, dtype=torch.float64
) -> dict:
    """von Oswald et al.'s four matrices: ``W_K = W_Q = [[I, 0], [0, 0]]``,
    ``W_V = [[0, 0], [w0^T, -1]]``, ``P = (lr / N) I``. Their products are
    :func:`gd_products`."""
    check_positive_int("dim", dim)
    lr = check_real("lr", lr)
    check_positive_int("n_context", n_context)
    check_dtype("dtype", dtype)
    D = dim + 1
    wq = torch.zeros(D, D, dtype=dtype)
    wq[:dim, :dim] = torch.eye(dim, dtype=dtype)
    wv = torch.zeros(D, D, dtype=dtype)
    wv[dim, :dim] = _w0(w0, dim, dtype)
    wv[dim, dim] = -1.0
    return {
        "W_Q": wq,
        "W_K": wq.clone(),
        "W_V": wv,
        "P": torch.eye(D, dtype=dtype) * (lr / n_context),
    }


def gd_plus_plus_products(
    dim: int, lr: float, gamma: float, n_context: int, *, dtype=torch.float64
):
    """``(W_KQ, W_PV)`` of one GD++ step: :func:`gd_products` plus ``-gamma I`` in the
    input block of ``W_PV``.

    Every token's input becomes ``x_j - gamma sum_i x_i x_i^T x_j``, while the labels
    take a GD step computed from the inputs before the transformation
    (:func:`icl_lib.learners.gd_plus_plus`).
    """
    gamma = check_real("gamma", gamma)
    kq, pv = gd_products(dim, lr, n_context, dtype=dtype)
    pv[:dim, :dim] = -gamma * torch.eye(dim, dtype=dtype)
    return kq, pv


def preconditioned_gd_products(
    precond: torch.Tensor, n_context: int, *, lr: float = 1.0
):
    """``(W_KQ, W_PV)`` of one preconditioned GD step ``w_1 = lr G X^T y / N`` from 0.

    ``W_KQ = [[G^T, 0], [0, 0]]`` and ``W_PV = (lr/N) [[0, 0], [0, -1]]``: the
    prediction is ``(lr/N) sum_i y_i x_i^T G^T x_q = x_q^T w_1``. Any ``c W_KQ`` with
    ``W_PV / c`` is the same model.
    """
    check_finite("precond", check_tensor("precond", precond, 2))
    d = precond.shape[0]
    if tuple(precond.shape) != (d, d):
        raise ValueError(
            f"precond: expected a square matrix, got shape {tuple(precond.shape)}"
        )
    kq, pv = gd_products(d, lr, n_context, dtype=precond.dtype)
    kq[:d, :d] = precond.T
    return kq, pv


def ahn_preconditioner(cov: torch.Tensor, n_context: int) -> torch.Tensor:
    """Ahn et al. (2023, Theorem 1): ``G* = ((N+1)/N Sigma + tr(Sigma)/N I)^{-1}``.

    The best one-step preconditioned GD (so the best one-layer linear transformer) for
    noiseless ``y = w^T x``, ``w ~ N(0, I)``, ``x ~ N(0, Sigma)`` and ``N`` context
    examples. It solves ``G E[S^2] = E[S] Sigma`` with ``S = X^T X / N``,
    ``E[S] = Sigma`` and ``E[S^2] = (N+1)/N Sigma^2 + tr(Sigma)/N Sigma``. For
    ``Sigma = I``: ``N / (N + d + 1) I``.
    """
    check_finite("cov", check_tensor("cov", cov, 2))
    d = cov.shape[0]
    if tuple(cov.shape) != (d, d):
        raise ValueError(f"cov: expected a square matrix, got shape {tuple(cov.shape)}")
    n = check_positive_int("n_context", n_context)
    eye = torch.eye(d, dtype=cov.dtype)
    return torch.linalg.inv((n + 1) / n * cov + torch.trace(cov) / n * eye)


def preconditioned_gd_population_loss(
    precond: torch.Tensor, cov: torch.Tensor, n_context: int
) -> torch.Tensor:
    """``E (x_q^T G X^T y / N - w^T x_q)^2`` in closed form (noiseless, ``w ~ N(0, I)``,
    ``x ~ N(0, Sigma)``).

    With ``S = X^T X / N``:
    ``tr(G^T Sigma G E[S^2]) - 2 tr(Sigma G Sigma) + tr(Sigma)``. Its gradient in ``G``
    vanishes at :func:`ahn_preconditioner` (tested in float64).
    """
    check_finite("precond", check_tensor("precond", precond, 2))
    check_finite("cov", check_tensor("cov", cov, 2))
    n = check_positive_int("n_context", n_context)
    if precond.shape != cov.shape:
        raise ValueError(
            f"precond: expected the shape of cov {tuple(cov.shape)}, got "
            f"{tuple(precond.shape)}"
        )
    es2 = (n + 1) / n * cov @ cov + torch.trace(cov) / n * cov
    G = precond
    return (
        torch.trace(G.T @ cov @ G @ es2)
        - 2 * torch.trace(cov @ G @ cov)
        + torch.trace(cov)
    )


def best_multiple_population_loss(
    direction: torch.Tensor, cov: torch.Tensor, n_context: int
) -> float:
    """The population loss of the best multiple ``c * direction`` of a preconditioner:
    ``min_c`` :func:`preconditioned_gd_population_loss` ``(c D)``.

    The loss is ``a c^2 - 2 b c + tr(Sigma)`` with ``a = tr(D^T Sigma D E[S^2])`` and
    ``b = tr(Sigma D Sigma)``, so the minimum is ``tr(Sigma) - b^2 / a``. Chapter 2's
    baselines for Ahn et al.'s optimum: the best plain step (``D = I``) and the best
    multiple of ``Sigma^{-1}``.
    """
    check_tensor("direction", direction, 2)
    if not torch.isfinite(direction).all() or not direction.abs().sum() > 0:
        raise ValueError("direction: expected a finite, nonzero matrix")
    check_tensor("cov", cov, 2)
    if direction.shape != cov.shape:  # before the loss names it precond
        raise ValueError(
            f"direction: expected the shape of cov {tuple(cov.shape)}, got "
            f"{tuple(direction.shape)}"
        )
    zero = torch.zeros_like(direction)
    trace = float(preconditioned_gd_population_loss(zero, cov, n_context))
    at_one = float(preconditioned_gd_population_loss(direction, cov, n_context))
    b = float(torch.trace(cov @ direction @ cov))
    a = at_one - trace + 2 * b  # L(D) = a - 2 b + tr(Sigma)
    return trace - b * b / a


def read_gd_plus_plus(model: LinearSelfAttention, n_context: int) -> dict:
    """Read the (first) layer of a one-head LSA as a GD++ step: ``{"eta", "gamma",
    "stray"}``.

    The GD++ construction (:func:`gd_plus_plus_products`) has
    ``W_KQ = [[c I, 0], [0, 0]]`` and ``W_PV = [[-gamma / c I, 0], [0, -eta / (N c)]]``
    for any scale ``c``: ``eta`` and ``gamma`` are read scale-free from the mean
    diagonals, ``gamma = 0`` for plain GD.
    ``stray`` is the norm of every other entry of the two products relative to the
    norm of those the pattern uses.
    """
    if not isinstance(model, LinearSelfAttention) or model.n_heads != 1:
        raise ValueError("model: expected a one-head LinearSelfAttention")
    n = check_positive_int("n_context", n_context)
    d = model.dim
    with torch.no_grad():
        kq = model.kq(0)[0].detach().double()
        pv = model.pv(0)[0].detach().double()
    scale = kq[:d, :d].diagonal().mean()
    used_kq = torch.zeros(d + 1, d + 1, dtype=torch.bool)
    used_kq[range(d), range(d)] = True
    used_pv = used_kq.clone()
    used_pv[d, d] = True
    stray = (kq[~used_kq].norm() ** 2 + pv[~used_pv].norm() ** 2).sqrt()
    main = (kq[used_kq].norm() ** 2 + pv[used_pv].norm() ** 2).sqrt()
    return {
        "eta": float(-n * pv[d, d] * scale),
        "gamma": float(-pv[:d, :d].diagonal().mean() * scale),
        "stray": float(stray / main),
    }


def ahn_covariance(
    eigenvalues=(1.0, 1.0, 0.25, 0.0625, 1.0), *, seed: int = 0, dtype=torch.float64
) -> torch.Tensor:
    """``Sigma = U^T diag(eigenvalues) U`` with a random orthogonal ``U`` (Ahn et al.
    2023's experiment)."""
    check_sequence("eigenvalues", eigenvalues, "a sequence of positive numbers")
    check_dtype("dtype", dtype)
    values = torch.tensor(
        [
            check_real(f"eigenvalues[{i}]", v, minimum=0.0, strict=True)
            for i, v in enumerate(eigenvalues)
        ],
        dtype=dtype,
    )
    check_seed("seed", seed)
    d = values.shape[0]
    q, r = torch.linalg.qr(
        torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    )
    U = q * torch.sign(torch.diagonal(r))  # Haar-distributed orthogonal matrix
    cov = U.T @ torch.diag(values) @ U
    return (cov + cov.T) / 2


def lsa_with_products(
    dim: int, products, *, dtype=torch.float64
) -> LinearSelfAttention:
    """A merged, single-head :class:`LinearSelfAttention` whose layer ``k`` has
    ``products[k] = (W_KQ, W_PV)``."""
    check_sequence("products", products, "a list of (W_KQ, W_PV) pairs")
    products = list(products)
    if not products:
        raise ValueError("products: expected at least one (W_KQ, W_PV) pair, got none")
    model = LinearSelfAttention(
        dim, n_layers=len(products), init_scale=0.0, dtype=dtype
    )
    for k, (kq, pv) in enumerate(products):
        model.set_products(k, kq, pv)
    return model


def effective_preconditioner(
    model: LinearSelfAttention, n_context: int
) -> tuple[torch.Tensor, float]:
    """Read a one-layer model as preconditioned GD: ``(G_eff, stray)``.

    A one-layer LSA predicts ``-sum_h sum_i (pv_h e_i)_y (e_i^T kq_h e_q)``. The part
    ``x_q^T G_eff X^T y / N`` with ``G_eff = -N sum_h pv_h[d, d] kq_h[:d, :d]^T`` is
    preconditioned GD; the other terms (``pv_h[d, :d]`` and ``kq_h[d, :d]``) vanish at
    Ahn et al.'s optimum. ``stray`` is the norm of those entries relative to the ones
    that make ``G_eff``.
    """
    if not isinstance(model, LinearSelfAttention) or model.n_layers != 1:
        raise ValueError("model: expected a one-layer LinearSelfAttention")
    n = check_positive_int("n_context", n_context)
    d = model.dim
    with torch.no_grad():
        kq, pv = model.kq(0), model.pv(0)
        G = -n * sum(pv[h, d, d] * kq[h, :d, :d].T for h in range(model.n_heads))
        main = torch.sqrt(
            sum(
                (pv[h, d, d] ** 2) * (kq[h, :d, :d] ** 2).sum()
                for h in range(model.n_heads)
            )
        )
        stray = torch.sqrt(
            sum(
                (pv[h, d, :d] ** 2).sum() * (kq[h, :d, :d] ** 2).sum()
                + (pv[h, d, d] ** 2) * (kq[h, d, :d] ** 2).sum()
                for h in range(model.n_heads)
            )
        )
    return G, float(stray / main)


def gd_plus_plus_preconditioner(
    gram: torch.Tensor, lr: float, gamma: float, n_context: int, steps: int
) -> torch.Tensor:
    """``p(H)`` such that ``steps`` GD++ steps from 0 predict ``x_q^T p(H) X^T y``.

    ``gram`` is ``H = X^T X`` of shape ``(..., d, d)``; ``lr`` and ``gamma`` are one
    value for every step, as in :func:`icl_lib.learners.gd_plus_plus`. With
    ``s = lr / N``, ``H_0 = H`` and ``H_{k+1} = H_k (I - gamma H_k)^2`` (the Gram
    matrix after ``k + 1`` input maps),

        ``H p(H) = I - prod_{k < steps} (I - s H_k)``,

    and ``p(H) = s sum_k M_k^2 prod_{j < k} (I - s H_j)`` with ``M_0 = I``,
    ``M_{k+1} = (I - gamma H_k) M_k``: a polynomial in ``H`` of degree
    ``(3^steps - 3) / 2``. With ``gamma = 0`` it is ``s sum_{k < steps} (I - s H)^k``,
    the truncated Neumann series of ``H^{-1}`` (plain GD). Least squares is
    ``p(H) = H^{-1}``. Chapter 2; tested against the learner in float64.
    """
    check_float_tensor("gram", gram)
    if gram.ndim < 2 or gram.shape[-1] != gram.shape[-2]:
        raise ValueError(
            f"gram: expected square matrices (..., d, d), got shape {tuple(gram.shape)}"
        )
    lr, gamma = check_real("lr", lr), check_real("gamma", gamma)
    n = check_positive_int("n_context", n_context)
    check_positive_int("steps", steps)
    s = lr / n
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    M, Hk = eye.expand_as(gram), gram
    residual = eye.expand_as(gram)  # prod_{j < k} (I - s H_j)
    p = torch.zeros_like(gram)
    for _ in range(steps):
        p = p + s * M @ M @ residual
        residual = (eye - s * Hk) @ residual
        step = eye - gamma * Hk
        M, Hk = step @ M, step @ Hk @ step
    return p


def gd_plus_plus_eigenvalue_map(mu: torch.Tensor, gamma: float) -> torch.Tensor:
    """``f(mu) = mu (1 - gamma mu)^2``: the eigenvalue of ``H = X^T X`` after one GD++
    input map ``x <- (I - gamma H) x`` (same eigenvectors), elementwise on ``mu`` of
    any shape. Chapter 2."""
    check_float_tensor("mu", mu)
    gamma = check_real("gamma", gamma)
    return mu * (1 - gamma * mu) ** 2


def gd_plus_plus_condition_number(mu_min: float, mu_max: float, gamma: float) -> float:
    """Worst-case condition number after one GD++ input map, over every spectrum in
    ``[mu_min, mu_max]``: ``max f / min f`` on that interval, ``f(mu) = mu (1 -
    gamma mu)^2``.

    ``f`` rises to its maximum ``4 / (27 gamma)`` at ``mu = 1 / (3 gamma)``, falls to 0
    at ``1 / gamma`` and rises again, so the maximum on the interval is at an end or at
    ``1 / (3 gamma)``, and the minimum at an end (``inf`` is returned when the zero
    ``1 / gamma`` lies in the interval). For ``gamma mu_max <= 1/3`` this is
    ``kappa ((1 - gamma mu_max) / (1 - gamma mu_min))^2 >= 4 kappa / 9``. Chapter 2.
    """
    lo = check_real("mu_min", mu_min, minimum=0.0, strict=True)
    hi = check_real("mu_max", mu_max, minimum=lo)
    gamma = check_real("gamma", gamma, minimum=0.0)

    def f(mu):
        return mu * (1 - gamma * mu) ** 2

    if gamma > 0 and lo <= 1 / gamma <= hi:
        return float("inf")
    candidates = [lo, hi]
    if gamma > 0 and lo < 1 / (3 * gamma) < hi:
        candidates.append(1 / (3 * gamma))
    return max(f(mu) for mu in candidates) / min(f(lo), f(hi))


def gd_plus_plus_spectra(xs: torch.Tensor, gamma: float) -> dict:
    """Per prompt, the spectrum of ``H = X^T X`` before and after one GD++ input map.

    Returns tensors of shape ``(B,)``: ``mu_min``, ``mu_max``, ``kappa`` and
    ``kappa_after`` (``max f / min f`` over the eigenvalues), ``monotone``
    (``gamma mu_max <= 1/3``: enough for ``f`` to keep the order of the eigenvalues),
    ``order_kept`` (``f`` does keep the order of this prompt's eigenvalues) and
    ``covered`` (``gamma mu_max < 1`` and ``f(mu_max) >= f(mu_min)``, the hypotheses
    under which chapter 2 proves ``kappa_after < kappa``). Chapter 2, experiment 3.
    """
    check_finite("xs", check_batch("xs", check_tensor("xs", xs, 3)))
    gamma = check_real("gamma", gamma, minimum=0.0)
    mu = torch.linalg.eigvalsh(xs.transpose(1, 2) @ xs)  # (B, d), ascending
    f = gd_plus_plus_eigenvalue_map(mu, gamma)
    mu_min, mu_max = mu[:, 0], mu[:, -1]
    return {
        "mu_min": mu_min,
        "mu_max": mu_max,
        "kappa": mu_max / mu_min,
        "kappa_after": f.max(1).values / f.min(1).values,
        "monotone": gamma * mu_max <= 1 / 3,
        "order_kept": (f[:, 1:] >= f[:, :-1]).all(1),
        "covered": (gamma * mu_max < 1) & (f[:, -1] >= f[:, 0]),
    }
