"""In-context learners for algorithm selection (chapter 5; Bai, Chen, Wang, Xiong and
Mei, "Transformers as statisticians", NeurIPS 2023).

Base algorithms, each ``f(xs (B, N, d), ys (B, N), x_query (B, d)) -> (B,)``:

* :func:`lasso`: ``argmin_w 1/(2N) ||y - X w||^2 + lam ||w||_1`` by cyclic
  coordinate descent (slow to converge when ``N <= d``; :func:`lasso_exact` solves
  small problems exactly); :func:`ista` runs proximal gradient descent, the
  algorithm Bai et al.'s transformer unrolls (one attention layer for the gradient
  step, one MLP for :func:`soft_threshold`);
* :func:`logistic_regression`: ``argmin_w sum_i log(1 + exp(-y_i <w, x_i>)) +
  lam / 2 ||w||^2`` by Newton's method, labels in ``{-1, +1}``;
  :func:`logistic_posterior_mean` is the Bayes predictor of the same prompts.

Selection, on top of base algorithms:

* :func:`post_icl_validation`: split the context into a training part and a
  validation part, fit every candidate on the first, keep per prompt the one with the
  smallest validation loss, and predict with it (refitted on the whole context);
* :func:`pre_icl_test`: a statistic of the prompt routes it, here
  :func:`binary_label_statistic` (are all labels in ``{-1, +1}``?) sends classification
  prompts to logistic regression and the others to ridge;
* :func:`noise_mixture_posterior_mean`: the exact Bayes predictor when the noise level
  is drawn from a finite set, a data-dependent mixture of ridges (Bai et al.'s Theorem
  17 compares a transformer with it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from functools import partial

import torch

from .._checks import (
    check_batch,
    check_bool,
    check_finite,
    check_float_tensor,
    check_positive_int,
    check_prompt,
    check_real,
    check_sequences,
    check_tensor,
)
from ..runtime import make_generator
from .linear import ridge


def _predict(w: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
    return (w * x_query).sum(-1)


def soft_threshold(z: torch.Tensor, threshold: float) -> torch.Tensor:
    """``sign(z) max(|z| - t, 0)``, elementwise: the proximal map of ``t ||.||_1``.

    It equals ``relu(z - t) - relu(-z - t)``: two ReLU units per coordinate, which is
    how an MLP layer computes it in Bai et al.'s Lasso construction (chapter 5).
    """
    check_float_tensor("z", z)
    t = check_real("threshold", threshold, minimum=0.0)
    return torch.sign(z) * (z.abs() - t).clamp(min=0.0)


def lasso_weights(xs, ys, lam: float, *, sweeps: int = 200) -> torch.Tensor:
    """Lasso task vectors ``(B, d)``: ``argmin_w 1/(2N) ||y - X w||^2 + lam ||w||_1``.

    Cyclic coordinate descent, ``sweeps`` passes over the ``d`` coordinates (each
    update is exact: ``w_j = S(x_j^T r_j / N, lam) / (||x_j||^2 / N)`` with ``r_j`` the
    residual without coordinate ``j``). The objective is sklearn's ``Lasso(alpha=lam)``.
    A coordinate whose inputs are all zero stays 0; an empty context gives ``w = 0``.

    Args:
        xs: ``(B, N, d)``; ys: ``(B, N)``.
        lam: ``lam >= 0``.
        sweeps: passes over the coordinates (``>= 1``).
    """
    B, N, d = check_sequences(xs, ys)
    lam = check_real("lam", lam, minimum=0.0)
    check_positive_int("sweeps", sweeps)
    w = xs.new_zeros(B, d)
    if N == 0:
        return w
    col_sq = (xs**2).sum(1) / N  # (B, d)
    safe = torch.where(col_sq > 0, col_sq, torch.ones_like(col_sq))
    residual = ys.clone()  # y - X w with w = 0
    for _ in range(sweeps):
        for j in range(d):
            xj = xs[:, :, j]  # (B, N)
            rho = (xj * residual).sum(1) / N + col_sq[:, j] * w[:, j]
            new = torch.sign(rho) * (rho.abs() - lam).clamp(min=0.0) / safe[:, j]
            new = torch.where(col_sq[:, j] > 0, new, torch.zeros_like(new))
            residual = residual - xj * (new - w[:, j]).unsqueeze(1)
            w = w.clone()
            w[:, j] = new
    return w


MAX_EXACT_DIM = 7  # 3^7 = 2187 sign patterns; beyond, use coordinate descent


def lasso_exact_weights(xs, ys, lam: float) -> torch.Tensor:
    """The Lasso's task vectors ``(B, d)``, exactly, for small ``d``: the same
    objective as :func:`lasso_weights`, without iterations to converge.

    For every sign pattern ``s in {-1, 0, +1}^d`` with at most ``N`` non-zeros, the
    stationarity condition on its support ``A``,
    ``(X_A^T X_A / N) w_A = X_A^T y / N - lam s_A``, gives one candidate; a candidate
    whose signs agree with ``s`` is a feasible point, and the optimum is one of them
    (its own pattern's candidate), so the sign-consistent candidate of smallest
    objective is the Lasso. Coordinate descent needs thousands of sweeps when
    ``N <= d``; this costs one batched solve per support (``2^d - 1``), with the
    ``2^|A|`` sign patterns of a support as its right-hand sides, whatever ``N``.

    Args:
        xs: ``(B, N, d)`` with ``d <= MAX_EXACT_DIM``; ys: ``(B, N)``.
        lam: ``lam > 0`` (with ``lam = 0`` and ``N < d`` the minimiser is not unique).
    """
    B, N, d = check_sequences(xs, ys)
    lam = check_real("lam", lam, minimum=0.0, strict=True)
    if d > MAX_EXACT_DIM:
        raise ValueError(
            f"xs: expected at most MAX_EXACT_DIM = {MAX_EXACT_DIM} features for the "
            f"exact solver, got {d} (use lasso_weights)"
        )
    # float64 throughout, and the objective from the residual: a float32 objective
    # written as w^T G w / 2 - c^T w cancels catastrophically at the large candidates
    # of near-singular supports and can pick one of them.
    x, y, n = xs.double(), ys.double(), max(N, 1)
    gram = x.transpose(1, 2) @ x / n  # (B, d, d)
    corr = (x.transpose(1, 2) @ y.unsqueeze(-1)).squeeze(-1) / n  # (B, d)
    best_w = x.new_zeros(B, d)
    best_f = (y**2).sum(1) / (2 * n)  # the objective at w = 0
    # One batched solve per support A: its 2^|A| sign patterns are the right-hand sides.
    for size in range(1, min(d, N) + 1):
        signs = torch.tensor(
            list(itertools.product((-1.0, 1.0), repeat=size)), dtype=x.dtype
        ).T.to(x.device)  # (|A|, P): one column per sign pattern
        for support in itertools.combinations(range(d), size):
            a = list(support)
            rhs = corr[:, a, None] - lam * signs  # (B, |A|, P)
            w_a, info = torch.linalg.solve_ex(gram[:, a][:, :, a], rhs)
            feasible = (info == 0).unsqueeze(-1) & (w_a * signs > 0).all(1)  # (B, P)
            w_a = torch.where(feasible.unsqueeze(1), w_a, torch.zeros_like(w_a))
            resid = y.unsqueeze(-1) - x[:, :, a] @ w_a  # (B, N, P)
            f = (resid**2).sum(1) / (2 * n) + lam * w_a.abs().sum(1)  # (B, P)
            f = torch.where(feasible, f, torch.full_like(f, math.inf))
            f_min, pick = f.min(-1)
            better = f_min < best_f
            w = x.new_zeros(B, d)
            w[:, a] = w_a.gather(2, pick.view(B, 1, 1).expand(B, size, 1)).squeeze(-1)
            best_w = torch.where(better.unsqueeze(-1), w, best_w)
            best_f = torch.where(better, f_min, best_f)
    return best_w.to(xs.dtype)


def lasso(xs, ys, x_query, lam: float, *, sweeps: int = 200) -> torch.Tensor:
    """The Lasso's prediction ``<w_lasso, x_query>`` (see :func:`lasso_weights`).

    Garg et al. (2022) compare their transformer on sparse regression with it; Bai et
    al. (2023, Theorem 10) build a transformer that approximates it. Chapter 5.
    """
    check_prompt(xs, ys, x_query)
    return _predict(lasso_weights(xs, ys, lam, sweeps=sweeps), x_query)


def lasso_exact(xs, ys, x_query, lam: float) -> torch.Tensor:
    """The Lasso's prediction from :func:`lasso_exact_weights` (exact, ``d`` at most
    ``MAX_EXACT_DIM``): the converged Lasso chapter 5 compares with at every ``k``,
    including ``k <= d``, where coordinate descent is slow."""
    check_prompt(xs, ys, x_query)
    return _predict(lasso_exact_weights(xs, ys, lam), x_query)


def ista(xs, ys, x_query, lam: float, steps: int) -> torch.Tensor:
    """``steps`` steps of proximal gradient descent (ISTA) on the Lasso objective, from
    ``w = 0``, with step ``1 / L``, ``L`` the largest eigenvalue of ``X^T X / N``:

    ``w <- S(w - X^T (X w - y) / (N L), lam / L)``.

    Each step is one gradient step (one attention layer, as in chapter 2) followed by
    :func:`soft_threshold` (one MLP layer): the unrolled algorithm of Bai et al.
    (2023, Theorem 10). The objective gap after ``T`` steps is at most
    ``L ||w*||^2 / (2T)``. Returns predictions ``(B,)``.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    lam = check_real("lam", lam, minimum=0.0)
    check_positive_int("steps", steps, minimum=0)
    if N == 0:
        return x_query.new_zeros(B)
    gram = xs.transpose(1, 2) @ xs / N  # (B, d, d)
    L = torch.linalg.eigvalsh(gram)[:, -1].clamp(min=1e-12)  # (B,)
    corr = (xs.transpose(1, 2) @ ys.unsqueeze(-1)).squeeze(-1) / N  # X^T y / N
    step, threshold = 1 / L[:, None], lam / L[:, None]
    w = xs.new_zeros(B, d)
    for _ in range(steps):
        grad = (gram @ w.unsqueeze(-1)).squeeze(-1) - corr  # X^T (X w - y) / N
        z = w - step * grad
        w = torch.sign(z) * (z.abs() - threshold).clamp(min=0.0)
    return _predict(w, x_query)


def _check_binary(ys) -> None:
    if not bool(((ys == 1) | (ys == -1)).all()):
        bad = ys[(ys != 1) & (ys != -1)][0].item()
        raise ValueError(f"ys: expected labels in {{-1, +1}}, got {bad}")


def logistic_weights(xs, ys, lam: float = 1.0, *, steps: int = 25) -> torch.Tensor:
    """Regularised logistic regression ``(B, d)``:
    ``argmin_w sum_i log(1 + exp(-y_i <w, x_i>)) + lam / 2 ||w||^2``.

    Newton's method from ``w = 0`` (``steps`` steps), labels ``ys`` in ``{-1, +1}``.
    With ``lam = 1`` it is the posterior mode under the prior ``w ~ N(0, I)`` of the
    classification prompts of chapter 5. ``lam > 0`` keeps it finite when the context
    is separable (always, for ``N <= d``).
    """
    B, N, d = check_sequences(xs, ys)
    lam = check_real("lam", lam, minimum=0.0, strict=True)
    check_positive_int("steps", steps)
    _check_binary(ys)
    w = xs.new_zeros(B, d)
    eye = torch.eye(d, dtype=xs.dtype, device=xs.device)
    for _ in range(steps):
        margin = ys * torch.einsum("bnd,bd->bn", xs, w)  # (B, N)
        p = torch.sigmoid(-margin)  # d/dm log(1 + e^-m) = -p
        grad = -torch.einsum("bnd,bn->bd", xs, ys * p) + lam * w
        curv = p * (1 - p)  # (B, N)
        hess = torch.einsum("bnd,bn,bne->bde", xs, curv, xs) + lam * eye
        w = w - torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
    return w


def logistic_regression(
    xs, ys, x_query, lam: float = 1.0, *, output: str = "mean", steps: int = 25
) -> torch.Tensor:
    """Logistic regression's prediction for ``x_query`` (see
    :func:`logistic_weights`).

    ``output="mean"``: the plug-in ``E[y] = 2 sigmoid(z) - 1 = tanh(z / 2)`` with
    ``z = <w, x_query>``, the prediction to compare under squared loss with labels
    ``{-1, +1}``; ``output="logit"``: ``z``. An empty context predicts 0. Bai et al.
    (2023, Theorem 7) build a transformer that approximates it; chapter 5.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    if output not in ("mean", "logit"):
        raise ValueError(f"output: expected 'mean' or 'logit', got {output!r}")
    z = _predict(logistic_weights(xs, ys, lam, steps=steps), x_query)
    return torch.tanh(z / 2) if output == "mean" else z


def logistic_posterior_mean(
    xs, ys, x_query, *, n_samples: int = 4096, seed: int = 0
) -> torch.Tensor:
    """The Bayes predictor under squared loss for the logistic classification prompts
    of chapter 5 (``w ~ N(0, I_d)``, ``P(y = +1 | x, w) = sigmoid(<w, x>)``):
    ``E[y | x_query, context] = E[tanh(<w, x_query> / 2) | context]``.

    The posterior expectation is taken by self-normalised importance sampling with the
    prior as proposal: ``n_samples`` task vectors drawn once in antithetic pairs
    ``w, -w`` (from ``seed``, the same for every prompt), weighted by the likelihood
    ``prod_i sigmoid(y_i <w, x_i>)`` of the context. With ``k <= 2d`` examples in
    ``d = 5`` the weights stay spread (the posterior is wide), so the Monte Carlo
    error is small against the errors compared; the test checks it against
    quadrature in one dimension. Labels in ``{-1, +1}``.
    Returns ``(B,)`` in the dtype of ``xs`` (the log-likelihood terms computed in
    float32, their sums and the weighted mean in float64).
    """
    B, N, d = check_prompt(xs, ys, x_query)
    check_positive_int("n_samples", n_samples)
    _check_binary(ys)
    gen = make_generator(seed)
    half = torch.randn((n_samples + 1) // 2, d, generator=gen, dtype=torch.float64)
    w = torch.cat((half, -half))  # antithetic pairs: an empty context predicts 0
    q = x_query.double().cpu()
    # The likelihood terms in float32 (rounding 1e-7, far below the Monte Carlo error;
    # the costly part, twice as fast), their sums and everything after in float64.
    x32, y32, w32 = xs.float().cpu(), ys.float().cpu(), w.float()
    out = torch.empty(B, dtype=torch.float64)
    # Chunks of 16 prompts keep the (b, S, N) margins in the CPU cache: three times
    # faster than chunks of 256 on a laptop CPU, with the same result.
    for start in range(0, B, 16):
        part = slice(start, start + 16)
        margins = y32[part, None, :] * torch.einsum("bnd,sd->bsn", x32[part], w32)
        log_lik = torch.nn.functional.logsigmoid(margins).double().sum(-1)  # (b, S)
        weights = torch.softmax(log_lik, dim=1)
        out[part] = (weights * torch.tanh(q[part] @ w.T / 2)).sum(1)
    return out.to(device=xs.device, dtype=xs.dtype)


def ridge_candidates(lams: Sequence[float]) -> list[Callable]:
    """Ridge learners, one per penalty in ``lams``: the candidates of Bai et al.'s
    in-context ridge selection (Theorem 16)."""
    if not isinstance(lams, (list, tuple)) or not lams:
        raise TypeError(f"lams: expected a non-empty list of penalties, got {lams!r}")
    return [
        partial(ridge, lam=check_real(f"lams[{i}]", lam, minimum=0.0))
        for i, lam in enumerate(lams)
    ]


def _check_candidates(candidates) -> list:
    if not isinstance(candidates, (list, tuple)) or not candidates:
        raise TypeError(
            "candidates: expected a non-empty list of learners (xs, ys, x_query) -> "
            f"(B,), got {type(candidates).__name__}"
        )
    for i, c in enumerate(candidates):
        if not callable(c):
            raise TypeError(
                f"candidates[{i}]: expected a learner, got {type(c).__name__}"
            )
    return list(candidates)


def _n_val(N: int, n_val) -> int:
    if N < 2:
        raise ValueError(
            f"xs: expected at least 2 context examples (one to fit, one to validate), "
            f"got {N}"
        )
    if n_val is None:
        return N // 2
    check_positive_int("n_val", n_val)
    if n_val >= N:
        raise ValueError(
            f"n_val: expected fewer validation examples than the context size "
            f"N = {N}, got {n_val}"
        )
    return n_val


def validation_losses(xs, ys, candidates, *, n_val: int | None = None):
    """Every candidate's validation loss, per prompt: ``(B, M)``.

    The first ``N - n_val`` examples of each context are the training part, the last
    ``n_val`` the validation part (default ``n_val = N // 2``; Bai et al.'s tokens
    tagged +1 and -1). Candidate ``j``'s loss is the mean squared error of its
    predictions, fitted on the training part, at the validation inputs.
    """
    B, N, d = check_sequences(xs, ys)
    candidates = _check_candidates(candidates)
    n_val = _n_val(N, n_val)
    n_fit = N - n_val
    # One prompt per (prompt, validation point): the training part repeated.
    fit_x = xs[:, :n_fit].repeat_interleave(n_val, dim=0)  # (B n_val, n_fit, d)
    fit_y = ys[:, :n_fit].repeat_interleave(n_val, dim=0)
    val_x = xs[:, n_fit:].reshape(B * n_val, d)
    val_y = ys[:, n_fit:].reshape(B, n_val)
    losses = [
        ((c(fit_x, fit_y, val_x).reshape(B, n_val) - val_y) ** 2).mean(1)
        for c in candidates
    ]
    return torch.stack(losses, dim=1)


def validation_choice(xs, ys, candidates, *, n_val: int | None = None):
    """The index ``(B,)`` of the candidate with the smallest validation loss (the first
    on ties), see :func:`validation_losses`."""
    return validation_losses(xs, ys, candidates, n_val=n_val).argmin(dim=1)


def post_icl_validation(
    xs, ys, x_query, candidates, *, n_val: int | None = None, refit: bool = True
) -> torch.Tensor:
    """Bai et al. (2023, Section 4.1)'s post-ICL validation as an explicit learner.

    Per prompt: fit every candidate on the training part of the context, score it on
    the validation part (:func:`validation_losses`), keep the best, and predict
    ``x_query`` with it fitted on the whole context (``refit=True``) or on the training
    part only (``refit=False``, the predictor the oracle inequality of chapter 5 is
    about). Needs ``N >= 2``. Returns ``(B,)``.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    candidates = _check_candidates(candidates)
    refit = check_bool("refit", refit)
    choice = validation_choice(xs, ys, candidates, n_val=n_val)  # (B,)
    n_fit = N - _n_val(N, n_val)
    cx, cy = (xs, ys) if refit else (xs[:, :n_fit], ys[:, :n_fit])
    preds = torch.stack([c(cx, cy, x_query) for c in candidates], dim=1)  # (B, M)
    return preds.gather(1, choice.unsqueeze(1)).squeeze(1)


def binary_label_statistic(ys: torch.Tensor) -> torch.Tensor:
    """``max_i | |y_i| - 1 |`` per prompt, ``(B,)``: 0 exactly when every label is
    ``+1`` or ``-1`` (Bai et al. 2023, Lemma 18's test; one attention layer computes a
    version of it). An empty context scores 0."""
    check_finite("ys", check_batch("ys", check_tensor("ys", ys, 2)))
    if ys.shape[1] == 0:
        return ys.new_zeros(ys.shape[0])
    return (ys.abs() - 1).abs().amax(dim=1)


def pre_icl_test(
    xs,
    ys,
    x_query,
    *,
    binary: Callable = logistic_regression,
    other: Callable | None = None,
    tol: float = 1e-6,
) -> torch.Tensor:
    """Bai et al. (2023, Section 4.2)'s pre-ICL testing as an explicit learner: prompts
    whose :func:`binary_label_statistic` is at most ``tol`` go to ``binary`` (logistic
    regression), the others to ``other`` (ridge with the regression family's
    ``lam = sigma^2 = 0.25`` by default). Returns ``(B,)``."""
    B, N, d = check_prompt(xs, ys, x_query)
    tol = check_real("tol", tol, minimum=0.0)
    for name, f in (("binary", binary), ("other", other)):
        if not callable(f) and (name == "binary" or f is not None):
            raise TypeError(f"{name}: expected a learner, got {type(f).__name__}")
    if other is None:
        other = partial(ridge, lam=0.25)
    is_binary = binary_label_statistic(ys) <= tol  # (B,)
    out = x_query.new_zeros(B)
    if bool(is_binary.any()):
        idx = is_binary.nonzero().squeeze(1)
        out[idx] = binary(xs[idx], ys[idx], x_query[idx])
    if bool((~is_binary).any()):
        idx = (~is_binary).nonzero().squeeze(1)
        out[idx] = other(xs[idx], ys[idx], x_query[idx])
    return out


def _levels_and_weights(noise_levels, weights, like):
    if not isinstance(noise_levels, (list, tuple)) or not noise_levels:
        raise TypeError(
            f"noise_levels: expected a non-empty tuple of levels, got {noise_levels!r}"
        )
    levels = [
        check_real(f"noise_levels[{i}]", s, minimum=0.0, strict=True)
        for i, s in enumerate(noise_levels)
    ]
    if weights is None:
        weights = [1 / len(levels)] * len(levels)
    if not isinstance(weights, (list, tuple)) or len(weights) != len(levels):
        raise ValueError(
            f"weights: expected {len(levels)} prior weights (one per level), got "
            f"{weights!r}"
        )
    weights = [
        check_real(f"weights[{i}]", p, minimum=0.0, strict=True)
        for i, p in enumerate(weights)
    ]
    if abs(sum(weights) - 1) > 1e-9:
        raise ValueError(f"weights: expected weights summing to 1, got {sum(weights)}")
    return levels, torch.tensor(weights, dtype=like.dtype, device=like.device)


def noise_posterior(
    xs, ys, noise_levels, *, weights=None, prior_std: float = 1.0
) -> torch.Tensor:
    """Posterior probabilities ``(B, K)`` of the noise levels given a context.

    With ``w ~ N(0, tau^2 I)`` and ``sigma`` drawn from ``noise_levels`` with prior
    ``weights`` (uniform by default), the labels of a context are
    ``y ~ N(0, tau^2 X X^T + sigma_k^2 I)`` under level ``k``, and
    ``P(k | context) ~ weights_k N(y; 0, tau^2 X X^T + sigma_k^2 I)``. An empty context
    returns the prior. Chapter 5's probe compares the model's read-out of the noise
    level with this, the best any read-out can do.
    """
    B, N, d = check_sequences(xs, ys)
    tau = check_real("prior_std", prior_std, minimum=0.0, strict=True)
    levels, prior = _levels_and_weights(noise_levels, weights, xs)
    if N == 0:
        return prior.expand(B, -1).clone()
    kernel = tau**2 * xs @ xs.transpose(1, 2)  # (B, N, N)
    eye = torch.eye(N, dtype=xs.dtype, device=xs.device)
    logs = []
    for s in levels:
        chol = torch.linalg.cholesky(kernel + s**2 * eye)
        alpha = torch.cholesky_solve(ys.unsqueeze(-1), chol).squeeze(-1)
        logdet = 2 * torch.log(torch.diagonal(chol, dim1=1, dim2=2)).sum(1)
        logs.append(-0.5 * ((ys * alpha).sum(1) + logdet + N * math.log(2 * math.pi)))
    log_post = torch.stack(logs, dim=1) + prior.log()
    return torch.softmax(log_post, dim=1)


def noise_mixture_posterior_mean(
    xs, ys, x_query, noise_levels, *, weights=None, prior_std: float = 1.0
) -> torch.Tensor:
    """The Bayes predictor (posterior mean of ``y_query``) when the noise level is
    drawn from ``noise_levels``: ``sum_k P(k | context) ridge_{sigma_k^2 / tau^2}``
    (:func:`noise_posterior`), a data-dependent mixture of ridges (Bai et al. 2023,
    Theorem 17). Returns ``(B,)``."""
    B, N, d = check_prompt(xs, ys, x_query)
    tau = check_real("prior_std", prior_std, minimum=0.0, strict=True)
    post = noise_posterior(xs, ys, noise_levels, weights=weights, prior_std=tau)
    preds = torch.stack(
        [ridge(xs, ys, x_query, lam=s**2 / tau**2) for s in noise_levels], dim=1
    )
    return (post * preds).sum(1)
