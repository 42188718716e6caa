"""Head ablations: switch one attention head off and measure what in-context learning
is lost.

Olsson et al. (2022) ablate heads of small attention-only models and find that almost
all of their in-context learning goes with the induction heads. Here a head is
ablated through a forward pre-hook on its layer's output projection ``c_proj``, which
reads the heads' outputs ``z`` side by side: the head's slice is replaced by zeros
(``mode="zero"``: the model without that head, as if its ``W_O`` were zero), by its
mean output on reference tokens over sequences *and* positions (``mode="mean"``: one
vector written at every position, so whatever the head writes that depends on the
position is erased along with what depends on the context), or by its mean over the
reference sequences at each position separately (``mode="position_mean"``: the head
keeps its average write at every position and loses only what depends on the tokens).
Nothing in the model changes; the hooks are removed on leaving :func:`ablated_heads`.
Chapter 6.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch

from .._checks import check_sequence
from ..models.token_gpt import TokenTransformer
from ..tasks.induction import RepeatedTokensBatch
from ..tasks.tokens import check_tokens
from .induction import repeat_losses, token_losses

MODES = ("zero", "mean", "position_mean")


def _check_heads(model, heads) -> list[tuple[int, int]]:
    if not isinstance(model, TokenTransformer):
        raise TypeError(
            f"model: expected a TokenTransformer, got {type(model).__name__}"
        )
    L, H = model.config.n_layer, model.config.n_head
    check_sequence("heads", heads, "(layer, head) pairs")
    heads = list(heads)
    for item in heads:
        ok = (
            isinstance(item, tuple)
            and len(item) == 2
            and all(isinstance(i, int) and not isinstance(i, bool) for i in item)
        )
        if not ok or not (0 <= item[0] < L and 0 <= item[1] < H):
            raise ValueError(
                f"heads: expected (layer, head) pairs with layer < {L} and head < "
                f"{H}, got {item!r}"
            )
    return heads


@torch.no_grad()
def mean_head_outputs(
    model: TokenTransformer, tokens: torch.Tensor, *, per_position: bool = False
) -> torch.Tensor:
    """Every head's output ``z`` on ``tokens (B, T)``, from ``blocks.{l}.attn.hook_z``,
    averaged over sequences and positions: ``(L, H, C/H)``; with ``per_position``
    averaged over sequences only: ``(L, H, T, C/H)``."""
    _check_heads(model, [])
    check_tokens(tokens, model.config.vocab_size)
    if not isinstance(per_position, bool):
        raise TypeError(
            f"per_position: expected a bool, got {type(per_position).__name__}"
        )
    _, cache = model.eval().run_with_cache(tokens)
    dims = 0 if per_position else (0, 2)
    return torch.stack(
        [
            cache[f"blocks.{layer}.attn.hook_z"].mean(dims)
            for layer in range(model.config.n_layer)
        ]
    )


@contextmanager
def ablated_heads(
    model: TokenTransformer,
    heads: Iterable[tuple[int, int]],
    *,
    mode: str = "zero",
    reference: torch.Tensor | None = None,
) -> Iterator[TokenTransformer]:
    """Within the ``with`` block, ``model`` runs with the ``(layer, head)`` pairs of
    ``heads`` ablated.

    ``mode="zero"`` replaces the head's output ``z`` (its ``C/H`` slice of the input of
    ``c_proj``) by 0; ``mode="mean"`` by its mean over the sequences and positions of
    the tokens ``reference (B, T)``; ``mode="position_mean"`` by its mean over the
    sequences of ``reference`` at the same position (:func:`mean_head_outputs`; the
    model may then read at most ``T`` tokens). ``reference`` is required for both
    mean modes.
    """
    heads = _check_heads(model, heads)
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    if mode != "zero" and reference is None:
        raise ValueError(
            f"reference: expected tokens (B, T) for mode={mode!r}, got None"
        )
    if mode == "zero" and reference is not None:  # a mean mode was probably meant
        raise ValueError(
            "reference: expected None for mode='zero', which reads no reference "
            f"tokens, got {type(reference).__name__}"
        )
    means = None
    if mode != "zero":
        check_tokens(reference, model.config.vocab_size, "reference")
        means = mean_head_outputs(
            model, reference, per_position=mode == "position_mean"
        )
    width = model.config.n_embd // model.config.n_head
    handles = []

    def hook_for(layer: int, layer_heads: list[int]):
        def hook(module, args):
            z = args[0].clone()  # (B, T, C): the heads' outputs side by side
            T = z.shape[1]
            if mode == "position_mean" and T > means.shape[2]:
                raise ValueError(
                    f"reference: expected at least the {T} positions the model "
                    f"reads for mode='position_mean', got {means.shape[2]}"
                )
            for head in layer_heads:
                part = slice(head * width, (head + 1) * width)
                if means is None:
                    z[..., part] = 0.0
                elif mode == "position_mean":
                    z[..., part] = means[layer, head, :T]  # (T, C/H) per position
                else:
                    z[..., part] = means[layer, head]
            return (z,)

        return hook

    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    try:
        for layer, layer_heads in by_layer.items():
            proj = model.blocks[layer].attn.c_proj
            handles.append(proj.register_forward_pre_hook(hook_for(layer, layer_heads)))
        yield model
    finally:
        for handle in handles:
            handle.remove()


def gain_lost_share(full_score: float, ablated_score: float) -> float:
    """The share of the in-context gain an ablation loses:
    ``(ablated - full) / (-full)`` for ICL scores (:func:`~icl_lib.analysis.induction.
    icl_score`, negative when the model learns in context).

    1: the whole gain is gone (the ablated model does no better on repeats than on
    first occurrences); 0: nothing lost; below 0: the ablation helped. ``full_score``
    must be negative (a gain to lose).
    """
    for name, value in (("full_score", full_score), ("ablated_score", ablated_score)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name}: expected a real number, got {type(value)}")
        if not math.isfinite(value):
            raise ValueError(f"{name}: expected a finite number, got {value}")
    if not full_score < 0:
        raise ValueError(
            f"full_score: expected a negative ICL score (an in-context gain), got "
            f"{full_score}"
        )
    return (ablated_score - full_score) / -full_score


def head_ablation_scores(
    model: TokenTransformer,
    batch: RepeatedTokensBatch,
    *,
    mode: str = "zero",
    reference: torch.Tensor | None = None,
) -> dict:
    """Ablate every head in turn and measure the ICL score on ``batch``.

    Returns ``{"icl_score": float, "ablated": (L, H), "gain_lost": (L, H),
    "repeated": (L, H), "first": (L, H)}``: the intact model's score, the score with
    head ``(l, h)`` ablated, the share of the gain lost (:func:`gain_lost_share`), and
    the ablated model's mean loss on the repeated positions and inside the first
    occurrence (:func:`~icl_lib.analysis.induction.repeat_losses`; the share alone
    hides an ablation that raises both). ``mode`` and ``reference`` as in
    :func:`ablated_heads`.
    """
    full = ablation_losses(model, batch, [])["icl_score"]
    L, H = model.config.n_layer, model.config.n_head
    table = {
        key: torch.zeros(L, H, dtype=torch.float64)
        for key in ("ablated", "repeated", "first")
    }
    for layer in range(L):
        for head in range(H):
            parts = ablation_losses(
                model, batch, [(layer, head)], mode=mode, reference=reference
            )
            table["ablated"][layer, head] = parts["icl_score"]
            table["repeated"][layer, head] = parts["repeated"]
            table["first"][layer, head] = parts["first"]
    ablated = table["ablated"]
    lost = (ablated - full) / -full if full < 0 else torch.full_like(ablated, torch.nan)
    return {"icl_score": full, "gain_lost": lost, **table}


def ablation_losses(
    model: TokenTransformer,
    batch: RepeatedTokensBatch,
    heads: Iterable[tuple[int, int]],
    *,
    mode: str = "zero",
    reference: torch.Tensor | None = None,
) -> dict:
    """``{"icl_score", "repeated", "first"}`` (floats, nats) on ``batch`` with the
    ``(layer, head)`` pairs of ``heads`` ablated together (none: the intact model):
    the mean losses on the repeated positions and inside the first occurrence
    (:func:`~icl_lib.analysis.induction.repeat_losses`) and their difference, the ICL
    score. ``mode`` and ``reference`` as in :func:`ablated_heads`."""
    if not isinstance(batch, RepeatedTokensBatch):
        raise TypeError(
            f"batch: expected a RepeatedTokensBatch, got {type(batch).__name__}"
        )
    with ablated_heads(model, heads, mode=mode, reference=reference):
        parts = repeat_losses(token_losses(model, batch.tokens), batch)
    repeated, first = parts["repeated"].item(), parts["first"].item()
    return {"icl_score": repeated - first, "repeated": repeated, "first": first}


def ablation_table(
    model: TokenTransformer,
    batch: RepeatedTokensBatch,
    groups: dict,
    *,
    modes: Iterable[str] = MODES,
    reference: torch.Tensor | None = None,
) -> dict:
    """Every named group of heads ablated in every mode: ``{group: {mode:
    {"gain_lost", "repeated", "first"}}}``, the share of the in-context gain lost
    (:func:`gain_lost_share`) and the ablated model's mean losses on the repeated
    positions and inside the first occurrence. ``groups`` maps a name to
    ``(layer, head)`` pairs ablated together; ``reference`` (tokens) is needed by the
    mean modes (:func:`ablated_heads`)."""
    if not isinstance(groups, dict) or not groups:
        raise ValueError(
            f"groups: expected a non-empty dict name -> heads, got {groups!r}"
        )
    modes = check_sequence("modes", modes, "a sequence of modes", nonempty=True)
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"modes: expected modes from {MODES}, got {mode!r}")
    full = ablation_losses(model, batch, [])["icl_score"]
    table = {}
    for name, heads in groups.items():
        table[name] = {}
        for mode in modes:
            ablated = ablation_losses(
                model,
                batch,
                heads,
                mode=mode,
                reference=reference if mode != "zero" else None,
            )
            table[name][mode] = {
                "gain_lost": gain_lost_share(full, ablated["icl_score"]),
                "repeated": ablated["repeated"],
                "first": ablated["first"],
            }
    return table
