"""How good is a model's predictive distribution? Log-likelihood, calibration and
coverage against the exact posterior predictive (chapter 4).

The measurements take a model with ``predictive_params`` / ``log_density`` / ``cdf``
(:class:`icl_lib.models.pfn.PredictiveTransformer`) and prompts of Bayesian linear
regression, whose exact posterior predictive is Gaussian
(:func:`icl_lib.learners.bayes_posterior_predictive`). Calibration is read from the
probability integral transform ``u = F(y)`` of the held-out labels: under a calibrated
predictive ``u`` is uniform, so the share of labels with ``u <= q`` is ``q`` for every
level ``q``, and the central 90 % interval holds 90 % of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .._checks import (
    check_batch,
    check_finite,
    check_model,
    check_positive_int,
    check_real,
    check_sequence,
    check_sequences,
    check_tensor,
)
from ..learners import bayes_posterior_predictive
from ..models.pfn import BarDistribution
from ..prompts import PromptBatch
from .curves import predictions


def _check_batch(batch):
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")


def _check_pit(u):
    if not isinstance(u, torch.Tensor) or not u.is_floating_point():
        raise TypeError(f"u: expected a float tensor of PIT values, got {u!r:.60}")
    if u.numel() == 0:  # a share of no labels would be NaN
        raise ValueError("u: expected at least one PIT value, got none")
    if not bool(((u >= 0) & (u <= 1)).all()):  # NaN fails too
        raise ValueError("u: expected PIT values in [0, 1], got values outside")


def exact_predictive(batch: PromptBatch, noise_std: float, prior_std: float = 1.0):
    """Mean and variance ``(B, n)`` of the exact posterior predictive of every label
    from the examples before it (``w ~ N(0, prior_std^2 I)``)."""
    _check_batch(batch)
    means, variances = [], []
    for k in range(batch.n_points):
        xs, ys, x_query, _ = batch.prompt(k)
        post = bayes_posterior_predictive(
            xs, ys, x_query, prior_std=prior_std, noise_std=noise_std
        )
        means.append(post.mean)
        variances.append(post.var)
    return torch.stack(means, 1), torch.stack(variances, 1)


def gaussian_log_density(mean, var, y) -> torch.Tensor:
    """``log N(y; mean, var)`` elementwise: three tensors of one shape, ``var > 0``."""
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"y: expected a torch.Tensor, got {type(y).__name__}")
    for name, value in (("mean", mean), ("var", var)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"{name}: expected a torch.Tensor, got {type(value).__name__}"
            )
        if value.shape != y.shape:
            raise ValueError(
                f"{name}: expected the shape of y {tuple(y.shape)}, got "
                f"{tuple(value.shape)}"
            )
    for name, value in (("mean", mean), ("var", var), ("y", y)):
        check_finite(name, check_tensor(name, value, y.ndim))
    if not bool((var > 0).all()):
        raise ValueError("var: expected variances > 0, got some <= 0")
    return -0.5 * (torch.log(2 * math.pi * var) + (y - mean) ** 2 / var)


def exact_nll_curve(batch: PromptBatch, noise_std: float) -> torch.Tensor:
    """The exact posterior predictive's mean negative log-likelihood at every context
    size ``k = 0..n-1``: ``(n,)`` (the smallest any predictor can have on average)."""
    mean, var = exact_predictive(batch, noise_std)
    return -gaussian_log_density(mean, var, batch.ys).mean(0)


def label_nll(model, batch: PromptBatch) -> torch.Tensor:
    """A model's negative log-likelihood of every label given the examples before it:
    ``(B, n)`` (per prompt, so that a mean over prompts gets a standard error)."""
    check_model("model", model, "eval", "log_predictive")
    _check_batch(batch)
    with torch.no_grad():
        return -model.eval().log_predictive(batch.xs, batch.ys)


def nll_curve(model, batch: PromptBatch) -> torch.Tensor:
    """A model's mean negative log-likelihood of the label at every context size:
    ``(n,)``."""
    return label_nll(model, batch).mean(0)


def pit(model, batch: PromptBatch) -> torch.Tensor:
    """The probability integral transform ``F_k(y_k)`` of every label under the
    model's predictive from the examples before it: ``(B, n)``."""
    check_model("model", model, "eval", "predictive_params", "cdf")
    _check_batch(batch)
    with torch.no_grad():
        params = model.eval().predictive_params(batch.xs, batch.ys)
        return model.cdf(params, batch.ys)


def exact_pit(batch: PromptBatch, noise_std: float) -> torch.Tensor:
    """The same transform under the exact posterior predictive: ``(B, n)``."""
    mean, var = exact_predictive(batch, noise_std)
    return gaussian_pit(mean, var, batch.ys.to(mean))


def coverage(u: torch.Tensor, level: float = 0.9) -> float:
    """The share of labels inside the central ``level`` interval, from their PIT
    values ``u`` (any shape): ``P((1 - level) / 2 < u < (1 + level) / 2)``."""
    _check_pit(u)
    level = check_real("level", level, minimum=0.0, strict=True)
    if level >= 1:
        raise ValueError(f"level: expected a number in (0, 1), got {level}")
    lo, hi = (1 - level) / 2, (1 + level) / 2
    return ((u > lo) & (u < hi)).double().mean().item()


def calibration_curve(u: torch.Tensor, levels: Sequence[float]) -> torch.Tensor:
    """The observed share of labels below each nominal quantile level ``q``:
    ``P(u <= q)``, ``(len(levels),)``; the diagonal is perfect calibration. ``u``:
    PIT values of any shape."""
    _check_pit(u)
    check_sequence("levels", levels, "a sequence of numbers")
    q = torch.as_tensor(list(levels), dtype=torch.float64)
    if q.ndim != 1 or not bool(((q >= 0) & (q <= 1)).all()):  # NaN fails too
        raise ValueError(f"levels: expected numbers in [0, 1], got {list(levels)}")
    return (u.reshape(-1, 1).double() <= q).double().mean(0)


def predictive_band(model, xs, ys, direction, ts, *, noise_std: float, z=1.645):
    """The model's and the exact predictive along the line of queries ``t u``.

    For one context ``xs (1, k, d)``, ``ys (1, k)`` and a direction ``u (d,)``, the
    queries are ``t u`` for ``t`` in ``ts``. Returns a dict of ``(len(ts),)`` arrays:
    ``model_mean``, ``model_lo``, ``model_hi`` (mean -+ ``z`` standard deviations; the
    model must have a Gaussian head) and the same for ``exact_*``.
    """
    check_model("model", model, "eval", "predictive_params", "gaussian")
    B, k, d = check_sequences(xs, ys)
    if B != 1:
        raise ValueError(f"xs: expected one context (B = 1), got B = {B}")
    z = check_real("z", z, minimum=0.0, strict=True)
    direction = check_tensor("direction", direction, 1).to(xs)
    if direction.shape[0] != d:
        raise ValueError(
            f"direction: expected {d} entries to match xs, got {direction.shape[0]}"
        )
    check_finite("direction", direction)
    if not isinstance(ts, torch.Tensor):
        check_sequence("ts", ts, "a sequence of numbers")
        ts = torch.as_tensor([check_real("ts[i]", t) for t in ts])
    ts = check_finite("ts", check_batch("ts", check_tensor("ts", ts.to(xs.dtype), 1)))
    queries = ts.unsqueeze(1) * direction  # (T, d)
    T = queries.shape[0]
    ctx_x, ctx_y = xs.expand(T, k, d), ys.expand(T, k)
    full_x = torch.cat((ctx_x, queries.unsqueeze(1)), 1)
    full_y = torch.cat((ctx_y, ctx_y.new_zeros(T, 1)), 1)
    with torch.no_grad():
        params = model.eval().predictive_params(full_x, full_y)[:, k]
        mean, var = model.gaussian(params)
    exact = bayes_posterior_predictive(ctx_x, ctx_y, queries, noise_std=noise_std)
    out = {}
    for name, m, v in (("model", mean, var), ("exact", exact.mean, exact.var)):
        sd = v.sqrt()
        out[f"{name}_mean"], out[f"{name}_lo"], out[f"{name}_hi"] = (
            m,
            m - z * sd,
            m + z * sd,
        )
    return out


def bucket_cost(batch: PromptBatch, noise_std: float, bars) -> torch.Tensor:
    """What the buckets alone cost, label by label: ``(B, n)`` nats.

    The NLL of each label under the best Riemann approximation of the exact
    predictive, the bar distribution ``bars``
    (:class:`icl_lib.models.pfn.BarDistribution`) whose bucket probabilities are the
    exact predictive's masses of the buckets, minus its NLL under the exact predictive.
    Its mean is the floor a Riemann head cannot go below on average (Gibbs'
    inequality, bucket by bucket). Computed in the batch's precision: a bucket
    mass that underflows counts as the dtype's smallest normal number."""
    if not isinstance(bars, BarDistribution):
        raise TypeError(f"bars: expected a BarDistribution, got {type(bars).__name__}")
    mean, var = exact_predictive(batch, noise_std)
    inner = bars.borders.to(mean)[1:-1]  # the tails take everything beyond
    z = (inner - mean.unsqueeze(-1)) / torch.sqrt(2 * var).unsqueeze(-1)
    below = 0.5 * torch.erfc(-z)  # P(Y <= border), accurate in the lower tail
    above = 0.5 * torch.erfc(z)  # P(Y > border), accurate in the upper tail
    # Each bucket's mass from whichever side keeps it away from cancellation.
    inner_mass = torch.where(
        z[..., 1:] <= 0,
        below[..., 1:] - below[..., :-1],
        above[..., :-1] - above[..., 1:],
    )
    mass = torch.cat((below[..., :1], inner_mass, above[..., -1:]), -1)
    mass = mass.clamp(min=torch.finfo(mass.dtype).tiny)
    exact = gaussian_log_density(mean, var, batch.ys)
    return exact - bars.log_density(mass.log(), batch.ys)


def exact_mean_gap_curve(
    predictor, batch: PromptBatch, noise_std: float
) -> torch.Tensor:
    """``E (prediction - exact posterior mean)^2`` at every context size: ``(n,)``.

    The error of a model's point prediction against the Bayes prediction itself (not
    against the label), so the label noise and the Bayes risk drop out; ``predictor``
    is a model or learner as in :func:`icl_lib.analysis.curves.predictions`.
    """
    _check_batch(batch)
    mean, _ = exact_predictive(batch.to(dtype=torch.float64), noise_std)
    pred = predictions(predictor, batch, range(batch.n_points)).double()
    return ((pred - mean) ** 2).mean(0)


def gaussian_pit(mean, var, y) -> torch.Tensor:
    """The probability integral transform ``Phi((y - mean) / sqrt(var))`` of labels
    under Gaussian predictives: three tensors of one shape, ``var > 0``; returns that
    shape (what :func:`coverage` and :func:`calibration_curve` read)."""
    gaussian_log_density(mean, var, y)  # the same checks
    return 0.5 * torch.erfc((mean - y) / torch.sqrt(2 * var))


def gaussian_head_predictive(model, batch: PromptBatch):
    """A Gaussian-head model's predictive mean and variance of every label given the
    examples before it: two ``(B, n)`` float64 tensors."""
    check_model("model", model, "eval", "predictive_params", "gaussian")
    _check_batch(batch)
    with torch.no_grad():
        params = model.eval().predictive_params(batch.xs, batch.ys)
        mean, var = model.gaussian(params)
    return mean.double(), var.double()


def blind_variance(var: torch.Tensor) -> torch.Tensor:
    """The posterior-unaware variance: each context size's mean of ``var`` over the
    prompts, the same for every prompt. ``var (B, n) -> (B, n)``.

    With the exact predictive mean it makes the predictor that knows the right mean
    and the right *average* width at every ``k`` but not which prompts are uncertain:
    the alternative a calibration claim must exclude (chapter 4)."""
    var = check_finite("var", check_tensor("var", var, 2))
    if var.shape[0] < 1 or var.shape[1] < 1:
        raise ValueError(
            f"var: expected at least one prompt and label, got {var.shape}"
        )
    if not bool((var > 0).all()):
        raise ValueError("var: expected variances > 0, got some <= 0")
    return var.mean(0, keepdim=True).expand_as(var)


def conditional_coverage(u, score, n_groups: int = 3, level: float = 0.9) -> dict:
    """Coverage within groups of labels of equal size by ``score``, with standard
    errors clustered by prompt.

    ``u (B, n)``: PIT values, one row per prompt; ``score (B, n)``: what sorts the
    labels into ``n_groups`` quantile groups (e.g. the exact predictive variance: a
    predictor that ignores which prompts are uncertain covers too much in the low
    group and too little in the high one). Returns ``{"share", "se", "count"}``, each
    ``(n_groups,)``, and ``"edges"`` ``(n_groups + 1,)``. ``se`` treats prompts, not
    labels, as independent (the labels of one prompt share its task): the
    ratio-estimator variance ``sum_b R_b^2 / N^2 * B / (B - 1)`` with ``R_b`` the sum
    over prompt ``b``'s labels in the group of ``hit - share``. With ``n_groups = 1``
    it is the pooled coverage and its clustered standard error.
    """
    _check_pit(u)
    u = check_tensor("u", u, 2)
    score = check_finite("score", check_tensor("score", score, 2))
    if score.shape != u.shape:
        raise ValueError(
            f"score: expected the shape of u {tuple(u.shape)}, got {tuple(score.shape)}"
        )
    n_groups = check_positive_int("n_groups", n_groups)
    level = check_real("level", level, minimum=0.0, strict=True)
    if level >= 1:
        raise ValueError(f"level: expected a number in (0, 1), got {level}")
    B = u.shape[0]
    if B < 2:
        raise ValueError(f"u: expected at least 2 prompts (rows), got {B}")
    lo, hi = (1 - level) / 2, (1 + level) / 2
    hit = ((u > lo) & (u < hi)).double()
    score = score.double()
    edges = torch.quantile(
        score.reshape(-1), torch.linspace(0, 1, n_groups + 1, dtype=torch.float64)
    )
    rank = torch.bucketize(score, edges[1:-1], right=True)  # group 0..n_groups-1
    shares, ses, counts = [], [], []
    for g in range(n_groups):
        mask = (rank == g).double()
        count = mask.sum()
        share = (hit * mask).sum() / count.clamp_min(1)
        residual = ((hit - share) * mask).sum(1)  # (B,)
        var = (residual**2).sum() / count.clamp_min(1) ** 2 * B / (B - 1)
        shares.append(share)
        ses.append(var.sqrt())
        counts.append(count)
    return {
        "share": torch.stack(shares),
        "se": torch.stack(ses),
        "count": torch.stack(counts),
        "edges": edges,
    }
