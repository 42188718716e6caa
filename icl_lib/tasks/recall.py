"""Associative recall and sparse parity: two in-context tasks on which attention and
recurrent layers differ (Park et al., ICML 2024; chapter 9).

* :func:`associative_recall`: token sequences ``k_1 v_1 ... k_P v_P q_1 ... q_Q`` of
  ``P`` key-value pairs (distinct keys, values drawn with replacement) followed by
  ``Q`` query keys taken from the pairs; the answer at query ``q_j`` is its value. It
  is the multi-query associative recall of Arora et al. (ICLR 2024) with the queries
  after the pairs, a token version of Park et al.'s retrieval tasks.
* :func:`sparse_parity`: prompts ``x_i ~ U{-1, +1}^d`` with labels
  ``y_i = prod_{j in S} x_ij`` for a secret set ``S`` of ``k`` coordinates, one ``S``
  per prompt (Park et al.'s sparse parity, their Section 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_dtype, check_memory, check_positive_int, check_tensor
from ..prompts import PromptBatch
from ..runtime import make_generator
from .tokens import TokenBatch


@dataclass(frozen=True)
class RecallBatch(TokenBatch):
    """Associative-recall sequences.

    Attributes:
        tokens: ``(B, 2P + Q)`` int64: keys are ``0..n_keys-1``, values
            ``n_keys..n_keys+n_values-1``.
        concepts: ``(B,)`` int64, the number of pairs ``P`` of each sequence (the task
            has no other latent concept).
        targets: ``(B, Q)`` int64, the value token that answers each query.
    """

    targets: torch.Tensor

    def __post_init__(self):
        super().__post_init__()
        check_tensor("targets", self.targets, 2, floating=False)
        if self.targets.shape[0] != self.tokens.shape[0]:
            raise ValueError(
                f"targets: expected {self.tokens.shape[0]} rows to match tokens, got "
                f"shape {tuple(self.targets.shape)}"
            )

    @property
    def n_queries(self) -> int:
        return self.targets.shape[1]


def associative_recall(
    batch_size: int,
    n_pairs: int,
    *,
    n_queries: int = 4,
    n_keys: int = 32,
    n_values: int = 32,
    seed=0,
) -> RecallBatch:
    """``batch_size`` sequences of ``n_pairs`` key-value pairs and ``n_queries``
    queries (see the module doc); vocabulary ``n_keys + n_values``."""
    B = check_positive_int("batch_size", batch_size)
    P = check_positive_int("n_pairs", n_pairs)
    Q = check_positive_int("n_queries", n_queries)
    check_positive_int("n_keys", n_keys)
    check_positive_int("n_values", n_values)
    check_memory("batch_size, n_keys", B * n_keys, "batch_size * n_keys")
    if P > n_keys:
        raise ValueError(
            f"n_pairs: expected at most n_keys = {n_keys} (keys are distinct), got {P}"
        )
    gen = make_generator(seed)
    keys = torch.rand(B, n_keys, generator=gen).argsort(dim=1)[:, :P]  # distinct
    values = n_keys + torch.randint(0, n_values, (B, P), generator=gen)
    which = torch.randint(0, P, (B, Q), generator=gen)  # queried pairs
    queries = keys.gather(1, which)
    targets = values.gather(1, which)
    pairs = torch.stack((keys, values), dim=2).reshape(B, 2 * P)
    tokens = torch.cat((pairs, queries), dim=1)
    return RecallBatch(tokens, torch.full((B,), P, dtype=torch.int64), targets)


@dataclass(frozen=True)
class ParityBatch(PromptBatch):
    """Sparse-parity prompts; ``subset (B, k)`` holds each prompt's secret
    coordinates."""

    subset: torch.Tensor


def sparse_parity(
    batch_size: int,
    n_points: int,
    dim: int,
    k: int = 2,
    *,
    seed=0,
    dtype=torch.float32,
) -> ParityBatch:
    """``xs (B, n, d)`` uniform on ``{-1, +1}^d``, ``ys = prod_{j in S} xs[..., j]``
    with ``S`` a uniformly drawn ``k``-subset of the ``d`` coordinates per prompt."""
    B = check_positive_int("batch_size", batch_size)
    n = check_positive_int("n_points", n_points)
    d = check_positive_int("dim", dim)
    check_positive_int("k", k)
    if k > d:
        raise ValueError(f"k: expected at most dim = {d}, got {k}")
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    xs = torch.randint(0, 2, (B, n, d), generator=gen).to(dtype) * 2 - 1
    subset = torch.rand(B, d, generator=gen).argsort(dim=1)[:, :k]  # (B, k)
    picked = xs.gather(2, subset[:, None, :].expand(B, n, k))
    return ParityBatch(xs, picked.prod(dim=2), subset)
