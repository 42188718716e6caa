"""The book's one figure style and one palette.

A seaborn theme (white grid, white figure background so that figures stay legible in the
site's dark mode) and one colour-blind-safe palette (Okabe and Ito 2008). Each learner
keeps its colour across the whole book (:func:`color_for`); other series take the
palette in order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.ticker import LogFormatter

from .._checks import check_sequence

# Okabe-Ito, without yellow (illegible on white); black is kept for the trained
# transformer.
PALETTE = [
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#E69F00",
    "#882255",
    "#44AA99",
]
TRANSFORMER = "#000000"
NEUTRAL = "#666666"  # reference lines, the zero predictor

# Line styles, in the order a second, third... series of one colour takes them.
LINE_STYLES = ("-", "--", "-.", ":")
_STYLE_NAMES = {"solid": "-", "dashed": "--", "dashdot": "-.", "dotted": ":"}

# One colour per learner, by name prefix (case-insensitive).
LEARNER_COLORS = {
    "transformer": TRANSFORMER,
    "ols": "#0072B2",
    "ridge": "#009E73",
    "bayes": "#009E73",
    "gd": "#D55E00",
    "averaging": "#E69F00",
    "3-nn": "#CC79A7",
    "knn": "#CC79A7",
    "zero": "#999999",
    "similarity slope": "#882255",  # chapter 1's tempting estimator (s.y)/(s.s)
    "least squares": "#0072B2",  # ols by its other name
    "diagonal": "#56B4E9",  # chapter 9's recurrent models and their controls
    "selective": "#E69F00",
    "hybrid": "#CC79A7",
    "guess": "#999999",  # chance-level baselines
}

RC = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "grid.alpha": 0.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "figure.constrained_layout.use": True,
}


def use_book_style() -> None:
    """Apply the book's seaborn theme and palette (every chapter's setup calls it)."""
    sns.set_theme(
        context="notebook", style="whitegrid", palette=PALETTE, font_scale=0.95, rc=RC
    )


def learner_color(name: str) -> str | None:
    """The book's colour for a learner name (prefix match), or None."""
    if not isinstance(name, str):
        raise TypeError(
            f"name: expected a learner name (str), got {type(name).__name__}"
        )
    key = name.lower()
    for prefix, color in LEARNER_COLORS.items():
        if key.startswith(prefix):
            return color
    return None


def color_for(name: str, index: int = 0) -> str:
    """The book's colour for a learner name (prefix match), else the palette's
    ``index``-th colour."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index: expected an int >= 0, got {index!r}")
    return learner_color(name) or PALETTE[index % len(PALETTE)]


def _line_style(name: str, value) -> str:
    if not isinstance(value, str) or _STYLE_NAMES.get(value, value) not in LINE_STYLES:
        raise ValueError(
            f"{name}: expected a line style among {LINE_STYLES} (or solid, dashed, "
            f"dashdot, dotted), got {value!r}"
        )
    return _STYLE_NAMES.get(value, value)


def line_styles(
    labels: Sequence[str],
    colors: Sequence[str],
    styles: Mapping[str, str] | None = None,
    markers: Sequence[str | None] | None = None,
) -> list[str]:
    """One line style per series, so that no two series look alike.

    A series keeps its style from ``styles`` (label -> style); every other series
    takes the first of :data:`LINE_STYLES` that no series of its colour (and marker)
    holds yet: two transformers, both black, come out solid and dashed. Two explicit
    styles that would draw two series alike raise ``ValueError``, naming both.
    """
    labels = list(check_sequence("labels", labels, "a sequence of series labels"))
    colors = list(check_sequence("colors", colors, "a sequence of colours"))
    styles = {} if styles is None else styles
    if not isinstance(styles, Mapping):
        raise TypeError(
            f"styles: expected a mapping label -> line style or None, got "
            f"{type(styles).__name__}"
        )
    markers = (
        [None] * len(labels)
        if markers is None
        else list(check_sequence("markers", markers, "a sequence of markers"))
    )
    if not (len(labels) == len(colors) == len(markers)):
        raise ValueError(
            f"labels, colors, markers: expected one of each per series, got "
            f"{len(labels)}, {len(colors)}, {len(markers)}"
        )
    unknown = set(styles) - set(labels)
    if unknown:
        raise ValueError(
            f"styles: expected labels of series {list(labels)}, got {sorted(unknown)}"
        )
    keys = [(to_hex(c), m) for c, m in zip(colors, markers, strict=True)]
    taken: dict[tuple, str] = {}
    chosen: list[str | None] = [None] * len(labels)
    for i, label in enumerate(labels):  # explicit styles first: they are the reader's
        if label in styles:
            style = _line_style(f"styles[{label!r}]", styles[label])
            if (*keys[i], style) in taken:
                raise ValueError(
                    f"styles[{label!r}]: {style!r} in colour {keys[i][0]} is also the "
                    f"style of {taken[(*keys[i], style)]!r}; two series must differ in "
                    "colour or line style"
                )
            taken[(*keys[i], style)] = label
            chosen[i] = style
    for i, label in enumerate(labels):
        if chosen[i] is None:
            free = [s for s in LINE_STYLES if (*keys[i], s) not in taken]
            if not free:
                raise ValueError(
                    f"{label!r}: more than {len(LINE_STYLES)} series share colour "
                    f"{keys[i][0]}; name them after different learners or give them "
                    "colours of their own"
                )
            taken[(*keys[i], free[0])] = label
            chosen[i] = free[0]
    return chosen


def _require_axes(ax) -> None:
    if not isinstance(ax, Axes):
        raise TypeError(f"ax: expected a matplotlib Axes, got {type(ax).__name__}")


def check_distinct_series(ax) -> None:
    """Raise ``ValueError`` if two labelled lines of ``ax`` share colour, line style and
    marker (a reader could not tell them apart)."""
    _require_axes(ax)
    seen: dict[tuple, str] = {}
    for line in ax.get_lines():
        label = line.get_label()
        if not label or label.startswith("_"):
            continue
        key = (to_hex(line.get_color()), line.get_linestyle(), line.get_marker())
        if key in seen and seen[key] != label:
            raise ValueError(
                f"series {seen[key]!r} and {label!r} share colour {key[0]}, line style "
                f"{key[1]!r} and marker {key[2]!r}; a reader cannot tell them apart"
            )
        seen[key] = label


class _PlainLogFormatter(LogFormatter):
    """Log-axis tick labels a reader reads at a glance. An axis that stays within
    [0.001, 10^4) is labelled in plain numbers (0.1, 2, 1.14; matplotlib's default
    writes 2 as 2 x 10^0); a wider axis labels its powers of ten as 10^k alike (never
    10000 beside 10^5), and any other tick plainly."""

    def _num_to_string(self, x, vmin, vmax):
        lo, hi = sorted((abs(vmin), abs(vmax)))
        if x == 0 or (lo >= 1e-3 and hi < 1e4):
            return f"{x:g}"
        exponent = math.log10(abs(x))
        if abs(exponent - round(exponent)) < 1e-9:
            return f"$10^{{{round(exponent)}}}$"
        return f"{x:g}"


def plain_log_ticks(ax) -> None:
    """Give every log-scaled axis of ``ax`` plain tick labels
    (:class:`_PlainLogFormatter`); minor ticks are labelled only where the axis spans
    too few decades for major ones."""
    _require_axes(ax)
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            axis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
            axis.set_minor_formatter(
                _PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4))
            )


def finish_axes(ax) -> None:
    """What every figure function of the book does last: plain log ticks, and no two
    series drawn alike."""
    plain_log_ticks(ax)
    check_distinct_series(ax)
