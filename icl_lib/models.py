"""A small GPT-style transformer that learns in context (Garg et al. 2022).

The prompt ``(x_1, y_1, ..., x_n, y_n)`` becomes ``2n`` tokens: ``x_i`` as is and ``y_i`` as
``(y_i, 0, ..., 0)``, both read in by one linear map. Causal pre-LayerNorm blocks (no dropout)
process them and a linear read-out at each ``x_i`` token predicts ``y_i`` from the examples
before it, so one forward pass gives the prediction for every context size ``k = 0..n-1``.
Used in chapter 1 (overview) and reused by later chapters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_positive_int, check_prompt, check_tensor


@dataclass(frozen=True)
class TransformerConfig:
    """Shape of an :class:`ICLTransformer`."""

    n_dims: int = 5  # input dimension d of the regression task
    n_positions: int = 21  # most (x, y) pairs in a prompt; the model sees 2 * n_positions tokens
    n_embd: int = 64  # residual stream width
    n_layer: int = 4  # transformer blocks
    n_head: int = 2  # attention heads per block (n_embd must be divisible by it)

    def __post_init__(self):
        for name in ("n_dims", "n_positions", "n_embd", "n_layer", "n_head"):
            check_positive_int(name, getattr(self, name))
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_head: expected a divisor of n_embd = {self.n_embd}, got {self.n_head}"
            )

    def to_dict(self) -> dict:
        return asdict(self)


# Garg et al.'s three sizes (their Table 2), with their d = 20 and 41 points.
GARG_TINY = TransformerConfig(n_dims=20, n_positions=41, n_embd=64, n_layer=3, n_head=2)
GARG_SMALL = TransformerConfig(n_dims=20, n_positions=41, n_embd=128, n_layer=6, n_head=4)
GARG_STANDARD = TransformerConfig(n_dims=20, n_positions=41, n_embd=256, n_layer=12, n_head=8)


def interleave(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """Tokens ``x_1, (y_1, 0..0), x_2, (y_2, 0..0), ...``: shape ``(B, 2n, d)`` from ``(B, n, d)``, ``(B, n)``."""
    B, n, d = xs.shape
    y_tokens = torch.zeros_like(xs)
    y_tokens[..., 0] = ys
    return torch.stack((xs, y_tokens), dim=2).reshape(B, 2 * n, d)


def prompt_matrix(xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
    """The prompt as the matrix ``Z`` of von Oswald et al. and Ahn et al.: shape ``(B, d + 1, N + 1)``.

    Column ``i`` is ``(x_i, y_i)`` for the ``N`` context examples; the last column is
    ``(x_q, 0)``: the query's label is unknown, so its slot holds 0 (chapter 2 reads the
    prediction off that slot).
    """
    B, N, d = check_prompt(xs, ys, x_query)
    context = torch.cat((xs, ys.unsqueeze(-1)), dim=-1)  # (B, N, d + 1)
    query = torch.cat((x_query, x_query.new_zeros(B, 1)), dim=-1).unsqueeze(1)  # (B, 1, d + 1)
    return torch.cat((context, query), dim=1).transpose(1, 2)


class CausalSelfAttention(nn.Module):
    """Multi-head causal softmax self-attention (nanoGPT's layout, without dropout)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)  # W_Q, W_K, W_V stacked
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)  # W_O

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, T, C = h.shape
        q, k, v = self.c_attn(h).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, C/H)
        return self.c_proj(out.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: ``h + attn(ln(h))`` then ``h + mlp(ln(h))``."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.ln_1(h))
        return h + self.mlp(self.ln_2(h))


class ICLTransformer(nn.Module):
    """GPT-style in-context regressor: ``forward(xs (B, n, d), ys (B, n)) -> predictions (B, n)``.

    Prediction ``i`` is made at token ``x_i`` and sees only ``(x_1, y_1, ..., x_{i-1}, y_{i-1}, x_i)``:
    it is the model's in-context estimate of ``y_i`` from ``i - 1`` examples. ``d`` may be
    smaller than ``config.n_dims``: the inputs are zero-padded (the curriculum of Garg et al.).
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.read_in = nn.Linear(config.n_dims, config.n_embd)
        self.wpe = nn.Embedding(2 * config.n_positions, config.n_embd)  # learned positions
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.read_out = nn.Linear(config.n_embd, 1)

    def forward(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        check_tensor("xs", xs, 3)
        check_tensor("ys", ys, 2)
        B, n, d = xs.shape
        if tuple(ys.shape) != (B, n):
            raise ValueError(f"ys: expected shape (B, n) = {(B, n)} to match xs, got {tuple(ys.shape)}")
        if d > self.config.n_dims:
            raise ValueError(f"xs: expected at most n_dims = {self.config.n_dims} features, got {d}")
        if n > self.config.n_positions:
            raise ValueError(f"xs: expected at most n_positions = {self.config.n_positions} points, got {n}")
        if d < self.config.n_dims:
            xs = F.pad(xs, (0, self.config.n_dims - d))
        tokens = interleave(xs, ys)  # (B, 2n, n_dims)
        h = self.read_in(tokens) + self.wpe.weight[: 2 * n]  # (B, 2n, C)
        for block in self.blocks:
            h = block(h)
        out = self.read_out(self.ln_f(h)).squeeze(-1)  # (B, 2n)
        return out[:, ::2]  # the predictions made at the x tokens, (B, n)

    def n_params(self) -> int:
        """Number of trainable parameters (no unused token table, unlike GPT-2's count)."""
        return sum(p.numel() for p in self.parameters())
