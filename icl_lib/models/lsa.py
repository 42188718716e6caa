"""Linear self-attention (LSA): the transformer that in-context learning theory can
solve.

A prompt becomes the token matrix ``Z (B, N+1, d+1)``: row ``j <= N`` is
``e_j = (x_j, y_j)``, the last row is the query ``(x_q, 0)``. One LSA layer with heads
``h`` updates *every* token from the context tokens ``e_1..e_N`` (keys and values never
include the query):

    e_j <- e_j + sum_h  P_h W_{V,h} sum_{i <= N} e_i (e_i^T W_{K,h}^T W_{Q,h} e_j)

(von Oswald et al. 2023, without softmax). The prediction is *minus* the label entry of
the query token after the last layer, the sign under which one layer equals one GD step
from ``W_0 = 0`` (:mod:`icl_lib.theory.gd_construction`). The output depends on the
weights only through the products ``W_KQ = W_K^T W_Q`` and ``W_PV = P W_V``: a model can
be *factored* (four matrices per head, as trained by von Oswald et al.) or *merged* (the
two products, as analysed by Ahn et al. 2023). ``looped=True`` shares one layer's
weights across depth. Chapter 2 (and chapter 1's sketch).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from .._checks import (
    check_batch,
    check_bool,
    check_dtype,
    check_finite,
    check_positive_int,
    check_prompt,
    check_real,
    check_seed,
    check_tensor,
)
from ..prompts import token_matrix


def lsa_layer(
    Z: torch.Tensor, kq: torch.Tensor, pv: torch.Tensor, *, query_only: bool = False
) -> torch.Tensor:
    """One LSA layer on tokens ``Z (B, T, D)`` whose first ``T - 1`` rows are the
    context.

    Args:
        kq: ``W_K^T W_Q`` per head, shape ``(H, D, D)``.
        pv: ``P W_V`` per head, shape ``(H, D, D)``.
        query_only: return only the updated query row, shape ``(B, 1, D)`` (enough for a
        last layer).

    Returns ``Z + sum_h Z kq_h^T (C^T C) pv_h^T`` with ``C = Z[:, :-1]``, i.e. token
    ``j`` gains ``sum_h pv_h sum_i e_i (e_i^T kq_h e_j)``.
    """
    check_batch("Z", check_tensor("Z", Z, 3))
    D = Z.shape[2]
    for name, weights in (("kq", kq), ("pv", pv)):
        check_batch(name, check_tensor(name, weights, 3))  # at least one head
        if tuple(weights.shape[1:]) != (D, D):
            raise ValueError(
                f"{name}: expected shape (H, D, D) with D = {D} to match Z, got "
                f"{tuple(weights.shape)}"
            )
    if pv.shape[0] != kq.shape[0]:
        raise ValueError(
            f"pv: expected one matrix per head of kq (H = {kq.shape[0]}), got "
            f"{pv.shape[0]}"
        )
    for name, value in (("Z", Z), ("kq", kq), ("pv", pv)):
        check_finite(name, value)
    query_only = check_bool("query_only", query_only)
    C = Z[:, :-1]  # (B, N, D), the context tokens: keys and values
    gram = C.transpose(1, 2) @ C  # (B, D, D) = sum_i e_i e_i^T
    # e_i^T kq e_j summed against pv e_i: delta_j = pv gram kq e_j  (row form: e_j^T
    # kq^T gram pv^T)
    mix = sum(kq[h].T @ gram @ pv[h].T for h in range(kq.shape[0]))  # (B, D, D)
    if query_only:
        Z = Z[:, -1:]
    return Z + Z @ mix


@dataclass(frozen=True)
class LSAConfig:
    """Shape of a :class:`LinearSelfAttention` (what a preset stores)."""

    dim: int = 10  # input dimension d; tokens have d + 1 entries
    n_layers: int = 1  # depth K
    n_heads: int = 1  # heads per layer
    looped: bool = True  # one set of weights for every layer
    factored: bool = (
        False  # W_Q, W_K, W_V, P per head (True) or the products W_KQ, W_PV
    )
    init_scale: float = 0.002  # von Oswald et al.'s variance scaling

    def __post_init__(self):
        for name in ("dim", "n_layers", "n_heads"):
            check_positive_int(name, getattr(self, name))
        for name in ("looped", "factored"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"{name}: expected a bool, got {type(getattr(self, name)).__name__}"
                )
        check_real("init_scale", self.init_scale, minimum=0.0, strict=True)

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self, seed: int = 0) -> LinearSelfAttention:
        """A freshly initialised model of this shape (its own generator, seeded with
        ``seed``)."""
        return LinearSelfAttention(
            self.dim,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            looped=self.looped,
            factored=self.factored,
            init_scale=self.init_scale,
            seed=seed,
        )


class LinearSelfAttention(nn.Module):
    """A stack of linear self-attention layers:
    ``forward(xs, ys, x_query) -> predictions (B,)``.

    Args:
        dim: input dimension ``d``; tokens have ``D = d + 1`` entries.
        n_layers: depth ``K``.
        n_heads: heads per layer.
        looped: share one layer's weights across all ``K`` layers (von Oswald's
        recurrent model).
        factored: keep ``W_Q, W_K, W_V, P`` per head (else the products ``W_KQ``,
        ``W_PV``).
        init_scale: each matrix starts ``N(0, init_scale / (K D))`` entrywise (von
        Oswald et al.'s
            variance scaling 0.002 / K); small, so the model starts near the zero
            predictor.
        seed: an int seed for the initialisation.
        dtype: float32 or float64.
    """

    def __init__(
        self,
        dim: int,
        *,
        n_layers: int = 1,
        n_heads: int = 1,
        looped: bool = False,
        factored: bool = False,
        init_scale: float = 0.002,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
    ):
        super().__init__()
        self.dim = check_positive_int("dim", dim)
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.n_heads = check_positive_int("n_heads", n_heads)
        init_scale = check_real("init_scale", init_scale, minimum=0.0)
        check_dtype("dtype", dtype)
        check_seed("seed", seed)
        self.looped = check_bool("looped", looped)
        self.factored = check_bool("factored", factored)
        D, n_blocks = dim + 1, 1 if looped else n_layers
        gen = torch.Generator().manual_seed(seed)
        std = (init_scale / (n_layers * D)) ** 0.5
        names = ("W_Q", "W_K", "W_V", "P") if factored else ("W_KQ", "W_PV")
        for name in names:
            init = std * torch.randn(
                n_blocks, n_heads, D, D, generator=gen, dtype=dtype
            )
            self.register_parameter(name, nn.Parameter(init))

    def _block(self, layer: int) -> int:
        if (
            isinstance(layer, bool)
            or not isinstance(layer, int)
            or not 0 <= layer < self.n_layers
        ):
            raise ValueError(
                f"layer: expected an int in [0, {self.n_layers}), got {layer!r}"
            )
        return 0 if self.looped else layer

    def kq(self, layer: int = 0) -> torch.Tensor:
        """The identifiable key-query product ``W_K^T W_Q`` of ``layer``, shape
        ``(H, D, D)``."""
        b = self._block(layer)
        return (
            self.W_K[b].transpose(-1, -2) @ self.W_Q[b]
            if self.factored
            else self.W_KQ[b]
        )

    def pv(self, layer: int = 0) -> torch.Tensor:
        """The identifiable projection-value product ``P W_V`` of ``layer``, shape
        ``(H, D, D)``."""
        b = self._block(layer)
        return self.P[b] @ self.W_V[b] if self.factored else self.W_PV[b]

    def forward_tokens(self, Z: torch.Tensor, *, return_all: bool = False):
        """Run every layer on tokens ``Z (B, N+1, D)``; with ``return_all`` also each
        layer's output."""
        check_batch("Z", check_tensor("Z", Z, 3))
        return_all = check_bool("return_all", return_all)
        if Z.shape[2] != self.dim + 1:
            raise ValueError(
                f"Z: expected tokens of size d + 1 = {self.dim + 1}, got shape "
                f"{tuple(Z.shape)}"
            )
        outs = [Z]
        for layer in range(self.n_layers):
            Z = lsa_layer(Z, self.kq(layer), self.pv(layer))
            outs.append(Z)
        return (Z, outs) if return_all else Z

    def forward(
        self, xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor
    ) -> torch.Tensor:
        """Predictions ``(B,)``: minus the query's label entry after the last layer."""
        check_prompt(xs, ys, x_query)
        if xs.shape[2] != self.dim:
            raise ValueError(
                f"xs: expected d = {self.dim} features, got shape {tuple(xs.shape)}"
            )
        Z = token_matrix(xs, ys, x_query)
        for layer in range(
            self.n_layers
        ):  # the last layer only needs to update the query token
            Z = lsa_layer(
                Z, self.kq(layer), self.pv(layer), query_only=layer == self.n_layers - 1
            )
        return -Z[:, -1, -1]

    def predict(
        self, xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor
    ) -> torch.Tensor:
        """The book's predictor interface: the same as calling the model, ``(B,)``."""
        return self(xs, ys, x_query)

    def predictions_by_layer(self, xs, ys, x_query) -> torch.Tensor:
        """The read-out after each layer ``1..K``: shape ``(K, B)``."""
        _, outs = self.forward_tokens(token_matrix(xs, ys, x_query), return_all=True)
        return torch.stack([-Z[:, -1, -1] for Z in outs[1:]])

    @torch.no_grad()
    def set_products(
        self, layer: int, kq: torch.Tensor, pv: torch.Tensor
    ) -> LinearSelfAttention:
        """Set a merged model's ``W_KQ`` and ``W_PV`` of ``layer`` (shapes ``(H, D, D)``
        or ``(D, D)``)."""
        if self.factored:
            raise ValueError(
                "factored: set_products needs a merged model (factored=False); "
                "set W_Q, W_K, W_V and P directly"
            )
        b, D = self._block(layer), self.dim + 1
        for name, value, target in (("kq", kq, self.W_KQ), ("pv", pv, self.W_PV)):
            if not isinstance(value, torch.Tensor):
                raise TypeError(
                    f"{name}: expected a torch.Tensor, got {type(value).__name__}"
                )
            value = value.expand(self.n_heads, D, D) if value.shape == (D, D) else value
            if tuple(value.shape) != (self.n_heads, D, D):
                raise ValueError(
                    f"{name}: expected shape (H, D, D) = {(self.n_heads, D, D)} or (D, "
                    "D), "
                    f"got {tuple(value.shape)}"
                )
            check_finite(name, value)
            target[b] = value.to(target.dtype)
        return self
