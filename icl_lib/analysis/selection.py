"""Measurements for algorithm selection (chapter 5): errors by group of prompts and
by noise level, a tuned learner's curve, and linear probes of the residual stream.

* :func:`grouped_squared_errors`: every predictor's per-prompt errors on each group of
  a batch (noise level, task family); :func:`group_means` turns them into error
  curves and :func:`error_ratio` (:func:`grouped_error_ratio`) divides two of them,
  with a standard error;
* :func:`tuned_learner`: a learner with its hyperparameter chosen per ``k`` on a
  separate batch (the best Lasso of a grid);
* :func:`noise_sweep`: error at each context size on prompts of one noise level, for a
  grid of levels (the chapter's widget);
* :func:`residual_features` and :func:`probe_by_layer`: a linear read-out of a label of
  the prompt (its noise level, its family) from the residual stream after each layer,
  with held-out accuracy (Bai et al. 2023 argue a selecting transformer must compute
  such a statistic; the probe asks where it does);
* :func:`ridge_path_errors`, :func:`minimax_ratio`, :func:`decisive_group` and
  :func:`geometric_mean_ratio`: the pass mark of a selection claim, from what the best
  one-penalty ridge pays on its worst kind of prompt, decided over every kind at once.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Mapping, Sequence
from functools import partial

import torch

from .._checks import (
    check_batch,
    check_finite,
    check_positive_int,
    check_real,
    check_sequence,
    check_tensor,
)
from ..models.gpt import EVAL_CHUNK
from ..prompts import PromptBatch
from ..tasks import linear_regression
from .curves import error_curve, predictions


def _ints(ks) -> list[int]:
    """Context sizes as Python ints, at least one (numpy integers accepted, floats
    refused)."""
    ks = check_sequence("ks", ks, "a sequence of context sizes", nonempty=True)
    try:
        ints = [operator.index(k) for k in ks]
    except TypeError as err:
        message = f"ks: expected integer context sizes, got {list(ks)!r}"
        raise TypeError(message) from err
    if any(k < 0 for k in ints):
        raise ValueError(f"ks: expected context sizes >= 0, got {ints}")
    return ints


def _check_predictors(predictors) -> dict:
    if not isinstance(predictors, Mapping) or not predictors:
        raise TypeError(
            "predictors: expected a non-empty dict name -> learner or model, got "
            f"{type(predictors).__name__}"
        )
    return dict(predictors)


def _min_context(min_context, predictors) -> dict:
    """``min_context``: None, or a mapping from names of ``predictors`` to the
    smallest context each is defined for (an int >= 0)."""
    if min_context is None:
        return {}
    if not isinstance(min_context, Mapping):
        raise TypeError(
            "min_context: expected a mapping predictor name -> smallest context, got "
            f"{type(min_context).__name__}"
        )
    unknown = sorted(set(min_context) - set(predictors), key=str)
    if unknown:
        raise ValueError(
            f"min_context: expected names of predictors {sorted(predictors)}, got "
            f"{unknown}"
        )
    return {
        name: check_positive_int(f"min_context[{name!r}]", k, minimum=0)
        for name, k in min_context.items()
    }


def _split(predictors, batch, groups, min_context):
    predictors = _check_predictors(predictors)
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    check_tensor("groups", groups, 1, floating=False)
    if groups.shape[0] != batch.batch_size:
        raise ValueError(
            f"groups: expected one group per prompt ({batch.batch_size}), got "
            f"{groups.shape[0]}"
        )
    n_groups = int(groups.max()) + 1
    if groups.min() < 0 or len(groups.unique()) != n_groups:
        raise ValueError(
            f"groups: expected every value 0..{n_groups - 1} to occur, got "
            f"{sorted(groups.unique().tolist())}"
        )
    parts = [batch.select((groups == g).nonzero().squeeze(1)) for g in range(n_groups)]
    return predictors, parts, _min_context(min_context, predictors)


def squared_errors(
    predictor, batch: PromptBatch, ks: Sequence[int], *, min_context: int = 0
) -> torch.Tensor:
    """The squared error of every prompt's prediction of ``y_k`` from ``k`` examples:
    ``(B, len(ks))`` float64, NaN for ``k < min_context`` (where the predictor is not
    called). Its column means are :func:`~icl_lib.analysis.curves.error_curve` with
    ``normalise=False``; the rows give standard errors (:func:`error_ratio`)."""
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    ks = _ints(ks)
    check_positive_int("min_context", min_context, minimum=0)
    out = torch.full((batch.batch_size, len(ks)), float("nan"), dtype=torch.float64)
    defined = [i for i, k in enumerate(ks) if k >= min_context]
    if defined:
        cols = [ks[i] for i in defined]
        pred = predictions(predictor, batch, cols)
        out[:, defined] = ((pred - batch.ys[:, cols]) ** 2).double().cpu()
    return out


def grouped_squared_errors(
    predictors: Mapping,
    batch: PromptBatch,
    groups: torch.Tensor,
    ks: Sequence[int],
    *,
    min_context: Mapping[str, int] | None = None,
) -> dict[str, list[torch.Tensor]]:
    """Per-prompt squared errors (:func:`squared_errors`) of each predictor on each
    group of prompts: name -> ``[(B_g, len(ks)) for g in 0..G-1]``, in the order of
    the prompts of each group (the same for every predictor, so errors pair up)."""
    predictors, parts, min_context = _split(predictors, batch, groups, min_context)
    ks = _ints(ks)
    return {
        name: [
            squared_errors(p, part, ks, min_context=min_context.get(name, 0))
            for part in parts
        ]
        for name, p in predictors.items()
    }


def group_means(errors: Mapping[str, list[torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Each predictor's error curve on each group: the column means of the per-prompt
    errors of :func:`grouped_squared_errors`, name -> ``(G, len(ks))`` float64 (NaN
    where the predictor is undefined)."""
    if not isinstance(errors, Mapping) or not errors:
        raise TypeError(
            "errors: expected the non-empty dict of grouped_squared_errors, got "
            f"{type(errors).__name__}"
        )
    return {
        name: torch.stack([e.mean(0) for e in parts]) for name, parts in errors.items()
    }


def error_ratio(
    numerator: torch.Tensor, denominator: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ratio of two mean errors over the same prompts, with its standard error.

    ``r = mean(a) / mean(b)`` per column; the delta method on the paired per-prompt
    errors ``a_i, b_i`` gives ``se(r)^2 = (var a - 2 r cov(a, b) + r^2 var b) /
    (n mean(b)^2)``. Pairing matters: two learners' errors on the same prompts are
    strongly correlated, so ``se(r)`` is far below what independent samples give.

    Args:
        numerator, denominator: ``(n, K)`` per-prompt errors (or ``(n,)``), ``n >= 2``,
            from :func:`squared_errors` on the same prompts.

    Returns ``(ratio, se)``, each of shape ``(K,)`` (or scalars), float64.
    """
    if not isinstance(numerator, torch.Tensor) or numerator.dim() not in (1, 2):
        raise ValueError(
            "numerator: expected a tensor of (n, K) or (n,) errors, got "
            f"{getattr(numerator, 'shape', type(numerator).__name__)}"
        )
    check_tensor("numerator", numerator, numerator.dim())
    if not isinstance(denominator, torch.Tensor):
        raise TypeError(
            f"denominator: expected a torch.Tensor, got {type(denominator).__name__}"
        )
    if numerator.shape != denominator.shape:
        raise ValueError(
            f"denominator: expected the shape of numerator {tuple(numerator.shape)}, "
            f"got {tuple(denominator.shape)}"
        )
    check_tensor("denominator", denominator, numerator.dim())
    # NaN marks a context size a predictor was not asked (squared_errors'
    # min_context) and passes into that column's ratio; an infinite error is refused
    for name, value in (("numerator", numerator), ("denominator", denominator)):
        if bool(torch.isinf(value).any()):
            raise ValueError(f"{name}: expected finite errors or NaN, got inf")
    if numerator.shape[0] < 2:
        raise ValueError(
            f"numerator: expected errors of n >= 2 prompts, got {numerator.shape[0]}"
        )
    a, b = numerator.double(), denominator.double()
    n = a.shape[0]
    mean_a, mean_b = a.mean(0), b.mean(0)
    ratio = mean_a / mean_b
    da, db = a - mean_a, b - mean_b
    var_a, var_b = (da**2).sum(0) / (n - 1), (db**2).sum(0) / (n - 1)
    cov = (da * db).sum(0) / (n - 1)
    var_r = (var_a - 2 * ratio * cov + ratio**2 * var_b) / (n * mean_b**2)
    return ratio, var_r.clamp(min=0).sqrt()


def grouped_error_ratio(
    errors: Mapping[str, list[torch.Tensor]],
    numerator: str,
    denominator: str | Sequence[str],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group and context size, the ratio of two predictors' mean errors with its
    standard error (:func:`error_ratio`), from the per-prompt errors of
    :func:`grouped_squared_errors`.

    ``denominator`` is one name, or one name per group (each group's matched learner:
    the ridge tuned for its noise level, the model trained on its family).

    Returns ``(ratio, se)``, each ``(G, K)`` float64.
    """
    if not isinstance(errors, Mapping):
        raise TypeError(
            f"errors: expected the dict of grouped_squared_errors, got "
            f"{type(errors).__name__}"
        )
    if not errors:
        raise ValueError("errors: expected the errors of two predictors, got none")
    n_groups = len(next(iter(errors.values())))
    if not isinstance(denominator, str) and not (
        isinstance(denominator, Sequence)
        and all(isinstance(name, str) for name in denominator)
    ):
        raise TypeError(
            "denominator: expected a predictor name or one per group, got "
            f"{type(denominator).__name__}"
        )
    names = [denominator] * n_groups if isinstance(denominator, str) else denominator
    names = list(names)
    if len(names) != n_groups:
        raise ValueError(
            f"denominator: expected one name or {n_groups} (one per group), got "
            f"{len(names)}"
        )
    for arg, name in [("numerator", numerator)] + [("denominator", n) for n in names]:
        if name not in errors:
            raise ValueError(f"{arg}: expected one of {sorted(errors)}, got {name!r}")
    pairs = [
        error_ratio(errors[numerator][g], errors[names[g]][g]) for g in range(n_groups)
    ]
    return torch.stack([r for r, _ in pairs]), torch.stack([s for _, s in pairs])


def _check_learner_param(learner, param) -> None:
    """``learner`` a callable that takes the keyword ``param``."""
    if not callable(learner):
        raise TypeError(f"learner: expected a callable, got {type(learner).__name__}")
    if not isinstance(param, str):
        raise TypeError(f"param: expected a str, got {type(param).__name__}")
    try:
        parameters = inspect.signature(learner).parameters
    except (TypeError, ValueError):  # a builtin without a signature: take it on trust
        return
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    if param not in parameters and not takes_any:
        raise ValueError(
            f"param: expected a keyword of the learner, one of {list(parameters)}, "
            f"got {param!r}"
        )


class TunedLearner:
    """A learner whose hyperparameter depends on the context size: ``choices[k]`` is
    used on contexts of ``k`` examples (see :func:`tuned_learner`). Calling it on a
    context size without a choice raises."""

    def __init__(self, learner, choices: Mapping[int, float], param: str = "lam"):
        _check_learner_param(learner, param)
        if not isinstance(choices, Mapping):
            raise TypeError(
                f"choices: expected a mapping k -> value, got {type(choices).__name__}"
            )
        if not choices:
            raise ValueError("choices: expected a value for some k, got none")
        for k, value in choices.items():
            check_positive_int("choices (a context size)", k, minimum=0)
            check_real(f"choices[{k}]", value)
        self.learner, self.choices, self.param = learner, dict(choices), param

    def __call__(self, xs, ys, x_query):
        k = xs.shape[1]
        if k not in self.choices:
            raise ValueError(
                f"xs: expected a context size in {sorted(self.choices)} (the sizes it "
                f"was tuned for), got {k}"
            )
        return self.learner(xs, ys, x_query, **{self.param: self.choices[k]})


def tuned_learner(
    learner,
    tune_batch: PromptBatch,
    ks: Sequence[int],
    grid: Sequence[float],
    *,
    param: str = "lam",
) -> TunedLearner:
    """``learner`` with ``param`` chosen, per context size ``k``, from ``grid`` as the
    value of smallest error on ``tune_batch`` (an oracle choice, made on prompts kept
    apart from those it is scored on; chapter 5 tunes the Lasso's and ridge's
    penalties this way)."""
    _check_learner_param(learner, param)
    if not isinstance(tune_batch, PromptBatch):
        raise TypeError(
            f"tune_batch: expected a PromptBatch, got {type(tune_batch).__name__}"
        )
    if not isinstance(grid, (list, tuple)) or not grid:
        raise TypeError(f"grid: expected a non-empty list of values, got {grid!r}")
    grid = [check_real(f"grid[{i}]", v) for i, v in enumerate(grid)]
    ks = _ints(ks)
    tuning = torch.stack(
        [
            error_curve(partial(learner, **{param: v}), tune_batch, ks, normalise=False)
            for v in grid
        ]
    )  # (len(grid), len(ks))
    best = tuning.argmin(dim=0).tolist()
    return TunedLearner(
        learner, {k: grid[b] for k, b in zip(ks, best, strict=True)}, param
    )


def noise_sweep(
    predictors: Mapping,
    noise_levels: Sequence[float],
    *,
    dim: int,
    n_points: int,
    n_prompts: int = 2048,
    seed: int = 0,
    min_context: Mapping[str, int] | None = None,
) -> torch.Tensor:
    """Error (squared, not divided by ``d``) of every predictor at every context size
    on prompts of each noise level in ``noise_levels``: ``(P, S, n_points)`` float64
    for ``P`` predictors (in the order of the dict) and ``S`` levels.

    Prompts: ``x, w ~ N(0, I_dim)``, ``y = <w, x> + sigma eps``, ``n_prompts`` of them
    per level, the same inputs and tasks for every level (seed ``seed``).
    """
    predictors = _check_predictors(predictors)
    check_positive_int("n_points", n_points)
    check_positive_int("n_prompts", n_prompts)
    if not isinstance(noise_levels, (list, tuple)) or not noise_levels:
        raise TypeError(
            f"noise_levels: expected a non-empty list of levels, got {noise_levels!r}"
        )
    levels = [
        check_real(f"noise_levels[{i}]", s, minimum=0.0)
        for i, s in enumerate(noise_levels)
    ]
    min_context = _min_context(min_context, predictors)
    ks = range(n_points)
    out = torch.empty(len(predictors), len(levels), n_points, dtype=torch.float64)
    for j, sigma in enumerate(levels):
        batch = linear_regression(n_prompts, n_points, dim, noise_std=sigma, seed=seed)
        for i, (name, p) in enumerate(predictors.items()):
            out[i, j] = error_curve(
                p, batch, ks, normalise=False, min_context=min_context.get(name, 0)
            )
    return out


def residual_features(
    model, batch: PromptBatch, ks: Sequence[int], *, token: str = "query"
) -> torch.Tensor:
    """The residual stream of a GPT-style model (:class:`~icl_lib.models.gpt.
    ICLTransformer`) before the first block and after every block:
    ``(n_layer + 1, B, len(ks), C)``.

    ``token="query"``: at the token ``x_k`` (token ``2k``), where ``y_k`` is predicted
    from ``k`` examples; ``token="label"``: at the context's last label ``y_{k-1}``
    (token ``2k - 1``, so ``k >= 1``), the last token that has seen the whole context
    before the query arrives."""
    if not hasattr(model, "run_with_cache"):
        raise TypeError(
            "model: expected a model with run_with_cache (an ICLTransformer), got "
            f"{type(model).__name__}"
        )
    if token not in ("query", "label"):
        raise ValueError(f"token: expected 'query' or 'label', got {token!r}")
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    ks = _ints(ks)
    low = 0 if token == "query" else 1
    if max(ks) >= batch.n_points or min(ks) < low:
        raise ValueError(
            f"ks: expected context sizes in {low}..{batch.n_points - 1}, got {ks}"
        )
    tokens = [2 * k if token == "query" else 2 * k - 1 for k in ks]
    names = ["blocks.0.hook_resid_pre"] + [
        f"blocks.{layer}.hook_resid_post" for layer in range(model.config.n_layer)
    ]
    parts = []
    with torch.no_grad():
        model.eval()
        # Chunks of prompts keep the cache small (it holds every activation) and fast.
        for start in range(0, batch.batch_size, EVAL_CHUNK):
            chunk = slice(start, start + EVAL_CHUNK)
            _, cache = model.run_with_cache(batch.xs[chunk], batch.ys[chunk])
            parts.append(torch.stack([cache[name][:, tokens] for name in names]))
    return torch.cat(parts, dim=1)


def probe_accuracy(
    features: torch.Tensor,
    labels: torch.Tensor,
    *,
    train_fraction: float = 0.5,
    lam: float = 1e-2,
) -> float:
    """Held-out accuracy of a linear read-out of binary ``labels`` from ``features``.

    Least squares with a ridge penalty ``lam`` (after standardising each feature on
    the training part) of the labels coded ``+-1`` on the first ``train_fraction`` of
    the rows, scored by the sign on the others.

    Args:
        features: ``(B, C)``.
        labels: ``(B,)`` integers in ``{0, 1}``.
    """
    check_finite("features", check_tensor("features", features, 2))
    check_tensor("labels", labels, 1, floating=False)
    if labels.shape[0] != features.shape[0]:
        raise ValueError(
            f"labels: expected one label per row ({features.shape[0]}) to match "
            f"features, got {labels.shape[0]}"
        )
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError(
            f"labels: expected values in {{0, 1}}, got {labels.unique().tolist()}"
        )
    frac = check_real("train_fraction", train_fraction, minimum=0.0, strict=True)
    if frac >= 1:
        raise ValueError(f"train_fraction: expected a number < 1, got {frac}")
    lam = check_real("lam", lam, minimum=0.0)
    x = features.double()
    y = labels.double() * 2 - 1
    n_train = int(frac * x.shape[0])
    if n_train < 1 or n_train >= x.shape[0]:
        raise ValueError(
            f"features: expected enough rows for a train and a test part, got "
            f"{x.shape[0]}"
        )
    mean, std = x[:n_train].mean(0), x[:n_train].std(0).clamp(min=1e-8)
    x = torch.cat(((x - mean) / std, torch.ones(x.shape[0], 1, dtype=x.dtype)), 1)
    a, b = x[:n_train], y[:n_train]
    gram = a.T @ a + lam * n_train * torch.eye(a.shape[1], dtype=x.dtype)
    coef = torch.linalg.solve(gram, a.T @ b)
    pred = torch.where(x[n_train:] @ coef >= 0, 1.0, -1.0).double()
    return (pred == y[n_train:]).double().mean().item()


def probe_by_layer(
    model,
    batch: PromptBatch,
    labels: torch.Tensor,
    ks: Sequence[int],
    *,
    token: str = "query",
    **probe,
) -> torch.Tensor:
    """Held-out accuracy of a linear read-out of ``labels (B,)`` from the residual
    stream before the first block and after each block, at each context size:
    ``(n_layer + 1, len(ks))`` float64 (:func:`residual_features`,
    :func:`probe_accuracy`; keyword arguments go to the latter; ``token`` as in
    :func:`residual_features`). Chapter 5 reads the noise level of a prompt this
    way."""
    feats = residual_features(model, batch, ks, token=token)  # (L + 1, B, K, C)
    out = torch.empty(feats.shape[0], feats.shape[2], dtype=torch.float64)
    for layer in range(feats.shape[0]):
        for j in range(feats.shape[2]):
            out[layer, j] = probe_accuracy(feats[layer, :, j], labels, **probe)
    return out


def bayes_label_accuracy(posterior: torch.Tensor, labels: torch.Tensor) -> float:
    """Accuracy of the most probable label under ``posterior (B, G)`` against
    ``labels (B,)``: the best any read-out of the context can do when the posterior is
    exact (the probe's ceiling, e.g. :func:`icl_lib.learners.noise_posterior`)."""
    check_finite("posterior", check_tensor("posterior", posterior, 2))
    check_tensor("labels", labels, 1, floating=False)
    if labels.shape[0] != posterior.shape[0]:
        raise ValueError(
            f"labels: expected one label per row, to match posterior "
            f"({posterior.shape[0]} rows), got {labels.shape[0]}"
        )
    G = check_positive_int("posterior.shape[1]", posterior.shape[1])
    if labels.numel() and not bool(((labels >= 0) & (labels < G)).all()):
        raise ValueError(
            f"labels: expected components in 0..{G - 1}, got values from "
            f"{labels.min().item()} to {labels.max().item()}"
        )
    return (posterior.argmax(1) == labels).double().mean().item()


# --- the pass mark of a selection claim: what the best non-selecting learner pays ---


def ridge_path_errors(
    batch: PromptBatch, ks: Sequence[int], lams: Sequence[float]
) -> torch.Tensor:
    """Per-prompt squared errors of ridge with every penalty in ``lams``, the family
    of learners that use one penalty for every prompt: ``(len(lams), B, len(ks))``
    float64, computed in float64 from one eigendecomposition of ``X^T X`` per ``k``
    (so a fine grid costs little). ``lam = 0`` is minimum-norm least squares (the
    ``lam -> 0+`` limit, :func:`~icl_lib.learners.ols`); ``k = 0`` predicts 0."""
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    ks = _ints(ks)
    if max(ks) >= batch.n_points:
        raise ValueError(
            f"ks: expected context sizes in 0..{batch.n_points - 1}, got {ks}"
        )
    if not isinstance(lams, (list, tuple)) or not lams:
        raise TypeError(f"lams: expected a non-empty list of penalties, got {lams!r}")
    lam = torch.tensor(
        [check_real(f"lams[{i}]", v, minimum=0.0) for i, v in enumerate(lams)],
        dtype=torch.float64,
    )
    out = torch.empty(len(lam), batch.batch_size, len(ks), dtype=torch.float64)
    for j, k in enumerate(ks):
        xs, ys, xq, yq = (t.double() for t in batch.prompt(k))
        evals, evecs = torch.linalg.eigh(xs.transpose(1, 2) @ xs)  # (B, d), (B, d, d)
        z = (evecs.transpose(1, 2) @ (xs.transpose(1, 2) @ ys[..., None]))[..., 0]
        q = (evecs.transpose(1, 2) @ xq[..., None])[..., 0]  # x_q in the eigenbasis
        shrink = evals[None] + lam[:, None, None]  # (P, B, d)
        # lam = 0 on a null direction of X^T X: the pseudo-inverse drops it
        tiny = 1e-10 * evals.max(-1, keepdim=True).values.clamp(min=1.0)
        keep = (evals[None] > tiny) | (lam[:, None, None] > 0)
        inverse = torch.where(keep, 1.0 / shrink.where(keep, 1.0), 0.0)
        pred = (inverse * z[None] * q[None]).sum(-1)  # (P, B)
        out[:, :, j] = (pred - yq[None]) ** 2
    return out


def minimax_ratio(
    errors: torch.Tensor, reference: torch.Tensor
) -> tuple[float, int, torch.Tensor]:
    """What the best learner of a family pays on its worst kind of prompt.

    ``c* = min_p max_g errors[p, g] / reference[g]``: every member ``p`` of the family
    has a kind of prompt ``g`` on which its error is at least ``c*`` times the
    reference's. With the family the one-penalty ridges (:func:`ridge_path_errors`)
    and the reference the Bayes predictor of the mixture of kinds, ``c*`` is the least
    that not selecting costs; the geometric midpoint ``sqrt(c*)`` of 1 and ``c*`` is a
    pass mark that every member fails on some kind when ``c* > 1`` (chapter 5).

    Args:
        errors: ``(P, G)`` mean errors of ``P`` learners on ``G`` kinds of prompt.
        reference: ``(G,)`` mean errors of the reference on the same kinds, ``> 0``.

    Returns ``(c_star, p_star, worst)``: ``c*``, the index of the member that attains
    it, and every member's worst ratio ``max_g errors[p, g] / reference[g]``,
    ``(P,)`` float64.
    """
    check_batch("errors", check_tensor("errors", errors, 2))
    check_tensor("reference", reference, 1)
    if reference.shape[0] != errors.shape[1]:
        raise ValueError(
            f"reference: expected one error per kind of prompt ({errors.shape[1]}) to "
            f"match errors, got {reference.shape[0]}"
        )
    check_finite("reference", reference)
    if not bool((reference > 0).all()):
        raise ValueError("reference: expected errors > 0")
    check_finite("errors", errors)
    worst = (errors.double() / reference.double()).max(dim=1).values
    p_star = int(worst.argmin())
    return worst[p_star].item(), p_star, worst


def refined_minimax_ridge(
    batch: PromptBatch,
    groups: torch.Tensor,
    k: int,
    reference: torch.Tensor,
    lams: Sequence[float],
    *,
    coarse: torch.Tensor | None = None,
    points: int = 41,
) -> tuple[float, float, list[torch.Tensor]]:
    """The one-penalty ridge whose worse kind of prompt fares best against
    ``reference``, at context size ``k``: :func:`minimax_ratio` over the penalties
    ``lams``, then again on ``points`` penalties evenly spaced between the best one's
    neighbours (the worse kind's ratio is quasi-convex in the penalty, so the grid's
    best point brackets the minimum).

    Args:
        batch: ``B`` prompts; ``groups``: ``(B,)`` the kind ``0..G-1`` of each.
        reference: ``(G,)`` mean error / d of the reference on each kind.
        lams: the coarse grid, increasing; ``coarse``: its per-prompt errors / d,
            ``(len(lams), B)``, where already computed.

    Returns ``(c_star, lam, errors)``: ``c*``, the refined penalty, and its per-prompt
    error / d on each kind (a list of ``G`` tensors).
    """
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    check_tensor("groups", groups, 1, floating=False)
    if groups.shape[0] != batch.batch_size:
        raise ValueError(
            f"groups: expected one kind per prompt ({batch.batch_size}) to match "
            f"batch, got {groups.shape[0]}"
        )
    k = check_positive_int("k", k, minimum=0)
    if k >= batch.n_points:
        raise ValueError(
            f"k: expected a context size in 0..{batch.n_points - 1}, got {k}"
        )
    check_tensor("reference", reference, 1)
    kinds = range(reference.shape[0])
    if not kinds:
        raise ValueError("reference: expected a mean error for at least one kind")
    if not all(bool((groups == g).any()) for g in kinds):
        raise ValueError(
            f"groups: expected prompts of every kind 0..{len(kinds) - 1} (one per "
            f"entry of reference), got kinds {sorted(set(groups.tolist()))}"
        )
    points = check_positive_int("points", points, minimum=3)
    if not isinstance(lams, (list, tuple)) or len(lams) < 2:
        raise TypeError(f"lams: expected a list of at least 2 penalties, got {lams!r}")

    def errors_of(penalties):
        return ridge_path_errors(batch, [k], list(penalties))[..., 0] / batch.dim

    def best(errors):  # (P, B) -> c*, its index, its errors on each kind
        means = torch.stack([errors[:, groups == g].mean(1) for g in kinds], 1)
        c, p, _ = minimax_ratio(means, reference)
        return c, p, [errors[p, groups == g] for g in kinds]

    if coarse is None:
        coarse = errors_of(lams)
    elif not torch.is_tensor(coarse) or tuple(coarse.shape) != (
        len(lams),
        batch.batch_size,
    ):
        raise ValueError(
            f"coarse: expected a tensor of ({len(lams)}, {batch.batch_size}) errors to "
            f"match lams and batch, got "
            f"{getattr(coarse, 'shape', type(coarse).__name__)}"
        )
    p = best(coarse)[1]
    lo, hi = float(lams[max(p - 1, 0)]), float(lams[min(p + 1, len(lams) - 1)])
    fine = torch.linspace(lo, hi, points, dtype=torch.float64)
    c, q, errors = best(errors_of(fine.tolist()))
    return c, fine[q].item(), errors


def decisive_group(ratio: torch.Tensor, se: torch.Tensor, mark: float) -> int:
    """The kind of prompt that decides a joint claim ``ratio[g] <= mark`` for every
    ``g``: the one whose ratio lies furthest above the mark, or least far below it, in
    its own standard errors (the largest ``(ratio - mark) / se``). The joint claim
    passes, misses or is undecided (within two standard errors) exactly as this
    kind's claim does.

    Args:
        ratio, se: ``(G,)`` ratios of errors and their standard errors.
        mark: the pass mark.
    """
    check_finite("ratio", check_tensor("ratio", ratio, 1))
    check_finite("se", check_tensor("se", se, 1))
    if se.shape != ratio.shape:
        raise ValueError(
            f"se: expected the shape of ratio {tuple(ratio.shape)}, got "
            f"{tuple(se.shape)}"
        )
    mark = check_real("mark", mark)
    z = (ratio.double() - mark) / se.double().clamp(min=1e-12)
    return int(z.argmax())


def geometric_mean_ratio(
    numerator: torch.Tensor, denominator: torch.Tensor
) -> tuple[float, float]:
    """The geometric mean over context sizes of the per-``k`` ratios of two mean
    errors, with its standard error (the delta method, paired over prompts).

    Averaging the per-``k`` log ratios weighs every ``k`` alike, where a ratio of
    errors summed over ``k`` is dominated by the ``k`` of largest error (least squares
    near ``k = d``).

    Args:
        numerator, denominator: ``(n, K)`` per-prompt errors on the same prompts,
            ``n >= 2`` (:func:`squared_errors`).

    Returns ``(ratio, se)``, floats; for ``K = 1`` they are :func:`error_ratio`'s.
    """
    for name, value in (("numerator", numerator), ("denominator", denominator)):
        check_finite(name, check_tensor(name, value, 2))
    if numerator.shape != denominator.shape or numerator.shape[0] < 2:
        raise ValueError(
            "denominator: expected the shape of numerator with n >= 2 prompts, got "
            f"{tuple(numerator.shape)} and {tuple(denominator.shape)}"
        )
    a, b = numerator.double(), denominator.double()
    mean_a, mean_b = a.mean(0), b.mean(0)
    log_ratio = (mean_a.log() - mean_b.log()).mean()
    # each prompt's influence on the mean log ratio (first order)
    influence = (a / mean_a - b / mean_b).mean(1)
    se = influence.std() / a.shape[0] ** 0.5
    ratio = log_ratio.exp()
    return ratio.item(), (ratio * se).item()
