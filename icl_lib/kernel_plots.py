"""Figures of chapter 8 (kernel regression), in the book's style: data in, Figure out.

Nothing is shown or saved here; colours come from :mod:`icl_lib.plotting`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from .kernels import attention_regression
from .plotting import color_for

# Okabe-Ito colours that stay legible on white (no yellow), for curves that are not learners.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00"]


def smoother_fit(xs: torch.Tensor, ys: torch.Tensor, temperature: float, *, truth=None,
                 grid: torch.Tensor | None = None, ax=None):
    """One-dimensional data ``xs (N,)``, ``ys (N,)`` and the softmax-attention fit at ``temperature``.

    The fitted curve is :func:`icl_lib.kernels.attention_regression` queried at every grid point,
    i.e. Gaussian Nadaraya-Watson with bandwidth ``sqrt(temperature)``. ``truth`` is an optional
    callable drawn as the regression function. Returns the Figure.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.0, 3.6))
    else:
        fig = ax.figure
    if grid is None:
        grid = torch.linspace(float(xs.min()) - 0.3, float(xs.max()) + 0.3, 300, dtype=xs.dtype)
    G = grid.shape[0]
    fit = attention_regression(xs.reshape(1, -1, 1).expand(G, -1, 1), ys.reshape(1, -1).expand(G, -1),
                               grid.reshape(G, 1), temperature)
    if truth is not None:
        ax.plot(grid, truth(grid), color="#999999", lw=1.2, ls="--", label="regression function")
    ax.scatter(xs, ys, s=14, color="#000000", zorder=3, label="demonstrations")
    ax.plot(grid, fit, color=color_for("gd"), lw=2, label="attention = Nadaraya-Watson")
    ax.set_title(f"temperature {temperature:.3g} (bandwidth {temperature ** 0.5:.2g})", fontsize=10)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return fig


def smoother_fits(xs, ys, temperatures: Sequence[float], *, truth=None):
    """Small multiples of :func:`smoother_fit`, one panel per temperature. Returns the Figure."""
    fig, axes = plt.subplots(1, len(temperatures), figsize=(min(10.0, 3.0 * len(temperatures)), 3.4), sharey=True,
                             layout="constrained")
    for ax, t in zip(np.atleast_1d(axes), temperatures):
        smoother_fit(xs, ys, t, truth=truth, ax=ax)
    fig.legend(*np.atleast_1d(axes)[0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=9)
    return fig


def loglog_curves(ns: Sequence[float], curves: Mapping[str, Sequence[float]], *, xlabel: str,
                  ylabel: str, reference: tuple[float, float] | None = None, title: str = ""):
    """Curves against ``ns`` on log-log axes; ``reference = (c, slope)`` adds ``c n^slope`` dotted."""
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    ns = np.asarray(ns, dtype=float)
    for i, (name, values) in enumerate(curves.items()):
        ax.plot(ns, np.asarray(values, dtype=float), marker="o", ms=4, color=PALETTE[i % len(PALETTE)], label=name)
    if reference is not None:
        c, slope = reference
        ax.plot(ns, c * ns**slope, ls=":", color="#444444", label=f"$\\propto n^{{{slope:g}}}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=9)
    return fig


def annotated_heatmap(values, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str = "",
                      xlabel: str = "", ylabel: str = "", fmt: str = "{:.2f}", cmap: str = "viridis",
                      vmin=None, vmax=None, ax=None):
    """A matrix as a heatmap with each cell's value written in it. Returns the Figure."""
    values = np.asarray(values, dtype=float)
    if values.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"values: expected shape {(len(row_labels), len(col_labels))}, got {values.shape}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(2.5 + 1.3 * len(col_labels), 1.2 + 0.6 * len(row_labels)))
    else:
        fig = ax.figure
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(col_labels)), col_labels)
    ax.set_yticks(range(len(row_labels)), row_labels)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            r, g, b, _ = image.cmap(image.norm(values[i, j]))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5  # perceived luminance of the cell
            ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", fontsize=9,
                    color="white" if dark else "black")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def attention_map(rows, row_labels: Sequence[str], k: int, *, title: str = ""):
    """Mean attention of the query over the tokens ``x_1, y_1, ..., x_k, y_k, x_q``, one row per head."""
    rows = np.asarray(rows, dtype=float)
    cols = [f"{t}{i}" for i in range(1, k + 1) for t in ("x", "y")] + ["xq"]
    if rows.shape != (len(row_labels), 2 * k + 1):
        raise ValueError(f"rows: expected shape {(len(row_labels), 2 * k + 1)}, got {rows.shape}")
    fig, ax = plt.subplots(figsize=(7.0, 0.6 + 0.28 * len(row_labels)))
    image = ax.imshow(rows, cmap="magma", aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(cols)), cols, fontsize=8)
    ax.set_yticks(range(len(row_labels)), row_labels, fontsize=8)
    ax.set_xlabel("token the query attends to")
    if title:
        ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8, label="mean attention")
    return fig


def grouped_bars(groups: Sequence[str], series: Mapping[str, Sequence[float]], *, ylabel: str,
                 ylim: tuple[float, float] | None = None, title: str = ""):
    """Bars grouped by ``groups``, one colour per series (e.g. random vs retrieved demonstrations)."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=name, color=color_for(name, i + 2))
        ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=9)
    return fig


def accuracy_curves(ks: Sequence[float], curves: Mapping[str, Sequence[float]], *, ylabel: str = "accuracy",
                    xlabel: str = "demonstrations k", title: str = ""):
    """Accuracy against context size, one line per method (``transformer`` in black). Returns the Figure."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for i, (name, values) in enumerate(curves.items()):
        is_model = name.lower().startswith("transformer")
        ax.plot(ks, np.asarray(values, dtype=float), color="#000000" if is_model else PALETTE[i % len(PALETTE)],
                marker="o" if is_model else None, ms=4, lw=2.2 if is_model else 1.6, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=9, loc="lower right")
    return fig
