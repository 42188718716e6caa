"""Curves, bars and scatters: arrays in, a Figure out (nothing is shown or saved here).

Every function takes plain arrays (or tensors) and an optional ``ax`` to draw into, so
that :func:`icl_lib.plotting.panels.small_multiples` can lay several out with one
legend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator, MultipleLocator

from .._checks import check_sequence
from . import _inputs as _in
from .style import (
    NEUTRAL,
    PALETTE,
    TRANSFORMER,
    color_for,
    finish_axes,
    learner_color,
    line_styles,
)


def _pool_sizes(pool_sizes) -> np.ndarray:
    """Pool sizes ``M >= 1``; ``inf`` stands for an infinite pool (fresh tasks)."""
    pool_sizes = check_sequence("pool_sizes", pool_sizes, "numbers", nonempty=True)
    return np.asarray([_in.pool_size(size) for size in pool_sizes], dtype=float)


def _axis(ax, figsize):
    _in.axes("ax", ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax


def _is_model(name: str) -> bool:
    return name.lower().startswith("transformer")


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
    hlines: Mapping[str, float] | None = None,
    bands: Mapping[str, Sequence[float]] | None = None,
    styles: Mapping[str, str] | None = None,
    ax=None,
):
    """Error against context size, one line per learner (the transformer in black,
    marked).

    Args:
        ks: x positions shared by every curve (a curve may hold NaN where a learner is
        undefined).
        curves: learner name -> values, one per ``k``.
        vlines: label -> x position of a dotted vertical reference line (e.g.
        ``k = d``).
        hlines: label -> y position of a dotted horizontal reference line (e.g. a
        ratio of 1, or a goal).
        bands: learner name -> half-width of a shaded band around its curve, one
        per ``k`` (e.g. two standard errors).
        styles: learner name -> matplotlib line style (default: solid).
    """
    ks = _in.numbers("ks", ks, minimum=0)
    _in.curves("curves", curves)
    logy, ylim = _in.flag("logy", logy), _in.limits("ylim", ylim)
    vlines, hlines = (
        _in.optional_mapping("vlines", vlines),
        _in.optional_mapping("hlines", hlines),
    )
    bands, styles = (
        _in.optional_mapping("bands", bands),
        _in.optional_mapping("styles", styles),
    )
    fig, ax = _axis(ax, (6.4, 4.0))
    colors = [color_for(name, i) for i, name in enumerate(curves)]
    markers = ["o" if _is_model(name) else None for name in curves]
    lines = line_styles(list(curves), colors, styles, markers)
    for i, (name, values) in enumerate(curves.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != ks.shape:
            raise ValueError(
                f"curves[{name!r}]: expected {ks.shape[0]} values (one per k), got "
                f"{values.shape}"
            )
        marker = markers[i]
        ax.plot(
            ks,
            values,
            lines[i],
            color=colors[i],
            marker=marker,
            ms=4,
            lw=2.2 if marker else 1.6,
            label=name,
        )
        if name in bands:
            half = np.asarray(bands[name], dtype=float)
            if half.shape != ks.shape:
                raise ValueError(
                    f"bands[{name!r}]: expected {ks.shape[0]} values (one per k), "
                    f"got {half.shape}"
                )
            ax.fill_between(
                ks, values - half, values + half, color=color_for(name, i), alpha=0.18
            )
    unknown = set(bands) - set(curves)
    if unknown:
        raise ValueError(
            f"bands: expected names of curves {sorted(curves)}, got {sorted(unknown)}"
        )
    for label, y in hlines.items():
        ax.axhline(y, color=NEUTRAL, ls=":", lw=1)
        ax.annotate(
            label,
            (0, y),
            xycoords=("axes fraction", "data"),
            xytext=(3, 3),
            textcoords="offset points",
            fontsize=9,
            color="#444444",
        )
    for label, x in vlines.items():
        ax.axvline(x, color=NEUTRAL, ls=":", lw=1)
        ax.annotate(
            label,
            (x, 1),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            fontsize=9,
            color="#444444",
        )
    if logy:
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    if np.all(np.isfinite(ks)) and np.allclose(ks, np.round(ks)):
        # counts (context sizes, steps, depths) get integer ticks, never 2.5; where the
        # reference lines sit at whole counts (k = d, 2d), the ticks fall on them too
        step = _reference_step(list(vlines.values()), float(ks.max() - ks.min()))
        locator = MultipleLocator(step) if step else MaxNLocator(integer=True)
        ax.xaxis.set_major_locator(locator)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=9, ncol=2)
    finish_axes(ax)
    return fig


def _reference_step(positions: list[float], span: float) -> int | None:
    """The tick spacing that puts a tick on every reference line (their greatest common
    divisor), or None where the lines are not at positive whole numbers or that spacing
    would give fewer than 3 or more than 12 ticks over ``span``."""
    if not positions or not all(
        float(x) > 0 and float(x).is_integer() for x in positions
    ):
        return None
    step = math.gcd(*(int(x) for x in positions))
    return step if 2 <= span / step <= 12 else None


def training_curves(
    curves: Mapping[str, Mapping],
    *,
    logy: bool = True,
    title: str = "",
    ylabel: str = "training loss",
    xlabel: str = "training step",
    styles: Mapping[str, str] | None = None,
    ax=None,
):
    """Training loss (or any logged quantity) against step, one line per run:
    ``label -> {"step": [...], "loss": [...]}``. A run named after a learner keeps
    the learner's colour; ``styles``: label -> matplotlib line style."""
    if not _in.mapping("curves", curves):
        raise ValueError("curves: expected at least one training curve, got none")
    for label, curve in curves.items():
        _in.mapping(f"curves[{label!r}]", curve)
    logy, styles = _in.flag("logy", logy), _in.optional_mapping("styles", styles)
    fig, ax = _axis(ax, (6.4, 3.6))
    colors = [
        TRANSFORMER
        if _is_model(label)
        else learner_color(label) or ([TRANSFORMER] + PALETTE)[i % 9]
        for i, label in enumerate(curves)
    ]
    lines = line_styles(list(curves), colors, styles)
    for i, (label, curve) in enumerate(curves.items()):
        ax.plot(curve["step"], curve["loss"], color=colors[i], ls=lines[i], label=label)
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=9)
    finish_axes(ax)
    return fig


def prediction_scatter(
    truth,
    predictions: Mapping[str, Sequence[float]],
    *,
    title: str = "",
    xlabel: str = "true label $y_q$",
    ax=None,
):
    """Predicted against true query labels, one colour per learner, with the
    diagonal."""
    truth = _in.numbers("truth", truth)
    _in.curves("predictions", predictions)
    fig, ax = _axis(ax, (4.0, 4.0))
    for i, (name, values) in enumerate(predictions.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != truth.shape:
            raise ValueError(
                f"predictions[{name!r}]: expected shape {truth.shape} like truth, got "
                f"{values.shape}"
            )
        ax.scatter(truth, values, s=8, alpha=0.5, color=color_for(name, i), label=name)
    lim = float(np.nanmax(np.abs(truth))) * 1.1
    ax.plot([-lim, lim], [-lim, lim], color=NEUTRAL, lw=1, ls="--")
    ax.set(
        xlim=(-lim, lim),
        ylim=(-lim, lim),
        xlabel=xlabel,
        ylabel="prediction",
        title=title,
    )
    ax.legend(fontsize=9, markerscale=2)
    return fig


def loglog_curves(
    ns: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    reference: tuple[float, float] | None = None,
    variable: str = "n",
    title: str = "",
    ax=None,
):
    """Curves against ``ns`` on log-log axes; ``reference = (c, slope)`` adds
    ``c n^slope`` dotted, labelled with ``variable`` for ``n``."""
    ns = _in.numbers("ns", ns, minimum=0, strict=True)  # a log axis
    _in.curves("curves", curves, len(ns))
    if reference is not None:
        reference = _in.pair("reference", reference, "(c, slope)")
    fig, ax = _axis(ax, (6.0, 3.8))
    for i, (name, values) in enumerate(curves.items()):
        ax.plot(
            ns,
            np.asarray(values, dtype=float),
            marker="o",
            ms=4,
            color=PALETTE[i % len(PALETTE)],
            label=name,
        )
    if reference is not None:
        c, slope = reference
        ax.plot(
            ns,
            c * ns**slope,
            ls=":",
            color="#444444",
            label=f"$\\propto {variable}^{{{slope:g}}}$",
        )
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=9)
    finish_axes(ax)
    return fig


def budget_curves(
    prompts: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    marks: Mapping[str, float] | None = None,
    hlines: Mapping[str, float] | None = None,
    ylabel: str = "error / d",
    xlabel: str = "training prompts seen",
    title: str = "",
    ax=None,
):
    """Logged errors against the training prompts seen, on log-log axes: how much
    training a result needs.

    ``curves``: label -> values at ``prompts`` (e.g. a manifest's monitored errors,
    with ``prompts = steps * batch_size``; NaN leaves a gap, for runs logged over
    different stretches); ``marks``: label -> a number of prompts, drawn as a dotted
    vertical line (a paper's budget); ``hlines``: label -> a level, a dashed
    horizontal line (a goal). ``prompts`` may count optimiser steps instead, with
    ``xlabel`` saying so.
    """
    prompts = _in.numbers("prompts", prompts, minimum=0, strict=True)  # a log axis
    _in.curves("curves", curves)
    marks, hlines = (
        _in.optional_mapping("marks", marks),
        _in.optional_mapping("hlines", hlines),
    )
    fig, ax = _axis(ax, (6.4, 3.8))
    colors = [color_for(name, i) for i, name in enumerate(curves)]
    lines = line_styles(list(curves), colors)
    for i, (name, values) in enumerate(curves.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != prompts.shape:
            raise ValueError(
                f"curves[{name!r}]: expected {prompts.shape[0]} values like prompts, "
                f"got shape {values.shape}"
            )
        ax.plot(prompts, values, lines[i], color=colors[i], label=name)
    for i, (name, x) in enumerate(marks.items()):
        ax.axvline(x, ls=":", color=NEUTRAL, lw=1.2)
        ax.annotate(
            name,
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-4, -4 - 12 * i),
            textcoords="offset points",
            ha="right",
            va="top",
            fontsize=8,
            color="#444444",
        )
    for i, (name, level) in enumerate(hlines.items()):
        ax.axhline(
            level,
            ls="--",
            lw=1,
            color=PALETTE[(i + len(curves)) % len(PALETTE)],
            label=name,
        )
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=9)
    finish_axes(ax)
    return fig


def accuracy_curves(
    ks: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    ylabel: str = "accuracy",
    xlabel: str = "demonstrations k",
    title: str = "",
    styles: Mapping[str, str] | None = None,
    ax=None,
):
    """Accuracy against context size, one line per method (the transformer in black,
    marked; a learner in its colour); ``styles``: name -> matplotlib line style."""
    ks = _in.numbers("ks", ks, minimum=0)
    _in.curves("curves", curves, len(ks))
    styles = _in.optional_mapping("styles", styles)
    fig, ax = _axis(ax, (6.4, 3.8))
    colors = [
        TRANSFORMER if _is_model(name) else color_for(name, i)
        for i, name in enumerate(curves)
    ]
    markers = ["o" if _is_model(name) else None for name in curves]
    lines = line_styles(list(curves), colors, styles, markers)
    for i, (name, values) in enumerate(curves.items()):
        model = _is_model(name)
        ax.plot(
            ks,
            np.asarray(values, dtype=float),
            color=colors[i],
            ls=lines[i],
            marker=markers[i],
            ms=4,
            lw=2.2 if model else 1.6,
            label=name,
        )
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=9, loc="best")
    finish_axes(ax)
    return fig


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    ylabel: str,
    ylim: tuple[float, float] | None = None,
    title: str = "",
    ax=None,
):
    """Bars grouped by ``groups``, one colour per series, each bar labelled with its
    value."""
    groups = _in.labels("groups", groups)
    _in.curves("series", series)
    ylim = _in.limits("ylim", ylim)
    fig, ax = _axis(ax, (6.0, 3.6))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        if len(values) != len(groups):
            raise ValueError(
                f"series[{name!r}]: expected {len(groups)} values, got {len(values)}"
            )
        bars = ax.bar(
            x + (i - (len(series) - 1) / 2) * width,
            values,
            width,
            label=name,
            color=color_for(name, i + 2),
        )
        ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.set_xticks(x, groups)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set(ylabel=ylabel, title=title)
    ax.legend(fontsize=9)
    return fig


def smoother_fit(xs, ys, grid, fit, *, truth=None, title: str = "", ax=None):
    """One-dimensional data ``xs, ys (N,)``, a fitted curve ``fit`` on ``grid`` and the
    truth.

    ``truth`` is the regression function on ``grid`` (optional), drawn dashed.
    """
    xs, ys = _in.numbers("xs", xs), _in.numbers("ys", ys)
    grid, fit = _in.numbers("grid", grid), _in.numbers("fit", fit)
    if grid.shape != fit.shape:
        raise ValueError(
            f"fit: expected the shape of grid {grid.shape}, got {fit.shape}"
        )
    truth = _in.optional_like("truth", truth, "grid", grid)
    fig, ax = _axis(ax, (6.0, 3.6))
    if truth is not None:
        ax.plot(
            grid,
            truth,
            color="#999999",
            lw=1.2,
            ls="--",
            label="regression function",
        )
    ax.scatter(
        np.asarray(xs, dtype=float),
        np.asarray(ys, dtype=float),
        s=14,
        color=TRANSFORMER,
        zorder=3,
        label="demonstrations",
    )
    ax.plot(grid, fit, color=color_for("gd"), lw=2, label="attention = Nadaraya-Watson")
    ax.set(xlabel="x", ylabel="y")
    ax.set_title(title, fontsize=10)
    return fig


def pool_size_curves(
    pool_sizes: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    ylabel: str = "excess error / d",
    title: str = "",
    logy: bool = False,
    ax=None,
):
    """Curves against the number of pretraining tasks ``M`` on a log2 axis; an
    infinite ``M`` (``math.inf``) is drawn one step right of the largest finite one,
    marked ``inf``. The transformer (a name starting with "transformer") in black."""
    sizes = _pool_sizes(pool_sizes)
    _in.curves("curves", curves, len(sizes))
    logy = _in.flag("logy", logy)
    fig, ax = _axis(ax, (6.4, 3.8))
    finite = np.isfinite(sizes)
    if not finite.any():
        raise ValueError("pool_sizes: expected at least one finite pool size")
    x = np.where(finite, np.log2(np.where(finite, sizes, 1.0)), 0.0)
    x[~finite] = x[finite].max() + 1.5
    colors = [color_for(name, i) for i, name in enumerate(curves)]
    markers = ["o" if _is_model(name) else "s" for name in curves]
    lines = line_styles(list(curves), colors, markers=markers)
    for i, (name, values) in enumerate(curves.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != sizes.shape:
            raise ValueError(
                f"curves[{name!r}]: expected {sizes.shape[0]} values (one per M), got "
                f"{values.shape}"
            )
        marker = markers[i]
        ax.plot(
            x[finite],
            values[finite],
            lines[i],
            color=colors[i],
            marker=marker,
            ms=4,
            lw=2.2 if _is_model(name) else 1.6,
            label=name,
        )
        if (~finite).any() and np.isfinite(values[~finite]).all():
            ax.plot(x[~finite], values[~finite], marker, color=colors[i], ms=6)
    ticks = list(x[finite])
    labels = [f"$2^{{{int(v)}}}$" if v == int(v) else f"{2**v:g}" for v in ticks]
    if (~finite).any():
        ticks.append(x[~finite][0])
        labels.append("$\\infty$")
    ax.set_xticks(ticks, labels, fontsize=8)
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel="pretraining tasks M", ylabel=ylabel, title=title)
    ax.legend(fontsize=9)
    finish_axes(ax)
    return fig


def recall_capacity(
    ratios: Mapping[int, Sequence[float]],
    guaranteed: Mapping[int, Sequence[float]],
    accuracy: Mapping[int, Sequence[float]],
):
    """Two panels against ``P / N`` (pairs over key dimension), one line per key
    dimension ``N`` (the keys of the three mappings): the fraction of queries right for
    every choice of the values, with the recall proposition's bound ``min(1, N / P)``
    (left), and the fraction right on random values, with the accuracy of a memory that
    recalls ``N`` pairs exactly and guesses the rest (right)."""
    for name, value in (
        ("ratios", ratios),
        ("guaranteed", guaranteed),
        ("accuracy", accuracy),
    ):
        _in.curves(name, value)
    if not (set(ratios) == set(guaranteed) == set(accuracy)):
        raise ValueError(
            "ratios, guaranteed, accuracy: expected the same key dimensions N, got "
            f"{sorted(ratios)}, {sorted(guaranteed)}, {sorted(accuracy)}"
        )
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8), sharey=True)
    styles = ("-", "--", ":", "-.")
    for i, N in enumerate(ratios):
        for ax, values in zip(axes, (guaranteed[N], accuracy[N]), strict=True):
            ax.plot(
                ratios[N],
                np.asarray(values, dtype=float),
                marker="o",
                ms=4,
                ls=styles[i % len(styles)],
                color=PALETTE[i % len(PALETTE)],
                label=f"trained, $N$ = {N}",
            )
    grid = np.linspace(
        min(min(r) for r in ratios.values()), max(max(r) for r in ratios.values()), 200
    )
    axes[0].plot(
        grid,
        np.minimum(1, 1 / grid),
        color=NEUTRAL,
        lw=2.5,
        alpha=0.5,
        label="bound $\\min(1, N / P)$",
    )
    # the alternative of a hard wall: N pairs recalled exactly, the rest a coin flip
    axes[1].plot(
        grid,
        np.minimum(1, 1 / grid) + (1 - np.minimum(1, 1 / grid)) / 2,
        color=NEUTRAL,
        lw=2.5,
        alpha=0.5,
        ls="--",
        label="$N$ pairs exact, the rest guessed",
    )
    for ax in axes:
        ax.axvline(1, color=NEUTRAL, lw=0.8, ls=":")
        ax.legend(fontsize=9, loc="lower left")
        ax.set_xlabel("pairs per key dimension, $P / N$")
    axes[0].set(
        ylabel="fraction of queries", title="right for every choice of the values"
    )
    axes[1].set(title="right on random values")
    return fig
