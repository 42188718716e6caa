"""Diagrams of the book's ideas: schematics drawn with matplotlib, no data.

Each function returns a Figure that explains a construction before a chapter computes
anything: which token holds what, and which arrow does which part of an algorithm.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from .style import NEUTRAL, PALETTE

INPUT, LABEL, QUERY = PALETTE[0], PALETTE[1], PALETTE[2]


def _token(ax, x, y, top: str, bottom: str, *, colour_top, colour_bottom, w=0.8):
    """One token drawn as a column: an input block over a one-entry label block."""
    ax.add_patch(Rectangle((x, y + 0.55), w, 1.3, fc=colour_top, alpha=0.25, ec="k"))
    ax.add_patch(Rectangle((x, y), w, 0.55, fc=colour_bottom, alpha=0.35, ec="k"))
    ax.text(x + w / 2, y + 1.2, top, ha="center", va="center", fontsize=11)
    ax.text(x + w / 2, y + 0.27, bottom, ha="center", va="center", fontsize=11)


def gd_attention_diagram(n_context: int = 4):
    """Chapter 2's idea in one picture: one gradient-descent step from zero (left) and
    one linear self-attention layer (right) compute the same prediction.

    Left: the step moves the weights to ``W = (eta / N) sum_i y_i x_i^T`` and predicts
    ``W x_q``. Right: the query token (x_q, 0) scores every context token (x_i, y_i)
    by ``x_i . x_q`` and writes the score-weighted sum of their labels, times
    ``-eta / N``, into its own label entry, whose negative is the prediction (von Oswald
    et al. 2023, Proposition 1).
    """
    if not isinstance(n_context, int) or not 2 <= n_context <= 6:
        raise ValueError(f"n_context: expected an int from 2 to 6, got {n_context!r}")
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(10.5, 3.6), gridspec_kw={"width_ratios": [1, 1.45]}
    )
    for ax in (left, right):
        ax.set_axis_off()
    # Left: gradient descent on the prompt's least-squares loss.
    left.set_xlim(0, 10)
    left.set_ylim(0, 6)
    left.set_title("one gradient step on the prompt", fontsize=12)
    rows = [
        (r"$L(W) = \frac{1}{2N}\sum_i (W x_i - y_i)^2$", "the prompt's own loss"),
        (
            r"$W^{(1)} = -\eta\,\nabla L(0) = \frac{\eta}{N}\sum_i y_i\, x_i^\top$",
            "one step",
        ),
        (r"$\hat y_q = W^{(1)} x_q = \frac{\eta}{N}\sum_i (x_i^\top x_q)\; y_i$", ""),
    ]
    for i, (formula, note) in enumerate(rows):
        y = 5.0 - 1.8 * i
        left.text(0.2, y, formula, fontsize=12, va="center")
        if note:
            left.text(0.2, y - 0.55, note, fontsize=9, color=NEUTRAL, va="center")
        if i < len(rows) - 1:
            left.annotate(
                "",
                xy=(1.2, y - 1.3),
                xytext=(1.2, y - 0.8),
                arrowprops={"arrowstyle": "-|>", "color": NEUTRAL},
            )
    left.text(
        0.2,
        0.25,
        "similarity $x_i^\\top x_q$ times label $y_i$, summed",
        fontsize=9.5,
        color=LABEL,
    )
    # Right: the tokens, and the attention of the query on the context.
    right.set_xlim(-0.3, n_context + 2.6)
    right.set_ylim(-1.3, 3.6)
    right.set_title("one linear self-attention layer", fontsize=12)
    for i in range(n_context):
        _token(
            right,
            i,
            0,
            f"$x_{i + 1}$",
            f"$y_{i + 1}$",
            colour_top=INPUT,
            colour_bottom=LABEL,
        )
    q = n_context + 1.2
    _token(right, q, 0, "$x_q$", "$0$", colour_top=QUERY, colour_bottom="white")
    for i in range(n_context):
        right.add_patch(
            FancyArrowPatch(
                (i + 0.4, 1.9),
                (q + 0.4, 1.9),
                connectionstyle=f"arc3,rad={-0.12 - 0.05 * (n_context - i)}",
                arrowstyle="-|>",
                mutation_scale=10,
                color=NEUTRAL,
                lw=1.0,
            )
        )
    right.text(
        (n_context + 1.2) / 2,
        3.35,
        r"score $x_i^\top x_q$ (from $W_{KQ}$), "
        r"value $-\frac{\eta}{N} y_i$ (from $W_{PV}$)",
        ha="center",
        fontsize=10,
    )
    right.annotate(
        r"$-\frac{\eta}{N}\sum_i (x_i^\top x_q)\, y_i$",
        xy=(q + 0.4, 0.02),
        xytext=(q + 0.4, -0.35),
        ha="center",
        va="top",
        fontsize=11,
        color=LABEL,
        arrowprops={"arrowstyle": "-|>", "color": LABEL},
    )
    right.text(
        q + 0.4,
        -1.05,
        r"prediction $= -$(label entry)",
        ha="center",
        va="top",
        fontsize=9,
        color=NEUTRAL,
    )
    right.text(
        (n_context - 0.2) / 2,
        -0.45,
        "context tokens $(x_i, y_i)$",
        ha="center",
        va="top",
        fontsize=9.5,
        color=NEUTRAL,
    )
    return fig


def replace_one_diagram(n_context: int = 6, replaced: int = 2):
    """Chapter 3's idea: error stability. Two prompts that differ in one example (top:
    ``S_m``; bottom: ``S_m`` with example ``replaced`` swapped for ``(x', y')``) go
    through the same learned algorithm ``A``; a stable algorithm's losses at the query
    differ by at most ``K / m`` (Li et al. 2023, Assumption 3.1).
    """
    if not isinstance(n_context, int) or not 3 <= n_context <= 8:
        raise ValueError(f"n_context: expected an int from 3 to 8, got {n_context!r}")
    if (
        isinstance(replaced, bool)
        or not isinstance(replaced, int)
        or not 0 <= replaced < n_context
    ):
        raise ValueError(
            f"replaced: expected an int from 0 to {n_context - 1}, got {replaced!r}"
        )
    fig, ax = plt.subplots(figsize=(10.5, 3.4))
    ax.set_axis_off()
    ax.set_xlim(-0.5, n_context + 7.2)
    ax.set_ylim(-0.6, 4.4)
    for row, (y0, name) in enumerate(((2.5, "$S_m$"), (0.3, "$S_m'$"))):
        ax.text(-0.35, y0 + 0.45, name, ha="right", va="center", fontsize=12)
        for i in range(n_context):
            swapped = row == 1 and i == replaced
            ax.add_patch(
                Rectangle(
                    (i, y0),
                    0.85,
                    0.9,
                    fc=LABEL if swapped else INPUT,
                    alpha=0.45 if swapped else 0.22,
                    ec="k",
                )
            )
            label = "$(x', y')$" if swapped else f"$z_{{{i + 1}}}$"
            ax.text(i + 0.42, y0 + 0.45, label, ha="center", va="center", fontsize=10)
        q = n_context + 0.3
        ax.add_patch(Rectangle((q, y0), 0.85, 0.9, fc=QUERY, alpha=0.3, ec="k"))
        ax.text(q + 0.42, y0 + 0.45, "$x$", ha="center", va="center", fontsize=11)
        ax.annotate(
            "",
            xy=(n_context + 2.2, 1.75),
            xytext=(q + 0.9, y0 + 0.45),
            arrowprops={"arrowstyle": "-|>", "color": NEUTRAL},
        )
    ax.add_patch(
        Rectangle((n_context + 2.2, 1.2), 1.3, 1.1, fc="white", ec="k", lw=1.5)
    )
    ax.text(
        n_context + 2.85,
        1.75,
        r"$\mathcal{A}_\theta$",
        ha="center",
        va="center",
        fontsize=14,
    )
    for y, text in (
        (2.55, r"$\hat y = \mathcal{A}_\theta(S_m)(x)$"),
        (0.95, r"$\hat y' = \mathcal{A}_\theta(S_m')(x)$"),
    ):
        ax.annotate(
            "",
            xy=(n_context + 4.3, y),
            xytext=(n_context + 3.5, 1.75),
            arrowprops={"arrowstyle": "-|>", "color": NEUTRAL},
        )
        ax.text(n_context + 4.4, y, text, va="center", fontsize=10.5)
    ax.text(
        n_context + 3.9,
        3.9,
        r"stable: $|\,\mathbb{E}\,\ell(\hat y', y) - \mathbb{E}\,\ell(\hat y, y)\,|"
        r" \leq K / m$",
        ha="center",
        fontsize=11.5,
        color=LABEL,
    )
    ax.text(
        (n_context - 1) / 2,
        3.75,
        "one example of $m$ replaced",
        ha="center",
        fontsize=10,
        color=NEUTRAL,
    )
    return fig


def induction_circuit_diagram():
    """Chapter 6's idea: the two-layer induction circuit on ``... A B ... A`` (Elhage
    et al. 2021; Olsson et al. 2022).

    Bottom: the tokens. Middle: layer 0's previous-token head writes, at every
    position, the token before it (at ``B``'s position: "after A"). Top: layer 1's
    induction head at the second ``A`` matches its query ``A`` against the keys that
    hold "after A" (K-composition) and copies the token found there, ``B``, into the
    prediction.
    """
    tokens = ["x", "A", "B", "y", "z", "A"]
    fig, ax = plt.subplots(figsize=(10.5, 4.2))
    ax.set_axis_off()
    ax.set_xlim(-2.3, len(tokens) + 1.6)
    ax.set_ylim(-0.3, 5.6)
    rows = (
        (0.2, "tokens", INPUT),
        (2.0, "layer 0:\nprevious-token head", LABEL),
        (3.8, "layer 1:\ninduction head", QUERY),
    )
    for y, name, colour in rows:
        ax.text(-0.3, y + 0.4, name, ha="right", va="center", fontsize=10)
        for i, token in enumerate(tokens):
            # the two slots the circuit uses: B's "after A" and the query A
            used = (y == 2.0 and i == 2) or (y == 3.8 and i == len(tokens) - 1)
            alpha = 0.55 if used else 0.2
            ax.add_patch(Rectangle((i, y), 0.8, 0.8, fc=colour, alpha=alpha, ec="k"))
            if y == 0.2:
                ax.text(i + 0.4, y + 0.4, token, ha="center", va="center", fontsize=13)
            elif y == 2.0 and i > 0:
                ax.text(
                    i + 0.4,
                    y + 0.4,
                    f"after\n{tokens[i - 1]}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="k" if used else NEUTRAL,
                )
    # layer 0: each position attends to the one before it (drawn at B's position)
    ax.add_patch(
        FancyArrowPatch(
            (2.4, 2.0),
            (1.4, 1.0),
            arrowstyle="-|>",
            mutation_scale=14,
            color=LABEL,
            connectionstyle="arc3,rad=-0.3",
        )
    )
    ax.text(1.95, 1.35, "attend to t - 1", ha="left", fontsize=9, color=LABEL)
    # layer 1: the second A looks for a key "after A" and copies the token there
    q = len(tokens) - 1
    ax.add_patch(
        FancyArrowPatch(
            (q + 0.4, 4.6),
            (2.4, 2.8),
            arrowstyle="-|>",
            mutation_scale=14,
            color=QUERY,
            connectionstyle="arc3,rad=0.35",
        )
    )
    ax.text(
        3.2,
        5.1,
        'QK: query "A" matches key "after A"; OV: copy "B"',
        ha="center",
        fontsize=9.5,
        color=QUERY,
    )
    ax.annotate(
        "",
        xy=(q + 1.5, 4.2),
        xytext=(q + 0.85, 4.2),
        arrowprops={"arrowstyle": "-|>", "color": NEUTRAL},
    )
    ax.text(q + 1.55, 4.2, "predict B", va="center", fontsize=11)
    return fig


def selection_routes_diagram(n_candidates: int = 3):
    """Chapter 5's idea: Bai et al. (2023)'s two ways for one transformer to choose a
    learner per prompt.

    Left, post-ICL validation: fit ``n_candidates`` learners on the first part of the
    context, score each on the held-out part, keep the best (their example: the ridge
    penalty that suits the prompt's noise level). Right, pre-ICL testing: a statistic
    of the context decides the learner before any learning (their example: logistic
    regression when every label is binary, ridge otherwise).
    """
    if (
        isinstance(n_candidates, bool)
        or not isinstance(n_candidates, int)
        or not 2 <= n_candidates <= 4
    ):
        raise ValueError(
            f"n_candidates: expected an int from 2 to 4, got {n_candidates!r}"
        )
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.4))
    arrow = {"arrowstyle": "-|>", "color": NEUTRAL}
    for ax, title in (
        (left, "post-ICL validation: learn, then choose"),
        (right, "pre-ICL testing: test, then learn"),
    ):
        ax.set_axis_off()
        ax.set_xlim(-0.3, 7.6)
        ax.set_ylim(-1.0, 5.6)
        ax.set_title(title, fontsize=12)
    # The context of both panels: six examples and the query.
    parts = ["train"] * 4 + ["validate"] * 2
    for ax, split in ((left, True), (right, False)):
        for i, part in enumerate(parts):
            held_out = split and part == "validate"
            colour = LABEL if held_out else INPUT
            ax.add_patch(Rectangle((i, 0), 0.85, 0.8, fc=colour, alpha=0.3, ec="k"))
            ax.text(i + 0.42, 0.4, f"$z_{{{i + 1}}}$", ha="center", va="center")
        ax.add_patch(Rectangle((6.4, 0), 0.85, 0.8, fc=QUERY, alpha=0.3, ec="k"))
        ax.text(6.82, 0.4, "$x_q$", ha="center", va="center", fontsize=11)
    left.text(1.9, -0.5, "fit on these", ha="center", fontsize=9, color=NEUTRAL)
    left.text(4.9, -0.5, "validate on these", ha="center", fontsize=9, color=LABEL)
    # Left: candidates fitted on the training part, scored on the validation part.
    xs = [0.4 + i * 4.6 / (n_candidates - 1) for i in range(n_candidates)]
    for j, x in enumerate(xs):
        left.annotate("", xy=(x + 0.5, 1.9), xytext=(1.9, 0.85), arrowprops=arrow)
        left.add_patch(Rectangle((x, 1.9), 1.0, 0.8, fc="white", ec="k"))
        left.text(x + 0.5, 2.3, f"$f_{j + 1}$", ha="center", va="center", fontsize=12)
        left.text(
            x + 0.5, 3.0, rf"$\hat L_{j + 1}$", ha="center", fontsize=10, color=LABEL
        )
    left.annotate(
        "",
        xy=(xs[-1] + 1.15, 3.1),
        xytext=(5.4, 0.85),
        arrowprops={"arrowstyle": "-|>", "color": LABEL, "ls": "--"},
    )
    left.text(6.3, 2.0, "score", ha="center", fontsize=9, color=LABEL)
    left.text(
        3.4,
        4.0,
        r"keep $\hat j = \arg\min_j \hat L_j$, predict $f_{\hat j}(x_q)$",
        ha="center",
        fontsize=11,
    )
    left.text(
        3.4,
        4.8,
        "e.g. the ridge penalty for the noise level",
        ha="center",
        fontsize=9,
        color=NEUTRAL,
    )
    # Right: a statistic of the context routes the prompt before any learner runs.
    right.annotate("", xy=(3.0, 1.9), xytext=(3.0, 0.85), arrowprops=arrow)
    right.add_patch(Rectangle((0.6, 1.9), 4.8, 0.8, fc="white", ec="k"))
    right.text(
        3.0,
        2.3,
        r"test $t(D)$: is every label $\pm 1$?",
        ha="center",
        va="center",
        fontsize=10.5,
    )
    for x, answer, learner in (
        (0.9, "yes", "logistic regression"),
        (5.1, "no", "ridge"),
    ):
        right.annotate("", xy=(x, 3.6), xytext=(3.0, 2.75), arrowprops=arrow)
        right.text((x + 3.0) / 2, 3.35, answer, ha="center", fontsize=9, color=NEUTRAL)
        right.text(x, 3.85, learner, ha="center", fontsize=11, color=QUERY)
    right.text(
        3.0,
        4.8,
        "e.g. regression or classification",
        ha="center",
        fontsize=9,
        color=NEUTRAL,
    )
    return fig


def _box_columns(ax, columns, *, title_y, top, step, gap):
    """Columns of rounded text boxes joined by downward arrows, one column per
    ``(x, title, colour, texts)`` of ``columns``: the title at ``title_y``, box ``i`` at
    ``top - step * i``, each arrow from ``gap[0]`` to ``gap[1]`` below its box."""
    for x, title, colour, boxes in columns:
        ax.text(x, title_y, title, ha="center", fontsize=12)
        for i, text in enumerate(boxes):
            y = top - step * i
            ax.text(
                x,
                y,
                text,
                ha="center",
                va="center",
                fontsize=10.5,
                bbox={"boxstyle": "round,pad=0.35", "fc": colour, "alpha": 0.2},
            )
            if i < len(boxes) - 1:
                ax.annotate(
                    "",
                    xy=(x, y - gap[1]),
                    xytext=(x, y - gap[0]),
                    arrowprops={"arrowstyle": "-|>", "color": NEUTRAL},
                )


def bayes_two_views_diagram():
    """Chapter 4's idea: training on prompts drawn from a prior (left) and Bayesian
    inference on one prompt (right) meet at the same predictive distribution.

    Left: draw a task ``w`` from the prior, a prompt ``D`` and a query ``(x, y)`` from
    it, and score the network's predictive ``q(y | x, D)`` by its negative
    log-likelihood. Right: condition the prior on ``D`` and average the likelihood of
    ``y`` over the posterior. The expected loss on the left is minimised by the
    posterior predictive on the right (Müller et al. 2022, Insight 1).
    """
    fig, ax = plt.subplots(figsize=(10.5, 3.9))
    ax.set_axis_off()
    ax.set_xlim(0, 10.5)
    ax.set_ylim(0.6, 5.6)
    columns = (
        (
            2.5,
            "training: fit prompts drawn from the prior",
            INPUT,
            (
                "task $w \\sim p(w)$",
                "prompt $D = ((x_i, y_i))_{i \\leq k}$, query $(x, y)$",
                "network $q(y \\mid x, D)$",
                "loss $-\\log q(y \\mid x, D)$, averaged",
            ),
        ),
        (
            8.0,
            "inference: condition on one prompt",
            QUERY,
            (
                "prior $p(w)$",
                "posterior $p(w \\mid D) \\propto p(w)\\, p(D \\mid w)$",
                "predictive $p(y \\mid x, D) = \\int p(y \\mid x, w)\\, "
                "p(w \\mid D)\\, \\mathrm{d}w$",
            ),
        ),
    )
    _box_columns(ax, columns, title_y=5.3, top=4.5, step=1.15, gap=(0.35, 0.8))
    ax.annotate(
        "",
        xy=(6.3, 1.95),
        xytext=(4.3, 1.05),
        arrowprops={"arrowstyle": "-|>", "color": LABEL, "lw": 1.5},
    )
    ax.text(
        5.5,
        1.05,
        "its minimiser over all $q$",
        ha="left",
        va="center",
        fontsize=10.5,
        color=LABEL,
    )
    return fig


def implicit_update_diagram():
    """Chapter 7's idea (Dherin et al. 2025, Theorem 2.2): a block that reads a context
    (left) and the same block without it, its MLP's first weight matrix moved by a
    rank-1 update (right), give the same output at the query."""
    fig, ax = plt.subplots(figsize=(10.5, 4.4))
    ax.set_axis_off()
    ax.set_xlim(0, 10.5)
    ax.set_ylim(0, 5.4)
    columns = (
        (
            2.4,
            "with the context",
            INPUT,
            (
                "context $C$ and query $x$",
                "attention $A$",
                "$A(C, x) = a + \\delta$",
                "MLP $f(W\\,\\cdot + b)$",
                "$T_W(C, x)$",
            ),
        ),
        (
            8.1,
            "without it",
            QUERY,
            (
                "query $x$ alone",
                "attention $A$",
                "$A(x) = a$",
                "MLP $f((W + \\Delta W)\\,\\cdot + b)$",
                "the same output",
            ),
        ),
    )
    _box_columns(ax, columns, title_y=5.15, top=4.4, step=1.0, gap=(0.32, 0.68))
    ax.annotate(
        "",
        xy=(6.6, 0.4),
        xytext=(3.9, 0.4),
        arrowprops={"arrowstyle": "<|-|>", "color": LABEL},
    )
    ax.text(5.25, 0.62, "equal", ha="center", fontsize=10, color=LABEL)
    ax.text(
        5.25,
        2.3,
        "$\\Delta W = \\dfrac{(W\\delta)\\, a^\\top}{\\|a\\|^2}$\nrank 1: "
        "$(W + \\Delta W)\\,a = W(a + \\delta)$",
        ha="center",
        va="center",
        fontsize=11,
        color=LABEL,
    )
    return fig


def cache_and_state_diagram(n_pairs: int = 3):
    """Chapter 9's idea: attention keeps every earlier token in a cache that grows with
    the context and compares the query with each (left); a recurrent layer folds each
    key-value pair into a state of fixed size as it reads, once the pair's two tokens
    are brought together, and the query sees only that state (right), here the
    matrix state ``S = sum_s v_s kappa_s^T`` of linear attention (Katharopoulos et al.
    2020)."""
    if (
        isinstance(n_pairs, bool)
        or not isinstance(n_pairs, int)
        or not 1 <= n_pairs <= 4
    ):
        raise ValueError(f"n_pairs: expected an int from 1 to 4, got {n_pairs!r}")
    tokens = [t for s in range(1, n_pairs + 1) for t in (f"$\\kappa_{s}$", f"$v_{s}$")]
    tokens.append("$\\rho$")
    fig, ax = plt.subplots(figsize=(10.5, 4.0))
    ax.set_axis_off()
    width = len(tokens)
    gap = 1.6
    ax.set_xlim(-0.3, 2 * width + gap + 0.3)
    ax.set_ylim(-0.4, 4.6)
    for side, x0 in (("attention", 0.0), ("recurrence", width + gap)):
        title = (
            "attention: a cache that grows"
            if side == "attention"
            else "recurrence: a state of fixed size"
        )
        ax.text(x0 + width / 2, 4.3, title, ha="center", fontsize=12)
        for i, token in enumerate(tokens):
            query = i == len(tokens) - 1
            colour = QUERY if query else (INPUT if i % 2 == 0 else LABEL)
            ax.add_patch(Rectangle((x0 + i, 0), 0.8, 0.8, fc=colour, alpha=0.3, ec="k"))
            ax.text(x0 + i + 0.4, 0.4, token, ha="center", va="center", fontsize=12)
        q_x = x0 + len(tokens) - 0.6
        if side == "attention":
            # the query compares itself with every cached key and reads its value
            for i in range(len(tokens) - 1):
                ax.add_patch(
                    FancyArrowPatch(
                        (q_x, 0.9),
                        (x0 + i + 0.4, 0.9),
                        arrowstyle="-|>",
                        mutation_scale=10,
                        color=QUERY,
                        alpha=0.7,
                        connectionstyle=f"arc3,rad={0.5 - 0.04 * i}",
                    )
                )
            ax.text(
                x0 + width / 2,
                3.3,
                "cache: every key and value,\n"
                "$2\\,d_{\\mathrm{m}}$ numbers per token and layer",
                ha="center",
                fontsize=10,
                color=NEUTRAL,
            )
        else:
            state = Rectangle(
                (x0 + 1.2, 2.0), width - 2.6, 1.0, fc=LABEL, alpha=0.2, ec="k"
            )
            ax.add_patch(state)
            ax.text(
                x0 + width / 2 - 0.1,
                2.5,
                "$S = \\sum_s v_s \\kappa_s^\\top$\nfixed size, one write per pair",
                ha="center",
                va="center",
                fontsize=10,
            )
            # a key and its value sit on two tokens: the layer first brings them
            # together (the two lines meet), then writes the pair once
            for pair in range(n_pairs):
                meet = (x0 + 2 * pair + 0.9, 1.35)
                for i in (2 * pair, 2 * pair + 1):
                    ax.plot(
                        [x0 + i + 0.4, meet[0]],
                        [0.85, meet[1]],
                        color=NEUTRAL,
                        alpha=0.8,
                        lw=1,
                    )
                ax.add_patch(
                    FancyArrowPatch(
                        meet,
                        (x0 + 1.6 + pair * (width - 3.4) / max(n_pairs - 1, 1), 2.0),
                        arrowstyle="-|>",
                        mutation_scale=9,
                        color=NEUTRAL,
                        alpha=0.8,
                    )
                )
            ax.add_patch(
                FancyArrowPatch(
                    (x0 + width - 1.4, 2.5),
                    (q_x, 0.9),
                    arrowstyle="-|>",
                    mutation_scale=12,
                    color=QUERY,
                    connectionstyle="arc3,rad=-0.3",
                )
            )
            ax.text(x0 + width - 0.2, 2.0, "read $S \\rho$", fontsize=10, color=QUERY)
    return fig


def attention_smoother_diagram():
    """Chapter 8's idea: one softmax attention head reading a context of examples
    ``(x_i, y_i)`` is a kernel smoother (Nadaraya 1964, Watson 1964). The query ``x_q``
    gives each example a weight that falls with its distance (a Gaussian bump, the
    softmax weights), and the prediction is the weighted mean of the labels; the
    temperature sets the width of the bump."""
    import numpy as np

    xs = np.array([-2.6, -1.9, -1.2, -0.5, 0.2, 0.9, 1.5, 2.3])
    ys = np.array([-0.8, -0.2, 0.5, 1.0, 0.9, 0.3, -0.4, -0.9])
    x_q, width = 0.45, 0.7
    weights = np.exp(-((xs - x_q) ** 2) / (2 * width**2))
    weights /= weights.sum()
    y_hat = float(weights @ ys)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(8.5, 4.6), sharex=True, height_ratios=(3, 2)
    )
    top.axhline(0, color=NEUTRAL, lw=0.6)
    top.scatter(
        xs,
        ys,
        s=40 + 900 * weights,
        color=INPUT,
        alpha=0.8,
        zorder=3,
        label="examples $(x_i, y_i)$, size = weight",
    )
    top.axvline(x_q, color=QUERY, ls="--", lw=1.2)
    top.plot(
        [x_q],
        [y_hat],
        marker="*",
        ms=16,
        color=QUERY,
        zorder=4,
        label="prediction $\\sum_i w_i y_i$",
    )
    top.set(
        ylabel="label",
        ylim=(-1.3, 1.5),
        title="attention as a kernel smoother: weigh the examples near the query",
    )
    top.legend(fontsize=9, loc="upper left")
    grid = np.linspace(-3, 3, 300)
    bump = np.exp(-((grid - x_q) ** 2) / (2 * width**2))
    bottom.plot(
        grid,
        bump / bump.max() * weights.max(),
        color=LABEL,
        lw=1.5,
        label="kernel $K(x_q, x)$, scaled",
    )
    bottom.bar(
        xs, weights, width=0.18, color=LABEL, alpha=0.45, label="softmax weights $w_i$"
    )
    bottom.axvline(x_q, color=QUERY, ls="--", lw=1.2)
    bottom.text(
        x_q + 0.05, weights.max() * 1.05, "query $x_q$", color=QUERY, fontsize=10
    )
    bottom.set(xlabel="input $x$", ylabel="weight", ylim=(0, weights.max() * 1.3))
    bottom.legend(fontsize=9, loc="upper left")
    for ax in (top, bottom):
        ax.set_yticks([])
    return fig


def prompt_layout_diagram(n_context: int = 3):
    """Chapter 1's two layouts of one regression prompt with ``n_context`` examples.

    Left, interleaved tokens (Garg et al. 2022): ``x_1, y_1, ..., x_k, y_k, x_q``, each
    label padded to the width of an input, ``(y_i, 0, ..., 0)``; a causal model reads
    the sequence once and its output at every input token is its prediction of that
    input's label from the examples before it. Right, one token per example, the
    columns of the matrix ``Z`` (von Oswald et al. 2023): ``(x_i, y_i)``, and the query
    ``(x_q, 0)`` with its label slot set to 0.
    """
    if (
        isinstance(n_context, bool)
        or not isinstance(n_context, int)
        or not 1 <= n_context <= 4
    ):
        raise ValueError(f"n_context: expected an int from 1 to 4, got {n_context!r}")
    n_tokens = 2 * n_context + 1
    fig, (left, right) = plt.subplots(
        1,
        2,
        figsize=(10.5, 3.4),
        gridspec_kw={"width_ratios": [n_tokens + 0.6, n_context + 2.6]},
    )
    for ax in (left, right):
        ax.set_axis_off()
    left.set_xlim(-0.3, n_tokens + 0.3)
    left.set_ylim(-0.9, 3.6)
    left.set_title("interleaved tokens: a sequence of length 2k + 1", fontsize=12)
    for t in range(n_tokens):
        x, i = 1.0 * t, t // 2 + 1
        if t % 2:  # a label token: the label in the first entry, zeros below
            left.add_patch(Rectangle((x, 0), 0.8, 1.3, fc="white", ec="k"))
            left.add_patch(Rectangle((x, 1.3), 0.8, 0.55, fc=LABEL, alpha=0.35, ec="k"))
            left.text(x + 0.4, 1.57, f"$y_{i}$", ha="center", va="center", fontsize=11)
            left.text(x + 0.4, 0.65, "0\n⋮\n0", ha="center", va="center", fontsize=8)
            continue
        query = t == n_tokens - 1
        colour, name = (QUERY, "q") if query else (INPUT, str(i))
        left.add_patch(Rectangle((x, 0), 0.8, 1.85, fc=colour, alpha=0.25, ec="k"))
        left.text(x + 0.4, 0.92, f"$x_{name}$", ha="center", va="center", fontsize=11)
        # the model's output at an input token predicts that input's label
        _prediction_arrow(
            left, x + 0.4, f"$\\hat y_{name}$", QUERY if query else NEUTRAL
        )
    _note_below(
        left,
        (n_tokens - 0.2) / 2,
        "causal: each prediction reads its own token and those to its left",
    )
    right.set_xlim(-0.3, n_context + 2.3)
    right.set_ylim(-0.9, 3.6)
    right.set_title("one token per example: the columns of $Z$", fontsize=12)
    for i in range(n_context):
        _token(
            right,
            i,
            0,
            f"$x_{i + 1}$",
            f"$y_{i + 1}$",
            colour_top=INPUT,
            colour_bottom=LABEL,
        )
    q = n_context + 1.0
    _token(right, q, 0, "$x_q$", "$0$", colour_top=QUERY, colour_bottom="white")
    _prediction_arrow(right, q + 0.4, r"$\hat y_q$", QUERY)
    _note_below(right, (n_context + 1.6) / 2, "the query's label slot is 0: unknown")
    return fig


def _prediction_arrow(ax, x: float, label: str, colour: str) -> None:
    """An arrow up from a token's top edge at ``x`` to the prediction ``label``."""
    ax.annotate(
        label,
        xy=(x, 1.9),
        xytext=(x, 2.75),
        ha="center",
        va="bottom",
        fontsize=11,
        color=colour,
        arrowprops={"arrowstyle": "<|-", "color": NEUTRAL},
    )


def _note_below(ax, x: float, text: str) -> None:
    """A grey note centred at ``x`` under a row of tokens."""
    ax.text(x, -0.45, text, ha="center", va="top", fontsize=9.5, color=NEUTRAL)
