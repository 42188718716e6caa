"""Repeated random tokens: the data on which induction heads form and are measured.

An induction head (Elhage et al. 2021; Olsson et al. 2022) completes ``[A][B] ... [A]``
with ``[B]``: at a token it looks back for an earlier copy of that token, attends to the
token that followed it, and copies it. On random tokens nothing but such a copy can
beat the uniform guess ``log V``, so a repeated random segment isolates the mechanism.

Two samplers, both returning a :class:`RepeatedTokensBatch`:

* :func:`repeated_segment_tokens`, the training documents: ``length`` uniform random
  tokens in which, from a random ``start``, a segment of random ``period`` ``P`` repeats
  to the end (``x_t = x_{t-P}`` for ``t >= start + P``). The period varies from one
  sequence to the next: with one fixed period, a one-layer model with learned positions
  predicts ``x_t`` from position ``t - P`` alone, no induction needed (a pitfall
  measured while the book's task was designed).
* :func:`repeated_random_tokens`, Olsson et al.'s prefix-matching probe: ``n_tokens``
  distinct random tokens repeated ``repeats`` times (they use 25 tokens, 4 times, after
  a BOS token; the book's models read 64 tokens, so 16 tokens 4 times, no BOS).

:func:`induction_targets` says, from the tokens alone, which positions an induction head
at ``t`` should attend to. Chapter 6.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_memory, check_positive_int, check_tensor
from ..runtime import make_generator
from .tokens import TokenBatch, check_tokens


@dataclass(frozen=True)
class RepeatedTokensBatch(TokenBatch):
    """Token sequences ``(B, T)`` that turn periodic from a start position.

    For ``t >= starts + periods`` the token is ``x_t = x_{t - P}``; the tokens before
    ``starts + periods`` are independent uniform draws. The inherited ``concepts`` field
    holds the period ``P`` of each sequence (its latent, as the HMM concept is for
    chapter 4's documents).

    Attributes:
        tokens: ``(B, T)`` int64.
        concepts: ``(B,)`` int64, the period ``P`` of each sequence (also
            :attr:`periods`).
        starts: ``(B,)`` int64, where the first occurrence of the segment begins.
    """

    starts: torch.Tensor

    def __post_init__(self):
        super().__post_init__()
        check_tensor("starts", self.starts, 1, floating=False)
        if self.starts.shape != self.concepts.shape:
            raise ValueError(
                f"starts: expected shape (B,) = ({self.batch_size},) to match tokens, "
                f"got {tuple(self.starts.shape)}"
            )
        if self.batch_size and (
            self.concepts.min() < 1
            or self.starts.min() < 0
            or (self.starts + self.concepts).max() > self.n_points
        ):
            raise ValueError(
                "starts, concepts: expected 0 <= start and 1 <= period (concepts) with "
                f"start + period <= T = {self.n_points}"
            )

    @property
    def periods(self) -> torch.Tensor:
        """``(B,)`` the repeat offset ``P`` of each sequence."""
        return self.concepts

    def _positions(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        t = torch.arange(self.n_points, device=self.tokens.device)
        return t, self.starts[:, None], self.periods[:, None]

    def repeated_mask(self) -> torch.Tensor:
        """``(B, T)`` bool: positions ``t`` whose next token an induction head can
        predict.

        True for ``starts + P <= t <= T - 2``: the model reads ``x_t`` inside a repeat,
        its earlier copy ``x_{t-P}`` was followed by ``x_{t-P+1} = x_{t+1}``, the token
        to predict. (At ``t = starts + P - 1`` the earlier copy of ``x_t`` is the random
        token before the segment, so the next token is not predictable.)
        """
        t, start, period = self._positions()
        return (t >= start + period) & (t <= self.n_points - 2)

    def first_mask(self) -> torch.Tensor:
        """``(B, T)`` bool: positions inside the segment's first occurrence whose next
        token is still in it (``starts <= t <= starts + P - 2``): new random tokens,
        predictable by no mechanism (loss ``log V`` at best)."""
        t, start, period = self._positions()
        return (t >= start) & (t <= start + period - 2)


def _check_vocab(vocab_size) -> int:
    return check_positive_int("vocab_size", vocab_size, minimum=2)


def repeated_segment_tokens(
    batch_size: int,
    length: int,
    vocab_size: int,
    *,
    min_period: int = 8,
    max_period: int = 24,
    seed=0,
) -> RepeatedTokensBatch:
    """Training documents for induction heads: ``(B, length)`` random tokens with a
    repeated segment.

    Per sequence, independently: a period ``P ~ U{min_period..max_period}``, a start
    ``s ~ U{0..length - 2P}`` (so at least one full repeat fits), ``length`` i.i.d.
    uniform tokens over ``vocab_size``, then ``x_t = x_{t-P}`` for every
    ``t >= s + P``. The repeat offset ``P`` thus varies per sequence, and no position
    alone says where the copy is. Tokens of the segment are drawn with replacement, so
    a token may occur twice in it (about ``P / V`` of the repeated positions are
    ambiguous for an induction head; the book uses ``V >= 128``).
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("length", length, minimum=2)
    check_memory("batch_size, length", batch_size * length, "batch_size * length")
    _check_vocab(vocab_size)
    check_positive_int("min_period", min_period)
    check_positive_int("max_period", max_period)
    if max_period < min_period:
        raise ValueError(
            f"max_period: expected at least min_period = {min_period}, got {max_period}"
        )
    if 2 * max_period > length:
        raise ValueError(
            f"max_period: expected at most length / 2 = {length // 2} (two copies "
            f"must fit), got {max_period}"
        )
    gen = make_generator(seed)
    periods = torch.randint(min_period, max_period + 1, (batch_size,), generator=gen)
    # s ~ U{0..length - 2P}: a uniform fraction of the admissible range.
    u = torch.rand(batch_size, generator=gen, dtype=torch.float64)
    starts = (u * (length - 2 * periods + 1)).floor().long()
    raw = torch.randint(0, vocab_size, (batch_size, length), generator=gen)
    t = torch.arange(length)
    s, p = starts[:, None], periods[:, None]
    source = torch.where(t >= s + p, s + (t - s) % p, t)  # (B, T)
    return RepeatedTokensBatch(
        tokens=raw.gather(1, source), concepts=periods, starts=starts
    )


def repeated_random_tokens(
    batch_size: int,
    n_tokens: int = 16,
    repeats: int = 4,
    vocab_size: int = 128,
    *,
    seed=0,
) -> RepeatedTokensBatch:
    """Olsson et al.'s prefix-matching probe: ``n_tokens`` distinct random tokens,
    repeated ``repeats`` times, ``(B, n_tokens * repeats)``.

    The tokens of a segment are distinct (drawn without replacement), so every repeated
    token has exactly one earlier copy per earlier repeat and the induction target is
    unambiguous. Period ``n_tokens``, start 0.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("n_tokens", n_tokens)
    check_positive_int("repeats", repeats, minimum=2)
    _check_vocab(vocab_size)
    if n_tokens > vocab_size:
        raise ValueError(
            f"n_tokens: expected at most vocab_size = {vocab_size} distinct tokens, "
            f"got {n_tokens}"
        )
    gen = make_generator(seed)
    scores = torch.rand(batch_size, vocab_size, generator=gen)
    segment = scores.argsort(dim=1)[:, :n_tokens]  # distinct tokens per row
    return RepeatedTokensBatch(
        tokens=segment.repeat(1, repeats),
        concepts=torch.full((batch_size,), n_tokens),
        starts=torch.zeros(batch_size, dtype=torch.long),
    )


def induction_targets(tokens: torch.Tensor) -> torch.Tensor:
    """Where an induction head at each position should attend: ``(B, T, T)`` bool.

    ``targets[b, t, j]`` is True when ``1 <= j <= t`` and ``x_{j-1} = x_t`` with
    ``j - 1 < t``: position ``j`` holds the token that followed an earlier copy of the
    current token ``x_t`` (Olsson et al.'s prefix matching). Defined from the tokens
    alone, so it holds on any sequence; on :func:`repeated_random_tokens` it is
    ``j = t - kP + 1`` for ``k = 1, 2, ...``.
    """
    check_tokens(tokens)
    T = tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, T, T): x_t == x_i
    earlier = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(-1)
    copies = same & earlier  # [b, t, i]: x_i is an earlier copy of x_t
    targets = torch.zeros_like(copies)
    targets[:, :, 1:] = copies[:, :, :-1]  # attend to j = i + 1
    return targets
