"""The implicit weight update of a contextual block (Dherin et al. 2025, "Learning
without training").

For a contextual block ``T_W(C, x) = M_W(A(C, x))`` (see :mod:`icl_lib.contextual`) and
a part ``Y`` of the context, Theorem 2.2 of the paper says
``T_W(C, x) = T_{W + dW(Y)}(C \\ Y, x)`` with

    dA(Y) = A(C, x) - A(C \\ Y, x),     dW(Y) = (W dA(Y)) A(C \\ Y, x)^T / ||A(C \\ Y,
    x)||^2,

a rank-1 matrix. With a skip connection around the MLP the output bias also moves, by
the change ``ds(Y)`` of the residual stream. Consuming ``c_1, ..., c_n`` one at a time
gives the sequence ``W_i = W_0 + dW(c_1..c_i)`` (Section 3, Proposition 3.1); removing
them one at a time from the front gives the product form
``W_0 (I + h_1 A_1) ... (I + h_n A_n)`` (Appendix B; the recursion multiplies by the
current weights).
Everything is batched over prompts: ``context (B, n, D)``, ``x (B, D)``, weights
``(B, hidden, m)``. Used in chapter 7.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .._checks import (
    check_batch,
    check_bool,
    check_finite,
    check_float_tensor,
    check_positive_int,
    check_sequence,
    check_tensor,
)
from ..models.contextual import ContextualBlock, check_block, check_context
from ..prompts import PromptBatch, context_and_query


def _check_regression_batch(batch) -> None:
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")


def absorbed_mask(
    absorbed: Sequence[int] | torch.Tensor | None, n: int
) -> torch.Tensor:
    """A boolean mask ``(n,)`` from ``absorbed``: None (the whole context), indices, or
    a bool tensor ``(n,)``."""
    check_positive_int("n", n, minimum=0)
    if absorbed is None:
        return torch.ones(n, dtype=torch.bool)
    if isinstance(absorbed, torch.Tensor) and absorbed.dtype == torch.bool:
        if tuple(absorbed.shape) != (n,):
            raise ValueError(
                f"absorbed: expected a bool mask of shape (n,) = {(n,)}, got "
                f"{tuple(absorbed.shape)}"
            )
        return absorbed.cpu()
    if isinstance(absorbed, torch.Tensor):
        absorbed = absorbed.tolist()
    if not isinstance(absorbed, Sequence) or isinstance(absorbed, str):
        raise TypeError(
            "absorbed: expected None, a sequence of token indices or a bool mask, got "
            f"{type(absorbed).__name__}"
        )
    mask = torch.zeros(n, dtype=torch.bool)
    for i in absorbed:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
            raise ValueError(
                f"absorbed: expected token indices in 0..{n - 1}, got {i!r}"
            )
        mask[i] = True
    return mask


def remove_tokens(
    context: torch.Tensor, absorbed: Sequence[int] | torch.Tensor | None
) -> torch.Tensor:
    """``C \\ Y``: the context without the absorbed tokens, order kept,
    ``(B, n - |Y|, D)``."""
    check_finite("context", check_batch("context", check_tensor("context", context, 3)))
    mask = absorbed_mask(absorbed, context.shape[1])
    return context[:, ~mask.to(context.device)]


def _safe_sq_norm(a: torch.Tensor, what: str) -> torch.Tensor:
    sq = (a * a).sum(-1)
    if bool((sq == 0).any()):
        raise ValueError(
            f"{what}: expected a non-zero vector for every prompt (the rank-1 update "
            "divides by its "
            "squared norm), got a zero vector"
        )
    return sq


def rank_one(
    W: torch.Tensor, delta: torch.Tensor, anchor: torch.Tensor
) -> torch.Tensor:
    """``(W delta) anchor^T / ||anchor||^2``, batched: ``W (h, m)`` or ``(B, h, m)``,
    vectors ``(B, m)`` -> ``(B, h, m)``.

    It is the smallest (Frobenius) matrix ``D`` with ``D anchor = W delta``.
    """
    check_float_tensor("W", W)
    check_float_tensor("delta", check_tensor("delta", delta, 2))
    check_float_tensor("anchor", check_tensor("anchor", anchor, 2))
    if W.ndim not in (2, 3):
        raise ValueError(f"W: expected shape (h, m) or (B, h, m), got {tuple(W.shape)}")
    B, m = delta.shape
    if W.shape[-1] != m or (W.ndim == 3 and W.shape[0] != B):
        raise ValueError(
            f"W: expected shape (h, {m}) or ({B}, h, {m}) to match delta (B, m) = "
            f"{(B, m)}, got {tuple(W.shape)}"
        )
    if tuple(anchor.shape) != (B, m):
        raise ValueError(
            f"anchor: expected shape (B, m) = {(B, m)} like delta, got "
            f"{tuple(anchor.shape)}"
        )
    Wd = W @ delta[..., None] if W.ndim == 3 else delta @ W.T
    Wd = Wd.reshape(delta.shape[0], -1)
    return (
        Wd[:, :, None]
        * anchor[:, None, :]
        / _safe_sq_norm(anchor, "A(C \\ Y, x)")[:, None, None]
    )


@dataclass(frozen=True)
class ImplicitUpdate:
    """What absorbing ``Y`` into the weights gives (Theorem 2.2 and its skip version).

    Attributes:
        delta_W: ``dW(Y)``, ``(B, hidden, m)``, rank 1 per prompt.
        delta_b_out: the output-bias shift ``ds(Y)`` ``(B, out)`` with a skip
        connection, else None.
        contextual_vector: ``dA(Y) = A(C, x) - A(C \\ Y, x)``, ``(B, m)``.
        anchor: ``A(C \\ Y, x)``, ``(B, m)``.
        kept_context: ``C \\ Y``, ``(B, n - |Y|, D)``.
    """

    delta_W: torch.Tensor
    delta_b_out: torch.Tensor | None
    contextual_vector: torch.Tensor
    anchor: torch.Tensor
    kept_context: torch.Tensor


def implicit_update(
    block: ContextualBlock, context: torch.Tensor, x: torch.Tensor, absorbed=None
) -> ImplicitUpdate:
    """``dW(Y)`` (and ``ds(Y)`` with a skip) for the tokens ``absorbed`` (default: all
    of ``C``).

    Args:
        block: the contextual block.
        context: ``C``, ``(B, n, D)``.
        x: the query token, ``(B, D)``.
        absorbed: ``Y`` as token indices, a bool mask ``(n,)``, or None for ``Y = C``.
    """
    check_block(block)
    check_context(context, x, block.layer.in_dim)
    kept = remove_tokens(context, absorbed)
    s_full, s_kept = block.stream(context, x), block.stream(kept, x)
    a_full, a_kept = block.norm(s_full), block.norm(s_kept)
    delta_A = a_full - a_kept
    delta_W = rank_one(block.W, delta_A, a_kept)
    delta_b = (s_full - s_kept) if block.skip else None
    return ImplicitUpdate(delta_W, delta_b, delta_A, a_kept, kept)


def apply_update(
    block: ContextualBlock, update: ImplicitUpdate, x: torch.Tensor
) -> torch.Tensor:
    """``T_{W + dW(Y)}(C \\ Y, x)`` (with ``b' + ds(Y)`` under a skip), ``(B, out)``."""
    check_block(block)
    if not isinstance(update, ImplicitUpdate):
        raise TypeError(
            f"update: expected an ImplicitUpdate, got {type(update).__name__}"
        )
    b_out = None
    if update.delta_b_out is not None:
        b_out = block.mlp.b_out + update.delta_b_out
    return block(update.kept_context, x, W=block.W + update.delta_W, b_out=b_out)


def _check_choices(choices) -> list:
    """``choices``: a non-empty sequence of token sets ``Y`` (None: the last token)."""
    choices = list(check_sequence("choices", choices, "a sequence of token sets Y"))
    if not choices:
        raise ValueError("choices: expected at least one token set Y, got none")
    return choices


def theorem_gap(
    block: ContextualBlock, context: torch.Tensor, x: torch.Tensor, choices=(None,)
) -> float:
    """The largest ``|T_{W + dW(Y)}(C \\ Y, x) - T_W(C, x)|`` over the token sets ``Y``
    in ``choices`` (each as :func:`implicit_update` takes it): 0 up to rounding by
    Dherin et al.'s theorem, for any contextual block (chapters 7 and 9)."""
    check_block(block)
    check_context(context, x, block.layer.in_dim)
    choices = _check_choices(choices)
    full = block(context, x)
    gaps = [
        (apply_update(block, implicit_update(block, context, x, Y), x) - full)
        .abs()
        .max()
        .item()
        for Y in choices
    ]
    return max(gaps)


def theorem_check(
    block: ContextualBlock, context: torch.Tensor, x: torch.Tensor, choices=(None,)
) -> dict:
    """Dherin et al.'s theorem checked on one block, over the token sets ``Y`` in
    ``choices`` (each as :func:`implicit_update` takes it): ``{"error", "control",
    "rank_ratio"}``, the largest ``|T_{W + dW(Y)}(C \\ Y, x) - T_W(C, x)|`` (0 up to
    rounding), the smallest ``max |T_W(C \\ Y, x) - T_W(C, x)|``, the change that
    dropping ``Y`` without the update makes (the check's control), and the largest
    ``sigma_2 / sigma_1`` of ``dW(Y)`` (0 for rank 1, up to rounding)."""
    check_block(block)
    check_context(context, x, block.layer.in_dim)
    choices = _check_choices(choices)
    with torch.no_grad():
        full = block(context, x)
        errors, controls, ratios = [], [], []
        for Y in choices:
            update = implicit_update(block, context, x, Y)
            errors.append((apply_update(block, update, x) - full).abs().max().item())
            controls.append((block(update.kept_context, x) - full).abs().max().item())
            ratios.append(singular_value_ratio(update.delta_W).max().item())
    return {"error": max(errors), "control": min(controls), "rank_ratio": max(ratios)}


def prefix_contextual(
    block: ContextualBlock, context, x, *, stream: bool = False
) -> torch.Tensor:
    """``A(c_1..c_i, x)`` for ``i = 0..n`` (``s`` instead of ``A`` if ``stream``):
    ``(B, n + 1, m)``."""
    check_block(block)
    check_context(context, x, block.layer.in_dim)
    f = block.stream if check_bool("stream", stream) else block.contextual
    return torch.stack(
        [f(context[:, :i], x) for i in range(context.shape[1] + 1)], dim=1
    )


def suffix_contextual(block: ContextualBlock, context, x) -> torch.Tensor:
    """``A(c_i..c_n, x)`` for ``i = 1..n+1`` (the last is ``A(x)``):
    ``(B, n + 1, m)``."""
    check_block(block)
    check_context(context, x, block.layer.in_dim)
    n = context.shape[1]
    return torch.stack(
        [block.contextual(context[:, i:], x) for i in range(n + 1)], dim=1
    )


@dataclass(frozen=True)
class Trajectory:
    """Implicit weights after consuming ``c_1..c_i``, ``i = 0..n``.

    Attributes:
        W: ``W_i``, ``(B, n + 1, hidden, m)``; ``W[:, 0]`` is the block's ``W_0``.
        b_out: the output bias ``b'_i`` ``(B, n + 1, out)`` with a skip connection, else
        None.
    """

    W: torch.Tensor
    b_out: torch.Tensor | None


def implicit_trajectory(block: ContextualBlock, context, x) -> Trajectory:
    """``W_i = W_0 + (W_0 (A(c_1..c_i, x) - A(x))) A(x)^T / ||A(x)||^2`` (Section 3), so
    ``T_{W_i}(x) = T_{W_0}(c_1..c_i, x)``."""
    prefixes = prefix_contextual(block, context, x)  # (B, n + 1, m)
    B, n1, m = prefixes.shape
    a_x = prefixes[:, 0]
    delta = (prefixes - a_x[:, None]).reshape(B * n1, m)
    dW = rank_one(block.W, delta, a_x.repeat_interleave(n1, dim=0)).reshape(
        B, n1, -1, m
    )
    b_out = None
    if block.skip:
        s = prefix_contextual(block, context, x, stream=True)
        b_out = block.mlp.b_out + (s - s[:, :1])
    return Trajectory(block.W + dW, b_out)


def gradient_form(block: ContextualBlock, context, x):
    """Proposition 3.1: ``W_{i+1} = W_i - h grad_W tr(Delta_i^T W)``, with
    ``grad = Delta_i``.

    Returns ``(Delta (B, n, hidden, m), h (B,))`` where
    ``Delta_i = W_0 (A(c_1..c_i, x) - A(c_1..c_{i+1}, x)) A(x)^T`` for ``i = 0..n-1``
    and ``h = 1 / ||A(x)||^2``. The "loss" ``tr(Delta_i^T W)`` is linear in ``W``: its
    gradient does not depend on where it is taken.
    """
    prefixes = prefix_contextual(block, context, x)  # (B, n + 1, m)
    a_x = prefixes[:, 0]
    h = 1.0 / _safe_sq_norm(a_x, "A(x)")
    step = prefixes[:, :-1] - prefixes[:, 1:]  # (B, n, m)
    Wstep = step @ block.W.T  # (B, n, hidden)
    return Wstep[..., None] * a_x[:, None, None, :], h


def linear_loss(Delta: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``L(W) = tr(Delta^T W)`` over the last two axes (broadcast over leading ones)."""
    check_float_tensor("Delta", Delta)
    check_float_tensor("W", W)
    if Delta.ndim < 2 or W.ndim < 2 or Delta.shape[-2:] != W.shape[-2:]:
        raise ValueError(
            f"W: expected matrices (..., p, q) of the shape of Delta's "
            f"{tuple(Delta.shape[-2:])}, got {tuple(W.shape)}"
        )
    return (Delta * W).sum((-2, -1))


def product_form(block: ContextualBlock, context, x) -> torch.Tensor:
    """Appendix B: ``W'_i = W'_{i-1} (I + h_i A_i)``, ``W'_0 = W_0``;
    returns ``(B, n + 1, hidden, m)``.

    Here ``A_i = dA(c_i) A(c_{i+1}..c_n, x)^T`` with
    ``dA(c_i) = A(c_i..c_n, x) - A(c_{i+1}..c_n, x)`` and
    ``h_i = 1 / ||A(c_{i+1}..c_n, x)||^2``: each factor absorbs the first remaining
    token, so ``T_{W'_i}(c_{i+1}..c_n, x) = T_{W_0}(C, x)`` and
    ``W'_n A(x) = W_0 A(C, x)``.
    """
    suffixes = suffix_contextual(block, context, x)  # (B, n + 1, m): a_1..a_{n+1}
    B, n1, m = suffixes.shape
    W = block.W.expand(B, -1, -1)
    out = [W]
    for i in range(n1 - 1):
        delta, anchor = suffixes[:, i] - suffixes[:, i + 1], suffixes[:, i + 1]
        W = W + rank_one(W, delta, anchor)  # W (I + h_i dA anchor^T)
        out.append(W)
    return torch.stack(out, dim=1)


def step_norms(block: ContextualBlock, context, x) -> torch.Tensor:
    """``||dW_{i+1} - dW_i||_F = ||W_{i+1} - W_i||_F`` for ``i = 0..n-1``: ``(B, n)``
    (the paper's Figure 2 quantity)."""
    W = implicit_trajectory(block, context, x).W
    return (W[:, 1:] - W[:, :-1]).flatten(2).norm(dim=-1)


def singular_value_ratio(M: torch.Tensor) -> torch.Tensor:
    """``sigma_2 / sigma_1`` of each matrix in ``M (..., p, q)``; 0 for a rank-1 matrix
    (in exact arithmetic)."""
    check_float_tensor("M", M)
    if M.ndim < 2 or min(M.shape[-2:]) < 2:
        raise ValueError(
            "M: expected matrices with at least 2 rows and 2 columns, got shape "
            f"{tuple(M.shape)}"
        )
    s = torch.linalg.svdvals(M)
    return s[..., 1] / s[..., 0]


def implicit_error_curve(
    block: ContextualBlock, batch, n_context: int
) -> tuple[torch.Tensor, float]:
    """The implicit update as a learner: error / d of ``T_{W_0 + dW_i}(x_q)`` for
    ``i = 0..n_context``, and the largest ``|T_{W_0 + dW_i}(x_q) - T_{W_0}(c_1..c_i,
    x_q)|`` (0 up to rounding, by the theorem).

    The first ``n_context`` points of each prompt of ``batch`` (a regression batch) are
    the context; each of the remaining points is a test query, with the same context
    (one prompt per task and query). Returns ``((n_context + 1,), gap)``, the error
    averaged over all tasks and queries.
    """
    check_block(block)
    if block.skip:  # the trajectory moves W only; a skip would need the bias shift
        raise ValueError(
            "block: expected a block without a skip connection around the MLP (the "
            "implicit trajectory moves W only), got one with it"
        )
    _check_regression_batch(batch)
    check_positive_int("n_context", n_context)
    if not 0 < n_context < batch.n_points:
        raise ValueError(
            f"n_context: expected 1 to {batch.n_points - 1} (the rest are test "
            f"queries), got {n_context}"
        )
    Q = batch.n_points - n_context
    xs = batch.xs[:, :n_context].repeat_interleave(Q, 0)  # one prompt per query
    ys = batch.ys[:, :n_context].repeat_interleave(Q, 0)
    xq, yq = batch.xs[:, n_context:].reshape(-1, batch.dim), batch.ys[:, n_context:]
    context, query = context_and_query(xs, ys, xq)
    with torch.no_grad():
        W = implicit_trajectory(block, context, query).W  # (B Q, n + 1, hidden, m)
        implicit = torch.stack(
            [
                block(context[:, :0], query, W=W[:, i])[:, -1]
                for i in range(n_context + 1)
            ],
            1,
        )
        in_context = torch.stack(
            [block(context[:, :i], query)[:, -1] for i in range(n_context + 1)], 1
        )
    error = ((implicit - yq.reshape(-1)[:, None]) ** 2).mean(0) / batch.dim
    return error, (implicit - in_context).abs().max().item()


def in_context_task_errors(
    block: ContextualBlock, batch, n_context: int, size: int
) -> torch.Tensor:
    """Error / d of the block's in-context prediction (= the implicit update's, by the
    theorem) with the first ``size`` of the ``n_context`` context examples, per task:
    each point of ``batch`` after the first ``n_context`` is a test query; returns
    ``(B,)``, the error averaged over a task's queries."""
    check_block(block)
    _check_regression_batch(batch)
    check_positive_int("n_context", n_context)
    if not 0 < n_context < batch.n_points:
        raise ValueError(
            f"n_context: expected 1 to {batch.n_points - 1} (the rest are test "
            f"queries), got {n_context}"
        )
    if (
        isinstance(size, bool)
        or not isinstance(size, int)
        or not 0 <= size <= n_context
    ):
        raise ValueError(f"size: expected an int in 0..{n_context}, got {size!r}")
    Q = batch.n_points - n_context
    context, query = context_and_query(
        batch.xs[:, :size].repeat_interleave(Q, 0),
        batch.ys[:, :size].repeat_interleave(Q, 0),
        batch.xs[:, n_context:].reshape(-1, batch.dim),
    )
    with torch.no_grad():
        pred = block(context, query)[:, -1].reshape(-1, Q)
    return ((pred - batch.ys[:, n_context:]) ** 2).mean(1) / batch.dim
