"""Attention with a kernel non-linearity, the model of Cheng, Chen and Sra (ICML 2024);
chapter 8.

A prompt is ``N`` examples and a query. Token ``j`` carries its input ``x_j`` and a
label slot ``u_j``: ``u_i = y_i`` for the examples and ``u_q = 0`` for the query. Layer
``l`` leaves the inputs alone and updates every label slot from the examples' slots::

    u_j <- u_j - (beta_l / N) sum_{i <= N} psi(<B_l x_i, C_l x_j>) u_i   (j = 1..N and
    the query)

with ``psi`` the attention non-linearity (``linear``: ``t``; ``relu``: ``max(t, 0)``;
``exp``: ``e^t``, softmax attention without its normaliser), ``B_l, C_l`` the key and
query maps and ``beta_l`` the value weight (chapter 8's letters; Cheng et al. write
``h`` and ``r``). The prediction is ``-u_q`` after the last layer.

With ``B_l = C_l = I`` and ``beta_l = eta`` a layer is one step of functional gradient
descent with step ``eta`` in the RKHS of ``K(a, b) = psi(<a, b>)``
(:func:`icl_lib.learners.kernel.functional_gd`): the example slots hold the residuals
``y_i - f_l(x_i)`` and the query slot holds ``-f_l(x_q)`` (Cheng et al., Proposition
3.1). This is the restricted (sparse) parameterisation of their Assumption 1: the value
matrix only writes the label row, so the inputs are never transformed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from .._checks import check_bool, check_positive_int, check_prompt, check_real
from ..prompts import token_matrix
from ..runtime import make_generator

ACTIVATIONS = ("linear", "relu", "exp")


@dataclass(frozen=True)
class KernelAttentionConfig:
    """Shape and initialisation of a :class:`KernelAttentionICL` (a preset's model)."""

    dim: int  # input dimension d
    n_layers: int = 3  # layers L
    activation: str = "exp"  # the non-linearity h, one of ACTIVATIONS
    init_step: float = 0.1  # r_l at initialisation
    init_noise: float = 0.1  # perturbation of B_l = C_l = I at initialisation

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_layers", self.n_layers)
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation: expected one of {ACTIVATIONS}, got {self.activation!r}"
            )
        check_real("init_step", self.init_step)
        check_real("init_noise", self.init_noise, minimum=0.0)

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self, seed: int = 0) -> KernelAttentionICL:
        """The model, its initial perturbation drawn from ``seed``."""
        return KernelAttentionICL(
            self.dim,
            self.n_layers,
            self.activation,
            init_step=self.init_step,
            init_noise=self.init_noise,
            seed=seed,
        )


def _activation(name: str, t: torch.Tensor) -> torch.Tensor:
    if name == "linear":
        return t
    if name == "relu":
        return t.clamp(min=0)
    return torch.exp(t)


class KernelAttentionICL(nn.Module):
    """``n_layers`` kernel-attention layers acting on the label slots;
    ``forward(xs, ys, x_query) -> (B,)``.

    Args:
        dim: input dimension ``d``.
        n_layers: number of layers ``L``.
        activation: the non-linearity ``h``, one of ``ACTIVATIONS``.
        init_step: the value weight ``r_l`` at initialisation (functional GD's step
        size).
        init_noise: standard deviation of the perturbation of ``B_l = C_l = I`` at
        initialisation.
        seed: fixes that perturbation.
    """

    def __init__(
        self,
        dim: int,
        n_layers: int = 3,
        activation: str = "exp",
        *,
        init_step: float = 0.1,
        init_noise: float = 0.1,
        seed: int = 0,
    ):
        super().__init__()
        check_positive_int("dim", dim)
        check_positive_int("n_layers", n_layers)
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation: expected one of {ACTIVATIONS}, got {activation!r}"
            )
        init_step = check_real("init_step", init_step)
        init_noise = check_real("init_noise", init_noise, minimum=0.0)
        self.activation = activation
        gen = make_generator(seed)
        eye = torch.eye(dim).expand(n_layers, dim, dim)
        self.key_maps = nn.Parameter(
            eye + init_noise * torch.randn(n_layers, dim, dim, generator=gen)
        )  # B_l
        self.query_maps = nn.Parameter(
            eye + init_noise * torch.randn(n_layers, dim, dim, generator=gen)
        )  # C_l
        self.values = nn.Parameter(torch.full((n_layers,), float(init_step)))  # beta_l

    @property
    def n_layers(self) -> int:
        return self.values.shape[0]

    def predict(
        self, xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor
    ) -> torch.Tensor:
        """The book's predictor interface: the prediction after the last layer,
        ``(B,)``."""
        return self(xs, ys, x_query)

    @classmethod
    def functional_gd(
        cls, dim: int, n_layers: int, activation: str, step: float
    ) -> KernelAttentionICL:
        """The construction: ``B_l = C_l = I`` and ``r_l = step``, i.e. ``n_layers``
        steps of functional GD."""
        step = check_real("step", step)
        model = cls(dim, n_layers, activation, init_step=step, init_noise=0.0)
        return model

    def forward(
        self,
        xs: torch.Tensor,
        ys: torch.Tensor,
        x_query: torch.Tensor,
        *,
        every_layer: bool = False,
    ):
        """Predictions ``(B,)`` for the query, or ``(B, L + 1)`` after each layer if
        ``every_layer``."""
        B, N, d = check_prompt(xs, ys, x_query)
        every_layer = check_bool("every_layer", every_layer)
        if d != self.key_maps.shape[-1]:
            raise ValueError(
                f"xs: expected d = {self.key_maps.shape[-1]} features, got {d}"
            )
        dtype = xs.dtype
        Z = token_matrix(xs, ys, x_query)  # (B, N + 1, d + 1)
        tokens, u = (
            Z[..., :d],
            Z[..., d],
        )  # inputs (B, N + 1, d) and label slots (B, N + 1)
        preds = [-u[:, -1]]
        for l in range(self.n_layers):
            keys = xs @ self.key_maps[l].to(dtype).T  # B_l x_i, (B, N, d)
            queries = tokens @ self.query_maps[l].to(dtype).T  # C_l x_j, (B, N + 1, d)
            scores = _activation(
                self.activation, queries @ keys.transpose(1, 2)
            )  # (B, N + 1, N)
            u = u - self.values[l].to(dtype) / N * (
                scores @ u[:, :N].unsqueeze(-1)
            ).squeeze(-1)
            preds.append(-u[:, -1])
        return torch.stack(preds, dim=1) if every_layer else preds[-1]
