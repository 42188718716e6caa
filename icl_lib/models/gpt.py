"""A small GPT-style transformer that learns in context (Garg et al. 2022).

The prompt ``(x_1, y_1, ..., x_n, y_n)`` becomes ``2n`` tokens: ``x_i`` as is and
``y_i`` as ``(y_i, 0, ..., 0)``, both read in by one linear map. Causal pre-LayerNorm
blocks (no dropout) process them and a linear read-out at each ``x_i`` token predicts
``y_i`` from the examples before it, so one forward pass gives the prediction for every
context size ``k = 0..n-1``. Used in chapters 1 and 8.

Every model of the book answers ``predict(xs, ys, x_query) -> (B,)``; this one, being
causal, also gives every context size at once (:meth:`ICLTransformer.predict_prefixes`).
A forward pass can record its activations under TransformerLens's names
(``blocks.{l}.hook_resid_pre``, ``blocks.{l}.attn.hook_q`` / ``hook_k`` / ``hook_v`` /
``hook_pattern``, ...): pass a dict as ``cache`` (see
:meth:`ICLTransformer.run_with_cache`). The weights keep nanoGPT's names; the properties
``W_Q``, ``W_K``, ``W_V``, ``W_O`` of each attention layer give them per head.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_bool,
    check_cache,
    check_instance,
    check_positive_int,
    check_prompt,
    check_seed,
    check_sequences,
    check_stream,
)
from ..prompts import interleave


def prompt_tokens(xs, ys, n_dims: int, n_positions: int) -> torch.Tensor:
    """The interleaved tokens ``x_1, y_1, x_2, ...`` ``(B, 2n, n_dims)`` of a prompt
    ``xs (B, n, d)``, ``ys (B, n)`` for a model of ``n_dims`` inputs and ``n_positions``
    points: ``x`` padded with zeros when ``d < n_dims`` (Garg et al.'s curriculum), an
    error naming the limit when the prompt is too wide or too long."""
    B, n, d = check_sequences(xs, ys)
    check_positive_int("n_dims", n_dims)
    check_positive_int("n_positions", n_positions)
    if d > n_dims:
        raise ValueError(f"xs: expected at most n_dims = {n_dims} features, got {d}")
    if n > n_positions:
        raise ValueError(
            f"xs: expected at most n_positions = {n_positions} points, got {n}"
        )
    if d < n_dims:
        xs = F.pad(xs, (0, n_dims - d))
    return interleave(xs, ys)


POSITIONS = ("learned", "types", "learned+types")
EVAL_CHUNK = 256  # prompts per pass in eval mode (see ICLTransformer.hidden)


@dataclass(frozen=True)
class TransformerConfig:
    """Shape of an :class:`ICLTransformer`."""

    n_dims: int = 5  # input dimension d of the regression task
    n_positions: int = (
        21  # most (x, y) pairs in a prompt; the model sees 2 * n_positions tokens
    )
    n_embd: int = 64  # residual stream width
    n_layer: int = 4  # transformer blocks
    n_head: int = 2  # attention heads per block (n_embd must be divisible by it)
    # How a token says where it is (one of POSITIONS): "learned" adds Garg et al.'s
    # learned embedding of its absolute position (2 * n_positions vectors); "types"
    # adds one learned vector for every x token and one for every y token and no
    # absolute position (the causal mask orders the tokens); "learned+types" adds both.
    positions: str = "learned"

    def __post_init__(self):
        for name in ("n_dims", "n_positions", "n_embd", "n_layer", "n_head"):
            check_positive_int(name, getattr(self, name))
        if self.positions not in POSITIONS:
            raise ValueError(
                f"positions: expected one of {POSITIONS}, got {self.positions!r}"
            )
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_head: expected a divisor of n_embd = {self.n_embd}, got "
                f"{self.n_head}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self, seed: int = 0) -> ICLTransformer:
        """A freshly initialised model of this shape (from the global seed, set to
        ``seed``)."""
        torch.manual_seed(check_seed("seed", seed))
        return ICLTransformer(self)


# Garg et al.'s three sizes (their Table 2), with their d = 20 and 41 points.
GARG_TINY = TransformerConfig(n_dims=20, n_positions=41, n_embd=64, n_layer=3, n_head=2)
GARG_SMALL = TransformerConfig(
    n_dims=20, n_positions=41, n_embd=128, n_layer=6, n_head=4
)
GARG_STANDARD = TransformerConfig(
    n_dims=20, n_positions=41, n_embd=256, n_layer=12, n_head=8
)


def _check_block_config(config) -> None:
    """A block reads only ``n_embd`` and ``n_head``: any of the book's transformer
    configs (this module's, the token model's, the sequence models') will do."""
    if not (hasattr(config, "n_embd") and hasattr(config, "n_head")):
        raise TypeError(
            "config: expected a transformer config with n_embd and n_head, got "
            f"{type(config).__name__}"
        )


class CausalSelfAttention(nn.Module):
    """Multi-head causal softmax self-attention (nanoGPT's layout, without dropout)."""

    def __init__(self, config: TransformerConfig):
        _check_block_config(config)
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(
            config.n_embd, 3 * config.n_embd
        )  # W_Q, W_K, W_V stacked
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)  # W_O

    def _per_head(self, weight: torch.Tensor) -> torch.Tensor:
        C = self.c_proj.in_features
        return weight.view(self.n_head, C // self.n_head, C)  # (H, C/H, C)

    @property
    def W_Q(self) -> torch.Tensor:
        """Query weights per head, ``(H, C/H, C)``: ``q_h = W_Q[h] h_t + b``."""
        return self._per_head(self.c_attn.weight[: self.c_proj.in_features])

    @property
    def W_K(self) -> torch.Tensor:
        """Key weights per head, ``(H, C/H, C)``."""
        C = self.c_proj.in_features
        return self._per_head(self.c_attn.weight[C : 2 * C])

    @property
    def W_V(self) -> torch.Tensor:
        """Value weights per head, ``(H, C/H, C)``."""
        C = self.c_proj.in_features
        return self._per_head(self.c_attn.weight[2 * C :])

    @property
    def W_O(self) -> torch.Tensor:
        """Output weights per head, ``(H, C, C/H)``: the head's slice of ``c_proj``."""
        C = self.c_proj.in_features
        return self.c_proj.weight.view(C, self.n_head, C // self.n_head).transpose(0, 1)

    def forward(
        self, h: torch.Tensor, cache: dict | None = None, prefix: str = ""
    ) -> torch.Tensor:
        check_cache(cache, prefix)
        check_stream("h", h, self.c_proj.in_features)
        B, T, C = h.shape
        q, k, v = self.c_attn(h).split(C, dim=2)
        q, k, v = (
            t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            for t in (q, k, v)
        )
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, C/H)
        if cache is not None:
            # The pattern that scaled_dot_product_attention forms inside, written out.
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, T, T)
            causal = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()
            pattern = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
            for name, value in (
                ("q", q),
                ("k", k),
                ("v", v),
                ("pattern", pattern),
                ("z", out),
            ):
                cache[f"{prefix}hook_{name}"] = value
        return self.c_proj(out.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: ``h + attn(ln(h))`` then ``h + mlp(ln(h))``.

    With ``mlp=False`` the block is attention only (no ``ln_2``, no ``mlp``): the
    attention-only models of the mechanistic chapter.
    """

    def __init__(self, config: TransformerConfig, mlp: bool = True):
        _check_block_config(config)
        mlp = check_bool("mlp", mlp)
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd) if mlp else None
        self.mlp = (
            nn.Sequential(
                nn.Linear(config.n_embd, 4 * config.n_embd),
                nn.GELU(),
                nn.Linear(4 * config.n_embd, config.n_embd),
            )
            if mlp
            else None
        )

    def forward(
        self, h: torch.Tensor, cache: dict | None = None, prefix: str = ""
    ) -> torch.Tensor:
        check_cache(cache, prefix)
        check_stream("h", h, self.ln_1.normalized_shape[0])
        if cache is not None:
            cache[f"{prefix}hook_resid_pre"] = h
        h = h + self.attn(self.ln_1(h), cache, f"{prefix}attn.")
        if cache is not None:
            cache[f"{prefix}hook_resid_mid"] = h
        if self.mlp is not None:
            h = h + self.mlp(self.ln_2(h))
        if cache is not None:
            cache[f"{prefix}hook_resid_post"] = h
        return h


class ICLTransformer(nn.Module):
    """GPT-style in-context regressor:
    ``forward(xs (B, n, d), ys (B, n)) -> predictions (B, n)``.

    Prediction ``i`` is made at token ``x_i`` and sees only
    ``(x_1, y_1, ..., x_{i-1}, y_{i-1}, x_i)``: it is the model's in-context estimate of
    ``y_i`` from ``i - 1`` examples. ``d`` may be smaller than ``config.n_dims``: the
    inputs are zero-padded (the curriculum of Garg et al.).
    """

    def __init__(self, config: TransformerConfig):
        check_instance("config", config, TransformerConfig, "a TransformerConfig")
        super().__init__()
        self.config = config
        self.read_in = nn.Linear(config.n_dims, config.n_embd)
        # Either 2 * n_positions learned positions, or two learned token types (x, y)
        # repeated along the prompt (see TransformerConfig.positions).
        absolute = config.positions in ("learned", "learned+types")
        self.wpe = nn.Embedding(
            2 * config.n_positions if absolute else 2, config.n_embd
        )
        # with both, the token types get their own table
        self.wtt = (
            nn.Embedding(2, config.n_embd)
            if config.positions == "learned+types"
            else None
        )
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.read_out = nn.Linear(config.n_embd, 1)

    def forward(
        self, xs: torch.Tensor, ys: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """Predictions ``(B, n)``; prediction ``i`` is made at ``x_i`` from the examples
        before it.

        With ``cache`` (a dict), every block records its activations in it (see the
        module doc).
        """
        return self.read_out(self.hidden(xs, ys, cache=cache)).squeeze(-1)

    def hidden(
        self, xs: torch.Tensor, ys: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """The final (normalised) residual stream at the ``x`` tokens, ``(B, n, C)``:
        what the read-out sees. Models with other heads (chapter 4) read it too.

        In eval mode without a cache, prompts go through in chunks of ``EVAL_CHUNK``:
        prompts are independent, and small chunks keep the activations in the CPU's
        cache (a 4096-prompt evaluation runs about twice as fast, with the same result;
        gradients, e.g. for label influence, flow through the chunks). Training
        (``model.train()``) always takes one pass, so training is unchanged."""
        check_cache(cache)
        B = check_sequences(xs, ys)[0]  # before chunking reads their shapes
        if cache is None and not self.training and B > EVAL_CHUNK:
            return torch.cat(
                [
                    self.hidden(xs[i : i + EVAL_CHUNK], ys[i : i + EVAL_CHUNK])
                    for i in range(0, xs.shape[0], EVAL_CHUNK)
                ]
            )
        tokens = prompt_tokens(xs, ys, self.config.n_dims, self.config.n_positions)
        if tokens.dtype != self.read_in.weight.dtype:
            raise TypeError(
                f"xs: expected dtype {self.read_in.weight.dtype} like the model's "
                f"weights, got {tokens.dtype} (convert the batch with .to(dtype=...))"
            )
        n = tokens.shape[1] // 2
        h = self.read_in(tokens) + self.position_embeddings(n)  # (B, 2n, C)
        for layer, block in enumerate(self.blocks):
            h = block(h, cache, f"blocks.{layer}.")
        return self.ln_f(h)[:, ::2]  # the x tokens, where predictions are made

    def position_embeddings(self, n: int) -> torch.Tensor:
        """What is added to the ``2n`` tokens of an ``n``-point prompt: ``(2n, C)``."""
        check_positive_int("n", n)
        if n > self.config.n_positions:
            raise ValueError(
                f"n: expected at most n_positions = {self.config.n_positions} points, "
                f"got {n}"
            )
        if self.config.positions == "types":
            return self.wpe.weight.repeat(n, 1)  # x, y, x, y, ...
        if self.config.positions == "learned":
            return self.wpe.weight[: 2 * n]
        return self.wpe.weight[: 2 * n] + self.wtt.weight.repeat(n, 1)

    def predict_prefixes(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The prediction of every ``y_k`` from the ``k`` examples before it:
        ``(B, n)``."""
        return self(xs, ys)

    def predict(
        self, xs: torch.Tensor, ys: torch.Tensor, x_query: torch.Tensor
    ) -> torch.Tensor:
        """The prediction for ``x_query (B, d)`` after the context ``xs (B, k, d)``,
        ``ys (B, k)``: ``(B,)``."""
        B, k, d = check_prompt(xs, ys, x_query)
        full_x = torch.cat((xs, x_query.unsqueeze(1)), dim=1)
        full_y = torch.cat(
            (ys, ys.new_zeros(B, 1)), dim=1
        )  # the query's label is never seen
        return self(full_x, full_y)[:, k]

    def run_with_cache(
        self, xs: torch.Tensor, ys: torch.Tensor
    ) -> tuple[torch.Tensor, dict]:
        """``(predictions (B, n), cache)``: the forward pass and every named activation.

        Per layer ``l``: ``blocks.{l}.hook_resid_pre`` / ``hook_resid_mid`` /
        ``hook_resid_post`` ``(B, 2n, C)``; ``blocks.{l}.attn.hook_q`` / ``hook_k`` /
        ``hook_v`` / ``hook_z`` ``(B, H, 2n, C/H)`` and ``blocks.{l}.attn.hook_pattern``
        ``(B, H, 2n, 2n)``.
        """
        cache: dict = {}
        return self(xs, ys, cache=cache), cache

    def load_backbone(self, parent: ICLTransformer) -> None:
        """Copy every weight of ``parent`` except its read-out (a warm start for a
        model with another head, chapter 4); the backbones must have one shape."""
        check_instance("parent", parent, ICLTransformer, "an ICLTransformer")
        state = {
            name: value
            for name, value in parent.state_dict().items()
            if not name.startswith("read_out.")
        }
        missing, unexpected = self.load_state_dict(state, strict=False)
        if unexpected or set(missing) != {"read_out.weight", "read_out.bias"}:
            raise ValueError(
                "parent: expected a backbone of the same shape, got missing "
                f"{missing} and unexpected {unexpected} weights"
            )

    def n_params(self) -> int:
        """Number of trainable parameters (no unused token table, unlike GPT-2's
        count)."""
        return sum(p.numel() for p in self.parameters())
