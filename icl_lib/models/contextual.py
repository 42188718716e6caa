"""Contextual layers and contextual blocks (Dherin et al. 2025, "Learning without
training").

A *contextual layer* ``A`` maps a query token ``x`` and an optional context
``C = (c_1, ..., c_n)`` to one vector ``A(C, x)``: the layer's output at the position of
``x``. With no context it gives ``A(x)``. Self-attention, linear attention, local
(windowed) attention and recurrent layers are all contextual layers. A *contextual
block* stacks a contextual layer and an MLP whose first layer is dense,
``T_W(C, x) = M_W(A(C, x))`` with ``M_W(z) = W' g(W z + b) + b'``; with a skip
connection around the MLP it becomes ``T(C, x) = s(C, x) + M_W(norm(s(C, x)))``.

Every layer here takes ``context (B, n, D)`` (``n = 0`` allowed) and ``x (B, D)`` and
returns ``(B, m)``; the MLP accepts a per-prompt first weight ``W (B, h, m)`` and output
bias ``(B, out)``, which is how :mod:`icl_lib.theory.implicit` evaluates ``T_{W + dW}``.
Used in chapter 7.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_batch,
    check_bool,
    check_finite,
    check_positive_int,
    check_seed,
    check_stream,
    check_tensor,
)
from ..prompts import context_and_query

ACTIVATIONS = {"relu": torch.relu, "gelu": F.gelu, "tanh": torch.tanh}


def check_block(block) -> ContextualBlock:
    """``block`` itself, after checking that it is a :class:`ContextualBlock`."""
    if not isinstance(block, ContextualBlock):
        raise TypeError(
            f"block: expected a ContextualBlock, got {type(block).__name__}"
        )
    return block


def check_context(context, x, in_dim: int) -> None:
    """Check a contextual layer's input: ``context (B, n, in_dim)`` and
    ``x (B, in_dim)``, one dtype."""
    check_positive_int("in_dim", in_dim)
    check_tensor("context", context, 3)
    check_tensor("x", x, 2)
    B, _, D = context.shape
    if D != in_dim:
        raise ValueError(
            f"context: expected tokens of size in_dim = {in_dim}, got shape "
            f"{tuple(context.shape)}"
        )
    if tuple(x.shape) != (B, in_dim):
        raise ValueError(
            f"x: expected shape (B, in_dim) = {(B, in_dim)} to match context, got "
            f"{tuple(x.shape)}"
        )
    if x.dtype != context.dtype:
        raise TypeError(
            f"x: expected dtype {context.dtype} (that of context), got {x.dtype}"
        )
    check_finite("context", context)
    check_finite("x", x)


class ContextualLayer(nn.Module):
    """Base class: ``forward(context (B, n, D), x (B, D)) -> A(C, x)`` of shape
    ``(B, out_dim)``.

    The tokens ``[c_1, ..., c_n, x]`` are first read in, ``u = E t`` (a linear map to
    ``width``, or the identity when ``width`` is None), optionally layer-normalised
    (``pre_norm``, as in a pre-LN transformer), then mixed by the subclass's
    :meth:`mix`, which returns the output at the last position. With ``residual`` the
    read-in query ``u_x`` is added to the output (the skip connection around attention),
    so ``A(C, x) = u_x + mix(...)``.
    """

    def __init__(
        self,
        in_dim: int,
        width: int | None = None,
        *,
        residual: bool = False,
        pre_norm: bool = False,
    ):
        super().__init__()
        self.in_dim = check_positive_int("in_dim", in_dim)
        self.out_dim = in_dim if width is None else check_positive_int("width", width)
        residual, pre_norm = (
            check_bool("residual", residual),
            check_bool("pre_norm", pre_norm),
        )
        self.read_in = nn.Identity() if width is None else nn.Linear(in_dim, width)
        self.pre_norm = nn.LayerNorm(self.out_dim) if pre_norm else nn.Identity()
        self.residual = residual

    def mix(self, u: torch.Tensor) -> torch.Tensor:
        """The output at the last position from the tokens ``u (B, T, width)``;
        ``(B, width)``."""
        raise NotImplementedError

    def forward(self, context: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        check_context(context, x, self.in_dim)
        u = self.read_in(torch.cat((context, x[:, None, :]), dim=1))  # (B, n + 1, m)
        out = self.mix(self.pre_norm(u))  # (B, m)
        return u[:, -1] + out if self.residual else out


class _Heads(ContextualLayer):
    """Shared parts of the attention layers: ``W_Q, W_K, W_V`` (stacked) and ``W_O``,
    ``n_head`` heads."""

    def __init__(
        self, in_dim, width=None, *, n_head: int = 1, residual=False, pre_norm=False
    ):
        super().__init__(in_dim, width, residual=residual, pre_norm=pre_norm)
        self.n_head = check_positive_int("n_head", n_head)
        if self.out_dim % n_head:
            raise ValueError(
                f"n_head: expected a divisor of the width {self.out_dim}, got {n_head}"
            )
        self.W_QKV = nn.Linear(self.out_dim, 3 * self.out_dim, bias=False)
        self.W_O = nn.Linear(self.out_dim, self.out_dim, bias=False)

    def _qkv(self, u):
        B, T, m = u.shape
        H = self.n_head
        q, k, v = self.W_QKV(u).split(m, dim=2)
        q = q[:, -1].view(B, H, 1, m // H)  # only the query position is needed
        k, v = (
            t.view(B, T, H, m // H).transpose(1, 2) for t in (k, v)
        )  # (B, H, T, m/H)
        return q, k, v

    def _out(self, heads):  # heads (B, H, 1, m/H) -> (B, m)
        return self.W_O(heads.squeeze(2).reshape(heads.shape[0], -1))


class SoftmaxAttention(_Heads):
    """Multi-head softmax self-attention read at the query:
    ``W_O sum_j softmax_j(q^T k_j / sqrt(d_h)) v_j``.

    The query attends to every context token and to itself (causal attention at the last
    position).
    """

    def mix(self, u):
        check_stream("u", u, self.out_dim)
        q, k, v = self._qkv(u)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])  # (B, H, 1, T)
        return self._out(torch.softmax(scores, dim=-1) @ v)


class LinearAttention(_Heads):
    """Linear (unnormalised-kernel) attention: ``W_O (1/T) sum_j (q^T k_j) v_j`` over
    the ``T = n + 1`` tokens.

    The layer of von Oswald et al. (2023) up to their parameterisation; no softmax.
    """

    def mix(self, u):
        check_stream("u", u, self.out_dim)
        q, k, v = self._qkv(u)
        return self._out((q @ k.transpose(-1, -2)) @ v / u.shape[1])


class LocalAttention(SoftmaxAttention):
    """Softmax attention over a sliding window: the query sees only the last ``window``
    tokens (itself included).

    Tokens further back than ``window - 1`` positions do not reach the query, so
    absorbing them gives ``dA = 0`` and ``dW = 0`` (as in Griffin's local attention or
    Longformer).
    """

    def __init__(
        self,
        in_dim,
        width=None,
        *,
        window: int = 4,
        n_head: int = 1,
        residual=False,
        pre_norm=False,
    ):
        super().__init__(
            in_dim, width, n_head=n_head, residual=residual, pre_norm=pre_norm
        )
        self.window = check_positive_int("window", window)

    def mix(self, u):
        check_stream("u", u, self.out_dim)
        return super().mix(u[:, -self.window :])


class DiagonalSSM(ContextualLayer):
    """A diagonal linear recurrence (a minimal state-space layer, Mamba/S4D-like without
    selectivity).

    ``h_t = a * h_{t-1} + B u_t`` with ``h_0 = 0`` and a decay
    ``a = sigmoid(log_a) in (0, 1)^state`` per channel, run over ``[c_1, ..., c_n, x]``;
    the output is ``C h_T``. Used as the recurrent contextual layer of chapter 7 (Park
    et al. 2024 compare such layers with attention).
    """

    def __init__(
        self, in_dim, width=None, *, state_dim: int = 8, residual=False, pre_norm=False
    ):
        super().__init__(in_dim, width, residual=residual, pre_norm=pre_norm)
        self.state_dim = check_positive_int("state_dim", state_dim)
        self.logit_decay = nn.Parameter(torch.linspace(-1.0, 3.0, state_dim))
        self.B = nn.Linear(self.out_dim, state_dim, bias=False)
        self.C = nn.Linear(state_dim, self.out_dim, bias=False)

    def mix(self, u):
        check_stream("u", u, self.out_dim)
        a = torch.sigmoid(self.logit_decay).to(u.dtype)  # (state,)
        drive = self.B(u)  # (B, T, state)
        T = u.shape[1]
        powers = (
            a[None, :] ** torch.arange(T - 1, -1, -1, dtype=u.dtype)[:, None]
        )  # (T, state): a^(T-1-t)
        return self.C((powers[None] * drive).sum(1))  # h_T = sum_t a^(T-1-t) B u_t


LAYERS = {
    "softmax": SoftmaxAttention,
    "linear": LinearAttention,
    "local": LocalAttention,
    "ssm": DiagonalSSM,
}


class MLP(nn.Module):
    """``M_W(z) = W' g(W z + b) + b'``; ``W`` (the first dense weight,
    ``(hidden, in_dim)``) is what ICL updates.

    ``forward(z, W=None, b_out=None)`` may replace ``W`` by a per-prompt
    ``(B, hidden, in_dim)`` tensor and ``b'`` by a ``(B, out_dim)`` one: that is how
    ``T_{W + dW}`` is evaluated.
    """

    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, activation: str = "relu"
    ):
        super().__init__()
        self.in_dim = check_positive_int("in_dim", in_dim)
        self.hidden = check_positive_int("hidden", hidden)
        self.out_dim = check_positive_int("out_dim", out_dim)
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation: expected one of {sorted(ACTIVATIONS)}, got {activation!r}"
            )
        self.activation = activation
        first, second = nn.Linear(in_dim, hidden), nn.Linear(hidden, out_dim)
        self.W, self.b = first.weight, first.bias  # (hidden, in_dim), (hidden,)
        self.W_out, self.b_out = (
            second.weight,
            second.bias,
        )  # (out_dim, hidden), (out_dim,)

    def forward(
        self,
        z: torch.Tensor,
        W: torch.Tensor | None = None,
        b_out: torch.Tensor | None = None,
    ):
        check_batch("z", check_tensor("z", z, 2))
        B = z.shape[0]
        if z.shape[1] != self.in_dim:
            raise ValueError(
                f"z: expected shape (B, in_dim = {self.in_dim}), got {tuple(z.shape)}"
            )
        check_finite("z", z)
        if W is None:
            pre = z @ self.W.T
        else:
            check_tensor("W", W, 3)
            if tuple(W.shape) != (B, self.hidden, self.in_dim):
                raise ValueError(
                    "W: expected shape (B, hidden, in_dim) = "
                    f"{(B, self.hidden, self.in_dim)}, got {tuple(W.shape)}"
                )
            pre = torch.einsum("bhm,bm->bh", W, z)
        out = ACTIVATIONS[self.activation](pre + self.b) @ self.W_out.T
        if b_out is None:
            return out + self.b_out
        check_tensor("b_out", b_out, 2)
        if tuple(b_out.shape) != (B, self.out_dim):
            raise ValueError(
                f"b_out: expected shape (B, out_dim) = {(B, self.out_dim)}, got "
                f"{tuple(b_out.shape)}"
            )
        return out + b_out


class ContextualBlock(nn.Module):
    """``T_W = M_W o A``: a contextual layer, an optional normalisation, an MLP, an
    optional skip.

    Without ``skip``: ``T(C, x) = M_W(A(C, x))``. With ``skip``:
    ``T(C, x) = s(C, x) + M_W(A(C, x))`` where ``s`` is the layer's output (the residual
    stream) and ``A = norm(s)`` the MLP's input; ``norm`` is the identity or a LayerNorm
    (a pre-LN transformer block when the layer itself is built with
    ``residual=True, pre_norm=True``).

    Methods: :meth:`stream` gives ``s(C, x)``, :meth:`contextual` gives ``A(C, x)`` (the
    vector the theorem is about), ``forward(context, x, W=None, b_out=None)`` gives
    ``T``.
    """

    def __init__(
        self,
        layer: ContextualLayer,
        mlp: MLP,
        *,
        skip: bool = False,
        norm: bool = False,
    ):
        super().__init__()
        skip, norm = check_bool("skip", skip), check_bool("norm", norm)
        if not isinstance(layer, ContextualLayer):
            raise TypeError(
                f"layer: expected a ContextualLayer, got {type(layer).__name__}"
            )
        if not isinstance(mlp, MLP):
            raise TypeError(f"mlp: expected an MLP, got {type(mlp).__name__}")
        if mlp.in_dim != layer.out_dim:
            raise ValueError(
                f"mlp: expected in_dim = layer.out_dim = {layer.out_dim}, got "
                f"{mlp.in_dim}"
            )
        if skip and mlp.out_dim != layer.out_dim:
            raise ValueError(
                "mlp: a skip connection needs out_dim = layer.out_dim = "
                f"{layer.out_dim}, got {mlp.out_dim}"
            )
        self.layer, self.mlp, self.skip = layer, mlp, skip
        self.norm = nn.LayerNorm(layer.out_dim) if norm else nn.Identity()

    @property
    def W(self) -> torch.Tensor:
        """The MLP's first weight ``W``, shape ``(hidden, m)``."""
        return self.mlp.W

    def stream(self, context, x):
        """``s(C, x)``, the layer's output, ``(B, m)``."""
        return self.layer(context, x)

    def contextual(self, context, x):
        """``A(C, x) = norm(s(C, x))``, the MLP's input, ``(B, m)``."""
        return self.norm(self.layer(context, x))

    def forward(self, context, x, W=None, b_out=None):
        s = self.layer(context, x)
        out = self.mlp(self.norm(s), W, b_out)
        return s + out if self.skip else out


def make_block(
    kind: str,
    in_dim: int,
    *,
    width: int | None = None,
    hidden: int = 16,
    out_dim: int | None = None,
    skip: bool = False,
    pre_ln: bool = False,
    activation: str = "gelu",
    **layer_kwargs,
) -> ContextualBlock:
    """A contextual block with a layer of ``kind`` in ``LAYERS`` ('softmax', 'linear',
    'local', 'ssm').

    ``pre_ln`` builds a pre-LN transformer block (residual layer with a pre-norm, a
    LayerNorm before the MLP and the MLP's skip connection); ``skip`` alone adds the
    MLP's skip connection. ``out_dim`` defaults to the layer's width (required with a
    skip).
    """
    if kind not in LAYERS:
        raise ValueError(f"kind: expected one of {sorted(LAYERS)}, got {kind!r}")
    skip, pre_ln = check_bool("skip", skip), check_bool("pre_ln", pre_ln)
    if pre_ln:
        layer_kwargs.update(residual=True, pre_norm=True)
        skip = True
    layer = LAYERS[kind](in_dim, width, **layer_kwargs)
    mlp = MLP(
        layer.out_dim, hidden, layer.out_dim if out_dim is None else out_dim, activation
    )
    return ContextualBlock(layer, mlp, skip=skip, norm=pre_ln)


# --- the regression experiment of Dherin et al. (Section 4): tokens (x_i, y_i), query
# (x_q, 0) ---


class RegressionBlock(ContextualBlock):
    """A contextual block read as an in-context regressor (Dherin et al. 2025, Section
    4).

    The prompt becomes the tokens ``c_i = (x_i, y_i)`` and the query ``(x_q, 0)``
    (:func:`icl_lib.prompts.context_and_query`); the prediction of ``y_q`` is the last
    coordinate of ``T_W(C, (x_q, 0))``. ``W`` may replace the MLP's first weight per
    prompt.
    """

    def predict(self, xs, ys, x_query, W=None) -> torch.Tensor:
        """The prediction of ``y_q``, shape ``(B,)``."""
        context, query = context_and_query(xs, ys, x_query)
        return self(context, query, W)[:, -1]


@dataclass(frozen=True)
class RegressionBlockConfig:
    """Shape of the :class:`RegressionBlock` of chapter 7 (what a preset stores).

    Read-in to ``width``, softmax attention with its residual, an MLP without skip whose
    output has size ``d + 1``.
    """

    d: int = 5  # input dimension; tokens have d + 1 entries
    width: int = 32  # read-in / residual width m
    hidden: int = 64  # MLP hidden units (rows of W)
    n_head: int = 2  # attention heads

    def __post_init__(self):
        for name in ("d", "width", "hidden", "n_head"):
            check_positive_int(name, getattr(self, name))
        if self.width % self.n_head:
            raise ValueError(
                f"width: expected a multiple of n_head = {self.n_head}, got "
                f"{self.width}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self, seed: int = 0) -> RegressionBlock:
        """A freshly initialised block (from the global seed, set to ``seed``)."""
        torch.manual_seed(check_seed("seed", seed))
        d = self.d
        layer = SoftmaxAttention(d + 1, self.width, n_head=self.n_head, residual=True)
        return RegressionBlock(layer, MLP(self.width, self.hidden, d + 1, "relu"))
