"""Samplers of chapter 9's tasks: associative recall (token sequences) and sparse
parity (prompts), from :mod:`icl_lib.tasks.recall`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_positive_int
from ..tasks.recall import (
    ParityBatch,
    RecallBatch,
    associative_recall,
    sparse_parity,
)
from .samplers import Sampler, StationarySampler, check_eval_args, check_sample_args


@dataclass(frozen=True)
class RecallSequences(Sampler):
    """Associative-recall sequences with a number of pairs drawn per training step,
    uniformly in ``min_pairs..max_pairs`` (one ``P`` per batch); evaluation uses
    ``max_pairs``."""

    max_pairs: int  # most key-value pairs P
    min_pairs: int = 1  # fewest pairs in training
    n_queries: int = 4  # queries after the pairs
    n_keys: int = 32  # key tokens
    n_values: int = 32  # value tokens

    def __post_init__(self):
        check_positive_int("min_pairs", self.min_pairs)
        check_positive_int("max_pairs", self.max_pairs, minimum=self.min_pairs)
        associative_recall(
            1,
            self.max_pairs,
            n_queries=self.n_queries,
            n_keys=self.n_keys,
            n_values=self.n_values,
        )  # checks the rest

    @property
    def vocab_size(self) -> int:
        return self.n_keys + self.n_values

    @property
    def n_tokens(self) -> int:
        """Tokens of the longest sequence, ``2 max_pairs + n_queries``."""
        return 2 * self.max_pairs + self.n_queries

    def draw(self, batch_size: int, n_pairs: int, seed) -> RecallBatch:
        return associative_recall(
            batch_size,
            n_pairs,
            n_queries=self.n_queries,
            n_keys=self.n_keys,
            n_values=self.n_values,
            seed=seed,
        )

    def sample(self, batch_size: int, step: int, gen: torch.Generator) -> RecallBatch:
        check_sample_args(batch_size, step, gen)
        P = int(torch.randint(self.min_pairs, self.max_pairs + 1, (1,), generator=gen))
        return self.draw(batch_size, P, gen)

    def eval_batch(self, size: int, seed: int) -> RecallBatch:
        check_eval_args(size, seed)
        return self.draw(size, self.max_pairs, seed)


@dataclass(frozen=True)
class SparseParityPrompts(StationarySampler):
    """Sparse-parity prompts (:func:`icl_lib.tasks.recall.sparse_parity`)."""

    dim: int  # input dimension d
    n_points: int  # points per prompt (the model predicts every one of them)
    k: int = 2  # coordinates in the secret set

    def __post_init__(self):
        sparse_parity(1, self.n_points, self.dim, self.k)  # checks the fields

    def draw(self, batch_size: int, seed) -> ParityBatch:
        return sparse_parity(batch_size, self.n_points, self.dim, self.k, seed=seed)
