"""One prompt type and every tokenisation of a prompt, each written once.

A prompt is a sequence of input-label pairs ``(x_1, y_1), ..., (x_n, y_n)``. A batch of
``B`` prompts is a :class:`PromptBatch` (``xs (B, n, d)``, ``ys (B, n)``); every sampler
in :mod:`icl_lib.tasks` returns one, possibly with extra fields (the task vector, the
generating covariance). :meth:`PromptBatch.prompt` cuts it at position ``k`` into a
context of ``k`` examples and the query ``x_{k+1}``: the ``(xs, ys, x_query)`` that
every learner and every model's ``predict`` takes.

The three ways a model reads a prompt:

* :func:`interleave`: tokens ``x_1, (y_1, 0..0), x_2, ...`` of width ``d`` (Garg et al.
  2022; the GPT-style model of chapters 1 and 8);
* :func:`token_matrix`: one token ``(x_i, y_i)`` per example and the query token
  ``(x_q, 0)``, rows of ``Z (B, N + 1, d + 1)`` (von Oswald et al. 2023, Ahn et al.
  2023, Dherin et al. 2025, Cheng et al. 2024; chapters 2, 7, 8); :func:`prompt_matrix`
  is its transpose, the ``(d + 1) x (N + 1)`` matrix of the papers;
* :func:`context_and_query`: the same tokens split into the context rows and the query
  row, the form of a contextual layer (chapter 7).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ._checks import (
    check_batch,
    check_device,
    check_dtype,
    check_finite,
    check_ids,
    check_positive_int,
    check_prompt,
    check_sequences,
    check_tensor,
    check_tensor_fields,
)


def split_prompt(xs: torch.Tensor, ys: torch.Tensor, k: int):
    """Cut ``xs (B, n, d)``, ``ys (B, n)`` at position ``k``: ``k`` examples and the
    query.

    Returns ``(xs (B, k, d), ys (B, k), x_query (B, d), y_query (B,))``.
    """
    check_sequences(xs, ys)
    check_positive_int("k", k, minimum=0)
    if k >= xs.shape[1]:
        raise ValueError(
            f"k: expected a context size below n_points = {xs.shape[1]} "
            f"(the query needs one more point), got {k}"
        )
    return xs[:, :k], ys[:, :k], xs[:, k], ys[:, k]


@dataclass(frozen=True)
class PromptBatch:
    """``B`` prompts: inputs ``xs (B, n, d)`` and labels ``ys (B, n)``.

    Subclasses add what their sampler knows (the task vector, the generating
    covariance); every tensor field moves with :meth:`to`.
    """

    xs: torch.Tensor
    ys: torch.Tensor

    def __post_init__(self):
        check_tensor("xs", self.xs, 3)
        check_tensor("ys", self.ys, 2)
        if 0 in (self.xs.shape[0], self.xs.shape[2]):
            raise ValueError(
                "xs: expected at least one prompt of inputs of dimension >= 1, got "
                f"shape {tuple(self.xs.shape)}"
            )
        check_finite("xs", self.xs)  # the book's data policy (_checks.check_finite)
        check_finite("ys", self.ys)
        if tuple(self.ys.shape) != tuple(self.xs.shape[:2]):
            raise ValueError(
                f"ys: expected shape (B, n) = {tuple(self.xs.shape[:2])} to match xs, "
                f"got {tuple(self.ys.shape)}"
            )
        check_tensor_fields(self, skip=2)
        # Every other tensor field is per prompt (select() indexes them all): one row
        # each, or select and the learners that read them would silently misalign.
        B = self.xs.shape[0]
        for field in dataclasses.fields(self)[2:]:
            value = getattr(self, field.name)
            if isinstance(value, torch.Tensor) and (
                value.ndim == 0 or value.shape[0] != B
            ):
                raise ValueError(
                    f"{field.name}: expected one row per prompt (B = {B}), got shape "
                    f"{tuple(value.shape)}"
                )

    @property
    def batch_size(self) -> int:
        return self.xs.shape[0]

    @property
    def n_points(self) -> int:
        return self.xs.shape[1]

    @property
    def dim(self) -> int:
        return self.xs.shape[2]

    def prompt(self, k: int):
        """Context of the first ``k`` examples and the query at position ``k``
        (0-based).

        Returns ``(xs (B, k, d), ys (B, k), x_query (B, d), y_query (B,))``.
        """
        return split_prompt(self.xs, self.ys, k)

    def to(self, device=None, dtype=None) -> PromptBatch:
        """The same batch on another device or in another float dtype."""
        check_device("device", device)
        if dtype is not None:
            check_dtype("dtype", dtype)
        moved = {
            f.name: getattr(self, f.name).to(device=device, dtype=dtype)
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), torch.Tensor)
            and getattr(self, f.name).is_floating_point()
        }
        return dataclasses.replace(self, **moved)

    def select(self, index: torch.Tensor) -> PromptBatch:
        """The prompts at ``index`` (a 1-D integer tensor), every batched field with
        them."""
        check_batch("index", check_ids("index", index, 1, self.xs.shape[0]))
        picked = {
            f.name: getattr(self, f.name)[index]
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), torch.Tensor)
        }
        return dataclasses.replace(self, **picked)


def interleave(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """Tokens ``x_1, (y_1, 0..0), x_2, (y_2, 0..0), ...``: ``(B, 2n, d)`` from
    ``(B, n, d)``, ``(B, n)``."""
    B, n, d = check_sequences(xs, ys)
    y_tokens = torch.zeros_like(xs)
    y_tokens[..., 0] = ys
    return torch.stack((xs, y_tokens), dim=2).reshape(B, 2 * n, d)


def token_matrix(
    xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor
) -> torch.Tensor:
    """The prompt as tokens ``Z (B, N + 1, d + 1)``: rows ``(x_i, y_i)``, then
    ``(x_q, 0)``.

    The query's label is unknown, so its slot holds 0: the models of chapters 2 and 8
    write their prediction there.
    """
    B, N, d = check_prompt(xs, ys, x_query)
    context = torch.cat((xs, ys.unsqueeze(-1)), dim=-1)  # (B, N, d + 1)
    query = torch.cat((x_query, x_query.new_zeros(B, 1)), dim=-1).unsqueeze(
        1
    )  # (B, 1, d + 1)
    return torch.cat((context, query), dim=1)


def prompt_matrix(
    xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor
) -> torch.Tensor:
    """``Z`` as the papers write it, one column per token: ``(B, d + 1, N + 1)``."""
    return token_matrix(xs, ys, x_query).transpose(1, 2)


def context_and_query(xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor):
    """The rows of :func:`token_matrix` split: context ``(B, N, d + 1)`` and query
    ``(B, d + 1)``."""
    Z = token_matrix(xs, ys, x_query)
    return Z[:, :-1], Z[:, -1]
