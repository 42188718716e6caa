"""Chapter 8's own figures: the gap between Han et al.'s kernel sum and the Bayes
predictive, the label slots of Cheng et al.'s attention layers, the filter factors of
functional gradient descent against ridge's, and the agreement of a softmax smoother
with a model against its temperature.

Like the rest of :mod:`icl_lib.plotting`, nothing here runs a model or an experiment:
each function takes numbers (or nothing, for the diagram) and returns a Figure.
Import it by its module path, ``from icl_lib.plotting import kernel_figures``.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import NullFormatter

from . import _inputs as _in
from .style import NEUTRAL, PALETTE, TRANSFORMER, finish_axes

INPUT, SLOT, QUERY = PALETTE[0], PALETTE[1], PALETTE[2]


def _small_int(name: str, value, low: int, high: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not low <= value <= high
    ):
        raise ValueError(f"{name}: expected an int from {low} to {high}, got {value!r}")
    return value


def _slot_text(layer: int, i: int | None) -> str:
    """The content of a label slot after ``layer`` layers: example ``i`` (from 1) or
    the query (``i`` None)."""
    if layer == 0:
        return "$0$" if i is None else f"$y_{i}$"
    if i is None:
        return f"$-f_{layer}(x_q)$"
    return f"$y_{i} - f_{layer}(x_{i})$"


def kernel_gap_panels(
    ks,
    in_distribution: Mapping[str, object],
    shifted: Mapping[str, object],
    *,
    limit: float,
    slope: float = -0.5,
    floor: float = 0.02,
):
    """Han et al.'s kernel sum against the Bayes predictive, two panels on log-log
    axes over the number of demonstrations ``ks``.

    Left, demonstrations drawn like pre-training (``in_distribution``: name -> mean
    gaps, one per ``k``; the first series is the kernel sum's): a dotted reference
    ``c k^slope`` runs parallel to the first series, half again above its last point,
    so that it never hides it. Right, shifted demonstrations (``shifted``, the same
    form), with the theory's ``limit`` of the first series as ``k -> infinity`` drawn
    dashed. The panels share the y axis, cut at ``floor`` below (a series that falls
    further leaves the panel at the bottom).
    """
    ks = _in.numbers("ks", ks, minimum=0, strict=True)  # a log axis
    groups = {
        "in_distribution": _in.curves(
            "in_distribution", in_distribution, len(ks), minimum=0, strict=True
        ),
        "shifted": _in.curves("shifted", shifted, len(ks), minimum=0, strict=True),
    }
    limit = float(_in.numbers("limit", [limit], minimum=0, strict=True)[0])
    slope = float(_in.numbers("slope", [slope])[0])
    floor = float(_in.numbers("floor", [floor], minimum=0, strict=True)[0])
    top = 1.3 * max(
        float(np.nanmax(values))
        for group in groups.values()
        for values in group.values()
    )
    if not floor < top:
        raise ValueError(f"floor: expected a value below the curves' top {top:.3g}")
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.9), sharey=True)
    titles = ("demonstrations drawn like pre-training", "shifted demonstrations")
    for ax, (group, curves), title in zip(axes, groups.items(), titles, strict=True):
        for i, (name, values) in enumerate(curves.items()):
            ax.plot(ks, values, marker="o", ms=4, color=PALETTE[i], label=name)
        ax.set(xscale="log", yscale="log", xlabel="demonstrations $N$", title=title)
        ax.set_ylim(floor, top)
        if group == "in_distribution":
            first = next(iter(curves.values()))
            c = 1.5 * first[-1] / ks[-1] ** slope
            ax.plot(
                ks,
                c * ks**slope,
                ls=":",
                color="#444444",
                label=f"$\\propto N^{{{slope:g}}}$",
            )
        else:
            ax.axhline(
                limit,
                color=NEUTRAL,
                ls="--",
                lw=1.4,
                label=f"its limit as $N \\to \\infty$: {limit:.2f}",
            )
        ax.legend(fontsize=8.5, loc="lower left")
        finish_axes(ax)
    axes[0].set_ylabel("mean L1 gap")
    return fig


def label_slot_diagram(n_examples: int = 3, n_layers: int = 2):
    """Cheng, Chen and Sra's (ICML 2024) attention layers, layer by layer: each token
    holds an input ``x_j`` (never changed) and a label slot ``u_j``, the label for an
    example and 0 for the query. A layer subtracts from every slot the kernel-weighted
    sum of the example slots, ``u_j <- u_j - (eta / N) sum_i K(x_i, x_j) u_i``, so
    after ``t`` layers the example slots hold the residuals ``y_i - f_t(x_i)`` of
    ``t`` steps of functional gradient descent and the query slot holds
    ``-f_t(x_q)``: the prediction, with its sign flipped.

    One row per layer (top: the prompt), ``n_examples`` example tokens and the query;
    arrows into the query's slot show the sum that updates it (every slot gets the same
    kind of sum).
    """
    n_examples = _small_int("n_examples", n_examples, 1, 4)
    n_layers = _small_int("n_layers", n_layers, 1, 3)
    step, width, slot_w = 1.55, 1.25, 1.25
    n_tokens = n_examples + 1
    row_gap = 2.3
    fig, ax = plt.subplots(figsize=(1.4 + 1.5 * n_tokens + 2.6, 1.3 + 1.6 * n_layers))
    ax.set_axis_off()
    right = (n_tokens - 1) * step + width
    ax.set_xlim(-1.7, right + 3.0)
    ax.set_ylim(-row_gap * n_layers - 1.1, 1.6)
    for layer in range(n_layers + 1):
        y = -row_gap * layer
        ax.text(
            -0.25,
            y + 0.45,
            "prompt" if layer == 0 else f"after layer {layer}",
            ha="right",
            va="center",
            fontsize=10,
            color=NEUTRAL,
        )
        for t in range(n_tokens):
            x = t * step
            query = t == n_tokens - 1
            name = "q" if query else str(t + 1)
            ax.add_patch(
                Rectangle(
                    (x, y + 0.55),
                    width,
                    0.5,
                    fc=QUERY if query else INPUT,
                    alpha=0.25,
                    ec="k",
                )
            )
            ax.text(x + width / 2, y + 0.8, f"$x_{name}$", ha="center", va="center")
            ax.add_patch(Rectangle((x, y), slot_w, 0.55, fc=SLOT, alpha=0.3, ec="k"))
            ax.text(
                x + width / 2,
                y + 0.27,
                _slot_text(layer, None if query else t + 1),
                ha="center",
                va="center",
                fontsize=9 if layer else 10.5,
            )
        if layer == 0:
            continue
        q_x = (n_tokens - 1) * step + width / 2
        for t in range(n_examples):  # the example slots of the row above feed it
            ax.add_patch(
                FancyArrowPatch(
                    (t * step + width / 2, y + row_gap),
                    (q_x, y + 1.07),
                    arrowstyle="-|>",
                    mutation_scale=9,
                    color=NEUTRAL,
                    lw=0.9,
                    alpha=0.8,
                    connectionstyle="arc3,rad=0.12",
                )
            )
        ax.text(
            (n_examples - 0.5) * step + 0.1,
            y + row_gap / 2 + 0.2,
            "$K(x_i, x_q)$",
            ha="center",
            va="bottom",
            fontsize=9,
            color=NEUTRAL,
        )
        ax.text(
            right + 0.2,
            y + row_gap / 2 + 0.05,
            "every slot is updated (arrows: the query's update):\n"
            "$u_j \\leftarrow u_j - \\frac{\\eta}{N}\\sum_i K(x_i, x_j)\\, u_i$",
            ha="left",
            va="center",
            fontsize=10,
        )
    last = -row_gap * n_layers
    ax.annotate(
        f"prediction $f_{n_layers}(x_q) = -u_q$",
        xy=((n_tokens - 1) * step + width / 2, last),
        xytext=((n_tokens - 1) * step + width / 2, last - 0.75),
        ha="center",
        va="center",
        fontsize=10,
        color=QUERY,
        arrowprops={"arrowstyle": "<|-", "color": NEUTRAL},
    )
    ax.set_title(
        "one attention layer, one step of functional gradient descent: the label "
        "slots hold the residuals",
        fontsize=11,
    )
    return fig


def filter_factors(
    scaled_eigenvalues,
    factors: Mapping[int, tuple],
    *,
    title: str = "stopping early acts like a ridge penalty",
    ax=None,
):
    """How much of each eigen-direction of the kernel matrix a fit keeps: functional
    gradient descent after ``t`` steps, ``1 - (1 - a)^t``, against kernel ridge with
    ``lambda = N / (eta t)``, ``a t / (1 + a t)``, where ``a = eta mu / N`` is the
    eigenvalue ``mu`` in units of the step.

    ``scaled_eigenvalues``: the values of ``a`` (``0 < a <= 1``, drawn on a log axis);
    ``factors``: ``t -> (gd, ridge)``, the two factors at those values, each in
    ``[0, 1]``. One colour per ``t``: gradient descent solid, ridge dashed.
    """
    a = _in.numbers("scaled_eigenvalues", scaled_eigenvalues, minimum=0, strict=True)
    if (a > 1).any():
        raise ValueError(
            "scaled_eigenvalues: expected eta mu / N in (0, 1] (a stable step), got "
            f"{a[a > 1][:3].tolist()}"
        )
    if not _in.mapping("factors", factors):
        raise ValueError("factors: expected at least one number of steps, got none")
    if len(factors) > len(PALETTE):
        raise ValueError(
            f"factors: expected at most {len(PALETTE)} numbers of steps, got "
            f"{len(factors)}"
        )
    ax = _in.axes("ax", ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.6, 3.8))
    else:
        fig = ax.figure
    for i, (steps, pair) in enumerate(factors.items()):
        steps = _small_int("factors' keys (steps t)", steps, 1, 10**6)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"factors[{steps}]: expected a pair (gd, ridge), got {pair!r}"
            )
        for kind, values, style in (
            (f"functional GD, $t$ = {steps}", pair[0], "-"),
            (f"ridge, $\\lambda = N/(\\eta t)$, $t$ = {steps}", pair[1], "--"),
        ):
            values = _in.numbers(f"factors[{steps}]", values, minimum=0)
            if values.shape != a.shape or (values > 1 + 1e-12).any():
                raise ValueError(
                    f"factors[{steps}]: expected {a.shape[0]} values in [0, 1], one "
                    "per scaled eigenvalue"
                )
            ax.plot(a, values, color=PALETTE[i], ls=style, lw=1.8, label=kind)
    ax.set_xscale("log")
    ax.set(
        xlabel="scaled eigenvalue of the kernel matrix, $\\eta\\mu / N$",
        ylabel="share of the direction fitted",
        xlim=(a.min(), a.max()),
        ylim=(0, 1.02),
        title=title,
    )
    ax.legend(fontsize=8.5, loc="upper left", ncol=1)
    finish_axes(ax)
    return fig


def temperature_agreement(
    temperatures,
    agreement,
    *,
    levels: Mapping[str, float] | None = None,
    chosen: float | None = None,
    ylabel: str = "agreement with the model",
    title: str = "",
    ax=None,
):
    """How often a softmax smoother's sign agrees with a model, against its temperature
    (log axis): one line per set of prompts (``agreement``: name -> values, one per
    temperature), horizontal lines for fixed rivals (``levels``: name -> agreement;
    the first in the model's black, each other in a colour of its own), and a mark at
    the ``chosen`` temperature when given."""
    temperatures = _in.numbers("temperatures", temperatures, minimum=0, strict=True)
    agreement = _in.curves("agreement", agreement, len(temperatures), minimum=0)
    if levels is not None and not _in.mapping("levels", levels):
        raise ValueError("levels: expected at least one rival name -> value, or None")
    levels = _in.optional_mapping("levels", levels)
    chosen = _in.optional_real("chosen", chosen)
    ax = _in.axes("ax", ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
    else:
        fig = ax.figure
    for i, (name, values) in enumerate(agreement.items()):
        ax.plot(
            temperatures,
            values,
            color=PALETTE[i],
            marker="o",
            ms=3.5,
            lw=1.8,
            label=name,
        )
    styles = ("--", ":", "-.")
    if len(agreement) + len(levels) > len(PALETTE) + 1:
        raise ValueError(
            f"levels: expected at most {len(PALETTE) + 1 - len(agreement)} rivals "
            f"beside {len(agreement)} curves (one colour each), got {len(levels)}"
        )
    # the rivals' colours: those the curves leave free, without the light blue that is
    # hard to tell from the first curve's blue when enough others remain
    rival_colours = list(PALETTE[len(agreement) :])
    if PALETTE[4] in rival_colours and len(rival_colours) >= len(levels):
        rival_colours.remove(PALETTE[4])
    for i, (name, value) in enumerate(levels.items()):
        value = float(_in.numbers(f"levels[{name!r}]", [value])[0])
        ax.axhline(  # the first rival in the model's colour, the rest in their own
            value,
            color=TRANSFORMER if i == 0 else rival_colours[i - 1],
            ls=styles[i % len(styles)],
            lw=1.4,
            label=name,
        )
    if chosen is not None:
        ax.axvline(
            chosen, color=NEUTRAL, lw=1.0, ls="-", alpha=0.8, label="chosen temperature"
        )
    ax.set_xscale("log")
    ax.set(xlabel="temperature $\\tau$", ylabel=ylabel, title=title)
    ax.legend(fontsize=9, loc="lower left", bbox_to_anchor=(0.0, 0.07))
    finish_axes(ax)
    ax.xaxis.set_minor_formatter(NullFormatter())  # plain major ticks only
    return fig
