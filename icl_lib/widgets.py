"""Thin ipywidgets wrappers over the plotting functions.

A widget needs a running kernel: locally and on Colab the sliders redraw the figure.
The book build has none; there ``explore`` returns a
:class:`~icl_lib.live_figures.LiveFigure` (every stop of the controls drawn by the same
function, swapped by sliders on the static site), and the chapter's static small
multiples stand in for it in the student edition and the PDF.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from .live_figures import LiveFigure, live_figures
from .runtime import static_widgets


def explore(plot: Callable, **controls):
    """An interactive view of ``plot(**values) -> Figure``, one control per keyword.

    Each control is an ipywidgets widget (e.g. ``FloatSlider``) or anything
    ``ipywidgets.interactive`` accepts (a ``(min, max, step)`` tuple, a list of
    options). Returns the widget (display it as the last expression of a cell), or
    ``None`` headless (:func:`icl_lib.runtime.static_widgets`), where the initial
    view is drawn once, to check it, and nothing is displayed; in the book build
    (:func:`icl_lib.live_figures.live_figures`) a
    :class:`~icl_lib.live_figures.LiveFigure` of the same function.
    """
    if not callable(plot):
        raise TypeError(
            "plot: expected a callable returning a matplotlib Figure, got "
            f"{type(plot).__name__}"
        )
    if not controls:
        raise ValueError("controls: expected at least one keyword control, got none")

    if static_widgets() and live_figures():  # the book build: frames for the site
        return LiveFigure(plot, controls)
    if static_widgets():  # headless: check the initial view, display nothing
        plt.close(plot(**{name: _initial(c) for name, c in controls.items()}))
        return None

    def redraw(**values):
        fig = plot(**values)
        display(fig)
        plt.close(fig)  # displayed once, not again by the inline backend

    view = widgets.interactive(redraw, **controls)
    view.plot = plot  # what it draws, for a check that the site's frames are its own
    return view


def _initial(control):
    """The value a control starts from: a widget's ``value``, the first option of a
    list, the middle of a ``(min, max[, step])`` range, or the value itself."""
    if isinstance(control, widgets.ValueWidget):
        return control.value
    if isinstance(control, list) and control:
        return control[0]
    if isinstance(control, tuple) and len(control) in (2, 3):
        low, high = control[:2]
        middle = (low + high) / 2
        return int(middle) if isinstance(low, int) and isinstance(high, int) else middle
    return control
