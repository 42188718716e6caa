"""The selection frontier of chapter 5: where a learner lies against every learner that
uses one penalty for every prompt.

On a batch that mixes kinds of prompt (two noise levels, two task families), each
one-penalty ridge has one mean error per kind. Divided by a reference on each kind
(the matched ridge, the Bayes predictor), the penalties trace a curve: the frontier of
the learners that do not select (:func:`frontier_curve`). A learner that lands inside
that curve, where no one-penalty ridge is as good on every kind at once, selects; one
that lands on it or outside proves nothing either way (the test works one way);
:func:`frontier_depth` says how far inside (or outside) it lies, with a standard error.

Inside proves selection only against the family drawn: for noise levels the one-penalty
ridges bound every learner linear in the labels (chapter 5's proposition), for other
kinds of prompt they need not. :func:`scaled_ridge_depth` measures the depth against a
larger linear family, each ridge multiplied by one factor, cheaply.
"""

from __future__ import annotations

import torch

from .._checks import check_finite, check_real, check_tensor
from ..prompts import PromptBatch
from .selection import error_ratio, minimax_ratio


def _kinds(path_errors: torch.Tensor, groups: torch.Tensor) -> range:
    """Check ``path_errors (P, B)`` against ``groups (B,)``; the kinds ``0..G-1``."""
    check_finite("path_errors", check_tensor("path_errors", path_errors, 2))
    if 0 in path_errors.shape:
        raise ValueError(
            "path_errors: expected (P, B) errors of at least one learner on some "
            f"prompts, got shape {tuple(path_errors.shape)}"
        )
    check_tensor("groups", groups, 1, floating=False)
    if groups.shape[0] != path_errors.shape[1]:
        raise ValueError(
            f"groups: expected one kind per prompt ({path_errors.shape[1]}) to match "
            f"path_errors, got {groups.shape[0]}"
        )
    if groups.numel() == 0 or int(groups.min()) < 0:
        raise ValueError("groups: expected kinds 0..G-1, one per prompt")
    kinds = range(int(groups.max()) + 1)
    for g in kinds:
        if int((groups == g).sum()) < 2:
            raise ValueError(
                f"groups: expected at least two prompts of every kind 0..{kinds[-1]}, "
                f"got {int((groups == g).sum())} of kind {g}"
            )
    return kinds


def _per_kind_means(errors: torch.Tensor, groups: torch.Tensor, kinds) -> torch.Tensor:
    """``(..., B)`` per-prompt errors -> ``(..., G)`` mean error on each kind."""
    return torch.stack([errors[..., groups == g].double().mean(-1) for g in kinds], -1)


def frontier_curve(
    path_errors: torch.Tensor, groups: torch.Tensor, reference: torch.Tensor
) -> torch.Tensor:
    """Each one-penalty learner's mean error on each kind over the reference's:
    ``(P, G)`` float64, one row per penalty (a point of the frontier per row).

    Args:
        path_errors: ``(P, B)`` per-prompt errors of ``P`` one-penalty learners at one
            context size (:func:`~icl_lib.analysis.selection.ridge_path_errors`).
        groups: ``(B,)`` the kind ``0..G-1`` of each prompt.
        reference: ``(G,)`` the reference's mean error on each kind, ``> 0``.
    """
    kinds = _kinds(path_errors, groups)
    check_finite("reference", check_tensor("reference", reference, 1))
    if reference.shape[0] != len(kinds):
        raise ValueError(
            f"reference: expected one mean error per kind ({len(kinds)}), got "
            f"{reference.shape[0]}"
        )
    if not bool((reference > 0).all()):
        raise ValueError("reference: expected mean errors > 0")
    return _per_kind_means(path_errors, groups, kinds) / reference.double()


def frontier_depth(
    path_errors: torch.Tensor, groups: torch.Tensor, learner_errors: torch.Tensor
) -> tuple[float, float, int]:
    """How far inside the frontier of one-penalty learners a learner lies.

    ``depth = min_p max_g mean(path_p on kind g) / mean(learner on kind g)``: every
    one-penalty learner is worse than the learner by at least this factor on some kind
    when ``depth > 1`` (the learner lies inside the frontier, beyond the reach of one
    penalty); some one-penalty learner is as good on every kind when ``depth <= 1``.
    The standard error is the paired delta method's (:func:`~icl_lib.analysis.
    selection.error_ratio`) at the attaining penalty, on the kind that attains the
    maximum; it ignores the choice of that penalty on the same prompts.

    Args:
        path_errors: ``(P, B)`` per-prompt errors of the one-penalty learners.
        groups: ``(B,)`` the kind ``0..G-1`` of each prompt.
        learner_errors: ``(B,)`` the learner's per-prompt errors on the same prompts.

    Returns ``(depth, se, p)``: the depth, its standard error and the index of the
    penalty that attains it.
    """
    kinds = _kinds(path_errors, groups)
    check_finite("learner_errors", check_tensor("learner_errors", learner_errors, 1))
    if learner_errors.shape[0] != path_errors.shape[1]:
        raise ValueError(
            f"learner_errors: expected one error per prompt ({path_errors.shape[1]}) "
            f"to match path_errors, got {learner_errors.shape[0]}"
        )
    learner_means = _per_kind_means(learner_errors, groups, kinds)
    if not bool((learner_means > 0).all()):
        raise ValueError("learner_errors: expected a mean error > 0 on every kind")
    depth, p, _ = minimax_ratio(
        _per_kind_means(path_errors, groups, kinds), learner_means
    )
    pairs = [
        error_ratio(path_errors[p, groups == g], learner_errors[groups == g])
        for g in kinds
    ]
    worst = max(kinds, key=lambda g: pairs[g][0].item())
    return depth, pairs[worst][1].item(), p


def _ridge_predictions(batch, k: int, lams: torch.Tensor):
    """Ridge's prediction of each query with every penalty in ``lams``, ``(P, B)``
    float64, and the query labels ``(B,)``: one eigendecomposition of ``X^T X`` per
    prompt, as :func:`~icl_lib.analysis.selection.ridge_path_errors` (``lam = 0`` is
    minimum-norm least squares)."""
    xs, ys, xq, yq = (t.double() for t in batch.prompt(k))
    evals, evecs = torch.linalg.eigh(xs.transpose(1, 2) @ xs)  # (B, d), (B, d, d)
    z = (evecs.transpose(1, 2) @ (xs.transpose(1, 2) @ ys[..., None]))[..., 0]
    q = (evecs.transpose(1, 2) @ xq[..., None])[..., 0]
    shrink = evals[None] + lams[:, None, None]  # (P, B, d)
    tiny = 1e-10 * evals.max(-1, keepdim=True).values.clamp(min=1.0)
    keep = (evals[None] > tiny) | (lams[:, None, None] > 0)
    inverse = torch.where(keep, 1.0 / shrink.where(keep, 1.0), 0.0)
    return (inverse * z[None] * q[None]).sum(-1), yq


def scaled_ridge_depth(
    batch,
    groups: torch.Tensor,
    k: int,
    learner_errors: torch.Tensor,
    lams,
    scales,
) -> tuple[float, float, float, float]:
    """How far inside the frontier of a larger family of learners linear in the
    labels a learner lies: ridge with one penalty ``lam``, its prediction multiplied
    by one factor ``s`` for every prompt (``s = 1`` is ridge itself).

    Each member predicts ``s * ridge_lam(x_q)``, a fixed linear function of the
    labels, so no member selects. On two task families (chapter 5's regression and
    classification) the learners linear in the labels that are not ridges can reach
    where ridge does not; this two-parameter family is a cheap check of how far.
    The depth is :func:`frontier_depth`'s, over every pair ``(lam, s)``, with each
    member's mean error on each kind computed exactly from three sums per penalty
    (``s^2 mean(p^2) - 2 s mean(p y) + mean(y^2)``), so a fine grid costs little.

    Args:
        batch: the prompts (a :class:`~icl_lib.prompts.PromptBatch`).
        groups: ``(B,)`` the kind ``0..G-1`` of each prompt.
        k: the context size, ``0 <= k < batch.n_points``.
        learner_errors: ``(B,)`` the learner's squared errors at ``k``, in the units
            of the members' (the squared error of the query's label; divide both or
            neither by ``d``).
        lams: penalties, a non-empty list of numbers ``>= 0``.
        scales: factors, a non-empty list of numbers ``>= 0``.

    Returns ``(depth, se, lam, s)``: the depth, its paired standard error on the kind
    that attains it, and the member that attains it.
    """
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < batch.n_points:
        raise ValueError(
            f"k: expected a context size in 0..{batch.n_points - 1}, got {k!r}"
        )
    grids = {}
    for name, values in (("lams", lams), ("scales", scales)):
        if not isinstance(values, (list, tuple)) or not values:
            raise TypeError(
                f"{name}: expected a non-empty list of numbers, got {values!r}"
            )
        grids[name] = torch.tensor(
            [check_real(f"{name}[{i}]", v, minimum=0.0) for i, v in enumerate(values)],
            dtype=torch.float64,
        )
    check_tensor("groups", groups, 1, floating=False)
    if groups.shape[0] != batch.batch_size:
        raise ValueError(
            f"groups: expected one kind per prompt ({batch.batch_size}), got "
            f"{groups.shape[0]}"
        )
    check_finite("learner_errors", check_tensor("learner_errors", learner_errors, 1))
    if learner_errors.shape[0] != batch.batch_size:
        raise ValueError(
            f"learner_errors: expected one error per prompt ({batch.batch_size}), got "
            f"{learner_errors.shape[0]}"
        )
    pred, yq = _ridge_predictions(batch, k, grids["lams"])
    kinds = _kinds(pred, groups)
    learner_means = _per_kind_means(learner_errors, groups, kinds)
    if not bool((learner_means > 0).all()):
        raise ValueError("learner_errors: expected a mean error > 0 on every kind")
    sums = [_per_kind_means(t, groups, kinds) for t in (pred**2, pred * yq, yq**2)]
    s = grids["scales"][None, :, None]  # (1, S, 1)
    means = (
        s**2 * sums[0][:, None] - 2 * s * sums[1][:, None] + sums[2][None, None]
    )  # (P, S, G)
    worst = (means / learner_means).max(-1).values  # (P, S)
    flat = int(worst.argmin())
    p, j = divmod(flat, worst.shape[1])
    errors = (grids["scales"][j] * pred[p] - yq) ** 2
    pairs = [
        error_ratio(errors[groups == g], learner_errors[groups == g].double())
        for g in kinds
    ]
    g = max(kinds, key=lambda g: pairs[g][0].item())
    return (
        worst[p, j].item(),
        pairs[g][1].item(),
        grids["lams"][p].item(),
        grids["scales"][j].item(),
    )
