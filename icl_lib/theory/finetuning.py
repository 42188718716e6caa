"""Explicit learning beside the implicit update: fine-tuning the first MLP layer of a
contextual block by SGD on the prompt's examples (the baseline of chapter 7's
Experiment 3), and the two readings of its results the chapter needs (the optimum of a
step-size x passes grid, the last crossing of two error curves).

Dherin et al. 2025 compare the implicit update with fine-tuning; the block is
:class:`icl_lib.models.contextual.ContextualBlock` and the implicit side lives in
:mod:`icl_lib.theory.implicit`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .._checks import (
    check_finite,
    check_positive_int,
    check_real,
    check_same_shape,
    check_sequence,
    check_tensor,
)
from ..models.contextual import ACTIVATIONS, ContextualBlock, check_block
from ..prompts import PromptBatch

_SLOPES = {  # derivatives of the activations of icl_lib.models.contextual
    "relu": lambda z: (z > 0).to(z.dtype),
    "tanh": lambda z: 1 - torch.tanh(z) ** 2,
    "gelu": lambda z: (
        0.5 * (1 + torch.erf(z / math.sqrt(2)))
        + z * torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
    ),
}


def _check_passes(epochs, *, sort: bool = False) -> list[int]:
    """``epochs`` as a sorted list of distinct pass counts (an int or a sequence,
    increasing unless ``sort``)."""
    passes = (
        [epochs]
        if isinstance(epochs, int)
        else check_sequence(
            "epochs", epochs, "a positive int or a sequence of them", nonempty=True
        )
    )
    for ep in passes:
        check_positive_int("epochs", ep)
    if sort:
        passes = sorted(set(passes))
    if sorted(set(passes)) != passes:
        raise ValueError(
            f"epochs: expected increasing, distinct pass counts, got {passes!r}"
        )
    return passes


def _check_examples(block, xs, ys, x_test) -> tuple[int, int, int]:
    """``(B, N, d)`` of training examples ``xs (B, N, d)``, ``ys (B, N)`` and test
    inputs ``x_test (B, Q, d)`` of the same tasks, checked."""
    check_block(block)
    check_tensor("xs", xs, 3)
    check_tensor("ys", ys, 2)
    check_tensor("x_test", x_test, 3)
    B, N, d = xs.shape
    if tuple(ys.shape) != (B, N):
        raise ValueError(
            f"ys: expected shape (B, N) = {(B, N)} to match xs, got {tuple(ys.shape)}"
        )
    if x_test.shape[0] != B or x_test.shape[2] != d:
        raise ValueError(
            f"x_test: expected shape (B, Q, d) with B = {B}, d = {d} to match xs, got "
            f"{tuple(x_test.shape)}"
        )
    for name, value in (("xs", xs), ("ys", ys), ("x_test", x_test)):
        check_finite(name, value)
    return B, N, d


def _check_sizes(sizes, N: int) -> list[int]:
    """The numbers of examples to fine-tune on (default ``0..N``), checked."""
    if sizes is None:
        sizes = list(range(N + 1))
    else:
        sizes = list(check_sequence("sizes", sizes, "a list of example counts"))
    if not sizes or any(
        isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= N for i in sizes
    ):
        raise ValueError(
            f"sizes: expected a non-empty list of example counts in 0..{N}, got "
            f"{sizes!r}"
        )
    return sizes


def _no_context(block, inputs):
    """Residual stream and MLP input of the queries ``(x, 0)`` without context,
    ``(B * Q, m)`` each."""
    d = inputs.shape[-1]
    q = torch.cat((inputs, torch.zeros_like(inputs[..., :1])), dim=-1)
    q = q.reshape(-1, d + 1)
    s = block.stream(q.new_zeros(q.shape[0], 0, d + 1), q)
    return s, block.norm(s)


def finetune_first_layer(
    block: ContextualBlock,
    xs,
    ys,
    x_test,
    *,
    lr: float,
    epochs: int | Sequence[int] = 1,
    sizes: Sequence[int] | None = None,
) -> torch.Tensor:
    """Explicit learning for comparison: SGD on ``W`` alone, one example at a time, on
    the first ``i`` examples.

    For every prompt and every ``i`` in ``sizes`` (default ``0..N``) a copy of ``W_0``
    takes ``epochs`` passes of SGD (batch size 1, in order) on
    ``0.5 (T_W((x_j, 0))_last - y_j)^2``, ``j < i``, with the examples fed as queries
    without context; it then predicts the test inputs without context. The gradient
    ``(err * w'_last * g'(W a_j + b)) a_j^T`` is written out (no autograd graph), and
    ``W`` is kept as ``W_0 + G A^T`` with ``A`` the prompt's ``N`` MLP inputs (each step
    changes one column of ``G``), so hundreds of passes stay cheap on a CPU.

    Args:
        xs: ``(B, N, d)``; ys: ``(B, N)``; x_test: ``(B, Q, d)`` test inputs of the same
        tasks.
        lr: SGD step size.
        epochs: the number of passes over the ``i`` examples, or an increasing
        sequence of pass counts: one run records the predictions after each of them.
        sizes: the numbers of examples ``i`` to fine-tune on, each in ``0..N``.
    Returns:
        predictions ``(B, len(sizes), Q)``: row ``k`` after fine-tuning on ``sizes[k]``
        examples; with a sequence of pass counts ``(B, len(epochs), len(sizes), Q)``.
    """
    B, N, d = _check_examples(block, xs, ys, x_test)
    lr = check_real("lr", lr, minimum=0.0)
    passes = _check_passes(epochs)
    sizes = _check_sizes(sizes, N)

    mlp, act = block.mlp, ACTIVATIONS[block.mlp.activation]
    order = sorted(range(len(sizes)), key=lambda k: sizes[k])  # copies by size
    ranked = [sizes[k] for k in order]
    with torch.no_grad():
        s_train, a_train = (t.reshape(B, N, -1) for t in _no_context(block, xs))
        s_test, a_test = (
            t.reshape(B, x_test.shape[1], -1) for t in _no_context(block, x_test)
        )
        target = ys - s_train[..., -1] if block.skip else ys  # the skip adds s_last
        w_last, b_last = mlp.W_out[-1].detach(), mlp.b_out[-1].detach()
        W0, b = block.W.detach(), mlp.b.detach()
        # Every SGD step adds a multiple of a_j^T to W, so W = W_0 + G A^T with
        # A = (a_1 .. a_N) the prompt's inputs: we keep G, one (h, N) block per
        # (size, prompt), size-major, so that at step j the copies that still train
        # (size > j) are a contiguous block G[first:].
        G = W0.new_zeros(len(sizes), B, W0.shape[0], N)  # (k, B, h, N)
        gram = a_train @ a_train.transpose(1, 2)  # (B, N, N): a_i . a_j
        base = a_train @ W0.T + b  # (B, N, h): W_0 a_j + b
        test_gram = a_train @ a_test.transpose(1, 2)  # (B, N, Q)
        test_base = a_test @ W0.T + b  # (B, Q, h)
        floor = torch.finfo(G.dtype).tiny ** 0.5

    def derivative(pre):  # g(pre) and g'(pre), elementwise
        if mlp.activation in _SLOPES:
            return act(pre), _SLOPES[mlp.activation](pre)
        with torch.enable_grad():
            p = pre.detach().requires_grad_(True)
            hidden = act(p)
            (slope,) = torch.autograd.grad(hidden.sum(), p)
        return hidden.detach(), slope

    def predict():  # T_W((x_q, 0)) per size, back in the caller's order of sizes
        Gc = torch.empty_like(G)
        Gc[order] = G
        pre = test_base[:, None] + (Gc @ test_gram).permute(1, 0, 3, 2)  # (B, k, Q, h)
        out = act(pre) @ w_last + b_last  # (B, k, Q)
        return out + s_test[:, None, :, -1] if block.skip else out

    out, trained = [], sum(i == 0 for i in ranked)  # G[trained:] takes SGD steps
    with torch.no_grad():
        for ep in range(1, passes[-1] + 1):
            for j in range(ranked[-1]):
                first = next(k for k, i in enumerate(ranked) if i > j)
                Gj = G[first:]  # (k', B, h, N)
                pre = base[:, j] + (Gj @ gram[:, :, j, None]).squeeze(-1)  # W a_j + b
                hidden, slope = derivative(pre)
                err = hidden @ w_last + b_last - target[:, j]  # (k', B)
                # an error below sqrt(tiny) moves no entry of W, but the products it
                # feeds would be subnormal floats, which the CPU handles very slowly
                err = torch.where(err.abs() < floor, 0.0, err)
                # W -= lr (err w'_last * g'(pre)) a_j^T, i.e. column j of G
                Gj[..., j] -= lr * err[..., None] * w_last * slope
            if ep in passes:
                out.append(predict())
            if not bool(torch.isfinite(G[trained:]).any()):  # all diverged: stop
                break
    while len(out) < len(passes):  # pass counts after every trained copy diverged
        out.append(predict())  # (non-finite, and W_0 for the copies with i = 0)
    return out[0] if isinstance(epochs, int) else torch.stack(out, dim=1)


def finetune_to_convergence(
    block: ContextualBlock,
    xs,
    ys,
    x_test,
    *,
    sizes: Sequence[int] | None = None,
    max_iter: int = 200,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Explicit learning run to its end: ``W`` alone fitted to the first ``i``
    examples, the endpoint that SGD with more and more passes approaches.

    For every prompt and every ``i`` in ``sizes`` (default ``0..N``) a copy of ``W``
    starts at ``W_0`` and minimises ``0.5 sum_{j < i} (T_W((x_j, 0))_last - y_j)^2``
    (the examples fed as queries without context, as in :func:`finetune_first_layer`)
    by Levenberg-Marquardt steps of least norm. The Jacobian row of example ``j`` is
    ``g_j a_j^T`` with ``g_j = w'_last * f'(W a_j + b)``, so a step solves an
    ``i x i`` system, ``dW = -sum_j c_j g_j a_j^T`` with
    ``(K + lambda I) c = r``, ``K_jl = (g_j . g_l)(a_j . a_l)``: with fewer examples
    than entries of ``W`` the fit interpolates, and the least-norm steps reach an
    interpolant close to ``W_0``. Each copy adapts its own damping ``lambda``; the
    iterations stop when every copy's mean squared training error is below
    ``1e-24`` or after ``max_iter`` steps.

    Args:
        xs: ``(B, N, d)``; ys: ``(B, N)``; x_test: ``(B, Q, d)`` test inputs of the same
        tasks. sizes: the numbers of examples ``i``, each in ``0..N``.
    Returns:
        ``(predictions, train_error)``: the test predictions ``(B, len(sizes), Q)``
        and the mean squared training error of each fit, ``(B, len(sizes))`` (0
        where ``i = 0``), the evidence that the fits converged.
    """
    B, N, d = _check_examples(block, xs, ys, x_test)
    check_positive_int("max_iter", max_iter)
    sizes = _check_sizes(sizes, N)
    mlp, act = block.mlp, ACTIVATIONS[block.mlp.activation]
    if mlp.activation not in _SLOPES:
        raise ValueError(
            f"block: expected an MLP activation in {sorted(_SLOPES)}, got "
            f"{mlp.activation!r}"
        )
    slope_of = _SLOPES[mlp.activation]

    with torch.no_grad():
        s_train, a = (
            t.reshape(B, N, -1) for t in _no_context(block, xs)
        )  # a: (B, N, m)
        s_test, a_test = (
            t.reshape(B, x_test.shape[1], -1) for t in _no_context(block, x_test)
        )
        target = ys - s_train[..., -1] if block.skip else ys  # the skip adds s_last
        w_last, b_last, b = mlp.W_out[-1], mlp.b_out[-1], mlp.b
        used = (torch.arange(N) < torch.tensor(sizes)[:, None]).to(xs.dtype)  # (k, N)
        used = used[:, None].expand(len(sizes), B, N)  # (k, B, N)
        n_used = used.sum(-1).clamp_min(1)
        gram = a @ a.transpose(1, 2)  # (B, N, N): a_j . a_l
        eye = torch.eye(N, dtype=xs.dtype)
        W = block.W.expand(len(sizes), B, *block.W.shape).clone()  # (k, B, h, m)

        def residual(W):  # (k, B, N), zero for the examples a copy does not fit
            pre = torch.einsum("kbhm,bnm->kbnh", W, a) + b
            return (act(pre) @ w_last + b_last - target) * used, pre

        r, pre = residual(W)
        loss = (r**2).sum(-1)
        damping = torch.full_like(loss, 1e-3)
        for _ in range(max_iter):
            if bool((loss / n_used <= 1e-24).all()):
                break
            g = w_last * slope_of(pre) * used[..., None]  # (k, B, N, h)
            K = (g @ g.transpose(-1, -2)) * gram  # (k, B, N, N)
            # unused examples: an identity block and a zero residual, so c_j = 0
            K = K + (1 - used)[..., None] * eye
            c = torch.linalg.solve(K + damping[..., None, None] * eye, r[..., None])
            step = torch.einsum("kbn,kbnh,bnm->kbhm", c[..., 0], g, a)
            r_new, pre_new = residual(W - step)
            loss_new = (r_new**2).sum(-1)
            better = loss_new < loss
            W = torch.where(better[..., None, None], W - step, W)
            r = torch.where(better[..., None], r_new, r)
            pre = torch.where(better[..., None, None], pre_new, pre)
            loss = torch.where(better, loss_new, loss)
            damping = torch.where(better, damping * 0.3, damping * 10).clamp(
                1e-12, 1e12
            )
        pre = torch.einsum("kbhm,bqm->kbqh", W, a_test) + b
        pred = act(pre) @ w_last + b_last  # (k, B, Q)
        if block.skip:
            pred = pred + s_test[None, :, :, -1]
    return pred.transpose(0, 1), (loss / n_used).T


def finetune_error_curve(
    block: ContextualBlock,
    batch,
    n_context: int,
    *,
    lr: float,
    epochs: int | Sequence[int] = 1,
    sizes: Sequence[int] | None = None,
) -> torch.Tensor:
    """Error / d after fine-tuning ``W`` on the first ``i`` examples, per ``i`` in
    ``sizes``.

    The first ``n_context`` points of each prompt of ``batch`` are the training
    examples, the rest are the test queries (:func:`finetune_first_layer`). A run that
    diverges scores ``inf``. Returns ``(len(sizes),)`` (default ``sizes``:
    ``0..n_context``), or ``(len(epochs), len(sizes))`` for a sequence of pass counts
    (one run, recorded after each).
    """
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    check_positive_int("n_context", n_context)
    if not n_context < batch.n_points:
        raise ValueError(
            f"n_context: expected fewer than the {batch.n_points} points of a prompt "
            f"(the rest are test queries), got {n_context}"
        )
    xs, ys = batch.xs[:, :n_context], batch.ys[:, :n_context]
    x_test, y_test = batch.xs[:, n_context:], batch.ys[:, n_context:]
    pred = finetune_first_layer(
        block, xs, ys, x_test, lr=lr, epochs=epochs, sizes=sizes
    )  # (B, [passes,] sizes, Q)
    y_test = y_test[:, None, None] if pred.ndim == 4 else y_test[:, None]
    error = ((pred - y_test) ** 2).mean((0, -1)) / batch.dim
    return torch.nan_to_num(error, nan=float("inf"))


def finetuning_grid(
    block: ContextualBlock,
    batch,
    n_context: int,
    *,
    lrs: Sequence[float],
    epochs: Sequence[int],
    sizes: Sequence[int] | None = None,
) -> dict:
    """Mean error / d over ``sizes`` of every ``(lr, epochs)`` pair: a validation grid.

    Returns ``{(lr, epochs): error}`` (:func:`finetune_error_curve` averaged over the
    sizes). One run per step size serves every pass count: the run to
    ``max(epochs)`` passes is recorded after each count in ``epochs``.
    """
    passes = _check_passes(epochs, sort=True)
    lrs = [
        check_real(f"lrs[{i}]", lr, minimum=0.0, strict=True)
        for i, lr in enumerate(
            check_sequence("lrs", lrs, "a sequence of numbers", nonempty=True)
        )
    ]
    grid = {}
    for lr in lrs:
        curves = finetune_error_curve(
            block, batch, n_context, lr=lr, epochs=passes, sizes=sizes
        )
        for ep, curve in zip(passes, curves, strict=True):
            grid[(lr, ep)] = curve.mean().item()
    return grid


def grid_optimum(grid: dict) -> tuple[tuple, dict]:
    """The best ``(lr, epochs)`` of a validation grid and where it sits.

    Returns ``(best, edges)``: ``best`` minimises ``grid`` (a
    :func:`finetuning_grid` result); ``edges`` maps ``"lr"`` and ``"epochs"`` to
    ``"low"`` or ``"high"`` when ``best`` is the smallest or largest value of that
    axis in the grid, and to None when it is interior (or the axis has one value).
    """
    if not isinstance(grid, dict) or not grid:
        raise ValueError("grid: expected a non-empty {(lr, epochs): error} dict")
    best = min(grid, key=grid.get)
    edges = {}
    for axis, name in enumerate(("lr", "epochs")):
        values = sorted({key[axis] for key in grid})
        edge = None
        if len(values) > 1 and best[axis] == values[0]:
            edge = "low"
        elif len(values) > 1 and best[axis] == values[-1]:
            edge = "high"
        edges[name] = edge
    return best, edges


def last_crossing(first: torch.Tensor, second: torch.Tensor) -> int | None:
    """The first index from which ``second - first`` keeps the sign it has at the end.

    For two error curves over ``i = 0..n`` this is where the curves cross for the last
    time: from there on the curve that ends lower stays lower (ties count as either
    side). Returns None when that sign already holds at the first index where the
    curves differ (the curves never cross), or when they end tied.
    """
    check_same_shape("second", second, "first", first)
    check_finite("first", first)
    check_finite("second", second)
    sign = torch.sign(second - first)
    if sign[-1] == 0:
        return None
    against = (sign == -sign[-1]).nonzero()
    if len(against) == 0:
        return None
    return int(against[-1]) + 1
