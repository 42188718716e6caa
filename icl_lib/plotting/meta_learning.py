"""Chapter 1's picture of in-context learning: two loops, one of them a forward pass.

Pre-training (the outer loop) fits the weights once, over prompts of many tasks, each
drawn afresh; the weights are then fixed. Every later prompt is a small learning problem
of its own (a few examples of a task the model never saw), and the forward pass, with
those fixed weights, solves it (the inner loop).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Rectangle

from .style import NEUTRAL, PALETTE

INPUT, LABEL, QUERY, WEIGHTS = PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[5]


def _tokens(ax, x, y, names, *, size=0.42, gap=0.06, fontsize=9):
    """A row of square tokens from ``(x, y)`` (lower left): a name with ``q`` is the
    query, one starting with ``y`` a label, any other an input; returns the row's
    right end."""
    for name in names:
        colour = QUERY if "q" in name else LABEL if name.startswith("y") else INPUT
        ax.add_patch(
            Rectangle((x, y), size, size, fc=colour, alpha=0.3, ec="k", lw=0.8)
        )
        if fontsize:
            ax.text(
                x + size / 2, y + size / 2, f"${name}$", ha="center", va="center",
                fontsize=fontsize,
            )  # fmt: skip
        x += size + gap
    return x - gap


def _box(ax, x, y, w, h, text, *, colour, alpha=0.18, lw=1.0, fontsize=10):
    """A rounded box centred at ``(x, y)`` with ``text`` in it."""
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04,rounding_size=0.15",
            fc=colour, alpha=alpha, ec="k", lw=lw,
        )
    )  # fmt: skip
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, tail, head, *, colour=NEUTRAL, ls="-"):
    ax.annotate(
        "", xy=head, xytext=tail,
        arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.4, "ls": ls},
    )  # fmt: skip


def meta_learning_diagram():
    """Chapter 1's idea in one picture. Top: pre-training, once, over prompts of many
    tasks (a fresh ``w`` for every prompt), fits the weights ``theta`` by minimising the
    in-context loss; the weights are then fixed. Bottom: each new prompt, a few
    examples of a task never seen, is a small learning problem that the forward pass
    with those fixed weights solves, predicting the query's label. Returns the
    Figure."""
    fig, ax = plt.subplots(figsize=(10.5, 4.6))
    ax.set_axis_off()
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 6.6)
    # Top row: pre-training, the outer loop.
    ax.text(
        0.1, 6.35, "pre-training: once, over prompts of many tasks",
        fontsize=11.5, fontweight="bold", va="center",
    )  # fmt: skip
    names = ["x_1", "y_1", "x_2", "y_2", "x_3", "y_3"]
    for i, task in enumerate(("w^{(1)}", "w^{(2)}", "w^{(3)}")):
        y = 5.35 - 0.62 * i
        ax.text(0.15, y + 0.21, f"${task}$", fontsize=10, va="center")
        _tokens(ax, 0.95, y, names, fontsize=0)
    ax.text(0.15, 3.55, "$\\vdots$  a fresh task $w$ in every prompt", fontsize=9.5,
            color=NEUTRAL, va="center")  # fmt: skip
    _arrow(ax, (4.05, 4.75), (4.75, 4.75))
    _box(
        ax, 6.2, 4.75, 2.7, 1.45,
        "training (Adam on $\\theta$):\npredict every label"
        "\nfrom the examples before it",
        colour=NEUTRAL, alpha=0.10,
    )  # fmt: skip
    _arrow(ax, (7.6, 4.75), (8.55, 4.75))
    _box(
        ax, 10.1, 4.75, 2.7, 1.2, "weights $\\theta$\nfixed from now on",
        colour=WEIGHTS, alpha=0.3, lw=1.8, fontsize=10.5,
    )  # fmt: skip
    # Bottom row: one new prompt, the inner loop, inside the forward pass.
    ax.text(
        0.1, 2.75, "in-context learning: every prompt, weights unchanged",
        fontsize=11.5, fontweight="bold", va="center",
    )  # fmt: skip
    end = _tokens(ax, 0.15, 1.5, [*names, "x_q"], size=0.5)
    ax.text(
        0.15, 1.1, "a new task $w$, never seen: $k$ examples and a query",
        fontsize=9.5, color=NEUTRAL, va="center",
    )  # fmt: skip
    _arrow(ax, (end + 0.1, 1.75), (end + 0.75, 1.75))
    _box(
        ax, 6.2, 1.75, 2.7, 1.2,
        "forward pass $f_\\theta$\n(the learning happens here)",
        colour=QUERY, alpha=0.15,
    )  # fmt: skip
    _arrow(ax, (10.1, 4.1), (7.3, 2.4), ls="--")
    ax.text(9.2, 3.0, "the same $\\theta$\nfor every prompt", fontsize=9, color=NEUTRAL,
            ha="left", va="center")  # fmt: skip
    _arrow(ax, (7.6, 1.75), (8.55, 1.75))
    _box(
        ax, 10.1, 1.75, 2.7, 1.2, "prediction $\\hat y_q$\nof the new $w^\\top x_q$",
        colour=QUERY, alpha=0.3,
    )  # fmt: skip
    ax.text(
        6.0, 0.35,
        "each prompt is a small learning problem; the forward pass solves it",
        fontsize=10, ha="center", va="center", style="italic",
    )  # fmt: skip
    return fig
