"""Batches of token sequences: what a language model reads and trains on.

A :class:`TokenBatch` holds ``tokens (B, T)`` (int64) and the latent concept of each
sequence; task modules subclass it to keep what their sampler knows (the prompts of
:mod:`icl_lib.tasks.hmm`, chapter 4). :meth:`TokenBatch.to` moves it to a device and
leaves its integer tensors' dtype alone, so training code written for float prompt
batches (``batch.to(device=..., dtype=...)``) takes it unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from .._checks import (
    check_batch,
    check_device,
    check_dtype,
    check_positive_int,
    check_tensor,
    check_tensor_fields,
)


@dataclass(frozen=True)
class TokenBatch:
    """``B`` token sequences and the concept that generated each.

    Attributes:
        tokens: ``(B, T)`` int64 tokens.
        concepts: ``(B,)`` int64, the concept of each sequence.
    """

    tokens: torch.Tensor
    concepts: torch.Tensor

    def __post_init__(self):
        check_tokens(self.tokens)
        check_tensor("concepts", self.concepts, 1, floating=False)
        if self.concepts.shape[0] != self.tokens.shape[0]:
            raise ValueError(
                f"concepts: expected shape (B,) = ({self.tokens.shape[0]},) to match "
                f"tokens, got {tuple(self.concepts.shape)}"
            )
        check_tensor_fields(self, skip=1)

    @property
    def batch_size(self) -> int:
        return self.tokens.shape[0]

    @property
    def n_points(self) -> int:
        """Tokens per sequence ``T`` (the name the training code reads)."""
        return self.tokens.shape[1]

    def to(self, device=None, dtype=None) -> TokenBatch:
        """The same batch on another device; integer tensors keep their dtype, float
        ones (none here) take ``dtype``."""
        check_device("device", device)
        if dtype is not None:
            check_dtype("dtype", dtype)
        moved = {
            f.name: value.to(
                device=device, dtype=dtype if value.is_floating_point() else None
            )
            for f in dataclasses.fields(self)
            if isinstance(value := getattr(self, f.name), torch.Tensor)
        }
        return dataclasses.replace(self, **moved)


def check_tokens(
    tokens, vocab_size: int | None = None, name: str = "tokens"
) -> torch.Tensor:
    """Check token sequences ``(B, T)``: int64, ``T >= 1``, values in
    ``[0, vocab_size)`` (when given). ``name`` is the argument an error names."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected the argument's name (str), got {name!r}")
    check_batch(name, check_tensor(name, tokens, 2, floating=False))
    if vocab_size is not None:
        check_positive_int("vocab_size", vocab_size)
    if tokens.dtype != torch.int64:
        raise TypeError(f"{name}: expected dtype torch.int64, got {tokens.dtype}")
    if tokens.shape[1] == 0:
        raise ValueError(f"{name}: expected at least one token per sequence, got 0")
    if tokens.numel():
        low, high = tokens.min().item(), tokens.max().item()
        top = vocab_size if vocab_size is not None else float("inf")
        if low < 0 or high >= top:  # token ids are never negative
            expected = f"in [0, {vocab_size})" if vocab_size is not None else ">= 0"
            raise ValueError(f"{name}: expected values {expected}, got [{low}, {high}]")
    return tokens
