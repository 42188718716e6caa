"""Chapter 7's figures that the shared plotting modules do not draw: the two ways of
consuming a context (Dherin et al. 2025, Section 3 and Appendix B), the float64 check
of their identity on several layers, and the implicit update beside fine-tuning.

Import it by its path, ``from icl_lib.plotting import implicit_figures``; like the
rest of :mod:`icl_lib.plotting` it takes arrays and returns a Figure, and shows or
saves nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from . import _inputs as _in
from .style import NEUTRAL, PALETTE, TRANSFORMER, finish_axes

INPUT, QUERY = PALETTE[0], PALETTE[2]
# slot styles of the diagram: what the block reads, what the weights hold, what the
# prompt of that step does not contain
_READ = {"fc": INPUT, "alpha": 0.3, "ec": "k", "ls": "-"}
_ABSORBED = {"fc": "#BBBBBB", "alpha": 0.45, "ec": NEUTRAL, "ls": "--", "hatch": "//"}
_ABSENT = {"fc": "none", "ec": "#AAAAAA", "ls": ":"}


def _only_keys_of(name: str, given, allowed, what: str) -> None:
    """Refuse keys of ``given`` that ``allowed`` lacks, naming the argument."""
    unknown = set(given) - set(allowed)
    if unknown:
        raise ValueError(
            f"{name}: expected {what} {sorted(allowed)}, got {sorted(unknown)}"
        )


def _slots(ax, x0, y, states, n, *, w=0.56, gap=0.06):
    """One prompt as ``n + 1`` slots, ``c_1 .. c_n`` then the query ``x``; ``states``
    gives each context slot's style: ``read``, ``absorbed`` or ``absent``."""
    style = {"read": _READ, "absorbed": _ABSORBED, "absent": _ABSENT}
    for j, state in enumerate(states):
        ax.add_patch(Rectangle((x0 + j * (w + gap), y), w, 0.5, lw=1, **style[state]))
        colour = "#888888" if state == "absent" else "k"
        ax.text(
            x0 + j * (w + gap) + w / 2,
            y + 0.25,
            f"$c_{j + 1}$",
            ha="center",
            va="center",
            fontsize=10,
            color=colour,
        )
    xq = x0 + n * (w + gap)
    ax.add_patch(Rectangle((xq, y), w, 0.5, fc=QUERY, alpha=0.35, ec="k", lw=1))
    ax.text(xq + w / 2, y + 0.25, "$x$", ha="center", va="center", fontsize=10)
    return (n + 1) * (w + gap) - gap


def consumption_diagram(n_context: int = 3):
    """The two ways of consuming a context of ``n_context`` tokens one at a time.

    Top, the prefix trajectory (Dherin et al., Section 3): ``W_i`` makes the block
    read the query alone as ``W_0`` reads the prefix ``(c_1, ..., c_i, x)``; the later
    tokens are not in that prompt. Every step ``W_{i+1} = W_i - h Delta_i`` has the
    right factor ``A(x)^T``. Bottom, the product form (Appendix B): the tokens leave
    the front of the full context one at a time, and ``W~_i = W~_{i-1} (I + h_i E_i)``
    makes the block read what remains, ``(c_{i+1}, ..., c_n, x)``, as ``W_0`` reads
    ``(C, x)``; step ``i`` is anchored at what remains, ``a_{i+1}``, and the last at
    ``a_{n+1} = A(x)``. Both end with the query alone.
    """
    if (
        isinstance(n_context, bool)
        or not isinstance(n_context, int)
        or not 2 <= n_context <= 4
    ):
        raise ValueError(f"n_context: expected an int from 2 to 4, got {n_context!r}")
    n = n_context
    spacing = (n + 1) * 0.62 + 1.35  # a prompt's slots, then room for the arrow
    width = (n + 1) * spacing
    fig, ax = plt.subplots(figsize=(max(8.5, 0.66 * width), 5.2))
    ax.set_axis_off()
    ax.set_xlim(-0.2, width - 0.3)
    ax.set_ylim(-0.75, 6.25)
    rows = (
        (
            4.0,
            "prefix trajectory: the prompt grows; every step is anchored at $A(x)$",
            lambda i: ["absorbed"] * i + ["absent"] * (n - i),
            lambda i: "$W_0$" if i == 0 else f"$W_{i}$",
            lambda i: f"$-\\,h\\,\\Delta_{{{i}}}$",
            lambda i: "anchor $A(x)$",
        ),
        (
            1.0,
            "product form: the context shrinks from the front; each step is anchored "
            "at what remains",
            lambda i: ["absorbed"] * i + ["read"] * (n - i),
            lambda i: "$W_0$" if i == 0 else f"$\\tilde W_{i}$",
            lambda i: f"$\\times\\,(I + h_{{{i + 1}}} E_{{{i + 1}}})$",
            lambda i: (
                f"anchor $a_{{{i + 2}}}$"
                if i + 1 < n
                else f"anchor $a_{{{n + 1}}} = A(x)$"
            ),
        ),
    )
    for y, title, states, weights, step, anchor in rows:
        ax.text(-0.1, y + 1.55, title, fontsize=11.5, va="center")
        for i in range(n + 1):
            x0 = i * spacing
            strip = _slots(ax, x0, y, states(i), n)
            ax.text(x0 + strip / 2, y + 0.85, weights(i), ha="center", fontsize=12.5)
            if i < n:
                start, end = x0 + strip + 0.1, (i + 1) * spacing - 0.1
                ax.add_patch(
                    FancyArrowPatch(
                        (start, y + 0.25),
                        (end, y + 0.25),
                        arrowstyle="-|>",
                        mutation_scale=12,
                        color=NEUTRAL,
                    )
                )
                middle = (start + end) / 2
                ax.text(middle, y + 0.5, step(i), ha="center", fontsize=10)
                ax.text(
                    middle,
                    y - 0.22,
                    anchor(i),
                    ha="center",
                    fontsize=8.5,
                    color=NEUTRAL,
                )
    # what each row reproduces, and where they meet
    ax.text(
        width - 0.65,
        4.0 - 0.55,
        f"$T_{{W_i}}(x) = T_{{W_0}}(c_1, \\dots, c_i, x)$;  $W_{n} - W_0$ has rank 1",
        ha="right",
        fontsize=10,
        color=PALETTE[1],
    )
    ax.text(
        width - 0.65,
        1.0 - 0.7,
        f"$T_{{\\tilde W_i}}(c_{{i+1}}, \\dots, c_{n}, x) = T_{{W_0}}(C, x)$;  "
        f"$\\tilde W_{n} - W_0$ has rank up to {n}",
        ha="right",
        fontsize=10,
        color=PALETTE[1],
    )
    legend = (
        (_READ, "read by the block as context"),
        (_ABSORBED, "absorbed into the weights"),
        (_ABSENT, "not in this step's prompt"),
    )
    for k, (style, text) in enumerate(legend):
        x0 = 0.1 + k * width / 3
        ax.add_patch(Rectangle((x0, -0.65), 0.4, 0.3, lw=1, **style))
        ax.text(x0 + 0.55, -0.5, text, va="center", fontsize=9.5)
    return fig


def identity_check(
    labels: Sequence[str],
    errors,
    controls,
    *,
    title: str = "",
    rounding: float = float(np.finfo(np.float64).eps),
    ax=None,
):
    """A float64 identity checked on several blocks: for each label, the identity's
    largest error (dots) and the change its control makes (squares), on a log axis,
    with float64's machine epsilon dotted.

    Args:
        labels: one name per checked block.
        errors: the identity's largest absolute error per block (0 is drawn at
            ``rounding / 10``, below the rounding line).
        controls: the change without the update per block (must be positive).
        rounding: where the dotted rounding line sits.
    """
    labels = _in.labels("labels", labels)
    errors = _in.numbers("errors", errors, minimum=0)
    controls = _in.numbers("controls", controls, minimum=0, strict=True)
    rounding = float(_in.numbers("rounding", [rounding], minimum=0, strict=True)[0])
    if not len(labels) == len(errors) == len(controls):
        raise ValueError(
            f"labels, errors, controls: expected one of each per block, got "
            f"{len(labels)}, {len(errors)}, {len(controls)}"
        )
    _in.axes("ax", ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=(10.0, 3.9))
    else:
        fig = ax.figure
    x = np.arange(len(labels))
    shown = np.where(errors > 0, errors, rounding / 10)
    ax.plot(
        x,
        controls,
        "s",
        ls="none",
        color=PALETTE[1],
        ms=7,
        label="dropping $Y$ without the update (smallest change)",
    )
    ax.plot(
        x,
        shown,
        "o",
        ls="none",
        color=PALETTE[0],
        ms=7,
        label="with the rank-1 update (largest change: the identity's error)",
    )
    # the rounding line is named in the legend, where no dot can cover its label
    ax.axhline(rounding, color=NEUTRAL, ls=":", lw=1, label="float64 machine epsilon")
    ax.set_yscale("log")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=9)
    ax.set(ylabel="change of the output at the query", title=title)
    ax.legend(fontsize=9, loc="center right")
    finish_axes(ax)
    return fig


SHUFFLED = ", shuffled labels"  # the suffix that pairs a series with its control
_DECAY_COLOURS = (TRANSFORMER, PALETTE[1], PALETTE[0], PALETTE[2], PALETTE[3])
_DECAY_MARKERS = ("o", "s", "^", "D", "v")
_REFERENCE = "#B4B4B4"  # the decay's reference: grey, drawn wide under the curves


def _text(name: str, value) -> str:
    """A legend entry or a name shown as given: a string."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
    return value


def _plain_fixed_ticks(axis, ticks) -> None:
    """Log-axis ticks at ``ticks``, each labelled plainly (0.2, 0.5, 1, 1.5), with no
    minor ticks. Call it after :func:`finish_axes`, whose log formatter would label
    only the powers of ten on an axis that spans about a decade."""
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def step_decay(
    ks,
    curves,
    *,
    first_steps=None,
    reference=None,
    reference_label: str = "",
    title: str = "",
    ax=None,
):
    """Step lengths against the number of tokens consumed, each divided by its first,
    on a log axis with plain ticks.

    A series named ``"<name>, shuffled labels"`` is drawn in the colour and marker of
    ``<name>``, dashed with open markers: a series and its shuffled-label control are
    told apart by line style, and the eye reads them as a pair. Every other series
    takes its own colour and marker (the first one black), solid.

    Args:
        ks: tokens consumed before each step (``0..N-1``).
        curves: name -> relative step lengths, one per ``k`` (positive).
        first_steps: name -> the first step's length, added to that series' legend
            entry (optional; only series whose lengths are comparable).
        reference: values of a reference curve, one per ``k``, drawn as a wide light
            band beneath the curves.
        reference_label: its legend entry.
    """
    ks = _in.numbers("ks", ks, minimum=0)
    _in.curves("curves", curves)
    if first_steps is not None and not _in.mapping("first_steps", first_steps):
        raise ValueError(
            "first_steps: expected at least one name -> first step, or None for none"
        )
    first_steps = _in.optional_mapping("first_steps", first_steps)
    reference_label = _text("reference_label", reference_label)
    _only_keys_of("first_steps", first_steps, curves, "names of curves")
    bases = [name for name in curves if not name.endswith(SHUFFLED)]
    for name in curves:
        if name.endswith(SHUFFLED) and name[: -len(SHUFFLED)] not in bases:
            raise ValueError(
                f"curves[{name!r}]: expected the series it shuffles, "
                f"{name[: -len(SHUFFLED)]!r}, among the curves"
            )
    if len(bases) > len(_DECAY_COLOURS):
        raise ValueError(
            f"curves: expected at most {len(_DECAY_COLOURS)} series besides their "
            f"shuffled-label controls, got {len(bases)}"
        )
    _in.axes("ax", ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=(9.6, 4.2))
    else:
        fig = ax.figure
    values_seen = []
    for name, values in curves.items():
        values = _in.numbers(f"curves[{name!r}]", values, minimum=0, strict=True)
        if values.shape != ks.shape:
            raise ValueError(
                f"curves[{name!r}]: expected {len(ks)} values (one per k), got "
                f"{len(values)}"
            )
        shuffled = name.endswith(SHUFFLED)
        k = bases.index(name[: -len(SHUFFLED)] if shuffled else name)
        colour, marker = _DECAY_COLOURS[k], _DECAY_MARKERS[k]
        label = name
        if name in first_steps:
            first = float(_in.numbers(f"first_steps[{name!r}]", [first_steps[name]])[0])
            label = f"{name} (first step {first:.2g})"
        ax.plot(
            ks,
            values,
            "--" if shuffled else "-",
            color=colour,
            marker=marker,
            ms=5,
            mfc="white" if shuffled else colour,
            lw=1.6,
            label=label,
        )
        values_seen.append(values)
    if reference is not None:
        reference = _in.numbers("reference", reference, minimum=0, strict=True)
        if reference.shape != ks.shape:
            raise ValueError(
                f"reference: expected {len(ks)} values (one per k), got "
                f"{len(reference)}"
            )
        # a wide light band beneath the curves, which may follow it closely: they
        # stay readable on top of it, and its edges show where they leave it
        ax.plot(
            ks,
            reference,
            "-",
            color=_REFERENCE,
            lw=13,
            solid_capstyle="round",
            zorder=1,
            label=reference_label,
        )
        values_seen.append(reference)
    ax.set_yscale("log")
    low = min(float(v.min()) for v in values_seen)
    high = max(float(v.max()) for v in values_seen)
    ticks = [
        t for t in (0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5) if low / 1.5 <= t <= high * 1.5
    ]
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel="context tokens consumed i",
        ylabel="step length / first step",
        title=title,
    )
    legend = ax.legend(fontsize=8.5, loc="upper left", bbox_to_anchor=(1.01, 1))
    if reference is not None and reference_label:  # drawn last, so its entry is last:
        legend.get_lines()[-1].set_linewidth(6)  # a thinner swatch, off its label
    finish_axes(ax)
    _plain_fixed_ticks(ax.yaxis, ticks)
    return fig


def finetuning_comparison(
    ks,
    implicit,
    budgets,
    converged_ks,
    converged,
    *,
    band: float = 1.2,
    converged_label: str = "SGD run to interpolation",
    differs=None,
    differs_label: str = "differs from the implicit update by more than the noise",
    title: str = "",
):
    """The implicit update beside fine-tuning, in two panels that share their x axis.

    Left: the test errors themselves against the number of examples ``ks``, on a log
    axis: the implicit update (black, marked), one curve per fine-tuning budget, and
    squares for SGD run to interpolation at the example counts ``converged_ks``.
    Right: the same errors over the implicit update's, on a log axis: 1 is the
    implicit update, and a shaded band marks ``1/band .. band``; filled markers, in
    a budget's colour, sit where ``differs`` says that budget differs from the
    implicit update.

    Args:
        ks: example counts of both panels.
        implicit: the implicit update's error at each ``k`` (positive).
        budgets: label -> fine-tuning error at each ``k`` (positive), one curve per
            budget.
        converged_ks, converged: SGD run to interpolation, its error at those counts
            (each one of ``ks``).
        band: the width of the shaded band, a ratio > 1.
        differs: label -> the counts among ``ks`` at which that budget differs
            from the implicit update by more than the test's threshold (optional).
        differs_label: the legend entry of those markers.
    """
    ks = _in.numbers("ks", ks, minimum=0)
    implicit = _in.numbers("implicit", implicit, minimum=0, strict=True)
    if not _in.mapping("budgets", budgets):
        raise ValueError("budgets: expected at least one fine-tuning curve, got none")
    curves = {
        label: _in.numbers(f"budgets[{label!r}]", values, minimum=0, strict=True)
        for label, values in budgets.items()
    }
    converged_ks = _in.numbers("converged_ks", converged_ks, minimum=0)
    converged = _in.numbers("converged", converged, minimum=0, strict=True)
    band = float(_in.numbers("band", [band], minimum=1, strict=True)[0])
    converged_label = _text("converged_label", converged_label)
    if implicit.shape != ks.shape:
        raise ValueError(
            f"implicit: expected {len(ks)} values (one per k), got {len(implicit)}"
        )
    for label, values in curves.items():
        if values.shape != ks.shape:
            raise ValueError(
                f"budgets[{label!r}]: expected {len(ks)} values (one per k), got "
                f"{len(values)}"
            )
    if converged.shape != converged_ks.shape:
        raise ValueError(
            f"converged: expected {len(converged_ks)} values (one per converged_ks), "
            f"got {len(converged)}"
        )
    if not set(converged_ks.tolist()) <= set(ks.tolist()):
        raise ValueError(
            f"converged_ks: expected counts among ks, got {converged_ks.tolist()}"
        )
    differs = dict(_in.optional_mapping("differs", differs))
    differs_label = _text("differs_label", differs_label)
    _only_keys_of("differs", differs, curves, "labels of budgets")
    for label in differs:
        where = _in.numbers(f"differs[{label!r}]", differs[label], minimum=0)
        if not set(where.tolist()) <= set(ks.tolist()):
            raise ValueError(
                f"differs[{label!r}]: expected counts among ks, got {where.tolist()}"
            )
        differs[label] = where
    # at most ~11 in wide: wider, the page shrinks it (and its text) unreadably
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.8, 4.6), sharex=True)
    right.axhspan(1 / band, band, color="#DDDDDD", alpha=0.6, lw=0)
    left.plot(
        ks,
        implicit,
        "-",
        color=TRANSFORMER,
        marker="o",
        ms=4,
        lw=2.2,
        label="the implicit update",
    )
    right.axhline(1, color=TRANSFORMER, lw=1.4)
    colours = (PALETTE[1], PALETTE[5], PALETTE[2], PALETTE[0], PALETTE[3], PALETTE[4])
    styles = ("--", "-.", "--", "-", "-.", "--")
    marked = False
    for k, (label, values) in enumerate(curves.items()):
        style = styles[k % len(styles)], colours[k % len(colours)]
        left.plot(ks, values, style[0], color=style[1], lw=1.8, label=label)
        right.plot(ks, values / implicit, style[0], color=style[1], lw=1.8)
        if label in differs and len(differs[label]):
            at = np.searchsorted(ks, differs[label])
            right.plot(
                ks[at],
                values[at] / implicit[at],
                "o",
                ls="none",
                ms=4.5,
                color=style[1],
            )
            marked = True
    ratio = converged / implicit[np.searchsorted(ks, converged_ks)]
    # the squares take a colour that no budget curve uses
    squares = {"ls": "none", "ms": 7, "color": PALETTE[6], "mfc": "white", "mew": 1.6}
    left.plot(converged_ks, converged, "s", label=converged_label, **squares)
    right.plot(converged_ks, ratio, "s", **squares)
    left.set_yscale("log")
    right.set_yscale("log")
    errors = np.concatenate([implicit, *curves.values(), converged])
    error_ticks = [
        t
        for t in (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5)
        if float(errors.min()) / 1.3 <= t <= float(errors.max()) * 1.3
    ]
    ratios = np.concatenate([*(v / implicit for v in curves.values()), ratio])
    low, high = min(float(ratios.min()), 1 / band), max(float(ratios.max()), band)
    ticks = [
        t for t in (0.25, 0.5, 0.7, 1, 1.5, 2, 3, 5) if low / 1.3 <= t <= high * 1.3
    ]
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    xlabel = "examples i (in context, or fine-tuned on)"
    left.set(xlabel=xlabel, ylabel="test error / d", title="the errors")
    right.set(
        xlabel=xlabel,
        ylabel="error / implicit update's error",
        title=f"their ratio (shaded: within {100 * (band - 1):.0f} % of the "
        "implicit update)",
    )
    # lower left: the curves start near 1 and fall, so that corner stays empty
    left.legend(fontsize=8.5, loc="lower left")
    if marked:  # one legend entry for the dots of every budget, in a neutral grey
        proxy = right.plot([], [], "o", ls="none", ms=4.5, color=NEUTRAL)[0]
        right.legend([proxy], [differs_label], fontsize=8.5, loc="lower left")
    for ax in (left, right):
        finish_axes(ax)
    below = [t for t in error_ticks if t <= float(errors.min())]
    if below:  # reach down to a labelled tick, so that the lowest error can be read
        left.set_ylim(bottom=below[-1] / 1.05)
    _plain_fixed_ticks(left.yaxis, error_ticks)
    _plain_fixed_ticks(right.yaxis, ticks)
    if title:
        fig.suptitle(title)
    return fig


def interpolation_run(
    passes,
    test_error,
    train_error,
    *,
    implicit_error: float | None = None,
    title: str = "",
):
    """A fine-tuning run against the number of ``passes`` over its examples, on log
    axes: its test error, its error on its own training examples, and (dotted,
    optional) the implicit update's test error at the same number of examples.

    Args:
        passes: pass counts (positive, increasing).
        test_error, train_error: the run's errors after each pass count (positive).
        implicit_error: the implicit update's test error, or None for no line.
    """
    passes = _in.numbers("passes", passes, minimum=0, strict=True)
    test_error = _in.numbers("test_error", test_error, minimum=0, strict=True)
    train_error = _in.numbers("train_error", train_error, minimum=0, strict=True)
    title = _text("title", title)
    for name, values in (("test_error", test_error), ("train_error", train_error)):
        if values.shape != passes.shape:
            raise ValueError(
                f"{name}: expected {len(passes)} values (one per pass count), got "
                f"{len(values)}"
            )
    if np.any(np.diff(passes) <= 0):
        raise ValueError(f"passes: expected increasing counts, got {passes.tolist()}")
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.plot(
        passes, test_error, "-", marker="s", ms=5, color=PALETTE[0], label="test error"
    )
    ax.plot(
        passes,
        train_error,
        "--",
        marker="v",
        ms=5,
        color=PALETTE[0],
        label="its own training error",
    )
    if implicit_error is not None:
        level = float(
            _in.numbers("implicit_error", [implicit_error], minimum=0, strict=True)[0]
        )
        ax.axhline(
            level,
            color=TRANSFORMER,
            ls=":",
            lw=1.4,
            label="the implicit update's test error",
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="passes over the examples",
        ylabel="squared error / d",
        title=title,
    )
    ax.legend(fontsize=8.5, loc="lower left")
    finish_axes(ax)
    return fig
