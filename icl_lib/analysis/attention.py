"""Attention read-outs of a trained ICL transformer, after Han, Wang, Zhao and Ji (TMLR
2025).

Han et al. ask whether an attention head's weights over the demonstrations, used as
kernel weights, reproduce the model's in-context prediction: with ``a_i`` the head's
attention from the query position onto demonstration ``i`` (the largest attention on any
token of ``[x_i, y_i]``), the reconstructed label is ``argmax_c sum_i a_i e(y_i)_c``,
which for labels in ``{-1, +1}`` is ``sign(sum_i a_i y_i)``. They report this for
GPT-J on SST-2 and other tasks; chapter 8 compares a head with baselines
(:func:`baseline_agreement`) rather than with GPT-J's numbers. Here the
same read-outs work on :class:`icl_lib.models.gpt.ICLTransformer`, whose tokens are
``x_1, y_1, ..., x_k, y_k, x_q``: token ``2(i-1)`` is ``x_i``, token ``2i - 1`` is
``y_i`` and token ``2k`` is the query. Chapter 8.
"""

from __future__ import annotations

import torch

from .._checks import (
    check_finite,
    check_float_tensor,
    check_patterns,
    check_per_prompt,
    check_positive_int,
    check_prompt,
    check_real,
    check_sequences,
    check_tensor,
)
from ..models.gpt import ICLTransformer
from .curves import sign

RULES = ("max", "label", "sum")


def _check_model(model) -> ICLTransformer:
    if not isinstance(model, ICLTransformer):
        raise TypeError(
            f"model: expected an ICLTransformer, got {type(model).__name__}"
        )
    return model.eval()


def _stack(cache: dict, hook: str, n_layer: int) -> torch.Tensor:
    return torch.stack(
        [cache[f"blocks.{layer}.attn.{hook}"] for layer in range(n_layer)], dim=1
    )


@torch.no_grad()
def head_vectors(model: ICLTransformer, xs: torch.Tensor, ys: torch.Tensor) -> dict:
    """Every head's query, key and value vectors: ``{"q", "k", "v"}``, each
    ``(B, L, H, 2n, C/H)``.

    Read from the model's named activations ``blocks.{l}.attn.hook_q`` / ``hook_k`` /
    ``hook_v``.
    """
    _, cache = _check_model(model).run_with_cache(xs, ys)
    n_layer = model.config.n_layer
    return {name: _stack(cache, f"hook_{name}", n_layer) for name in "qkv"}


@torch.no_grad()
def attention_patterns(
    model: ICLTransformer, xs: torch.Tensor, ys: torch.Tensor
) -> torch.Tensor:
    """Every head's causal softmax attention on the prompt
    ``(xs (B, n, d), ys (B, n))``.

    Returns ``(B, n_layer, n_head, 2n, 2n)``: entry ``[b, l, h, t, s]`` is how much
    token ``t`` attends to token ``s <= t`` (the activations
    ``blocks.{l}.attn.hook_pattern``).
    """
    _, cache = _check_model(model).run_with_cache(xs, ys)
    return _stack(cache, "hook_pattern", model.config.n_layer)


def linear_probe(
    features: torch.Tensor,
    targets: torch.Tensor,
    *,
    lam: float = 1e-2,
    train_fraction: float = 0.5,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ridge probe ``targets ~ features`` (with intercept), fitted on the first rows,
    tested on the rest.

    ``features (M, p)``, ``targets (M, m)``; returns ``(predictions, targets)`` of the
    held-out rows. Han et al. (Section 5.4) probe GPT-J's keys and values with ridge
    probes too.
    """
    check_finite("features", check_tensor("features", features, 2))
    check_finite("targets", check_tensor("targets", targets, 2))
    if features.shape[0] != targets.shape[0]:
        raise ValueError(
            f"targets: expected {features.shape[0]} rows (one per row) to match "
            f"features, got {targets.shape[0]}"
        )
    lam = check_real("lam", lam, minimum=0.0)
    cut = int(
        check_real("train_fraction", train_fraction, minimum=0.0, strict=True)
        * features.shape[0]
    )
    if not 0 < cut < features.shape[0]:
        raise ValueError(
            "train_fraction: expected a split with rows on both sides, got "
            f"{train_fraction}"
        )
    design = torch.cat((features, features.new_ones(features.shape[0], 1)), dim=1)
    a, b = design[:cut], targets[:cut]
    gram = a.T @ a + lam * torch.eye(a.shape[1], dtype=a.dtype, device=a.device)
    weights = torch.linalg.solve(gram, a.T @ b)
    return design[cut:] @ weights, targets[cut:]


def query_attention(patterns: torch.Tensor, k: int) -> torch.Tensor:
    """The attention of the query token of a ``k``-shot prompt: ``(B, L, H, 2k + 1)``.

    ``patterns`` from :func:`attention_patterns` on prompts of at least ``k + 1``
    points; the query is ``x_{k+1}`` (token ``2k``) and sees ``x_1, y_1, ..., x_k, y_k``
    and itself.
    """
    check_patterns(patterns)
    check_positive_int("k", k)
    if 2 * k >= patterns.shape[-1]:
        raise ValueError(
            f"k: expected 2k + 1 <= {patterns.shape[-1]} tokens, got k = {k}"
        )
    return patterns[..., 2 * k, : 2 * k + 1]


def _check_row(row) -> None:
    """A query's attention ``row (..., 2k + 1)``: finite, ``k >= 1``."""
    check_float_tensor("row", row)
    if row.ndim == 0 or row.shape[-1] < 3 or row.shape[-1] % 2 == 0:
        raise ValueError(
            f"row: expected 2k + 1 >= 3 entries in the last axis, got {row.shape[-1]}"
        )
    check_finite("row", row)


def attention_split(row: torch.Tensor) -> dict:
    """Where a query's attention ``row (..., 2k + 1)`` goes:
    ``{"inputs", "labels", "query"}`` fractions."""
    _check_row(row)
    return {
        "inputs": row[..., 0:-1:2].sum(-1),
        "labels": row[..., 1:-1:2].sum(-1),
        "query": row[..., -1],
    }


def demonstration_weights(row: torch.Tensor, rule: str = "max") -> torch.Tensor:
    """Kernel weights ``a_i`` of the ``k`` demonstrations from a query row
    ``(..., 2k + 1)``: ``(..., k)``.

    ``rule``: ``"max"`` (Han et al.: the larger of the attention on ``x_i`` and on
    ``y_i``), ``"label"`` (the attention on ``y_i`` only) or ``"sum"`` (both).
    """
    if rule not in RULES:
        raise ValueError(f"rule: expected one of {RULES}, got {rule!r}")
    _check_row(row)
    on_x, on_y = row[..., 0:-1:2], row[..., 1:-1:2]
    if rule == "max":
        return torch.maximum(on_x, on_y)
    return on_y if rule == "label" else on_x + on_y


def reconstruct_labels(weights: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``sign(sum_i a_i y_i)`` (``argmax_c sum_i a_i e(y_i)_c`` for ``y in {-1, +1}``;
    ties give +1).

    ``weights (B, ..., k)`` and ``labels (B, k)``; returns ``(B, ...)`` in
    ``{-1.0, +1.0}``.
    """
    check_tensor("labels", labels, 2)
    check_float_tensor("weights", weights)
    if weights.shape[0] != labels.shape[0] or weights.shape[-1] != labels.shape[1]:
        raise ValueError(
            "weights: expected shape (B, ..., k) with (B, k) = the shape of labels "
            f"{tuple(labels.shape)}, got {tuple(weights.shape)}"
        )
    check_finite("weights", weights)
    check_finite("labels", labels)
    shape = (labels.shape[0],) + (1,) * (weights.ndim - 2) + (labels.shape[1],)
    vote = (weights * labels.reshape(shape)).sum(-1)
    return torch.where(vote >= 0, 1.0, -1.0).to(weights.dtype)


@torch.no_grad()
def head_reconstruction(
    model: ICLTransformer,
    xs: torch.Tensor,
    ys: torch.Tensor,
    x_query: torch.Tensor,
    y_query: torch.Tensor,
    *,
    rule: str = "max",
) -> dict:
    """Han et al.'s per-head reconstruction on ``k``-shot prompts (``xs (B, k, d)``,
    ``ys (B, k)``).

    Returns a dict of tensors: ``"model"`` and ``"label"`` agreement ``(L, H)`` of each
    head's reconstructed label with the model's prediction ``sign(logit)`` and with
    ``y_query``; ``"label_attention"`` and ``"input_attention"`` ``(L, H)``: the mean
    share of the query's attention on label tokens and on input tokens; ``"prediction"``
    ``(B,)``: the model's labels; ``"query_attention"`` ``(B, L, H, 2k + 1)``: the
    query rows of :func:`query_attention` (one forward pass computes everything).
    """
    B, k, d = check_prompt(xs, ys, x_query)
    check_per_prompt("y_query", y_query, B)
    full_x = torch.cat((xs, x_query.unsqueeze(1)), dim=1)
    full_y = torch.cat(
        (ys, y_query.unsqueeze(1)), dim=1
    )  # y_query sits after the query: never seen by it
    outputs, cache = _check_model(model).run_with_cache(full_x, full_y)  # one pass
    prediction = torch.where(outputs[:, k] >= 0, 1.0, -1.0).to(xs.dtype)
    row = query_attention(
        _stack(cache, "hook_pattern", model.config.n_layer), k
    )  # (B, L, H, 2k + 1)
    recon = reconstruct_labels(demonstration_weights(row, rule), ys)  # (B, L, H)
    split = attention_split(row)
    return {
        "model": (recon == prediction[:, None, None]).double().mean(0),
        "label": (recon == y_query[:, None, None]).double().mean(0),
        "label_attention": split["labels"].double().mean(0),
        "input_attention": split["inputs"].double().mean(0),
        "prediction": prediction,
        "query_attention": row,
    }


def similarity_correlation(
    weights: torch.Tensor, similarity: torch.Tensor
) -> torch.Tensor:
    """Per-head Pearson correlation between demonstration weights and a similarity
    score.

    ``weights (B, L, H, k)`` (e.g. :func:`demonstration_weights`) and
    ``similarity (B, k)`` (e.g. ``<x_q, x_i>``); the correlation is taken over the ``k``
    demonstrations of each prompt and averaged over prompts: ``(L, H)``. Han et al.
    (Section 5.3) correlate GPT-J's attention with a prediction similarity in the same
    way.
    """
    check_tensor("similarity", similarity, 2)
    check_float_tensor("weights", weights)
    if (
        weights.shape[0] != similarity.shape[0]
        or weights.shape[-1] != similarity.shape[1]
    ):
        raise ValueError(
            "weights: expected shape (B, ..., k) with (B, k) = the shape of "
            f"similarity {tuple(similarity.shape)}, got {tuple(weights.shape)}"
        )
    check_finite("weights", weights)
    check_finite("similarity", similarity)
    shape = (similarity.shape[0],) + (1,) * (weights.ndim - 2) + (similarity.shape[1],)
    s = similarity.reshape(shape)
    w = weights - weights.mean(-1, keepdim=True)
    s = s - s.mean(-1, keepdim=True)
    corr = (w * s).sum(-1) / (w.norm(dim=-1) * s.norm(dim=-1)).clamp(min=1e-30)
    return corr.double().mean(0)


@torch.no_grad()
def probe_heads(
    model: ICLTransformer, xs: torch.Tensor, ys: torch.Tensor, *, lam: float = 1e-2
) -> dict:
    """Han et al.'s probes (Section 5.4) for every head, on prompts ``xs (B, n, d)``,
    ``ys (B, n)``.

    Over the ``n - 1`` demonstrations before the last point: a ridge probe from each
    head's value at the token ``y_i`` to ``y_i`` (scored by the accuracy of its sign)
    and from its key at ``x_i`` to ``x_i`` (scored by ``R^2``); fitted on the first half
    of the rows, tested on the rest (:func:`linear_probe`). Returns
    ``{"value_accuracy", "key_r2"}``, each ``(L, H)``.
    """
    check_sequences(xs, ys)
    k = xs.shape[1] - 1
    check_positive_int("n_points - 1", k)
    vectors = head_vectors(model, xs, ys)  # (B, L, H, 2n, C/H)
    label_tokens, input_tokens = torch.arange(1, 2 * k, 2), torch.arange(0, 2 * k, 2)
    L, H, width = vectors["v"].shape[1], vectors["v"].shape[2], vectors["v"].shape[-1]
    labels = ys[:, :k].reshape(-1, 1).double()
    inputs = xs[:, :k].reshape(-1, xs.shape[2]).double()
    value_accuracy, key_r2 = (
        torch.zeros(L, H, dtype=torch.float64),
        torch.zeros(L, H, dtype=torch.float64),
    )
    for layer in range(L):
        for head in range(H):
            values = (
                vectors["v"][:, layer, head, label_tokens].reshape(-1, width).double()
            )
            pred, target = linear_probe(values, labels, lam=lam)
            value_accuracy[layer, head] = (sign(pred) == target).double().mean()
            keys = (
                vectors["k"][:, layer, head, input_tokens].reshape(-1, width).double()
            )
            pred, target = linear_probe(keys, inputs, lam=lam)
            residual = ((pred - target) ** 2).sum() / (
                (target - target.mean(0)) ** 2
            ).sum()
            key_r2[layer, head] = 1 - residual
    return {"value_accuracy": value_accuracy, "key_r2": key_r2}


def baseline_agreement(
    scores: torch.Tensor, model_prediction: torch.Tensor, y_query: torch.Tensor
) -> tuple[float, float]:
    """How often ``sign(scores)`` of a baseline (a smoother, a majority vote) agrees
    with the model's labels and with the true labels, all ``(B,)``: ``(model, label)``.

    The yardstick for :func:`head_reconstruction`'s agreement: a head that agrees with
    the model less often than a fixed smoother on the raw inputs does not single out the
    model's computation.
    """
    for name, value in (
        ("scores", scores),
        ("model_prediction", model_prediction),
        ("y_query", y_query),
    ):
        check_tensor(name, value, 1)
        if value.shape != scores.shape:
            raise ValueError(
                f"{name}: expected the shape of scores {tuple(scores.shape)}, got "
                f"{tuple(value.shape)}"
            )
        check_finite(name, value)
    labels = sign(scores)
    return (
        (labels == model_prediction).double().mean().item(),
        (labels == y_query).double().mean().item(),
    )
