"""Induction heads in a token model: per-token losses, the in-context-learning score,
and the attention scores that find previous-token and induction heads.

Olsson et al. (2022) measure in-context learning by the *ICL score*, the loss at a late
token minus the loss at an early one (token 500 minus token 50 of 512; negative means
the model uses its context), and find induction heads by their *prefix-matching score*:
on random tokens repeated several times, the attention a head puts, from a token, on the
tokens that followed its earlier copies. A *previous-token head* (Elhage et al. 2021)
attends from ``t`` to ``t - 1``; in a 2-layer attention-only model it feeds the second
layer's induction heads (K-composition).

On the book's documents (:func:`icl_lib.tasks.induction.repeated_segment_tokens`) the
period varies, so the ICL score is taken over the masks the batch knows rather than at
two fixed positions: the mean loss where the next token is a repeat an induction head
can predict, minus the mean loss inside the segment's first occurrence
(:func:`icl_score`). Every function reads a
:class:`icl_lib.models.token_gpt.TokenTransformer` through its named activations
(``blocks.{l}.attn.hook_pattern``). Chapter 6.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._checks import (
    check_batch,
    check_finite,
    check_patterns,
    check_real,
    check_tensor,
)
from ..models.token_gpt import TokenTransformer
from ..tasks.induction import RepeatedTokensBatch, induction_targets
from ..tasks.tokens import check_tokens

SEQUENCE_CHUNK = 32  # sequences per forward pass in token_losses


def _check_model(model) -> TokenTransformer:
    if not isinstance(model, TokenTransformer):
        raise TypeError(
            f"model: expected a TokenTransformer, got {type(model).__name__}"
        )
    return model


def _check_batch(batch, name: str = "batch") -> RepeatedTokensBatch:
    if not isinstance(batch, RepeatedTokensBatch):
        raise TypeError(
            f"{name}: expected a RepeatedTokensBatch, got {type(batch).__name__}"
        )
    return batch


@torch.no_grad()
def token_losses(model: TokenTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy (nats) at every position: ``(B, T - 1)``.

    Entry ``[b, t]`` is ``-log p(x_{t+1} | x_0..x_t)``; the model reads
    ``tokens[:, :-1]`` (so ``T - 1 <= n_ctx``). Evaluated in eval mode, without
    gradients.
    """
    _check_model(model).eval()
    check_tokens(tokens, model.config.vocab_size)
    if tokens.shape[1] < 2:
        raise ValueError(
            f"tokens: expected at least 2 tokens per sequence, got {tokens.shape[1]}"
        )
    # No gradients, and chunks of sequences small enough to stay in the CPU's cache
    # (about 30 % faster on a 1024-document batch, with the same losses).
    with torch.no_grad():
        losses = [
            F.cross_entropy(
                model(part[:, :-1]).transpose(1, 2), part[:, 1:], reduction="none"
            )
            for part in tokens.split(SEQUENCE_CHUNK)
        ]
    return torch.cat(losses)  # (B, T - 1)


def loss_by_position(losses: torch.Tensor) -> torch.Tensor:
    """The per-token loss curve: ``losses (B, T - 1)`` averaged over sequences,
    ``(T - 1,)``."""
    return check_finite(
        "losses", check_batch("losses", check_tensor("losses", losses, 2))
    ).mean(0)


def masked_mean(losses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``losses (B, P)`` over the True entries of ``mask (B, P)`` (pooled over
    sequences); ``ValueError`` if ``mask`` selects nothing."""
    check_finite("losses", check_batch("losses", check_tensor("losses", losses, 2)))
    check_tensor("mask", mask, 2, floating=False)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask: expected dtype torch.bool, got {mask.dtype}")
    if mask.shape != losses.shape:
        raise ValueError(
            f"mask: expected the shape of losses {tuple(losses.shape)}, got "
            f"{tuple(mask.shape)}"
        )
    if not mask.any():
        raise ValueError("mask: expected at least one True entry, got none")
    return losses[mask.bool()].mean()


def repeat_losses(losses: torch.Tensor, batch: RepeatedTokensBatch) -> dict:
    """``{"repeated", "first"}``: the mean loss (nats) on the repeated positions
    (:meth:`~icl_lib.tasks.induction.RepeatedTokensBatch.repeated_mask`) and inside
    the first occurrence (``first_mask``), from ``losses (B, T - 1)`` of
    :func:`token_losses` on ``batch``."""
    _check_batch(batch)
    check_finite("losses", check_batch("losses", check_tensor("losses", losses, 2)))
    if losses.shape != (batch.batch_size, batch.n_points - 1):
        raise ValueError(
            f"losses: expected shape (B, T - 1) = "
            f"{(batch.batch_size, batch.n_points - 1)} for this batch, got "
            f"{tuple(losses.shape)}"
        )
    return {
        "repeated": masked_mean(losses, batch.repeated_mask()[:, :-1]),
        "first": masked_mean(losses, batch.first_mask()[:, :-1]),
    }


def icl_score(model: TokenTransformer, batch: RepeatedTokensBatch) -> float:
    """The in-context-learning score on repeated-segment documents, in nats.

    ``mean loss on the repeated positions - mean loss inside the first occurrence``
    (both pooled over the batch; :func:`repeat_losses`). The book's version of Olsson
    et al.'s ``loss(token 500) - loss(token 50)``: the late tokens are those a copy of
    the context predicts, the early ones those nothing predicts (loss ``log V`` at
    best). Negative means the model uses its context. The repeated loss is at least 0
    but the first-occurrence loss has no upper bound, so the score is bounded below by
    ``-(first-occurrence loss)``, which can be below ``-log V``. Its negative is the
    *in-context gain*.
    """
    losses = token_losses(model, _check_batch(batch).tokens)
    parts = repeat_losses(losses, batch)
    return (parts["repeated"] - parts["first"]).item()


def positional_icl_score(losses: torch.Tensor, early: int, late: int) -> float:
    """Olsson et al.'s ICL score: the mean loss at position ``late`` minus at
    ``early`` (columns of ``losses (B, T - 1)``), in nats."""
    check_finite("losses", check_batch("losses", check_tensor("losses", losses, 2)))
    P = losses.shape[1]
    for name, value in (("early", early), ("late", late)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < P:
            raise ValueError(f"{name}: expected an int in [0, {P}), got {value!r}")
    return (losses[:, late].mean() - losses[:, early].mean()).item()


@torch.no_grad()
def attention_patterns(model: TokenTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """Every head's attention on ``tokens (B, T)``: ``(B, L, H, T, T)`` (row ``t``:
    where position ``t`` attends), from ``blocks.{l}.attn.hook_pattern``."""
    _check_model(model).eval()
    _, cache = model.run_with_cache(tokens)
    return torch.stack(
        [
            cache[f"blocks.{layer}.attn.hook_pattern"]
            for layer in range(model.config.n_layer)
        ],
        dim=1,
    )


def _check_patterns(patterns, tokens) -> None:
    check_patterns(patterns)
    check_tokens(tokens)
    B, T = tokens.shape
    if patterns.shape[0] != B or patterns.shape[-2:] != (T, T):
        raise ValueError(
            f"patterns: expected shape (B, L, H, T, T) with (B, T) = {(B, T)}, to "
            f"match tokens, got {tuple(patterns.shape)}"
        )


def prefix_matching_from_patterns(
    patterns: torch.Tensor, tokens: torch.Tensor
) -> torch.Tensor:
    """Prefix-matching score of every head, ``(L, H)``, from ``patterns
    (B, L, H, T, T)``.

    At each position ``t`` that has an earlier copy of its token, the total attention
    on the positions :func:`icl_lib.tasks.induction.induction_targets` names (the
    tokens that followed the earlier copies), averaged over all such ``(b, t)``. A
    perfect induction head scores 1; a head attending uniformly scores about
    ``(copies) / (t + 1)``.
    """
    _check_patterns(patterns, tokens)
    targets = induction_targets(tokens)  # (B, T, T)
    queries = targets.any(-1)  # (B, T)
    if not queries.any():
        raise ValueError("tokens: expected some repeated token, got none")
    on_target = (patterns * targets[:, None, None].to(patterns.dtype)).sum(-1)
    weight = queries[:, None, None].to(patterns.dtype)  # (B, 1, 1, T)
    return (on_target * weight).sum((0, -1)) / weight.sum((0, -1))


def previous_token_from_patterns(patterns: torch.Tensor) -> torch.Tensor:
    """Previous-token score of every head, ``(L, H)``: the attention from ``t`` to
    ``t - 1``, averaged over batch and positions ``t >= 1``."""
    check_patterns(patterns)
    if patterns.shape[-1] < 2:
        raise ValueError("patterns: expected at least 2 positions, got 1")
    return patterns.diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, -1))


def attention_by_distance(
    patterns: torch.Tensor, min_position: int = 0
) -> torch.Tensor:
    """Where every head looks, by distance: ``(L, H, T)`` from ``patterns
    (B, L, H, T, T)``, entry ``[l, h, d]`` the attention from ``t`` to ``t - d``
    averaged over the batch and the query positions ``t >= min_position`` (each row
    of the result sums to 1, the distances ``d > t`` counting 0).

    A head that bets on positions shows a window of distances; a previous-token head
    a peak at ``d = 1``. Chapter 6 reads the one-layer model with it.
    """
    check_patterns(patterns)
    T = patterns.shape[-1]
    if patterns.shape[-2] != T:
        raise ValueError(
            f"patterns: expected square (T, T) patterns, got {tuple(patterns.shape)}"
        )
    if (
        isinstance(min_position, bool)
        or not isinstance(min_position, int)
        or not 0 <= min_position < T
    ):
        raise ValueError(
            f"min_position: expected an int in [0, {T}), got {min_position!r}"
        )
    t = torch.arange(T, device=patterns.device)
    distance = (t[:, None] - t[None, :]).clamp_min(0)  # (T, T), key j at t - j
    causal = t[:, None] >= t[None, :]
    onehot = torch.nn.functional.one_hot(distance, T).to(patterns.dtype)  # (T, T, T)
    onehot = onehot * causal[..., None].to(patterns.dtype)
    by_query = torch.einsum("blhtj,tjd->blhtd", patterns, onehot)  # (B, L, H, T, T)
    return by_query[..., min_position:, :].mean((0, 3))


def head_scores(model: TokenTransformer, probe: RepeatedTokensBatch) -> dict:
    """``{"prefix_matching", "previous_token"}``, each ``(L, H)``, from one forward
    pass on Olsson et al.'s probe (:func:`icl_lib.tasks.induction.
    repeated_random_tokens`) or on any batch of repeated tokens, such as training
    documents, which hold one target token more than the model reads: a batch longer
    than the model's ``n_ctx`` is read up to ``n_ctx`` tokens."""
    _check_model(model)
    tokens = _check_batch(probe, "probe").tokens[:, : model.config.n_ctx]
    patterns = attention_patterns(model, tokens)
    return {
        "prefix_matching": prefix_matching_from_patterns(patterns, tokens),
        "previous_token": previous_token_from_patterns(patterns),
    }


def _as_float64(name: str, values) -> torch.Tensor:
    """A sequence of numbers as a float64 tensor, or an error naming it."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name}: expected a sequence of numbers, got a string")
    try:
        return torch.as_tensor(values, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(
            f"{name}: expected a sequence of numbers, got {type(values).__name__}"
        ) from error


def change_step(
    steps, values, *, direction: str = "down", fraction: float = 0.5
) -> float:
    """The step at which a training curve has made ``fraction`` (default half) of its
    change: the first crossing of the level ``fraction`` of the way from its first
    logged value to the mean of its last tenth, interpolated linearly between logged
    points.

    ``steps`` and ``values`` are sequences of one length >= 2 (a training curve's
    log); ``direction`` is ``"down"`` for a curve that falls overall (the ICL score) or
    ``"up"`` for one that rises (a head's score, an accuracy); ``fraction`` is in
    (0, 1). The half-way crossing orders curves that change together and, unlike the
    step of steepest slope, does not jump between two surges of one curve; the
    crossings at 0.1 and 0.9 bound the width of a transition.
    """
    steps, values = _as_float64("steps", steps), _as_float64("values", values)
    if steps.ndim != 1 or values.shape != steps.shape or steps.numel() < 2:
        raise ValueError(
            "steps, values: expected two 1-D sequences of one length >= 2, got shapes "
            f"{tuple(steps.shape)} and {tuple(values.shape)}"
        )
    if direction not in ("down", "up"):
        raise ValueError(f"direction: expected 'down' or 'up', got {direction!r}")
    for name, seq in (("steps", steps), ("values", values)):
        if not bool(torch.isfinite(seq).all()):
            raise ValueError(f"{name}: expected finite numbers, got {seq.tolist()}")
    if not (steps.diff() > 0).all() or steps[0] < 0:
        raise ValueError("steps: expected strictly increasing steps from 0 or later")
    fraction = check_real("fraction", fraction, minimum=0.0, strict=True)
    if not fraction < 1:
        raise ValueError(f"fraction: expected a number in (0, 1), got {fraction}")
    rising = values if direction == "up" else -values
    end = rising[-max(1, rising.numel() // 10) :].mean()
    if not end > rising[0]:
        raise ValueError(
            f"values: expected a curve that goes {direction} overall (last tenth "
            f"against the first value), got {values[0].item():.4g} -> "
            f"{(end if direction == 'up' else -end).item():.4g}"
        )
    level = rising[0] + fraction * (end - rising[0])
    i = int((rising >= level).nonzero()[0].item())  # i >= 1: rising[0] < level
    part = (level - rising[i - 1]) / (rising[i] - rising[i - 1])
    return float(steps[i - 1] + part * (steps[i] - steps[i - 1]))


def seen_token_loss(batch: RepeatedTokensBatch) -> float:
    """The loss (nats) on the repeated positions of a predictor that spreads its
    probability uniformly over the distinct tokens seen so far.

    At a repeated position ``t`` the next token has occurred before, so this predictor
    pays ``log(number of distinct tokens in x_0..x_t)``; pooled over the repeated
    positions as in :func:`repeat_losses`. A reference point for a model that favours
    tokens already seen without knowing which comes next, not a bound: a model can
    also bet on positions (on documents whose period lies in a known window, a uniform
    bet over the possible offsets pays ``log(number of offsets)``).
    """
    tokens = _check_batch(batch).tokens
    T = tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, T, T)
    first = ~(
        same & torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(-1)
    ).any(-1)  # (B, T)
    seen = first.double().cumsum(1)  # distinct tokens in x_0..x_t
    mask = batch.repeated_mask()[:, :-1]
    return masked_mean(seen[:, :-1].log(), mask).item()


def phase_change(curve: dict, layer: int | None = None) -> dict:
    """Where the ICL score falls and the induction heads rise in a logged training
    curve (a manifest's ``curve`` of :class:`icl_lib.training.induction.
    RepeatedSegmentDocuments`).

    Returns ``{"icl_step", "prefix_step", "resolution"}``: the steps at which
    ``icl_score`` has made half of its fall and the best prefix-matching score (the
    maximum over the heads of ``layer``, default the last layer) half of its rise, by
    :func:`change_step`, and the logging interval.
    """
    if not isinstance(curve, dict):
        raise TypeError(f"curve: expected a dict, got {type(curve).__name__}")
    missing = [k for k in ("step", "icl_score", "prefix_matching") if k not in curve]
    if missing:
        raise ValueError(f"curve: expected the keys {missing} too, got {sorted(curve)}")
    steps = torch.as_tensor(curve["step"], dtype=torch.float64)
    scores = torch.as_tensor(curve["prefix_matching"], dtype=torch.float64)
    if scores.ndim != 3 or scores.shape[0] != steps.numel():
        raise ValueError(
            "curve['prefix_matching']: expected one (L, H) score table per logged "
            f"step, got shape {tuple(scores.shape)}"
        )
    layer = scores.shape[1] - 1 if layer is None else layer
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise TypeError(f"layer: expected an int, got {type(layer).__name__}")
    if not 0 <= layer < scores.shape[1]:
        raise ValueError(
            f"layer: expected an int in [0, {scores.shape[1]}), got {layer}"
        )
    best = scores[:, layer].max(-1).values
    icl_step = change_step(steps, curve["icl_score"], direction="down")
    prefix_step = change_step(steps, best, direction="up")
    resolution = float(steps.diff().min())
    return {
        "icl_step": icl_step,
        "prefix_step": prefix_step,
        "resolution": resolution,
    }
