"""A prior-data fitted network (Müller et al. 2022): a transformer that outputs the
whole posterior predictive distribution of the query's label.

The backbone is chapter 1's causal GPT-style model (:class:`~.gpt.ICLTransformer`): at
the token ``x_k`` it has read the examples ``1..k-1``, so one forward pass gives the
predictive distribution of every ``y_k`` from the examples before it. Only the read-out
changes. Müller et al. use an encoder without positional encodings in which the
queries attend to the context only; the causal model trains every context size at once
and keeps chapter 1's trained weights usable as a starting point.

Two heads, selected by :attr:`PredictiveConfig.head`:

* ``"gaussian"``: a mean and a variance, ``N(mu, s^2)``;
* ``"riemann"``: Müller et al.'s bar ("Riemann") distribution, a softmax over buckets
  of equal prior mass with a constant density inside each, and half-normal tails in
  place of the two outer buckets so that every label has a positive density
  (:class:`BarDistribution`).

Trained by the negative log-likelihood of every label (``prefix_nll`` in
:mod:`icl_lib.training.losses`); chapter 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    check_batch,
    check_finite,
    check_instance,
    check_positive_int,
    check_real,
    check_seed,
    check_sequences,
    check_tensor,
)
from .gpt import ICLTransformer, TransformerConfig

HEADS = ("gaussian", "riemann")
MIN_VARIANCE = 1e-6  # keeps the Gaussian head's NLL finite at initialisation
# The standard half-normal's median, sqrt(2) erfinv(1/2): a tail of scale
# width / HALF_NORMAL_MEDIAN puts half its mass within one bucket width of the border.
HALF_NORMAL_MEDIAN = 0.6744897501960817


def _real_tuple(name: str, values) -> tuple[float, ...]:
    """``values``, a tuple or list of finite real numbers (bucket borders)."""
    if not isinstance(values, (tuple, list)):
        raise TypeError(
            f"{name}: expected a tuple of numbers, got {type(values).__name__}"
        )
    for value in values:
        check_real(name, value)
    return tuple(values)


def equal_mass_borders(samples: torch.Tensor, n_buckets: int) -> tuple[float, ...]:
    """Bucket borders of equal mass under the distribution of ``samples`` (1-D): the
    ``0, 1/n, ..., 1`` quantiles, rounded to 3 decimals so that a preset stores them
    exactly (Müller et al. choose the buckets this way from samples of the prior)."""
    samples = check_tensor("samples", samples, 1)
    samples = check_finite("samples", check_batch("samples", samples))
    check_positive_int("n_buckets", n_buckets, minimum=2)
    levels = torch.linspace(0, 1, n_buckets + 1, dtype=torch.float64)
    borders = torch.quantile(samples.to(torch.float64), levels)
    rounded = tuple(round(b, 3) for b in borders.tolist())
    if any(b >= c for b, c in zip(rounded, rounded[1:], strict=False)):
        raise ValueError(
            f"n_buckets: expected buckets wider than the 3-decimal rounding for these "
            f"samples, got {n_buckets} buckets with repeated borders"
        )
    return rounded


def _check_outputs(name: str, value, size: int) -> torch.Tensor:
    """A head's outputs ``(..., size)``: a finite float tensor."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    check_tensor(name, value, max(value.ndim, 1))
    if value.shape[-1] != size:
        raise ValueError(
            f"{name}: expected a last axis of {size} head outputs, got shape "
            f"{tuple(value.shape)}"
        )
    return check_finite(name, value)


def _check_labels(y, outputs_name: str, outputs: torch.Tensor) -> torch.Tensor:
    """Labels ``(...)``, one per row of the head's outputs ``(..., size)``."""
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"y: expected a torch.Tensor, got {type(y).__name__}")
    check_tensor("y", y, y.ndim)
    if y.shape != outputs.shape[:-1]:
        raise ValueError(
            f"y: expected shape {tuple(outputs.shape[:-1])} to match {outputs_name} "
            f"of shape {tuple(outputs.shape)}, got {tuple(y.shape)}"
        )
    return check_finite("y", y)


class BarDistribution(nn.Module):
    """Müller et al.'s Riemann distribution over ``len(borders) - 1`` buckets.

    Logits ``(..., n)`` give bucket probabilities ``p_b``. Inside an inner bucket the
    density is ``p_b / width_b``. The first and last buckets are half-normal tails that
    start at the inner border and carry mass ``p_b``; their scale puts half of that
    mass within one bucket width (the choice of Müller et al.'s
    ``FullSupportBarDistribution``), so the support is the whole real line.
    """

    def __init__(self, borders):
        super().__init__()
        if not isinstance(borders, torch.Tensor):
            borders = _real_tuple("borders", borders)
        borders = torch.as_tensor(borders, dtype=torch.float32)
        check_finite("borders", check_tensor("borders", borders, 1))
        if borders.numel() < 3 or not bool((borders[1:] > borders[:-1]).all()):
            raise ValueError(
                "borders: expected at least 3 strictly increasing values, got "
                f"{borders.numel()} values"
            )
        self.register_buffer("borders", borders, persistent=False)

    @property
    def n_buckets(self) -> int:
        return self.borders.numel() - 1

    def _widths(self, dtype):
        borders = self.borders.to(dtype)
        return borders, borders[1:] - borders[:-1]

    def _tail_scales(self, widths):
        return widths[0] / HALF_NORMAL_MEDIAN, widths[-1] / HALF_NORMAL_MEDIAN

    def log_density(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log p(y)`` for logits ``(..., n)`` and labels ``(...)``: ``(...)``."""
        _check_labels(y, "logits", _check_outputs("logits", logits, self.n_buckets))
        borders, widths = self._widths(logits.dtype)
        log_p = torch.log_softmax(logits, dim=-1)
        bucket = (torch.searchsorted(borders, y.contiguous()) - 1).clamp(
            0, self.n_buckets - 1
        )
        inner = (
            log_p.gather(-1, bucket.unsqueeze(-1)).squeeze(-1) - widths[bucket].log()
        )
        s_lo, s_hi = self._tail_scales(widths)
        # A half-normal of scale s at distance t >= 0: sqrt(2 / pi) / s exp(-t^2/2s^2).
        half = 0.5 * math.log(2 / math.pi)
        lo = log_p[..., 0] + half - s_lo.log() - (borders[1] - y) ** 2 / (2 * s_lo**2)
        hi = log_p[..., -1] + half - s_hi.log() - (y - borders[-2]) ** 2 / (2 * s_hi**2)
        out = torch.where(y <= borders[1], lo, inner)
        return torch.where(y >= borders[-2], hi, out)

    def cdf(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``P(Y <= y)`` for logits ``(..., n)`` and labels ``(...)``: ``(...)``."""
        _check_labels(y, "logits", _check_outputs("logits", logits, self.n_buckets))
        borders, widths = self._widths(logits.dtype)
        p = torch.softmax(logits, dim=-1)
        y = y.unsqueeze(-1)
        # Inner buckets: the share of each bucket below y, linear inside it.
        share = ((y - borders[:-1]) / widths).clamp(0, 1)
        s_lo, s_hi = self._tail_scales(widths)
        # Tails: the half-normal mass beyond the border, erfc(t / (s sqrt 2)).
        below_lo = torch.erfc((borders[1] - y).clamp(min=0) / (s_lo * math.sqrt(2)))
        above_hi = torch.erfc((y - borders[-2]).clamp(min=0) / (s_hi * math.sqrt(2)))
        share = torch.cat(
            (below_lo, share[..., 1:-1], 1 - above_hi), dim=-1
        )  # (..., n)
        return (p * share).sum(-1)

    def mean(self, logits: torch.Tensor) -> torch.Tensor:
        """The mean ``(...)`` of the distribution of logits ``(..., n)``."""
        _check_outputs("logits", logits, self.n_buckets)
        borders, widths = self._widths(logits.dtype)
        centres = (borders[:-1] + borders[1:]) / 2
        s_lo, s_hi = self._tail_scales(widths)
        tail = math.sqrt(2 / math.pi)  # the mean of a standard half-normal
        centres = torch.cat(
            (
                (borders[1] - tail * s_lo).reshape(1),
                centres[1:-1],
                (borders[-2] + tail * s_hi).reshape(1),
            )
        )
        return torch.softmax(logits, dim=-1) @ centres


@dataclass(frozen=True)
class PredictiveConfig(TransformerConfig):
    """An :class:`~.gpt.ICLTransformer` backbone and a distributional head."""

    head: str = "gaussian"  # "gaussian" (mean, variance) or "riemann" (buckets)
    borders: tuple[float, ...] = ()  # the Riemann head's bucket borders (increasing)

    def __post_init__(self):
        super().__post_init__()
        if self.head not in HEADS:
            raise ValueError(f"head: expected one of {HEADS}, got {self.head!r}")
        _real_tuple("borders", self.borders)
        if (self.head == "riemann") != bool(self.borders):
            raise ValueError(
                "borders: expected bucket borders exactly for the riemann head, got "
                f"{len(self.borders)} borders for head {self.head!r}"
            )

    def build(self, seed: int = 0) -> PredictiveTransformer:
        torch.manual_seed(check_seed("seed", seed))
        return PredictiveTransformer(self)


class PredictiveTransformer(ICLTransformer):
    """A causal in-context regressor that outputs a predictive distribution.

    ``predictive_params(xs, ys)`` gives the head's outputs at every ``x`` token
    ``(B, n, 2)`` (Gaussian: mean, raw variance) or ``(B, n, n_buckets)`` (logits);
    ``log_predictive`` the log density of every label under the prediction made
    before it; ``forward`` / ``predict`` / ``predict_prefixes`` the predictive mean,
    so that the model is scored like every other one.
    """

    def __init__(self, config: PredictiveConfig):
        check_instance("config", config, PredictiveConfig, "a PredictiveConfig")
        super().__init__(config)
        self.bars = (
            BarDistribution(config.borders) if config.head == "riemann" else None
        )
        n_out = 2 if self.bars is None else self.bars.n_buckets
        self.read_out = nn.Linear(config.n_embd, n_out)

    def predictive_params(
        self, xs: torch.Tensor, ys: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """The head's outputs at every ``x`` token: ``(B, n, 2)`` or
        ``(B, n, n_buckets)``."""
        return self.read_out(self.hidden(xs, ys, cache=cache))

    def _n_outputs(self) -> int:
        """Head outputs per position: 2 (mean, raw variance) or one per bucket."""
        return 2 if self.bars is None else self.bars.n_buckets

    def gaussian(self, params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and variance ``(...)`` of the Gaussian head's outputs ``(..., 2)``."""
        if self.bars is not None:
            raise ValueError(
                "head: expected a model with the gaussian head, got the riemann head"
            )
        _check_outputs("params", params, 2)
        return params[..., 0], F.softplus(params[..., 1]) + MIN_VARIANCE

    def mean(self, params: torch.Tensor) -> torch.Tensor:
        """The predictive mean for head outputs ``(..., m)``: ``(...)``."""
        _check_outputs("params", params, self._n_outputs())
        if self.bars is not None:
            return self.bars.mean(params)
        return params[..., 0]

    def log_density(self, params: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log p(y)`` under head outputs ``(..., m)`` for labels ``(...)``."""
        _check_labels(y, "params", _check_outputs("params", params, self._n_outputs()))
        if self.bars is not None:
            return self.bars.log_density(params, y)
        mu, var = self.gaussian(params)
        return -0.5 * (torch.log(2 * math.pi * var) + (y - mu) ** 2 / var)

    def cdf(self, params: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``P(Y <= y)`` under head outputs ``(..., m)`` for labels ``(...)``."""
        _check_labels(y, "params", _check_outputs("params", params, self._n_outputs()))
        if self.bars is not None:
            return self.bars.cdf(params, y)
        mu, var = self.gaussian(params)
        return 0.5 * torch.erfc((mu - y) / torch.sqrt(2 * var))

    def log_predictive(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """``log q(y_k | examples before k)`` for every label: ``(B, n)``."""
        check_sequences(xs, ys)
        return self.log_density(self.predictive_params(xs, ys), ys)

    def forward(
        self, xs: torch.Tensor, ys: torch.Tensor, *, cache: dict | None = None
    ) -> torch.Tensor:
        """The predictive mean of every label from the examples before it,
        ``(B, n)``."""
        return self.mean(self.predictive_params(xs, ys, cache=cache))

    def warm_start(self, parent: ICLTransformer) -> None:
        """Copy a trained chapter-1 model's backbone. The Gaussian head's mean starts
        as the parent's read-out, so the warm-started model predicts what the parent
        did; the Riemann head starts fresh."""
        check_instance("parent", parent, ICLTransformer, "an ICLTransformer")
        self.load_backbone(parent)
        if self.bars is None:
            with torch.no_grad():
                self.read_out.weight[0] = parent.read_out.weight[0]
                self.read_out.bias[0] = parent.read_out.bias[0]
