"""A transformer that outputs the posterior over the task vector, not only the
prediction (the question of Reuter et al. 2025, in the simplest family).

The backbone is chapter 1's causal model (:class:`~.gpt.ICLTransformer`); at the token
``x_k`` (0-based) it has read the ``k`` examples before it, and its read-out gives a
Gaussian ``N(mu, L L^T)`` over ``w in R^d``: ``d`` numbers for the mean and
``d (d + 1) / 2`` for the lower-triangular Cholesky factor ``L`` (diagonal made
positive by a softplus).
Trained on ``(w, prompt)`` pairs by ``-log q(w | examples)`` at every context size
(``posterior_nll`` in :mod:`icl_lib.training.losses`), its optimum is the exact
posterior whenever the exact posterior is Gaussian (the same argument as for the
predictive, chapter 4). Reuter et al. learn non-Gaussian posteriors with a flow-matching
decoder; a Gaussian family suffices here because the exact posterior of Bayesian linear
regression is Gaussian.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_finite,
    check_instance,
    check_seed,
    check_sequences,
    check_tensor,
)
from .gpt import ICLTransformer, TransformerConfig

MIN_SCALE = 1e-4  # the smallest diagonal entry of L


@dataclass(frozen=True)
class PosteriorConfig(TransformerConfig):
    """An :class:`~.gpt.ICLTransformer` backbone with a Gaussian posterior head over
    ``w`` (of dimension ``n_dims``)."""

    def build(self, seed: int = 0) -> PosteriorTransformer:
        torch.manual_seed(check_seed("seed", seed))
        return PosteriorTransformer(self)


class PosteriorTransformer(ICLTransformer):
    """``posterior(xs, ys) -> (mean (B, n, d), L (B, n, d, d))``: at position ``k`` the
    Gaussian over ``w`` after the first ``k`` examples (``k = 0..n-1``).

    ``predict`` / ``predict_prefixes`` give ``<mean, x_query>``, the prediction this
    posterior implies, so the model is scored like every other one.
    """

    def __init__(self, config: PosteriorConfig):
        check_instance("config", config, PosteriorConfig, "a PosteriorConfig")
        super().__init__(config)
        d = config.n_dims
        self.read_out = nn.Linear(config.n_embd, d + d * (d + 1) // 2)
        rows, cols = torch.tril_indices(d, d)
        self.register_buffer("_rows", rows, persistent=False)
        self.register_buffer("_cols", cols, persistent=False)

    def posterior(
        self, xs: torch.Tensor, ys: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean ``(B, n, d)`` and Cholesky factor ``(B, n, d, d)`` at every position.

        Inputs with fewer than ``n_dims`` features are zero-padded by the backbone;
        the posterior is always over all ``n_dims`` coordinates.
        """
        d = self.config.n_dims
        out = self.read_out(self.hidden(xs, ys))  # (B, n, d + d(d+1)/2)
        mean, entries = out[..., :d], out[..., d:]
        chol = out.new_zeros(*out.shape[:-1], d, d)
        chol[..., self._rows, self._cols] = entries
        diag = F.softplus(chol.diagonal(dim1=-2, dim2=-1)) + MIN_SCALE
        chol = chol.tril(-1) + torch.diag_embed(diag)
        return mean, chol

    def _check_task(self, xs, ys, w) -> torch.Tensor:
        B, _, _ = check_sequences(xs, ys)
        w = check_tensor("w", w, 2)
        if tuple(w.shape) != (B, self.config.n_dims):
            raise ValueError(
                f"w: expected shape (B, n_dims) = {(B, self.config.n_dims)}, got "
                f"{tuple(w.shape)}"
            )
        return check_finite("w", w)

    def posterior_log_prob(
        self, xs: torch.Tensor, ys: torch.Tensor, w: torch.Tensor
    ) -> torch.Tensor:
        """``log q(w | first k examples)`` for ``k = 0..n-1``: ``(B, n)``."""
        w = self._check_task(xs, ys, w)
        mean, chol = self.posterior(xs, ys)
        diff = (w.unsqueeze(1) - mean).unsqueeze(-1)  # (B, n, d, 1)
        z = torch.linalg.solve_triangular(chol, diff, upper=False).squeeze(-1)
        log_det = chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        d = self.config.n_dims
        return -0.5 * (z**2).sum(-1) - log_det - 0.5 * d * math.log(2 * math.pi)

    def forward(
        self, xs: torch.Tensor, ys: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """``<posterior mean, x_k>`` for every position ``k``: ``(B, n)``."""
        d = self.config.n_dims
        mean = self.read_out(self.hidden(xs, ys, cache=cache))[..., :d]
        return (mean[..., : xs.shape[-1]] * xs).sum(-1)

    def mean_squared_error(
        self, xs: torch.Tensor, ys: torch.Tensor, w: torch.Tensor
    ) -> torch.Tensor:
        """``||mean_k - w||^2`` after ``k = 0..n-1`` examples: ``(B, n)`` (the loss
        that fits the posterior mean alone)."""
        w = self._check_task(xs, ys, w)
        mean = self.read_out(self.hidden(xs, ys))[..., : self.config.n_dims]
        return ((mean - w.unsqueeze(1)) ** 2).sum(-1)

    def warm_start(self, parent: ICLTransformer) -> None:
        """Start from another posterior model (every weight) or from a chapter-1
        model (its backbone; the posterior head starts fresh)."""
        check_instance("parent", parent, ICLTransformer, "an ICLTransformer")
        if isinstance(parent, PosteriorTransformer):
            self.load_state_dict(parent.state_dict())
        else:
            self.load_backbone(parent)
