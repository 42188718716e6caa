"""Matrices as pictures: annotated heatmaps (seaborn), weight panels and attention
maps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from .._checks import check_positive_int
from . import _inputs as _in


def annotated_heatmap(
    values,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    fmt: str = ".2f",
    cmap: str = "viridis",
    vmin=None,
    vmax=None,
    ax=None,
):
    """A matrix as a heatmap with each cell's value written in it. Returns the
    Figure."""
    row_labels = _in.labels("row_labels", row_labels)
    col_labels = _in.labels("col_labels", col_labels)
    _in.colormap("cmap", cmap)
    values = _in.numbers("values", values, ndim=2, nan=True)
    if values.shape != (len(row_labels), len(col_labels)):
        raise ValueError(
            f"values: expected shape {(len(row_labels), len(col_labels))}, got "
            f"{values.shape}"
        )
    vmin, vmax = _in.optional_real("vmin", vmin), _in.optional_real("vmax", vmax)
    if _in.axes("ax", ax) is None:
        # At most 7 in wide: a wider figure is shrunk on the page, text and all.
        width = min(7.0, 2.5 + 1.3 * len(col_labels))
        fig, ax = plt.subplots(figsize=(width, 1.2 + 0.6 * len(row_labels)))
    else:
        fig = ax.figure
    sns.heatmap(
        values,
        annot=True,
        fmt=fmt,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        ax=ax,
        xticklabels=list(col_labels),
        yticklabels=list(row_labels),
        annot_kws={"fontsize": 9},
        cbar_kws={"shrink": 0.8},
    )
    ax.tick_params(axis="y", rotation=0)
    ax.set_title(title, fontsize=10)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    return fig


def heatmap_panels(
    matrices: Mapping[str, object],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    stacked: bool = False,
    **options,
):
    """Annotated heatmaps, one per ``title -> matrix`` (same labels), one Figure: side
    by side, or one above the other with ``stacked=True`` (for matrices with many
    columns, whose annotations would not fit beside each other at 7 in).

    ``options`` go to :func:`annotated_heatmap` (``vmin``, ``vmax``, ``cmap``, axis
    labels...).
    """
    _in.mapping("matrices", matrices)
    row_labels = _in.labels("row_labels", row_labels)
    col_labels = _in.labels("col_labels", col_labels)
    if not matrices:
        raise ValueError("matrices: expected at least one matrix, got none")
    n = len(matrices)
    if _in.flag("stacked", stacked):
        size = (7.0, n * (1.2 + 0.45 * len(row_labels)))
        fig, axes = plt.subplots(
            n, 1, figsize=size, squeeze=False, layout="constrained"
        )
        axes = axes[:, 0]
    else:
        fig, axes = plt.subplots(1, n, figsize=(min(10.0, 3.4 * n), 3.3), squeeze=False)
        axes = axes[0]
    for ax, (title, values) in zip(axes, matrices.items(), strict=True):
        annotated_heatmap(values, row_labels, col_labels, title=title, ax=ax, **options)
    return fig


def matrix_panels(
    matrices: Mapping[str, object], *, cmap: str = "RdBu_r", shared_scale: bool = True
):
    """Square matrices side by side (e.g. a trained weight block beside a closed form).

    One symmetric colour scale and one colour bar for all panels when
    ``shared_scale``; otherwise each panel has its own scale and its own colour bar.
    Returns the Figure.
    """
    _in.mapping("matrices", matrices)
    _in.colormap("cmap", cmap)
    shared_scale = _in.flag("shared_scale", shared_scale)
    if not matrices:
        raise ValueError("matrices: expected at least one matrix, got none")
    arrays = {
        k: _in.numbers(f"matrices[{k!r}]", v, ndim=2) for k, v in matrices.items()
    }
    for name, a in arrays.items():
        if a.ndim != 2:
            raise ValueError(
                f"matrices[{name!r}]: expected a 2-D array, got shape {a.shape}"
            )
    vmax = max(float(np.abs(a).max()) for a in arrays.values())
    fig, axes = plt.subplots(
        1, len(arrays), figsize=(min(10.0, 2.6 * len(arrays)), 2.8), squeeze=False
    )
    for ax, (name, a) in zip(axes[0], arrays.items(), strict=True):
        v = vmax if shared_scale else float(np.abs(a).max())
        im = ax.imshow(a, cmap=cmap, vmin=-v, vmax=v)
        ax.set_title(name, fontsize=10)
        ax.set(xticks=[], yticks=[])
        ax.grid(False)
        if not shared_scale:  # a bar per panel: one bar would state only the last scale
            fig.colorbar(im, ax=ax, shrink=0.8)
    if shared_scale:
        fig.colorbar(im, ax=list(axes[0]), shrink=0.8)
    return fig


def attention_map(rows, row_labels: Sequence[str], k: int, *, title: str = ""):
    """Mean attention of the query over the tokens ``x_1, y_1, ..., x_k, y_k, x_q``, a
    row per head."""
    row_labels = _in.labels("row_labels", row_labels)
    check_positive_int("k", k)  # demonstrations
    rows = _in.numbers("rows", rows, ndim=2)
    cols = [f"{t}{i}" for i in range(1, k + 1) for t in ("x", "y")] + ["xq"]
    if rows.shape != (len(row_labels), 2 * k + 1):
        raise ValueError(
            f"rows: expected shape {(len(row_labels), 2 * k + 1)} to match row_labels "
            f"and k, got {rows.shape}"
        )
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


def attention_heatmaps(
    patterns: Mapping[str, object],
    tick_labels: Sequence[str] | None = None,
    *,
    vmax: float = 1.0,
    cmap: str = "magma",
):
    """Attention patterns side by side as seaborn heatmaps, one per ``title -> (T, T)``
    matrix (row ``t``: where position ``t`` attends; zero above the diagonal for a
    causal head), on one colour scale ``[0, vmax]``. ``tick_labels`` (``T`` strings,
    e.g. the tokens) label both axes. Returns the Figure."""
    _in.mapping("patterns", patterns)
    _in.colormap("cmap", cmap)
    if not patterns:
        raise ValueError("patterns: expected at least one pattern, got none")
    vmax = _in.numbers("vmax", [vmax], minimum=0, strict=True)[0]
    arrays = {
        k: _in.numbers(f"patterns[{k!r}]", v, ndim=2) for k, v in patterns.items()
    }
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1 or any(len(s) != 2 or s[0] != s[1] for s in shapes):
        raise ValueError(
            f"patterns: expected square (T, T) matrices of one shape, got {shapes}"
        )
    T = next(iter(shapes))[0]
    if tick_labels is not None:
        tick_labels = _in.labels("tick_labels", tick_labels)
    if tick_labels is not None and len(tick_labels) != T:
        raise ValueError(f"tick_labels: expected {T} labels, got {len(tick_labels)}")
    fig, axes = plt.subplots(
        1, len(arrays), figsize=(min(10.0, 3.6 * len(arrays)), 3.4), squeeze=False
    )
    labels = list(tick_labels) if tick_labels is not None else False
    for i, (ax, (title, a)) in enumerate(zip(axes[0], arrays.items(), strict=True)):
        sns.heatmap(
            a,
            vmin=0.0,
            vmax=vmax,
            cmap=cmap,
            square=True,
            ax=ax,
            cbar=i == len(arrays) - 1,
            cbar_kws={"shrink": 0.8, "label": "attention"},
            xticklabels=labels,
            yticklabels=labels,
        )
        ax.tick_params(labelsize=6)
        ax.set_title(title, fontsize=10)
        ax.set(xlabel="key position", ylabel="query position" if i == 0 else "")
    return fig
