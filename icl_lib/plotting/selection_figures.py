"""Chapter 5's figures: what selecting means, and two diagrams of its theory.

* :func:`selection_frontier`: each learner as a point, its error on one kind of prompt
  against its error on the other (each over the kind's own Bayes predictor), beside the
  curve that every one-penalty ridge traces: the frontier of learners that do not
  select (its efficient part solid, the penalties past its ends faint). A learner that
  lands inside the frontier, where no one-penalty ridge is as good on both kinds at
  once, selects; on it or outside, it may or may not.
* :func:`ista_layers_diagram`: the Lasso unrolled into layers (attention for the
  gradient step, an MLP of two ReLUs per coordinate for the soft threshold, repeated
  ``T`` times).
* :func:`ridge_mixture_diagram`: the Bayes predictor for mixed noise levels, ridge fits
  weighted by the posterior of their level.

Arrays in, a Figure out; nothing is computed about a model, shown or saved here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyBboxPatch, Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from .._checks import check_positive_int
from . import _inputs as _in
from .style import NEUTRAL, PALETTE, color_for, finish_axes

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h", "*")
FRONTIER = "#009E73"  # ridge's colour: the frontier is traced by ridges


def _pair(name: str, value) -> tuple[float, float]:
    """A point ``(x, y)`` of two finite positive numbers (both axes are logarithmic)."""
    array = _in.numbers(name, value, minimum=0, strict=True)
    if array.shape != (2,):
        raise ValueError(f"{name}: expected a pair (x, y), got shape {array.shape}")
    return float(array[0]), float(array[1])


def _markers(names: Sequence[str]) -> list[str]:
    """One marker per point, every point its own (the transformers share black)."""
    if len(names) > len(MARKERS):
        raise ValueError(
            f"points: expected at most {len(MARKERS)} learners, got {len(names)}"
        )
    return list(MARKERS[: len(names)])


def _point_looks(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The colour and marker of each learner of a frontier figure, in its order.

    A learner takes the book's colour for its name (the palette's otherwise), and each
    point its own marker; a point never takes the frontier's colour, against which it
    would vanish (a Bayes predictor, coloured as ridge, takes a spare palette colour).
    """
    names = list(names)
    colors = [color_for(name, i + 1) for i, name in enumerate(names)]
    spare = [c for c in PALETTE if c != FRONTIER and c not in colors]
    colors = [spare.pop(0) if c == FRONTIER and spare else c for c in colors]
    return dict(zip(names, zip(colors, _markers(names), strict=True), strict=True))


def _nice_log_ticks(axis, low: float, high: float) -> None:
    """Plain ticks on a log axis that spans little: 1, 1.2, 1.5, 2, 3 ... within the
    limits (matplotlib would label only the powers of ten, or none)."""
    ratio = high / low
    if ratio > 6:
        steps = (1.0, 2.0, 3.0, 5.0)
    elif ratio > 3:
        steps = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0)
    else:
        steps = (1.0, 1.1, 1.2, 1.3, 1.5, 1.7, 2.0, 2.5, 3.0)
    candidates = [
        m * 10.0**e for e in range(-3, 4) for m in steps if low <= m * 10.0**e <= high
    ]
    if len(candidates) < 2:
        return
    axis.set_major_locator(FixedLocator(candidates))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def frontier_envelope(
    frontier_x: Sequence[float], frontier_y: Sequence[float], xs: Sequence[float]
) -> np.ndarray:
    """The lowest ``y`` that a one-penalty learner reaches without exceeding each ``x``
    of ``xs``: ``min { y(p) : x(p) <= x }`` over the frontier's curve, read between its
    points by straight lines on log-log axes (``inf`` where no point of the curve has
    ``x(p) <= x``). A learner at ``(x, y)`` lies inside the frontier, beyond the reach
    of every one-penalty learner, exactly when ``y`` is below this envelope at ``x``.
    """
    fx = np.log(_in.numbers("frontier_x", frontier_x, minimum=0, strict=True))
    fy = np.log(_in.numbers("frontier_y", frontier_y, minimum=0, strict=True))
    if fx.shape != fy.shape or fx.size < 2:
        raise ValueError(
            "frontier_y: expected as many values as frontier_x, at least two, got "
            f"{fy.size} and {fx.size}"
        )
    xs = np.log(_in.numbers("xs", xs, minimum=0, strict=True))
    # densify each segment so that the envelope follows the curve, not its vertices
    t = np.linspace(0.0, 1.0, 25)[:, None]
    dense_x = (fx[:-1] + t * (fx[1:] - fx[:-1])).ravel()
    dense_y = (fy[:-1] + t * (fy[1:] - fy[:-1])).ravel()
    out = np.full(xs.shape, np.inf)
    for i, x in enumerate(xs):
        reach = dense_x <= x + 1e-12
        if reach.any():
            out[i] = np.exp(dense_y[reach].min())
    return out


def _runs(fx: np.ndarray, fy: np.ndarray, keep: np.ndarray):
    """The curve's segments ``i -> i + 1`` with ``keep[i]``, as one polyline with NaN
    between runs of kept segments (matplotlib breaks the line there)."""
    xs, ys, previous = [], [], False
    for i, kept in enumerate(keep):
        if kept:
            if not previous:
                xs.append(fx[i])
                ys.append(fy[i])
            xs.append(fx[i + 1])
            ys.append(fy[i + 1])
        elif previous:
            xs.append(np.nan)
            ys.append(np.nan)
        previous = bool(kept)
    if xs and np.isnan(xs[-1]):
        xs, ys = xs[:-1], ys[:-1]
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _frontier_arrays(frontier_x, frontier_y) -> tuple[np.ndarray, np.ndarray]:
    """The frontier's coordinates, checked: positive, as many of each, at least two."""
    fx = _in.numbers("frontier_x", frontier_x, minimum=0, strict=True)
    fy = _in.numbers("frontier_y", frontier_y, minimum=0, strict=True)
    if fx.shape != fy.shape or fx.size < 2:
        raise ValueError(
            "frontier_y: expected as many values as frontier_x, at least two, got "
            f"{fy.size} and {fx.size}"
        )
    return fx, fy


def efficient_points(
    frontier_x: Sequence[float], frontier_y: Sequence[float]
) -> np.ndarray:
    """Which points of the curve no other point beats on both axes: ``True`` where no
    point has ``x' <= x`` and ``y' <= y`` with one of them strict. For noise levels
    these are the penalties between the smallest and the largest matched penalty (the
    frontier proper); past its ends a penalty is worse on both kinds than the nearest
    end, and the curve turns back on itself."""
    fx, fy = _frontier_arrays(frontier_x, frontier_y)
    no_worse = (fx[None, :] <= fx[:, None]) & (fy[None, :] <= fy[:, None])
    better = (fx[None, :] < fx[:, None]) | (fy[None, :] < fy[:, None])
    return ~(no_worse & better).any(1)


def selection_frontier(
    frontier_x: Sequence[float],
    frontier_y: Sequence[float],
    points: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    errors: Mapping[str, Sequence[float]] | None = None,
    marks: Mapping[str, Sequence[float]] | None = None,
    mark_offsets: Mapping[str, Sequence[float]] | None = None,
    frontier_label: str = "ridge, one penalty for every prompt",
    dominated_label: str = "the same past the frontier's ends (worse on both)",
    title: str = "",
    looks_from: Sequence[str] | None = None,
    ax=None,
):
    """Learners as points against the frontier of the learners that do not select.

    Args:
        frontier_x, frontier_y: the curve that one-penalty learners trace, one point
            per penalty in the order of the penalties, each coordinate a ratio of
            errors (> 0); both axes are logarithmic.
        points: learner name -> ``(x, y)``, its ratios on the same two kinds of prompt.
        errors: learner name -> ``(x half-width, y half-width)`` of an error bar (e.g.
            two standard errors), for some of ``points``.
        marks: label -> ``(x, y)``: a point of the frontier to annotate (e.g. the
            penalty of each matched ridge).
        mark_offsets: label -> ``(dx, dy)`` in points, where the label of that mark
            sits against its point (default ``(6, -11)``, below right; a negative
            ``dx`` right-aligns the label, to the left of the point).
        frontier_label: the legend's name of the curve's efficient part
            (:func:`efficient_points`), drawn solid.
        dominated_label: the legend's name of the rest of the curve, the penalties
            that another penalty beats on both kinds, drawn faint and dashed.
        looks_from: learner names whose order sets each point's colour and marker
            (default: the order of ``points``); it must name every point. A figure of
            some of the learners passes the full figure's names, so that each learner
            looks the same in both.

    The region inside the frontier (:func:`frontier_envelope`), where no one-penalty
    learner is as good on both kinds at once, is shaded up to the corner (1, 1); dotted
    lines mark a ratio of 1 on each axis, the Bayes predictor of that kind, which no
    learner beats on average.
    """
    _in.axes("ax", ax)
    for name, text in (
        ("xlabel", xlabel),
        ("ylabel", ylabel),
        ("frontier_label", frontier_label),
        ("dominated_label", dominated_label),
        ("title", title),
    ):
        if not isinstance(text, str):
            raise TypeError(f"{name}: expected a str, got {type(text).__name__}")
    points = _in.mapping("points", points)
    if not points:
        raise ValueError("points: expected at least one learner, got none")
    pairs = {}
    for name, value in points.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"points: expected learner names (str), got {name!r}")
        pairs[name] = _pair(f"points[{name!r}]", value)
    errors = _in.optional_mapping("errors", errors)
    unknown = set(errors) - set(pairs)
    if unknown:
        raise ValueError(
            f"errors: expected names of points {sorted(pairs)}, got {sorted(unknown)}"
        )
    bars = {
        name: _in.numbers(f"errors[{name!r}]", value, minimum=0)
        for name, value in errors.items()
    }
    for name, bar in bars.items():
        if bar.shape != (2,):
            raise ValueError(
                f"errors[{name!r}]: expected a pair (x, y) of half-widths, got shape "
                f"{bar.shape}"
            )
    marks = {
        label: _pair(f"marks[{label!r}]", value)
        for label, value in _in.optional_mapping("marks", marks).items()
    }
    offsets = {
        label: _in.numbers(f"mark_offsets[{label!r}]", value)
        for label, value in _in.optional_mapping("mark_offsets", mark_offsets).items()
    }
    for label, offset in offsets.items():
        if offset.shape != (2,):
            raise ValueError(
                f"mark_offsets[{label!r}]: expected a pair (dx, dy), got shape "
                f"{offset.shape}"
            )
    if set(offsets) - set(marks):
        raise ValueError(
            f"mark_offsets: expected labels of marks {sorted(marks)}, got "
            f"{sorted(set(offsets) - set(marks))}"
        )
    fx, fy = _frontier_arrays(frontier_x, frontier_y)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.0, 4.8))
    else:
        fig = ax.figure

    # limits: every point with its bar, and the part of the curve near them
    xs = [x for x, _ in pairs.values()] + [1.0]
    ys = [y for _, y in pairs.values()] + [1.0]
    for name, (bx, by) in bars.items():
        x, y = pairs[name]
        xs += [x + bx, max(x - bx, x / 2)]
        ys += [y + by, max(y - by, y / 2)]
    xs += [x for x, _ in marks.values()]
    ys += [y for _, y in marks.values()]
    low = min(min(xs), min(ys), float(fx.min()), float(fy.min()))
    x_lim = (min(min(xs), float(fx.min())) / 1.06, max(xs) * 1.12)
    y_lim = (min(min(ys), float(fy.min())) / 1.15, max(ys) * 1.35)
    if low <= 0:  # unreachable: every value was checked positive
        raise ValueError("points: expected positive ratios")

    # shade only between the frontier and the corner (1, 1): a ratio below 1 beats the
    # reference, the Bayes predictor of that kind, which no learner does on average
    if x_lim[1] > 1.0 and y_lim[1] > 1.0:
        grid = np.geomspace(max(x_lim[0], 1.0), x_lim[1], 400)
        floor = max(y_lim[0], 1.0)
        envelope = np.clip(frontier_envelope(fx, fy, grid), floor, y_lim[1])
        ax.fill_between(
            grid, floor, envelope, color=FRONTIER, alpha=0.12, lw=0, zorder=0
        )
    # the frontier proper solid, the penalties past its ends (worse on both kinds
    # than an end) faint and dashed
    efficient = efficient_points(fx, fy)
    solid = efficient[:-1] & efficient[1:]  # segments between two efficient points
    parts = {"-": _runs(fx, fy, solid), "--": _runs(fx, fy, ~solid)}
    ax.plot(*parts["-"], "-", color=FRONTIER, lw=1.9, label=frontier_label, zorder=1)
    if not solid.all():
        ax.plot(
            *parts["--"],
            "--",
            color=FRONTIER,
            lw=1.1,
            alpha=0.55,
            label=dominated_label,
            zorder=1,
        )
    for label, (x, y) in marks.items():
        ax.plot([x], [y], "o", color=FRONTIER, ms=3.5, zorder=2, label="_mark")
        dx, dy = (float(v) for v in offsets.get(label, (6.0, -11.0)))
        ax.annotate(
            label,
            (x, y),
            xytext=(dx, dy),
            ha="right" if dx < 0 else "left",
            textcoords="offset points",
            fontsize=8.5,
            color=FRONTIER,
        )
    ax.axvline(1.0, color=NEUTRAL, ls=":", lw=1, zorder=0)
    ax.axhline(1.0, color=NEUTRAL, ls=":", lw=1, zorder=0)

    names = list(pairs)
    if looks_from is None:
        order = names
    else:
        if (
            isinstance(looks_from, str)
            or not hasattr(looks_from, "__iter__")
            or not all(isinstance(name, str) for name in looks_from)
        ):
            raise TypeError("looks_from: expected a sequence of learner names (str)")
        order = list(dict.fromkeys(looks_from))
        missing = [name for name in names if name not in order]
        if missing:
            raise ValueError(
                f"looks_from: expected every point's name, lacks {missing}"
            )
    chosen = _point_looks(order)  # never the frontier's colour
    for name in names:
        color, marker = chosen[name]
        x, y = pairs[name]
        if name in bars:
            ax.errorbar(
                [x],
                [y],
                xerr=[[min(bars[name][0], x * 0.999)], [bars[name][0]]],
                yerr=[[min(bars[name][1], y * 0.999)], [bars[name][1]]],
                fmt="none",
                ecolor=color,
                elinewidth=1,
                capsize=2,
                zorder=3,
            )
        ax.plot(
            [x],
            [y],
            ls="none",
            marker=marker,
            ms=7,
            color=color,
            mfc=color,
            mec="white",
            mew=0.6,
            label=name,
            zorder=4,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*x_lim)
    ax.set_ylim(*y_lim)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Patch(color=FRONTIER, alpha=0.12))
    labels.append("inside the frontier: no one penalty\nis as good on both kinds")
    ax.legend(
        handles,
        labels,
        fontsize=8.5,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
    )
    finish_axes(ax)
    _nice_log_ticks(ax.xaxis, *x_lim)
    _nice_log_ticks(ax.yaxis, *y_lim)
    return fig


def _box(ax, x, y, text, colour, *, width, height=0.9, fontsize=10.5):
    """A rounded box centred at ``(x, y)`` with ``text`` in it."""
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.04,rounding_size=0.12",
            fc=colour,
            alpha=0.22,
            ec="k",
            lw=0.8,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, start, end, colour=NEUTRAL, style="-"):
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={"arrowstyle": "-|>", "color": colour, "ls": style},
    )


def ista_layers_diagram(n_layers: int = 3, tau: float = 0.6):
    """The Lasso as layers: ISTA unrolled into a transformer (chapter 5).

    Left: the context enters with ``w_0 = 0``; each of ``n_layers`` drawn layers is an
    attention block that takes one gradient step on the in-context squared loss and an
    MLP block that applies the soft threshold coordinate by coordinate; after ``T``
    layers the query is predicted with ``w_T``. Right: the soft threshold ``S_tau``
    built from two ReLUs, ``relu(z - tau) - relu(-z - tau)``, for ``tau = tau``.
    """
    n_layers = check_positive_int("n_layers", n_layers, minimum=2)
    if n_layers > 4:
        raise ValueError(f"n_layers: expected an int from 2 to 4, got {n_layers}")
    tau = _in.optional_real("tau", tau)
    if tau is None or not 0 < tau < 2:
        raise ValueError(f"tau: expected a threshold in (0, 2), got {tau!r}")
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(11.0, 3.9), width_ratios=(2.5, 1.0)
    )
    left.set_axis_off()
    step = 2.1
    left.set_xlim(-1.2, 1.6 + step * (n_layers + 1) + 0.6)
    left.set_ylim(-1.5, 3.6)
    attention, mlp = PALETTE[0], PALETTE[1]
    _box(
        left,
        0.0,
        1.3,
        "context\n$(x_i, y_i)$\n$w_0 = 0$",
        "white",
        width=1.7,
        height=1.5,
    )
    previous = 0.85
    for t in range(n_layers):
        x = 1.9 + step * t + (step * 0.55 if t == n_layers - 1 else 0.0)
        if t == n_layers - 1:  # the dots stand for the layers not drawn
            left.text(
                x - step * 0.78, 1.3, "$\\cdots$", ha="center", va="center", fontsize=16
            )
            name = "$T$"
        else:
            name = f"{t + 1}"
        _box(
            left,
            x,
            2.0,
            "attention:\n$w - \\frac{1}{\\beta}\\nabla L(w)$",
            attention,
            width=1.75,
            height=1.05,
            fontsize=10,
        )
        _box(
            left,
            x,
            0.55,
            "MLP:\n$S_{\\lambda/\\beta}$, two ReLUs",
            mlp,
            width=1.75,
            height=1.05,
            fontsize=10,
        )
        _arrow(left, (x, 1.45), (x, 1.1))
        _arrow(left, (previous, 1.3), (x - 0.9, 2.0))
        left.text(x, -0.3, f"layer {name}", ha="center", fontsize=10, color=NEUTRAL)
        previous = x + 0.88
    out_x = previous + 1.0
    _arrow(left, (previous, 0.55), (out_x - 0.55, 0.55))
    left.text(
        out_x + 0.05,
        0.55,
        "predict\n$\\langle w_T, x_q\\rangle$",
        ha="center",
        va="center",
        fontsize=10.5,
    )
    left.text(
        (1.9 + previous) / 2,
        -1.1,
        "one gradient step and one soft threshold per layer: ISTA, repeated $T$ times",
        ha="center",
        fontsize=10,
    )
    left.set_title("the Lasso, unrolled into layers", fontsize=12)

    z = np.linspace(-2.0, 2.0, 401)
    up = np.maximum(z - tau, 0.0)
    down = -np.maximum(-z - tau, 0.0)
    # the two ReLUs drawn wide and pale, their sum thin on top: the sum follows one
    # ReLU on each side of the dead zone
    right.plot(
        z, up, "-", color=PALETTE[4], lw=6, alpha=0.45, label="relu$(z - \\tau)$"
    )
    right.plot(
        z, down, "-", color=PALETTE[3], lw=6, alpha=0.45, label="$-$relu$(-z - \\tau)$"
    )
    right.plot(z, up + down, "--", color="k", lw=1.6, label="their sum: $S_\\tau(z)$")
    right.axvspan(-tau, tau, color=NEUTRAL, alpha=0.12, lw=0)
    right.text(0.0, 1.55, "set to 0", ha="center", fontsize=9, color=NEUTRAL)
    right.set(xlabel="$z$", title=f"soft threshold, $\\tau = {tau:g}$", ylim=(-2, 2))
    right.legend(fontsize=8.5, loc="lower right")
    finish_axes(right)
    return fig


def ridge_mixture_diagram(weights: Sequence[float] = (0.8, 0.2)):
    """The Bayes predictor for mixed noise levels (chapter 5): one ridge fit per level,
    ``lambda_j = sigma_j^2``, each weighted by the posterior probability of its level,
    ``omega_j`` proportional to the prior times the marginal likelihood of the labels;
    the prediction is the weighted sum of the fits' predictions.

    ``weights``: an example posterior, one weight per level (2 to 4 levels, summing to
    1), drawn as bars beside the fits.
    """
    w = _in.numbers("weights", weights, minimum=0)
    if not 2 <= w.size <= 4 or abs(w.sum() - 1) > 1e-6:
        raise ValueError(
            f"weights: expected 2 to 4 posterior weights summing to 1, got {w.tolist()}"
        )
    n = w.size
    fig, ax = plt.subplots(figsize=(10.0, 1.3 + 1.05 * n))
    ax.set_axis_off()
    ax.set_xlim(-0.2, 11.6)
    top = 1.1 * (n - 1)
    ax.set_ylim(-1.1, top + 1.0)
    middle = top / 2
    _box(ax, 0.9, middle, "context\n$(X, y)$", "white", width=1.6, height=1.3)
    for j in range(n):
        y = top - 1.1 * j
        level = f"\\sigma_{j + 1}"
        _arrow(ax, (1.75, middle), (3.0, y))
        _box(
            ax,
            4.15,
            y,
            f"ridge, $\\lambda = {level}^2$: $\\hat w_{j + 1}$",
            PALETTE[2],
            width=2.3,
            height=0.75,
            fontsize=10,
        )
        _arrow(ax, (5.35, y), (6.1, y))
        ax.text(
            6.2,
            y + 0.12,
            f"$p(y \\mid X, {level})$",
            fontsize=10,
            va="center",
            color=NEUTRAL,
        )
        ax.add_patch(
            plt.Rectangle(
                (6.25, y - 0.33), 1.3 * w[j], 0.18, color=PALETTE[0], alpha=0.8
            )
        )
        ax.text(
            6.3 + 1.3 * w[j], y - 0.24, f"$\\omega_{j + 1}$", fontsize=10, va="center"
        )
        _arrow(ax, (7.95, y), (8.65, middle))
    ax.text(
        10.05,
        middle,
        "$\\hat y = \\sum_j \\omega_j \\langle \\hat w_j, x_q \\rangle$",
        ha="center",
        va="center",
        fontsize=12,
    )
    ax.text(
        5.3,
        -0.85,
        "$\\omega_j \\propto \\pi_j\\, p(y \\mid X, \\sigma_j)$: prior times marginal "
        "likelihood, so the weights follow how well each level explains the labels",
        ha="center",
        fontsize=10,
    )
    ax.set_title(
        "the Bayes predictor: ridge fits weighted by their posterior", fontsize=12
    )
    return fig
