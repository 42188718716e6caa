"""A linear associative memory: one matrix state that stores ``P`` key-value pairs and
reads one back, the setting of chapter 9's recall proposition.

A prompt assigns a sign ``v_s`` in {-1, +1} to each of ``P`` keys. The memory writes the
state ``S = sum_s v_s kappa_s^T`` (a ``1 x N`` matrix; ``kappa_s = keys[:, s]`` in
``R^N``) and answers query ``q`` with the read-out ``r_q = S rho_q``
(``rho_q = queries[:, q]``). Keys and queries are learned, one per key index, and never
depend on the values: the hypothesis of the proposition. All ``P`` answers at once are
``v^T M`` with the crosstalk matrix ``M = keys^T queries`` ``(P, P)``; a state of this
form is causal linear attention's (Katharopoulos et al. 2020) and the correlation-matrix
memory of Kohonen (1972).

Training minimises the logistic loss of the read-out's sign on random values with Adam.
Several memories of different sizes train in one loop: their parameters are stacked and
padded with zeros that a mask keeps at zero, so each memory's gradient, and Adam's
update, is exactly what it would be alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .._checks import (
    check_batch,
    check_finite,
    check_positive_int,
    check_real,
    check_tensor,
)
from ..runtime import make_generator


@dataclass(frozen=True)
class AssociativeMemory:
    """A trained memory: ``keys`` and ``queries`` ``(N, P)`` float64."""

    keys: torch.Tensor
    queries: torch.Tensor

    def __post_init__(self):
        check_tensor("keys", self.keys, 2)
        check_tensor("queries", self.queries, 2)
        if self.queries.shape != self.keys.shape:
            raise ValueError(
                f"queries: expected the shape of keys {tuple(self.keys.shape)}, got "
                f"{tuple(self.queries.shape)}"
            )
        check_finite("keys", self.keys)
        check_finite("queries", self.queries)

    @property
    def state_dim(self) -> int:
        """``N``, the key dimension."""
        return self.keys.shape[0]

    @property
    def n_pairs(self) -> int:
        """``P``, the number of stored pairs."""
        return self.keys.shape[1]

    @property
    def crosstalk(self) -> torch.Tensor:
        """``M = keys^T queries`` ``(P, P)``: ``M[s, q]`` is how much the value of pair
        ``s`` moves the answer to query ``q``."""
        return self.keys.T @ self.queries

    def read(self, values: torch.Tensor) -> torch.Tensor:
        """The read-outs ``r = v^T M`` ``(B, P)`` for values ``(B, P)``."""
        if not isinstance(values, torch.Tensor) or values.ndim != 2:
            raise ValueError(
                f"values: expected a (B, {self.n_pairs}) tensor, got "
                f"{_describe(values)}"
            )
        if values.shape[1] != self.n_pairs:
            raise ValueError(
                f"values: expected {self.n_pairs} columns (one per pair), got "
                f"{values.shape[1]}"
            )
        check_finite("values", check_batch("values", values))
        return values.to(self.keys.dtype) @ self.crosstalk


def random_signs(
    batch_size: int, n_pairs: int, generator: torch.Generator
) -> torch.Tensor:
    """Independent uniform values in {-1, +1}, ``(batch_size, n_pairs)`` float32."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("n_pairs", n_pairs)
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator: expected a torch.Generator, got {type(generator).__name__}"
        )
    bits = torch.randint(0, 2, (batch_size, n_pairs), generator=generator)
    return bits.float() * 2 - 1


def train_associative_memories(
    sizes: Sequence[tuple[int, int]],
    *,
    steps: int = 800,
    batch_size: int = 128,
    lr: float = 0.05,
    seed: int = 0,
) -> list[AssociativeMemory]:
    """Train one memory per ``(state_dim N, n_pairs P)`` in ``sizes``, in one loop.

    Each step draws ``batch_size`` prompts of random signs (shared by the memories,
    each reading its first ``P``) and takes an Adam step on the mean logistic loss
    ``softplus(-v_q r_q)`` over the ``P`` queries, the learning rate decaying to zero
    on a cosine. Keys and queries start as ``N(0, 1/N)``. Deterministic given ``seed``.
    """
    sizes = _check_sizes(sizes)
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    check_real("lr", lr, minimum=0, strict=True)
    G = len(sizes)
    N_max = max(N for N, _ in sizes)
    P_max = max(P for _, P in sizes)
    # two streams, so that adding a memory to the list leaves the others' data alone
    starts = make_generator(seed)
    prompts = torch.Generator().manual_seed(seed + 1_000_003)
    mask = torch.zeros(G, N_max, P_max)
    keys = torch.zeros(G, N_max, P_max)
    queries = torch.zeros(G, N_max, P_max)
    for g, (N, P) in enumerate(sizes):  # each memory's start depends only on its turn
        mask[g, :N, :P] = 1
        keys[g, :N, :P] = torch.randn(N, P, generator=starts) / math.sqrt(N)
        queries[g, :N, :P] = torch.randn(N, P, generator=starts) / math.sqrt(N)
    keys.requires_grad_()
    queries.requires_grad_()
    answered = mask[:, 0, :]  # (G, P_max): which queries each memory answers
    n_answered = answered.sum(-1)  # (G,)
    optimizer = torch.optim.Adam([keys, queries], lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    for _ in range(steps):
        values = random_signs(batch_size, P_max, prompts)  # (B, P_max)
        # the mask keeps every padded entry, and its gradient, at zero
        crosstalk = (keys * mask).transpose(1, 2) @ (queries * mask)  # (G, P, P)
        reads = values @ crosstalk  # (G, B, P_max)
        losses = F.softplus(-values * reads) * answered[:, None, :]
        loss = (losses.sum((1, 2)) / (batch_size * n_answered)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return [
        AssociativeMemory(
            keys[g, :N, :P].detach().double().clone(),
            queries[g, :N, :P].detach().double().clone(),
        )
        for g, (N, P) in enumerate(sizes)
    ]


def _check_sizes(sizes) -> list[tuple[int, int]]:
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
        raise TypeError(
            f"sizes: expected a sequence of (state_dim, n_pairs) pairs, got "
            f"{type(sizes).__name__}"
        )
    if not sizes:
        raise ValueError("sizes: expected at least one (state_dim, n_pairs), got none")
    checked = []
    for i, size in enumerate(sizes):
        if not isinstance(size, Sequence) or len(size) != 2:
            raise ValueError(
                f"sizes[{i}]: expected a (state_dim, n_pairs) pair, got {size!r}"
            )
        check_positive_int(f"sizes[{i}] state_dim", size[0])
        check_positive_int(f"sizes[{i}] n_pairs", size[1])
        checked.append((int(size[0]), int(size[1])))
    return checked


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return type(value).__name__
