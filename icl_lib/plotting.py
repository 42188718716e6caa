"""One style for every figure of the book: functions take data and return a Figure.

Figures have a white background (so they stay readable in the site's dark mode), one colour per
learner across the whole book, and labelled axes. Nothing is shown or saved here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

# One colour per learner, used by every chapter (Okabe-Ito palette, colour-blind safe).
LEARNER_COLORS = {
    "transformer": "#000000",
    "ols": "#0072B2",
    "ridge": "#009E73",
    "bayes": "#009E73",
    "gd": "#D55E00",
    "averaging": "#E69F00",
    "3-nn": "#CC79A7",
    "knn": "#CC79A7",
    "zero": "#999999",
    "seed": "#882255",  # the seed notes' estimators (chapter 1)
}
_FALLBACK = ["#56B4E9", "#882255", "#44AA99", "#117733", "#332288", "#F0E442"]
_CURVE_COLORS = ["#000000", "#D55E00", "#0072B2", "#009E73", "#CC79A7"]  # training curves, in order

STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 11,
    "legend.frameon": False,
    "figure.constrained_layout.use": True,
}


def use_book_style() -> None:
    """Apply the book's matplotlib style (called by every chapter's setup)."""
    plt.rcParams.update(STYLE)


def color_for(name: str, index: int = 0) -> str:
    """The book's colour for a learner name (case-insensitive prefix match), else a fallback."""
    key = name.lower()
    for prefix, color in LEARNER_COLORS.items():
        if key.startswith(prefix):
            return color
    return _FALLBACK[index % len(_FALLBACK)]


def error_curves(
    ks: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    ylabel: str = "squared error / d",
    xlabel: str = "in-context examples k",
    title: str = "",
    logy: bool = False,
    ylim: tuple[float, float] | None = None,
    vlines: Mapping[str, float] | None = None,
    styles: Mapping[str, str] | None = None,
    ax=None,
):
    """Error against context size, one line per learner. Returns the Figure.

    Args:
        ks: x positions shared by every curve (a curve may hold NaN where a learner is undefined).
        curves: learner name -> values, same length as ``ks``.
        vlines: label -> x position of a dotted vertical reference line (e.g. ``k = d``).
        styles: learner name -> matplotlib line style (default solid with markers for "transformer").
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
    else:
        fig = ax.figure
    ks = np.asarray(ks, dtype=float)
    for i, (name, values) in enumerate(curves.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != ks.shape:
            raise ValueError(f"curves[{name!r}]: expected {ks.shape[0]} values (one per k), got {values.shape}")
        style = (styles or {}).get(name, "-")
        marker = "o" if name.lower().startswith("transformer") else None
        ax.plot(ks, values, style, color=color_for(name, i), marker=marker, ms=4,
                lw=2.2 if marker else 1.6, label=name)
    for label, x in (vlines or {}).items():
        ax.axvline(x, color="#666666", ls=":", lw=1)
        ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                    textcoords="offset points", fontsize=9, color="#444444")
    if logy:
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=9, ncol=2)
    return fig


def training_curve(manifests: Mapping[str, Mapping], *, logy: bool = True):
    """Training loss against step from checkpoint manifests (``icl_lib.train``). Returns the Figure."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, (label, manifest) in enumerate(manifests.items()):
        curve = manifest["curve"]
        ax.plot(curve["step"], curve["loss"], color=_CURVE_COLORS[i % len(_CURVE_COLORS)], label=label)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (all prefixes)")
    ax.legend(fontsize=9)
    return fig


def prediction_scatter(truth, predictions: Mapping[str, Sequence[float]], *, ax=None, title: str = ""):
    """Predicted against true query labels, one colour per learner, with the diagonal. Returns the Figure."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.0, 4.0))
    else:
        fig = ax.figure
    truth = np.asarray(truth, dtype=float)
    for i, (name, values) in enumerate(predictions.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != truth.shape:
            raise ValueError(f"predictions[{name!r}]: expected shape {truth.shape} like truth, got {values.shape}")
        ax.scatter(truth, values, s=8, alpha=0.5, color=color_for(name, i), label=name)
    lim = float(np.nanmax(np.abs(truth))) * 1.1
    ax.plot([-lim, lim], [-lim, lim], color="#666666", lw=1, ls="--")
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_xlabel("true label $y_q$")
    ax.set_ylabel("prediction")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=9, markerscale=2)
    return fig


def matrix_panels(matrices: Mapping[str, object], *, cmap: str = "RdBu_r", shared_scale: bool = True):
    """Heatmaps of square matrices side by side (e.g. a trained weight block beside a closed form).

    One symmetric colour scale for all panels when ``shared_scale``. Returns the Figure.
    """
    if not matrices:
        raise ValueError("matrices: expected at least one matrix, got none")
    arrays = {k: np.asarray(v, dtype=float) for k, v in matrices.items()}
    for name, a in arrays.items():
        if a.ndim != 2:
            raise ValueError(f"matrices[{name!r}]: expected a 2-D array, got shape {a.shape}")
    vmax = max(float(np.abs(a).max()) for a in arrays.values())
    fig, axes = plt.subplots(1, len(arrays), figsize=(min(10.0, 2.6 * len(arrays)), 2.8), squeeze=False)
    for ax, (name, a) in zip(axes[0], arrays.items()):
        v = vmax if shared_scale else float(np.abs(a).max())
        im = ax.imshow(a, cmap=cmap, vmin=-v, vmax=v)
        ax.set_title(name, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    fig.colorbar(im, ax=list(axes[0]), shrink=0.8)
    return fig
