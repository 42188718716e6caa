"""Chapter 9's diagram of a selective state-space layer (Gu and Dao 2023's S6, inside
Mamba's block): a schematic drawn with matplotlib, no data.

Left, the layer as the chapter defines it: a linear map sends the input ``u_t`` to two
branches ``xi_t`` and ``zeta_t`` (``E`` channels each); ``xi`` passes a causal
convolution of width 4 and the SiLU; linear maps of ``xi_t`` give the step ``Delta_t``
(through a softplus), the input vector ``B_t`` and the read-out vector ``C_t``; each
channel ``l`` keeps a state ``h_t[l]`` of ``N`` numbers; the output is
``W_out (y_t * SiLU(zeta_t))``.

Right, one channel read as a memory: token ``s`` writes the value
``Delta_s[l] xi_s[l]`` under the key ``B_s``, older contents fade by
``exp(Delta_t[l] A[l])``, and the query ``C_t`` reads the state, as linear attention
reads ``S = sum_s v_s kappa_s^T`` with a query (the chapter's key-value form).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from .style import NEUTRAL, PALETTE

__all__ = ["selective_layer_diagram"]

BRANCH, STATE, READ = PALETTE[0], PALETTE[5], PALETTE[2]  # blue, orange, green


def _box(ax, x, y, w, h, text, colour, *, fontsize=10, alpha=0.22):
    """A rounded box with centred text; returns its centre."""
    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            fc=colour,
            alpha=alpha,
            ec="k",
            lw=0.9,
        )
    )
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)
    return x + w / 2, y + h / 2


def _arrow(ax, start, end, colour=NEUTRAL, *, rad=0.0, lw=1.2):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=11,
            color=colour,
            lw=lw,
            connectionstyle=f"arc3,rad={rad}",
        )
    )


def _layer(ax) -> None:
    """The data flow of one selective layer (left panel)."""
    ax.set_axis_off()
    ax.set_xlim(0, 10.6)
    ax.set_ylim(0, 6.9)
    ax.set_title("one selective layer", fontsize=12)
    _box(ax, 0.1, 2.75, 0.9, 0.7, "$u_t$", NEUTRAL, fontsize=12)
    _box(ax, 1.5, 2.75, 1.1, 0.7, "linear", NEUTRAL)
    _arrow(ax, (1.0, 3.1), (1.5, 3.1))
    # the xi branch: convolution, SiLU, then Delta, B, C
    _box(ax, 3.1, 4.35, 1.7, 0.8, "causal conv,\nwidth 4; SiLU", BRANCH, fontsize=9)
    _arrow(ax, (2.6, 3.3), (3.1, 4.6), BRANCH)
    ax.text(2.6, 4.35, r"$\xi_t$", fontsize=12, color=BRANCH, ha="right")
    heads = (
        (5.55, r"$\Delta_t$ (softplus)", "step, $E$ numbers"),
        (4.6, "$B_t$", "key, $N$ numbers"),
        (3.65, "$C_t$", "query, $N$ numbers"),
    )
    for y, label, note in heads:
        _box(ax, 5.3, y - 0.3, 1.55, 0.6, label, BRANCH, fontsize=10)
        ax.text(
            5.3 + 0.78,
            y - 0.45,
            note,
            ha="center",
            va="top",
            fontsize=8.5,
            color=NEUTRAL,
        )
        _arrow(ax, (4.8, 4.75), (5.3, y), BRANCH)
    # the state of every channel
    _box(
        ax,
        7.35,
        3.25,
        3.15,
        2.05,
        "state $h_t[\\ell] \\in \\mathbb{R}^N$\nfor each of $E$ channels:\n"
        "fade by $e^{\\Delta_t[\\ell] A[\\ell]}$,\n"
        "add $\\Delta_t[\\ell]\\, \\xi_t[\\ell]\\, B_t$;\n"
        "$y_t[\\ell] = C_t^\\top h_t[\\ell] + D[\\ell]\\, \\xi_t[\\ell]$",
        STATE,
        fontsize=9,
    )
    for y in (5.55, 4.6, 3.65):
        _arrow(ax, (6.85, y), (7.35, 4.27 + 0.3 * (y - 4.6)), STATE)
    _arrow(ax, (3.95, 5.15), (7.8, 5.3), BRANCH, rad=-0.55)
    ax.text(
        5.9,
        6.4,
        r"$\xi_t[\ell]$; the value written is $\Delta_t[\ell]\, \xi_t[\ell]$",
        fontsize=10,
        color=BRANCH,
        ha="center",
    )
    # the zeta branch: the gate
    _box(ax, 3.1, 1.0, 1.7, 0.7, "SiLU", PALETTE[3], fontsize=10)
    _arrow(ax, (2.6, 2.9), (3.1, 1.35), PALETTE[3])
    ax.text(2.6, 1.75, r"$\zeta_t$", fontsize=12, color=PALETTE[3], ha="right")
    _box(
        ax,
        7.35,
        1.0,
        3.15,
        0.7,
        r"$W_{\mathrm{out}}(y_t \odot \mathrm{SiLU}(\zeta_t))$",
        NEUTRAL,
        fontsize=10,
    )
    _arrow(ax, (4.8, 1.35), (7.35, 1.35), PALETTE[3])
    _arrow(ax, (8.9, 3.25), (8.9, 1.7), STATE)
    ax.text(9.0, 2.45, "$y_t$", fontsize=11, color=STATE)
    ax.text(
        0.1,
        0.25,
        "every factor depends on the tokens: $\\Delta_t$, $B_t$, $C_t$ are computed "
        "from $\\xi_t$,\nwhich the convolution mixes from the last four tokens",
        fontsize=9.5,
        color=NEUTRAL,
    )


def _memory(ax, n_tokens: int) -> None:
    """One channel read as a key-value memory (right panel)."""
    ax.set_axis_off()
    ax.set_xlim(-0.2, n_tokens + 3.2)
    ax.set_ylim(0, 6.9)
    ax.set_title(r"channel $\ell$ as a memory", fontsize=12)
    state_x, state_w = 0.4, n_tokens + 0.6
    ax.add_patch(Rectangle((state_x, 3.3), state_w, 1.5, fc=STATE, alpha=0.2, ec="k"))
    ax.text(
        state_x + state_w / 2,
        4.05,
        r"$h_t[\ell] = \sum_{s \leq t} v_s\, (f_{s \to t} \odot \kappa_s)$"
        "\nthe fade $f_{s \\to t} \\in (0, 1]^N$: the product of the\n"
        r"factors $e^{\Delta_r[\ell] A[\ell]}$ of the tokens $r$ after $s$",
        ha="center",
        va="center",
        fontsize=10,
    )
    for s in range(1, n_tokens + 1):
        x = s - 0.4
        label = f"$u_{s}$" if s < n_tokens else "$u_t$"
        _box(ax, x, 0.9, 0.8, 0.7, label, NEUTRAL, fontsize=11)
        fade = 0.35 + 0.65 * s / n_tokens  # older writes drawn fainter: they fade
        ax.add_patch(
            FancyArrowPatch(
                (x + 0.4, 1.6),
                (x + 0.4, 3.3),
                arrowstyle="-|>",
                mutation_scale=10,
                color=STATE,
                alpha=fade,
                lw=1.2,
            )
        )
    ax.text(
        0.0,
        2.45,
        "token $s$ writes the value $\\Delta_s[\\ell]\\,\\xi_s[\\ell]$ under the key "
        "$B_s$;\nolder writes fade, one rate per key coordinate",
        fontsize=9.5,
        color=STATE,
        va="center",
        bbox={"fc": "white", "ec": "none", "alpha": 0.85, "pad": 1.0},
    )
    _arrow(ax, (state_x + state_w, 4.05), (n_tokens + 1.9, 1.6), READ, rad=-0.25)
    _box(ax, n_tokens + 1.25, 0.9, 1.6, 0.7, r"$C_t^\top h_t[\ell]$", READ, fontsize=10)
    ax.text(
        n_tokens + 2.05,
        0.55,
        "read with the query $C_t$",
        ha="center",
        va="top",
        fontsize=9.5,
        color=READ,
    )
    ax.text(
        state_x + state_w / 2,
        5.6,
        "linear attention's $S = \\sum_s v_s \\kappa_s^\\top$, read as $S \\rho_t$:\n"
        "value $v_s = \\Delta_s[\\ell]\\,\\xi_s[\\ell]$, key $\\kappa_s = B_s$ "
        "(faded), query $\\rho_t = C_t$",
        ha="center",
        va="center",
        fontsize=9,
    )


def selective_layer_diagram(n_tokens: int = 4):
    """The selective layer of chapter 9 (left) and one of its channels read as a
    key-value memory (right), with ``n_tokens`` tokens drawn (2 to 6). Returns the
    Figure."""
    if (
        isinstance(n_tokens, bool)
        or not isinstance(n_tokens, int)
        or not 2 <= n_tokens <= 6
    ):
        raise ValueError(f"n_tokens: expected an int from 2 to 6, got {n_tokens!r}")
    fig, (left, right) = plt.subplots(  # laid out by hand below, not constrained
        1,
        2,
        figsize=(11.5, 4.6),
        gridspec_kw={"width_ratios": [1.45, 1]},
        layout="none",
    )
    fig.subplots_adjust(left=0.01, right=0.99, top=0.92, bottom=0.02, wspace=0.04)
    _layer(left)
    _memory(right, n_tokens)
    return fig
