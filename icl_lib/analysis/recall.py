"""Measurements of chapter 9: recall accuracy against the number of key-value pairs,
the guessing baselines, and what a linear associative memory recalls
(:mod:`icl_lib.models.associative_memory`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .._checks import (
    check_finite,
    check_positive_int,
    check_seed,
    check_sequence,
    check_tensor,
    check_token_model,
)
from ..models.associative_memory import AssociativeMemory, random_signs
from ..runtime import make_generator
from ..tasks.recall import RecallBatch, associative_recall


def recall_accuracy(model, batch: RecallBatch) -> float:
    """Fraction of queries whose most likely next token (over the whole vocabulary)
    is the right value; ``model(tokens) -> logits (B, T, V)``."""
    check_token_model("model", model)
    if not isinstance(batch, RecallBatch):
        raise TypeError(f"batch: expected a RecallBatch, got {type(batch).__name__}")
    Q = batch.n_queries
    model.eval()
    with torch.no_grad():
        guess = model(batch.tokens)[:, -Q:].argmax(-1)  # (B, Q)
    return (guess == batch.targets).double().mean().item()


def recall_answers(model, batch: RecallBatch) -> dict[str, object]:
    """What a model answers to the queries of ``batch`` (all with the same number of
    pairs ``P``), by its most likely next token over the whole vocabulary:

    * ``"accuracy"``: the fraction of right answers;
    * ``"in_context"``: the fraction of answers that are one of the context's values;
    * ``"by_pair"``: ``(P,)`` float64, the fraction of answers equal to the value of
      pair ``j`` (these can sum to more than 1, as values repeat).
    """
    check_token_model("model", model)
    if not isinstance(batch, RecallBatch):
        raise TypeError(f"batch: expected a RecallBatch, got {type(batch).__name__}")
    P = int(batch.concepts[0])
    if not bool((batch.concepts == P).all()):
        raise ValueError("batch: expected every sequence to have the same pairs P")
    Q = batch.n_queries
    model.eval()
    with torch.no_grad():
        guess = model(batch.tokens)[:, -Q:].argmax(-1)  # (B, Q)
    values = batch.tokens[:, 1 : 2 * P : 2]  # (B, P), the context's values
    hits = guess[:, :, None] == values[:, None, :]  # (B, Q, P)
    return {
        "accuracy": (guess == batch.targets).double().mean().item(),
        "in_context": hits.any(-1).double().mean().item(),
        "by_pair": hits.double().mean((0, 1)),
    }


def recall_curve(
    model,
    pairs: Sequence[int],
    *,
    size: int = 1024,
    seed: int = 0,
    n_queries: int = 4,
    n_keys: int = 32,
    n_values: int = 32,
) -> torch.Tensor:
    """Recall accuracy for each number of pairs in ``pairs``: ``(len(pairs),)``,
    float64. The sequences of ``P`` pairs are drawn with seed ``seed + P``, so every
    model sees the same ones."""
    check_token_model("model", model)
    check_positive_int("size", size)
    check_seed("seed", seed)
    values = []
    for P in check_sequence("pairs", pairs, "a sequence of pair counts", nonempty=True):
        batch = associative_recall(
            size,
            P,
            n_queries=n_queries,
            n_keys=n_keys,
            n_values=n_values,
            seed=seed + check_positive_int("pairs[i]", P),
        )
        values.append(recall_accuracy(model, batch))
    return torch.tensor(values, dtype=torch.float64)


def value_guess_accuracy(n_pairs: int, n_values: int = 32) -> float:
    """Accuracy of answering every query with a value drawn uniformly from the
    ``n_pairs`` values of the context (values i.i.d. uniform over ``n_values``):
    ``(1 + (P - 1) / V) / P``, the level of a model that knows the answer is a
    value of the context but not which one."""
    P = check_positive_int("n_pairs", n_pairs)
    V = check_positive_int("n_values", n_values)
    return (1 + (P - 1) / V) / P


def value_guess_loss(n_pairs: int, n_values: int = 32) -> float:
    """Expected cross-entropy (nats) of the model that spreads its probability evenly
    over the ``n_pairs`` values of the context (with their multiplicity): the answer
    gets ``(1 + B) / P``, with ``B ~ Binomial(P - 1, 1 / V)`` the other pairs that
    share its value. The loss on the plateau of :func:`value_guess_accuracy`."""
    P = check_positive_int("n_pairs", n_pairs)
    V = check_positive_int("n_values", n_values)
    q = 1 / V
    return sum(
        math.comb(P - 1, b) * q**b * (1 - q) ** (P - 1 - b) * -math.log((1 + b) / P)
        for b in range(P)
    )


def guaranteed_recall(crosstalk: torch.Tensor) -> float:
    """Fraction of the queries of a linear associative memory whose answer has the
    right sign for *every* choice of the ``P`` values in {-1, +1}.

    Query ``q`` reads ``r_q = sum_s v_s M[s, q]``; its worst values give
    ``M[q, q] - sum_{s != q} |M[s, q]|``, so it is always right exactly when column
    ``q`` of ``M`` ``(P, P)`` is strictly diagonally dominant. The recall proposition
    of chapter 9 bounds this fraction by ``min(1, N / P)`` for a state of key dimension
    ``N``: the dominant columns index a nonsingular principal submatrix of a matrix of
    rank at most ``N``.
    """
    M = check_finite("crosstalk", check_tensor("crosstalk", crosstalk, 2))
    if M.shape[0] != M.shape[1]:
        raise ValueError(
            f"crosstalk: expected a square (P, P) matrix, got shape {tuple(M.shape)}"
        )
    diagonal = M.diagonal()
    others = M.abs().sum(0) - diagonal.abs()
    return (diagonal > others).double().mean().item()


def sign_recall_accuracy(
    memory: AssociativeMemory, *, n_prompts: int = 8192, seed: int = 0
) -> float:
    """Fraction of the answers of ``memory`` with the right sign when the values are
    independent uniform signs; a read-out of exactly 0 counts as wrong.

    Exact, over all ``2^P`` sign vectors, when there are at most ``n_prompts`` of them;
    otherwise estimated on ``n_prompts`` random ones drawn with ``seed``."""
    if not isinstance(memory, AssociativeMemory):
        raise TypeError(
            f"memory: expected an AssociativeMemory, got {type(memory).__name__}"
        )
    check_positive_int("n_prompts", n_prompts)
    generator = make_generator(seed)  # checked even where the values are enumerated
    P = memory.n_pairs
    if 2**P <= n_prompts:
        bits = (torch.arange(2**P)[:, None] >> torch.arange(P)) & 1  # (2^P, P)
        values = bits.double() * 2 - 1
    else:
        values = random_signs(n_prompts, P, generator).double()
    return (values * memory.read(values) > 0).double().mean().item()
