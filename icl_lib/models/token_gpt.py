"""A small causal token transformer: a language model on a finite vocabulary.

Token and learned position embeddings, the causal pre-LayerNorm blocks of
:mod:`icl_lib.models.gpt` (nanoGPT's layout, no dropout) and a linear head to the
vocabulary: ``forward(tokens (B, T)) -> logits (B, T, V)``, the logits at position
``t`` giving the next token ``x_{t+1}`` from ``x_0..x_t``. Trained by next-token
cross-entropy on the pretraining documents of a mixture of HMMs, it is chapter 4's
model of Xie et al. (ICLR 2022), who train GPT-2 on their GINC data set; with
``mlp=False`` it is attention only, for the mechanistic chapter.

Its activations carry TransformerLens's names, exactly as
:class:`icl_lib.models.gpt.ICLTransformer` records them (see
:meth:`TokenTransformer.run_with_cache`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from .._checks import (
    check_cache,
    check_instance,
    check_memory,
    check_positive_int,
    check_seed,
    check_tensor,
)
from ..tasks.tokens import check_tokens
from .gpt import Block


@dataclass(frozen=True)
class TokenTransformerConfig:
    """Shape of a :class:`TokenTransformer`."""

    vocab_size: int = 16  # tokens V the model reads and predicts
    n_ctx: int = 68  # longest sequence (learned positions)
    n_embd: int = 64  # residual stream width
    n_layer: int = 3  # transformer blocks
    n_head: int = 4  # attention heads per block (n_embd must be divisible by it)
    mlp: bool = True  # False: attention-only blocks (no MLP, no second LayerNorm)

    def __post_init__(self):
        for name in ("vocab_size", "n_ctx", "n_embd", "n_layer", "n_head"):
            check_positive_int(name, getattr(self, name))
        check_memory(
            "vocab_size, n_embd", self.vocab_size * self.n_embd, "vocab_size * n_embd"
        )
        if not isinstance(self.mlp, bool):
            raise TypeError(f"mlp: expected a bool, got {type(self.mlp).__name__}")
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_head: expected a divisor of n_embd = {self.n_embd}, got "
                f"{self.n_head}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self, seed: int = 0) -> TokenTransformer:
        """A freshly initialised model of this shape (from the global seed, set to
        ``seed``)."""
        torch.manual_seed(check_seed("seed", seed))
        return TokenTransformer(self)


class TokenTransformer(nn.Module):
    """Causal token transformer: ``forward(tokens (B, T)) -> logits (B, T, V)``.

    The logits at position ``t`` see only ``x_0..x_t`` (causal attention); their
    softmax is the model's ``p(x_{t+1} | x_0..x_t)``. Chapter 4.
    """

    def __init__(self, config: TokenTransformerConfig):
        check_instance(
            "config", config, TokenTransformerConfig, "a TokenTransformerConfig"
        )
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # token embedding
        self.wpe = nn.Embedding(config.n_ctx, config.n_embd)  # learned positions
        self.blocks = nn.ModuleList(
            Block(config, mlp=config.mlp) for _ in range(config.n_layer)
        )
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(
        self, tokens: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """Next-token logits ``(B, T, V)`` from ``tokens (B, T)`` (int64,
        ``T <= n_ctx``).

        With ``cache`` (a dict), every block records its activations in it.
        """
        check_cache(cache)
        check_tokens(tokens, self.config.vocab_size)
        T = tokens.shape[1]
        if T > self.config.n_ctx:
            raise ValueError(
                f"tokens: expected at most n_ctx = {self.config.n_ctx} tokens per "
                f"sequence, got {T}"
            )
        h = self.wte(tokens) + self.wpe.weight[:T]  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            h = block(h, cache, f"blocks.{layer}.")
        return self.lm_head(self.ln_f(h))  # (B, T, V)

    def run_with_cache(self, tokens: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """``(logits (B, T, V), cache)``: the forward pass and every named activation.

        Per layer ``l``: ``blocks.{l}.hook_resid_pre`` / ``hook_resid_mid`` /
        ``hook_resid_post`` ``(B, T, C)``; ``blocks.{l}.attn.hook_q`` / ``hook_k`` /
        ``hook_v`` / ``hook_z`` ``(B, H, T, C/H)`` and ``blocks.{l}.attn.hook_pattern``
        ``(B, H, T, T)``.
        """
        cache: dict = {}
        return self(tokens, cache=cache), cache

    def next_token_probs(
        self, tokens: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """The model's ``p(x_{t+1} | x_0..x_t)`` at each ``t`` in ``positions (P,)``:
        ``(B, P, V)`` (in eval mode, without gradients)."""
        check_tensor("positions", positions, 1, floating=False)
        check_tensor("tokens", tokens, 2, floating=False)
        if positions.numel() and (
            positions.min() < 0 or positions.max() >= tokens.shape[1]
        ):
            raise ValueError(
                f"positions: expected values in [0, {tokens.shape[1]}), got "
                f"[{positions.min().item()}, {positions.max().item()}]"
            )
        self.eval()
        with torch.no_grad():
            logits = self(tokens)
        return torch.softmax(logits[:, positions], -1)

    def n_params(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters())
