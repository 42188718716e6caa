"""The selection frontier of chapter 5: where a learner lies against every learner that
uses one penalty for every prompt.

On a batch that mixes kinds of prompt (two noise levels, two task families), each
one-penalty ridge has one mean error per kind. Divided by a reference on each kind
(the matched ridge, the Bayes predictor), the penalties trace a curve: the frontier of
the learners that do not select (:func:`frontier_curve`). A learner selects when it
lands inside that curve, where no one-penalty ridge is as good on every kind at once;
:func:`frontier_depth` says how far inside (or outside) it lies, with a standard error.
"""

from __future__ import annotations

import torch

from .._checks import check_finite, check_tensor
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
