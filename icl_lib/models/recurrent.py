"""Sequence mixers beyond attention: a diagonal linear recurrence, a small selective
state-space layer (Mamba-like) and hybrids, on the GPT-style backbone of chapter 1.

A *mixer* maps a sequence ``u (B, T, C)`` to ``(B, T, C)``, output ``t`` depending on
``u_1..u_t`` only. Three kinds sit in the pre-LayerNorm block of
:class:`icl_lib.models.gpt.Block`, in the place of its attention (under the name
``attn``, so hooks keep their names):

* ``"attn"``: causal softmax attention (:class:`.gpt.CausalSelfAttention`), whose
  cache of keys and values grows with ``T``;
* ``"diag"``: :class:`DiagonalRecurrence`, ``h_t = a * h_{t-1} + B u_t``,
  ``y_t = C h_t + D * u_t``, a time-invariant recurrence with a fixed state of
  ``state_dim`` numbers (an S4D / LRU-like layer with real decays);
* ``"selective"``: :class:`SelectiveSSM`, the selective scan of Mamba (Gu and Dao 2023)
  with input-dependent step ``Delta_t``, input matrix ``B_t`` and read-out ``C_t``, a
  short causal convolution and a SiLU gate; its state has ``expand * C * state_dim``
  numbers whatever ``T``.

:class:`SequenceRegressor` reads chapter 1's interleaved regression prompts and answers
``predict`` / ``predict_prefixes`` like :class:`icl_lib.models.gpt.ICLTransformer`;
:class:`SequenceTokenModel` reads tokens and returns next-token logits (recall).
A hybrid is a list of kinds, e.g. Park et al. (ICML 2024)'s MambaFormer: a selective
block first (in place of positions), then attention and selective blocks alternating.
:class:`RecurrentContextual` turns any mixer into a contextual layer of chapter 7, where
the implicit rank-1 update (Dherin et al. 2025) applies. Used in chapter 9.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_batch,
    check_cache,
    check_finite,
    check_instance,
    check_positive_int,
    check_prompt,
    check_seed,
    check_stream,
    check_tensor,
)
from ..tasks.tokens import check_tokens
from .contextual import ContextualLayer
from .gpt import Block, TransformerConfig, prompt_tokens

MIXERS = ("attn", "diag", "selective")


def check_mixer_input(u) -> torch.Tensor:
    """Check a mixer's input: a finite float tensor ``(B, T, C)``."""
    return check_finite("u", check_batch("u", check_tensor("u", u, 3)))


class DiagonalRecurrence(nn.Module):
    """A diagonal linear time-invariant recurrence: ``(B, T, C) -> (B, T, C)``.

    ``h_t = a * h_{t-1} + B u_t`` (``h_0 = 0``, state ``(state_dim,)``) and
    ``y_t = C h_t + D * u_t``. The decays ``a = exp(-exp(log_rate))`` lie in ``(0, 1)``
    for every value of the parameter, so the recurrence is stable by construction
    (the parameterisation of S4D / LRU with real eigenvalues). ``a``, ``B`` and ``C``
    do not depend on the input: what a token writes into the state, and how fast it
    fades, is the same for every token. Chapter 9.
    """

    def __init__(self, n_embd: int, state_dim: int):
        super().__init__()
        check_positive_int("n_embd", n_embd)
        self.state_dim = check_positive_int("state_dim", state_dim)
        self.B = nn.Linear(n_embd, state_dim, bias=False)
        self.C = nn.Linear(state_dim, n_embd, bias=False)
        self.D = nn.Parameter(torch.ones(n_embd))
        # decays spread from 0.5 to 0.999 (memories of 1.4 to 1000 tokens)
        rates = -torch.log(torch.linspace(0.5, 0.999, state_dim))
        self.log_rate = nn.Parameter(rates.log())

    @property
    def decay(self) -> torch.Tensor:
        """``a = exp(-exp(log_rate))``, ``(state_dim,)``, in ``(0, 1)``."""
        return torch.exp(-torch.exp(self.log_rate))

    def states(self, u: torch.Tensor) -> torch.Tensor:
        """Every state ``h_t``, ``(B, T, state_dim)``:
        ``h_t = sum_{s <= t} a^(t - s) B u_s``, computed as one causal convolution."""
        check_mixer_input(u)
        T = u.shape[1]
        log_a = -torch.exp(self.log_rate).to(u.dtype)  # (S,)
        t = torch.arange(T, device=u.device, dtype=u.dtype)
        lag = t[:, None] - t[None, :]  # (T, T): t - s
        kernel = torch.exp(lag.clamp(min=0)[..., None] * log_a)  # (T, T, S)
        kernel = kernel * (lag >= 0)[..., None].to(u.dtype)  # causal
        return torch.einsum("tsn,bsn->btn", kernel, self.B(u))

    def forward(self, u: torch.Tensor, cache=None, prefix: str = "") -> torch.Tensor:
        check_cache(cache, prefix)
        h = self.states(u)  # (B, T, S)
        if cache is not None:
            cache[f"{prefix}hook_state"] = h
        return self.C(h) + self.D * u


class SelectiveSSM(nn.Module):
    """A small selective state-space layer (Mamba's block, Gu and Dao 2023, without
    the hardware-aware scan): ``(B, T, C) -> (B, T, C)``.

    With ``E = expand * C`` channels and ``N = state_dim`` states per channel:
    ``(x, z) = in_proj(u)``; ``x <- silu(conv(x))`` (a causal depthwise convolution of
    width ``d_conv``); per token ``Delta_t = softplus(dt_proj(W_dt x_t)) (E,)``,
    ``B_t = W_B x_t (N,)``, ``C_t = W_C x_t (N,)``; then per channel ``e``

        h_t[e] = exp(Delta_t[e] A[e]) * h_{t-1}[e] + Delta_t[e] x_t[e] B_t,
        y_t[e] = <C_t, h_t[e]> + D[e] x_t[e],

    with ``A = -exp(A_log) < 0`` (so every factor ``exp(Delta A)`` is in ``(0, 1)``) and
    the output ``out_proj(y * silu(z))``. ``B_t`` and ``C_t`` depend on the token: the
    state ``h_t (E, N)`` is a decaying sum of outer products ``x_s B_s^T``, read by
    ``C_t``, which is linear attention with input-dependent decay (Dao and Gu 2024).
    The scan is a loop over ``T`` (fine for the book's sizes). Chapter 9.
    """

    def __init__(
        self,
        n_embd: int,
        state_dim: int = 8,
        expand: int = 1,
        d_conv: int = 4,
        dt_rank: int = 4,
    ):
        super().__init__()
        check_positive_int("n_embd", n_embd)
        self.state_dim = check_positive_int("state_dim", state_dim)
        self.expand = check_positive_int("expand", expand)
        self.d_conv = check_positive_int("d_conv", d_conv)
        self.dt_rank = check_positive_int("dt_rank", dt_rank)
        E, N = expand * n_embd, state_dim
        self.in_proj = nn.Linear(n_embd, 2 * E, bias=False)
        self.conv = nn.Conv1d(E, E, d_conv, groups=E, padding=d_conv - 1)
        self.x_proj = nn.Linear(E, dt_rank + 2 * N, bias=False)
        self.dt_proj = nn.Linear(dt_rank, E)
        # Mamba's initialisation: Delta in [0.001, 0.1], A = -(1..N) per channel
        dt = torch.exp(
            torch.rand(E) * (math.log(0.1) - math.log(0.001)) + math.log(0.001)
        )
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.A_log = nn.Parameter(
            torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(E, 1)
        )
        self.D = nn.Parameter(torch.ones(E))
        self.out_proj = nn.Linear(E, n_embd, bias=False)

    def gates(self, u: torch.Tensor):
        """``(x, z, Delta, B, C)`` per token: ``x, z, Delta (B, T, E)``,
        ``B, C (B, T, N)``."""
        check_mixer_input(u)
        T = u.shape[1]
        x, z = self.in_proj(u).chunk(2, dim=-1)  # (B, T, E) each
        x = F.silu(self.conv(x.transpose(1, 2))[..., :T].transpose(1, 2))
        dt, Bt, Ct = self.x_proj(x).split(
            (self.dt_rank, self.state_dim, self.state_dim), dim=-1
        )
        delta = F.softplus(self.dt_proj(dt))  # (B, T, E)
        return x, z, delta, Bt, Ct

    def forward(self, u: torch.Tensor, cache=None, prefix: str = "") -> torch.Tensor:
        check_cache(cache, prefix)
        x, z, delta, Bt, Ct = self.gates(u)
        A = -torch.exp(self.A_log).to(u.dtype)  # (E, N)
        decay = torch.exp(delta[..., None] * A)  # (B, T, E, N)
        drive = (delta * x)[..., None] * Bt[:, :, None, :]  # (B, T, E, N)
        h = u.new_zeros(decay.shape[0], *decay.shape[2:])  # (B, E, N)
        ys = []
        for t in range(u.shape[1]):
            h = decay[:, t] * h + drive[:, t]
            ys.append((h * Ct[:, t, None, :]).sum(-1))  # (B, E)
        y = torch.stack(ys, dim=1) + self.D * x  # (B, T, E)
        if cache is not None:
            cache[f"{prefix}hook_delta"] = delta
            cache[f"{prefix}hook_state_last"] = h
        return self.out_proj(y * F.silu(z))


@dataclass(frozen=True)
class SequenceModelConfig:
    """Shape of a :class:`SequenceRegressor` or :class:`SequenceTokenModel`: a stack of
    pre-LN blocks whose mixers are ``layers``."""

    layers: tuple = ("selective", "selective")  # mixer kind per block, from MIXERS
    n_embd: int = 64  # residual stream width C
    n_head: int = 2  # attention heads of the "attn" blocks
    state_dim: int = 16  # state size: per channel ("selective") or in all ("diag")
    expand: int = 1  # channels E = expand * n_embd of the selective mixers
    positions: bool = False  # learned position embeddings (attention needs them)
    n_dims: int = 5  # regression: input dimension d
    n_positions: int = 21  # regression: most (x, y) pairs / tokens: n_ctx / 2
    vocab_size: int = 0  # token model: vocabulary size V (0: a regression model)

    def __post_init__(self):
        if isinstance(self.layers, list):
            object.__setattr__(self, "layers", tuple(self.layers))
        if not isinstance(self.layers, tuple) or not self.layers:
            raise ValueError(
                f"layers: expected a non-empty tuple of kinds from {MIXERS}, got "
                f"{self.layers!r}"
            )
        for kind in self.layers:
            if kind not in MIXERS:
                raise ValueError(f"layers: expected kinds from {MIXERS}, got {kind!r}")
        for name in ("n_embd", "n_head", "state_dim", "expand", "n_dims"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("n_positions", self.n_positions)
        check_positive_int("vocab_size", self.vocab_size, minimum=0)
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_head: expected a divisor of n_embd = {self.n_embd}, got "
                f"{self.n_head}"
            )
        if not isinstance(self.positions, bool):
            raise TypeError(
                f"positions: expected a bool, got {type(self.positions).__name__}"
            )

    @property
    def n_layer(self) -> int:
        return len(self.layers)

    @property
    def n_ctx(self) -> int:
        """Most tokens a sequence may have (``2 * n_positions``)."""
        return 2 * self.n_positions

    def to_dict(self) -> dict:
        out = asdict(self)
        out["layers"] = list(self.layers)
        return out

    def build(self, seed: int = 0):
        """A freshly initialised model (from the global seed, set to ``seed``): a
        :class:`SequenceTokenModel` if ``vocab_size`` else a
        :class:`SequenceRegressor`."""
        torch.manual_seed(check_seed("seed", seed))
        return SequenceTokenModel(self) if self.vocab_size else SequenceRegressor(self)


def make_mixer(kind: str, config: SequenceModelConfig) -> nn.Module:
    """The mixer of ``kind`` (one of :data:`MIXERS`) at ``config``'s width."""
    check_instance("config", config, SequenceModelConfig, "a SequenceModelConfig")
    if kind not in MIXERS:
        raise ValueError(f"kind: expected one of {MIXERS}, got {kind!r}")
    if kind == "attn":
        return Block(_attn_config(config)).attn
    if kind == "diag":
        return DiagonalRecurrence(config.n_embd, config.state_dim)
    return SelectiveSSM(config.n_embd, config.state_dim, config.expand)


def _attn_config(config: SequenceModelConfig) -> TransformerConfig:
    return TransformerConfig(
        n_dims=config.n_dims,
        n_positions=config.n_positions,
        n_embd=config.n_embd,
        n_layer=config.n_layer,
        n_head=config.n_head,
    )


def mixer_block(kind: str, config: SequenceModelConfig) -> Block:
    """A pre-LN block of :mod:`icl_lib.models.gpt` whose attention is replaced by the
    mixer ``kind``: ``h + mixer(ln(h))``, then ``h + mlp(ln(h))``."""
    check_instance("config", config, SequenceModelConfig, "a SequenceModelConfig")
    block = Block(_attn_config(config))
    if kind != "attn":
        block.attn = make_mixer(kind, config)
    return block


class _Backbone(nn.Module):
    def __init__(self, config: SequenceModelConfig):
        check_instance("config", config, SequenceModelConfig, "a SequenceModelConfig")
        super().__init__()
        if not isinstance(config, SequenceModelConfig):
            raise TypeError(
                f"config: expected a SequenceModelConfig, got {type(config).__name__}"
            )
        self.config = config
        self.wpe = (
            nn.Embedding(config.n_ctx, config.n_embd) if config.positions else None
        )
        self.blocks = nn.ModuleList(mixer_block(kind, config) for kind in config.layers)
        self.ln_f = nn.LayerNorm(config.n_embd)

    def _run(self, h: torch.Tensor, cache) -> torch.Tensor:
        if self.wpe is not None:
            h = h + self.wpe.weight[: h.shape[1]]
        for layer, block in enumerate(self.blocks):
            h = block(h, cache, f"blocks.{layer}.")
        return self.ln_f(h)

    def n_params(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters())


class SequenceRegressor(_Backbone):
    """An in-context regressor with any stack of mixers:
    ``forward(xs (B, n, d), ys (B, n)) -> predictions (B, n)``.

    The prompt is read exactly as by :class:`icl_lib.models.gpt.ICLTransformer`
    (chapter 1): interleaved tokens ``x_i, (y_i, 0..0)``, one linear read-in, a linear
    read-out at each ``x_i`` token, so prediction ``i`` sees ``i - 1`` examples.
    Inputs with ``d < n_dims`` are zero-padded.
    """

    def __init__(self, config: SequenceModelConfig):
        check_instance("config", config, SequenceModelConfig, "a SequenceModelConfig")
        super().__init__(config)
        if config.vocab_size:
            raise ValueError(
                f"config: expected vocab_size = 0 for a regressor, got "
                f"{config.vocab_size}"
            )
        self.read_in = nn.Linear(config.n_dims, config.n_embd)
        self.read_out = nn.Linear(config.n_embd, 1)

    def forward(self, xs, ys, *, cache: dict | None = None) -> torch.Tensor:
        check_cache(cache)
        tokens = prompt_tokens(xs, ys, self.config.n_dims, self.config.n_positions)
        if tokens.dtype != self.read_in.weight.dtype:
            raise TypeError(
                f"xs: expected dtype {self.read_in.weight.dtype} like the model's "
                f"weights, got {tokens.dtype} (convert the batch with .to(dtype=...))"
            )
        h = self.read_in(tokens)  # (B, 2n, C)
        return self.read_out(self._run(h, cache)[:, ::2]).squeeze(-1)  # (B, n)

    def predict_prefixes(self, xs, ys) -> torch.Tensor:
        """The prediction of every ``y_k`` from the ``k`` examples before it:
        ``(B, n)``."""
        return self(xs, ys)

    def predict(self, xs, ys, x_query) -> torch.Tensor:
        """The prediction for ``x_query (B, d)`` after ``xs (B, k, d)``, ``ys (B, k)``:
        ``(B,)``."""
        B, k, d = check_prompt(xs, ys, x_query)
        full_x = torch.cat((xs, x_query.unsqueeze(1)), dim=1)
        full_y = torch.cat((ys, ys.new_zeros(B, 1)), dim=1)  # never seen
        return self(full_x, full_y)[:, k]


class SequenceTokenModel(_Backbone):
    """A causal language model with any stack of mixers:
    ``forward(tokens (B, T)) -> logits (B, T, V)`` (logits at ``t`` from
    ``x_0..x_t``)."""

    def __init__(self, config: SequenceModelConfig):
        check_instance("config", config, SequenceModelConfig, "a SequenceModelConfig")
        super().__init__(config)
        if not config.vocab_size:
            raise ValueError(
                "config: expected vocab_size >= 1 for a token model, got 0"
            )
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, tokens, *, cache: dict | None = None) -> torch.Tensor:
        check_cache(cache)
        check_tokens(tokens, self.config.vocab_size)
        if tokens.shape[1] > self.config.n_ctx:
            raise ValueError(
                f"tokens: expected at most n_ctx = {self.config.n_ctx} tokens per "
                f"sequence, got {tokens.shape[1]}"
            )
        return self.lm_head(self._run(self.wte(tokens), cache))


class RecurrentContextual(ContextualLayer):
    """A causal mixer read as a contextual layer of chapter 7 (Dherin et al. 2025):
    ``A(C, x)`` is the mixer's output at the position of ``x`` after
    ``[c_1, ..., c_n, x]``.

    ``mixer`` is ``"diag"`` or ``"selective"`` (at width ``width``, or ``in_dim`` when
    ``width`` is None), so the implicit rank-1 update of
    :func:`icl_lib.theory.implicit.implicit_update` applies to the book's recurrent
    layers. Chapter 9.
    """

    def __init__(
        self,
        in_dim: int,
        width: int | None = None,
        *,
        mixer: str = "selective",
        state_dim: int = 4,
        residual: bool = False,
        pre_norm: bool = False,
    ):
        super().__init__(in_dim, width, residual=residual, pre_norm=pre_norm)
        if mixer not in ("diag", "selective"):
            raise ValueError(f"mixer: expected 'diag' or 'selective', got {mixer!r}")
        self.mixer = (
            DiagonalRecurrence(self.out_dim, state_dim)
            if mixer == "diag"
            else SelectiveSSM(self.out_dim, state_dim)
        )

    def mix(self, u: torch.Tensor) -> torch.Tensor:
        check_stream("u", u, self.out_dim)
        return self.mixer(u)[:, -1]


def state_numbers(config: SequenceModelConfig, n_tokens: int) -> int:
    """How many numbers a model carries from one token to the next after
    ``n_tokens`` tokens, summed over blocks: an attention block caches a key and a
    value (``2 C``) per token seen, a ``diag`` block ``state_dim``, a ``selective``
    block ``expand * C * state_dim`` plus its convolution's last ``d_conv - 1`` inputs
    (``expand * C`` each), whatever ``n_tokens``."""
    if not isinstance(config, SequenceModelConfig):
        raise TypeError(
            f"config: expected a SequenceModelConfig, got {type(config).__name__}"
        )
    check_positive_int("n_tokens", n_tokens, minimum=0)
    C, total = config.n_embd, 0
    for kind in config.layers:
        if kind == "attn":
            total += 2 * C * n_tokens
        elif kind == "diag":
            total += config.state_dim
        else:
            E = config.expand * C
            total += E * config.state_dim + E * 3  # d_conv = 4 keeps 3 inputs
    return total


def _check_qkv(q, k, v) -> None:
    for name, value in (("q", q), ("k", k), ("v", v)):
        check_finite(name, check_tensor(name, value, 3))
    if k.shape != q.shape:
        raise ValueError(
            f"k: expected the shape of q {tuple(q.shape)}, got {tuple(k.shape)}"
        )
    if v.shape[:2] != q.shape[:2] or v.dtype != q.dtype or k.dtype != q.dtype:
        raise ValueError(
            f"v: expected shape (B, T, dv) with (B, T) = {tuple(q.shape[:2])} and "
            f"dtype {q.dtype}, got {tuple(v.shape)} and {v.dtype}"
        )


def linear_attention_parallel(q, k, v) -> torch.Tensor:
    """Causal linear attention ``o_t = sum_{s <= t} (q_t . k_s) v_s``: ``q, k (B, T,
    dk)``, ``v (B, T, dv)`` -> ``(B, T, dv)`` (Katharopoulos et al. 2020; the layer of
    chapter 2 without its normalisation)."""
    _check_qkv(q, k, v)
    T = q.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    scores = (q @ k.transpose(1, 2)).masked_fill(~mask, 0.0)  # (B, T, T)
    return scores @ v


def linear_attention_recurrent(q, k, v) -> torch.Tensor:
    """The same outputs as :func:`linear_attention_parallel` from a recurrence with a
    matrix state: ``S_t = S_{t-1} + v_t k_t^T`` (``(dv, dk)``), ``o_t = S_t q_t``."""
    _check_qkv(q, k, v)
    S = q.new_zeros(q.shape[0], v.shape[2], q.shape[2])  # (B, dv, dk)
    outs = []
    for t in range(q.shape[1]):
        S = S + v[:, t, :, None] * k[:, t, None, :]
        outs.append((S @ q[:, t, :, None]).squeeze(-1))
    return torch.stack(outs, dim=1)
