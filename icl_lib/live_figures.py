"""Explorers that work without a kernel: an ``explore`` view drawn for every stop of its
controls' grid at build time, shown on the static site with sliders that swap the
frames.

On Colab and in Jupyter, :func:`icl_lib.widgets.explore` is a live ipywidgets view that
redraws on every move. The published site has no kernel, so ``make book`` sets
``ICL_LIVE_FIGURES=1`` and ``explore`` returns a :class:`LiveFigure` instead: each
control becomes a grid of at most :data:`MAX_STOPS` values (coarsened evenly over its
range, the product over all controls at most :data:`MAX_FRAMES` and the frames about
:data:`MAX_BYTES`), the plot function is called once per point of the grid, and each
figure is kept as the PNG the inline backend would display (:func:`frame_png`, the same
bytes the widget's output shows for that value). The cell's output is an HTML block: one
``<img>`` whose ``src`` and alt text swap when a range input moves
(``_static/live_figures.js`` does the swapping; it draws nothing), the frames in a JSON
block beside it. ``_ext/live_figures.py`` moves the frames out of the page into image
files loaded when the figure scrolls into view, and drops the block from the student
edition and the print build, which show the chapter's static small multiples.

Why not ``matplotlib.animation.Animation.to_jshtml``: it embeds frames with one slider,
so a view of two controls would have to be flattened into one sequence; it gives every
frame the same (empty) alt text; and its play/loop buttons are an animation's controls,
not an explorer's. The frames here are drawn by the same function and the same PNG
writer; only the few lines that swap them are the book's.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.core.pylabtools import print_figure
from matplotlib.figure import Figure

from ._checks import check_instance, check_positive_int

LIVE_FIGURES = "ICL_LIVE_FIGURES"  # "1": explorers drawn as frames for the static site
MAX_STOPS = 12  # stops per control on the site (the live widget keeps its own)
MAX_FRAMES = 36  # frames per explorer
MAX_BYTES = 1_300_000  # PNG bytes per explorer (the site's budget: about 1.5 MB a page)


def live_figures() -> bool:
    """Whether ``explore`` draws its frames for the static site (``make book`` sets
    ``ICL_LIVE_FIGURES=1``)."""
    return os.environ.get(LIVE_FIGURES) == "1"


@dataclass(frozen=True)
class ControlGrid:
    """The stops of one control on the site: ``values`` are passed to the plot
    function, ``labels`` shown beside the slider and in the alt text, ``start`` is the
    stop nearest the control's initial value."""

    name: str
    label: str
    values: tuple
    labels: tuple[str, ...]
    start: int


def _format(value) -> str:
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.3g}"


def _float_stops(low: float, high: float, step: float) -> list[float]:
    count = int(math.floor((high - low) / step + 1e-9)) + 1
    digits = max(0, -math.floor(math.log10(step)) + 2) if step < 1 else 6
    return [round(low + i * step, digits) for i in range(count)]


def _all_stops(name: str, control) -> tuple[list, object]:
    """Every value a control can take (its options, or its range at its step) and its
    initial value. A control given as ``interactive`` accepts it (a ``(min, max[,
    step])`` tuple, a list of options, a bool) is read as the widget it makes."""
    if not isinstance(control, widgets.Widget):
        made = widgets.interactive.widget_from_abbrev(control)
        if made is None:
            raise TypeError(
                f"{name}: expected an ipywidgets control or what interactive accepts "
                f"(a (min, max[, step]) tuple, a list of options), got {control!r}"
            )
        control = made
    if isinstance(
        control,
        (
            widgets.SelectionSlider,
            widgets.ToggleButtons,
            widgets.Dropdown,
            widgets.RadioButtons,
        ),
    ):
        options = [
            o[1] if isinstance(o, tuple) and len(o) == 2 else o for o in control.options
        ]
        return options, control.value
    if isinstance(control, widgets.FloatLogSlider):
        exponents = _float_stops(control.min, control.max, control.step)
        return [control.base**e for e in exponents], control.value
    if isinstance(control, widgets.IntSlider):
        return list(range(control.min, control.max + 1, control.step)), control.value
    if isinstance(control, widgets.FloatSlider):
        return _float_stops(control.min, control.max, control.step), control.value
    if isinstance(control, widgets.Checkbox):
        return [False, True], control.value
    raise TypeError(
        f"{name}: expected an ipywidgets slider, selection, toggle or checkbox, got "
        f"{type(control).__name__}"
    )


def _numeric(values: list) -> bool:
    return all(
        isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
        for v in values
    )


def _coarsen(values: list, stops: int) -> list[int]:
    """Indices of ``stops`` values spread evenly over ``values``, both ends included."""
    if len(values) <= stops:
        return list(range(len(values)))
    return sorted({round(i * (len(values) - 1) / (stops - 1)) for i in range(stops)})


def _budgets(sizes: Sequence[int], max_stops: int, max_frames: int) -> list[int]:
    """Stops per control: at most ``max_stops`` each, their product at most
    ``max_frames``; a control with few values keeps them all, the others share what is
    left evenly."""
    budgets = [min(size, max_stops) for size in sizes]
    while math.prod(budgets) > max_frames:
        widest = max(range(len(budgets)), key=lambda i: budgets[i])
        if budgets[widest] <= 2:
            raise ValueError(
                f"controls: {len(sizes)} controls need at least "
                f"{math.prod(min(2, s) for s in sizes)} frames, more than the "
                f"{max_frames} an explorer may have"
            )
        budgets[widest] -= 1
    return budgets


def control_grids(
    controls: dict, max_stops: int = MAX_STOPS, max_frames: int = MAX_FRAMES
) -> list[ControlGrid]:
    """The site's grid of each control of ``explore`` (keyword -> control), coarsened to
    at most ``max_stops`` stops each and ``max_frames`` frames in all."""
    check_instance("controls", controls, dict, "a dict of keyword -> control")
    if not controls:
        raise ValueError("controls: expected at least one keyword control, got none")
    max_stops = check_positive_int("max_stops", max_stops, minimum=2)
    max_frames = check_positive_int("max_frames", max_frames, minimum=2)
    stops = {name: _all_stops(name, c) for name, c in controls.items()}
    for name, (values, _) in stops.items():
        if not values:
            raise ValueError(
                f"{name}: expected a control with at least one value, got none"
            )
    budgets = _budgets([len(v) for v, _ in stops.values()], max_stops, max_frames)
    grids = []
    for (name, (values, initial)), budget in zip(stops.items(), budgets, strict=True):
        if _numeric(values + [initial]) and initial not in values:
            values = sorted(values + [initial])  # off the step grid: a stop of its own
        indices = _coarsen(values, budget)
        if initial in values and initial not in [values[i] for i in indices]:
            # the site opens on the widget's first view: move the nearest stop onto it
            at = values.index(initial)
            nearest = min(range(len(indices)), key=lambda j: abs(indices[j] - at))
            indices[nearest] = at
        kept = [values[i] for i in sorted(set(indices))]
        if _numeric(kept + [initial]):
            start = int(np.argmin([abs(float(v) - float(initial)) for v in kept]))
        else:
            start = kept.index(initial) if initial in kept else 0
        label = getattr(controls[name], "description", "") or name
        grids.append(
            ControlGrid(
                name, label, tuple(kept), tuple(_format(v) for v in kept), start
            )
        )
    return grids


def _check_plot(plot) -> None:
    if not callable(plot):
        raise TypeError(
            "plot: expected a callable returning a matplotlib Figure, got "
            f"{type(plot).__name__}"
        )


def frame_png(plot: Callable, values: dict) -> bytes:
    """The PNG of ``plot(**values)`` as the inline backend displays it (the bytes the
    live widget's output holds for these values); the figure is closed."""
    _check_plot(plot)
    check_instance("values", values, dict, "a dict of keyword -> value")
    if not values:  # a frame is a point of the controls' grid
        raise ValueError("values: expected a value for each control, got none")
    fig = plot(**values)
    if not isinstance(fig, Figure):
        raise TypeError(
            f"plot: expected a function returning a matplotlib Figure, got one "
            f"returning {type(fig).__name__} for {values}"
        )
    try:
        return print_figure(fig, "png", bbox_inches="tight")
    finally:
        plt.close(fig)


def describe(plot: Callable) -> str:
    """What the figure shows, for its alt text: the first sentence of the plot
    function's docstring, else its name in words."""
    _check_plot(plot)
    doc = " ".join((getattr(plot, "__doc__", None) or "").split("\n\n")[0].split())
    if doc:
        return doc.split(". ")[0].rstrip(".")
    return getattr(plot, "__name__", "figure").replace("_", " ").strip()


class LiveFigure:
    """An explorer drawn once per point of its controls' grid, displayed as HTML.

    The grid is coarsened to at most ``max_stops`` stops per control and ``max_frames``
    frames, and further where the first frame is large, so that all frames fit in about
    ``max_bytes`` (the page-weight budget: a coarser grid, never a heavier page).

    Attributes: ``grids`` (one :class:`ControlGrid` per control, in order), ``frames``
    (``(values, png)`` in row-major order of the grids: the last control varies
    fastest), ``alts`` (one alt text per frame), ``seconds`` (the time the frames took
    to draw).
    """

    def __init__(
        self,
        plot: Callable,
        controls: dict,
        max_stops: int = MAX_STOPS,
        max_frames: int = MAX_FRAMES,
        max_bytes: int = MAX_BYTES,
    ):
        _check_plot(plot)
        max_bytes = check_positive_int("max_bytes", max_bytes)
        started = time.perf_counter()
        self.description = describe(plot)
        self.grids = control_grids(controls, max_stops, max_frames)
        drawn: dict[tuple, bytes] = {}  # frames already drawn, by their values

        def draw(values: dict) -> bytes:
            key = tuple(values.items())
            if key not in drawn:
                drawn[key] = frame_png(plot, values)
            return drawn[key]

        first = draw({g.name: g.values[g.start] for g in self.grids})
        # the frames of one explorer differ little in size: budget by the first, with
        # a fifth to spare
        affordable = int(max_bytes / (1.2 * len(first)))
        if affordable < math.prod(len(g.values) for g in self.grids):
            self.grids = control_grids(controls, max_stops, max(affordable, 2))
        self.frames: list[tuple[dict, bytes]] = []
        self.alts: list[str] = []
        for index in np.ndindex(*(len(g.values) for g in self.grids)):
            values = {
                g.name: g.values[i] for g, i in zip(self.grids, index, strict=True)
            }
            self.frames.append((values, draw(values)))
            shown = ", ".join(
                f"{g.label} = {g.labels[i]}"
                for g, i in zip(self.grids, index, strict=True)
            )
            self.alts.append(f"{self.description}, at {shown}")
        self.seconds = time.perf_counter() - started

    @property
    def start(self) -> int:
        """The frame of the controls' initial values."""
        return int(
            np.ravel_multi_index(
                [g.start for g in self.grids], [len(g.values) for g in self.grids]
            )
        )

    def _repr_html_(self) -> str:
        srcs = [
            "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            for _, png in self.frames
        ]
        data = {
            "controls": [
                {"label": g.label, "labels": list(g.labels)} for g in self.grids
            ],
            "frames": [
                {"src": s, "alt": a} for s, a in zip(srcs, self.alts, strict=True)
            ],
        }
        start = self.start
        sliders = []
        for k, g in enumerate(self.grids):
            first = html.escape(g.labels[g.start])
            sliders.append(
                f'<label class="icl-live-control"><span>{html.escape(g.label)}</span>'
                f'<input type="range" min="0" max="{len(g.values) - 1}" step="1" '
                f'value="{g.start}" data-control="{k}" '
                f'aria-valuetext="{html.escape(g.label)} = {first}">'
                f"<output>{first}</output></label>"
            )
        # "</" cannot end the JSON script early: alt texts are plain, srcs base64
        payload = json.dumps(data).replace("</", "<\\/")
        return (
            '<div class="icl-live-figure">'
            f'<img class="icl-live-frame" src="{srcs[start]}" '
            f'alt="{html.escape(self.alts[start])}" loading="lazy">'
            f'<div class="icl-live-controls">{"".join(sliders)}</div>'
            '<script type="application/json" class="icl-live-frames">'
            f"{payload}</script>"
            "</div>"
        )

    def __repr__(self) -> str:
        grid = " x ".join(f"{g.label} ({len(g.values)})" for g in self.grids)
        size = sum(len(png) for png in self.frames_by_value().values())
        return (
            f"<LiveFigure: {self.description}; {len(self.frames)} frames over {grid}, "
            f"{size / 1e6:.2f} MB, drawn in {self.seconds:.1f} s>"
        )

    def frames_by_value(self) -> dict[tuple, bytes]:
        """Each frame once, by its values: ``{tuple of (name, value): png}``."""
        return {tuple(values.items()): png for values, png in self.frames}
