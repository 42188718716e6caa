"""The book's variant of Reddy (ICLR 2024)'s network for bursty in-context
classification: two causal one-head softmax attention layers and an MLP classifier on
the query token.

What is Reddy's: his abstract calls his network "a minimal attention-only network":
attention layers with no MLP block between them, whose output at the query is read by
a classifier (in the paper's experiments, two one-head layers and a three-layer
MLP). The token encoding below (random label vectors ``N(0, I_D / D)``, a
one-hot position among ``2 * 32 + 1 = 65`` slots, a random shift of the sequence)
follows a public implementation of the task written in Reddy's notation, which we
could not check against his paper's text. What is the book's, chosen for this CPU run:
pre-LayerNorm, an output map per layer and a final LayerNorm; without them the book's
first version stayed on the plateau for 8000 steps.

A sequence ``x_1 l_1 ... x_N l_N x_q`` (:func:`icl_lib.tasks.bursty.bursty_sequences`)
becomes ``2N + 1`` tokens. An item token carries its vector ``x_i`` in ``R^D``; a label
token carries a fixed random vector of its label, ``u_l ~ N(0, I_D / D)`` (drawn from
the model's seed and stored as a buffer, not trained). Each token is concatenated with
a one-hot position among ``n_positions = P`` slots (``P = 65``, so a token
has ``D + P = 128`` coordinates). In training mode the sequence starts at a random slot
in ``0..P - 2N - 1`` (one per batch, from a generator seeded with the model), so only
relative positions carry over; in eval mode it starts at slot 0.

Each layer is pre-LayerNorm causal attention with one head and an output map,
``h + W_O attn(LN(h))``; a final LayerNorm and a ReLU MLP (widths ``mlp_width``,
``mlp_width``, ``L``) read the query token and give the ``L`` label logits. The query's
label can be read off the context only through attention: the induction-head solution
is a first layer whose label tokens attend to the item before them (a previous-token
head) and a second layer whose query attends to the label token whose item matches it
(an induction head). Chapter 6, experiment 4.

The attention patterns are recorded under TransformerLens's names
(``blocks.{l}.attn.hook_pattern`` ``(B, 1, T, T)``) by
:meth:`BurstyClassifier.run_with_cache`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from .._checks import (
    check_cache,
    check_finite,
    check_instance,
    check_positive_int,
    check_prompt,
    check_seed,
    check_stream,
    check_tensor,
)


@dataclass(frozen=True)
class BurstyClassifierConfig:
    """Shape of a :class:`BurstyClassifier` (the book's values by default; ``N``,
    ``L`` and ``D`` are Reddy's)."""

    dim: int = 63  # item dimension D
    n_labels: int = 32  # labels L (the classifier's outputs)
    n_context: int = 8  # item-label pairs N before the query
    n_layer: int = 2  # one-head causal attention layers
    mlp_width: int = 128  # hidden width of the 3-layer ReLU classifier
    n_positions: int = 65  # one-hot position slots P (at least 2N + 1)

    def __post_init__(self):
        for name in ("dim", "n_context", "n_layer", "mlp_width"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("n_labels", self.n_labels, minimum=2)
        check_positive_int("n_positions", self.n_positions, minimum=self.n_tokens)

    @property
    def n_tokens(self) -> int:
        """Tokens per sequence, ``2N + 1``."""
        return 2 * self.n_context + 1

    @property
    def width(self) -> int:
        """Residual stream width: ``D`` plus the one-hot position, ``D + P``."""
        return self.dim + self.n_positions

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self, seed: int = 0) -> BurstyClassifier:
        """A freshly initialised model (from the global seed, set to ``seed``)."""
        torch.manual_seed(check_seed("seed", seed))
        return BurstyClassifier(self)


class Attention(nn.Module):
    """Pre-LayerNorm causal softmax attention, one head, with a residual connection:
    ``h + W_O softmax(mask(Q K^T / sqrt(C))) V`` on ``LN(h)``."""

    def __init__(self, width: int):
        check_positive_int("width", width)
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.W_Q = nn.Linear(width, width)
        self.W_K = nn.Linear(width, width)
        self.W_V = nn.Linear(width, width)
        self.W_O = nn.Linear(width, width)

    def forward(
        self, h: torch.Tensor, cache: dict | None = None, prefix: str = ""
    ) -> torch.Tensor:
        check_cache(cache, prefix)
        check_stream("h", h, self.W_Q.in_features)
        T = h.shape[1]
        x = self.ln(h)
        q, k, v = self.W_Q(x), self.W_K(x), self.W_V(x)  # (B, T, C)
        scores = q @ k.transpose(-1, -2) / math.sqrt(h.shape[-1])  # (B, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()
        pattern = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        if cache is not None:
            cache[f"{prefix}hook_pattern"] = pattern[:, None]  # (B, 1, T, T)
        return h + self.W_O(pattern @ v)


class BurstyClassifier(nn.Module):
    """The book's variant of Reddy's classifier: ``forward(xs (B, N + 1, D),
    labels (B, N)) -> logits (B, L)`` for the query ``xs[:, -1]`` (module doc).
    Shorter contexts, ``k < N`` pairs and a query, are accepted too (``2k + 1``
    tokens)."""

    def __init__(self, config: BurstyClassifierConfig):
        check_instance(
            "config", config, BurstyClassifierConfig, "a BurstyClassifierConfig"
        )
        super().__init__()
        self.config = config
        seed = torch.initial_seed() % 2**63
        gen = torch.Generator().manual_seed(seed)
        label_vectors = torch.randn(config.n_labels, config.dim, generator=gen)
        self.register_buffer("label_vectors", label_vectors / math.sqrt(config.dim))
        self.register_buffer("positions", torch.eye(config.n_positions))
        self.offsets = torch.Generator().manual_seed(seed + 1)  # training start slots
        self.blocks = nn.ModuleList(
            Attention(config.width) for _ in range(config.n_layer)
        )
        self.ln_f = nn.LayerNorm(config.width)
        w = config.mlp_width
        self.classifier = nn.Sequential(
            nn.Linear(config.width, w),
            nn.ReLU(),
            nn.Linear(w, w),
            nn.ReLU(),
            nn.Linear(w, config.n_labels),
        )

    def _check(self, xs, labels) -> None:
        c = self.config
        check_tensor("xs", xs, 3)
        check_tensor("labels", labels, 2, floating=False)
        if labels.dtype.is_floating_point or labels.dtype == torch.bool:
            raise TypeError(
                f"labels: expected an integer dtype (label indices), got {labels.dtype}"
            )
        if not (1 <= xs.shape[1] <= c.n_context + 1 and xs.shape[2] == c.dim):
            raise ValueError(
                f"xs: expected shape (B, k + 1, D) with k <= N = {c.n_context} and "
                f"D = {c.dim}, got {tuple(xs.shape)}"
            )
        check_finite("xs", xs)
        if tuple(labels.shape) != (xs.shape[0], xs.shape[1] - 1):
            raise ValueError(
                f"labels: expected shape (B, k) = {(xs.shape[0], xs.shape[1] - 1)} "
                f"to match xs of shape {tuple(xs.shape)}, got {tuple(labels.shape)}"
            )
        if labels.numel() and (labels.min() < 0 or labels.max() >= c.n_labels):
            raise ValueError(
                f"labels: expected values in [0, {c.n_labels}), got "
                f"[{labels.min().item()}, {labels.max().item()}]"
            )

    def tokens(self, xs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The input tokens ``(B, 2N + 1, D + P)``: items and label vectors
        interleaved, the query item last, each with its one-hot position (from slot 0
        in eval mode, from a random slot in training mode)."""
        self._check(xs, labels)
        B, n, D = xs.shape
        T = 2 * n - 1
        content = xs.new_zeros(B, T, D)
        content[:, 0::2] = xs  # items x_1..x_N, x_q
        content[:, 1::2] = self.label_vectors.to(xs.dtype)[labels]  # labels
        start = 0
        if self.training:
            slots = self.config.n_positions - T + 1
            start = int(torch.randint(0, slots, (), generator=self.offsets))
        positions = self.positions[start : start + T].to(xs.dtype).expand(B, -1, -1)
        return torch.cat([content, positions], dim=-1)

    def forward(
        self, xs: torch.Tensor, labels: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """Label logits ``(B, L)`` of the query ``xs[:, -1]`` given the context items
        ``xs[:, :-1]`` and their labels ``labels (B, N)`` (int64). With ``cache`` (a
        dict) every layer records its pattern."""
        check_cache(cache)
        h = self.tokens(xs, labels)
        for layer, block in enumerate(self.blocks):
            h = block(h, cache, f"blocks.{layer}.attn.")
        return self.classifier(self.ln_f(h[:, -1]))  # (B, L)

    def run_with_cache(self, xs, labels) -> tuple[torch.Tensor, dict]:
        """``(logits (B, L), cache)`` with ``blocks.{l}.attn.hook_pattern``
        ``(B, 1, 2N + 1, 2N + 1)``."""
        cache: dict = {}
        return self(xs, labels, cache=cache), cache

    def predict(self, xs, ys, x_query) -> torch.Tensor:
        """The book's predictor interface: the most likely label ``(B,)`` (as floats)
        of ``x_query (B, D)`` after the context ``xs (B, N, D)``, ``ys (B, N)`` (label
        indices as floats)."""
        B, N, _ = check_prompt(xs, ys, x_query)  # shapes that agree, finite values
        if ys.numel() and not torch.equal(ys, ys.round()):
            raise ValueError(
                "ys: expected label indices (whole numbers), got fractions"
            )
        self.eval()
        with torch.no_grad():
            logits = self(torch.cat([xs, x_query[:, None]], 1), ys.long())
        return logits.argmax(-1).to(xs.dtype)
