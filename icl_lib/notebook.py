"""What every chapter's setup cell calls once ``icl_lib`` is importable, and ``glue``.

``glue`` is myst-nb's when the book is built; where myst-nb is absent (Colab, a plain
Jupyter install of the package) it keeps the value in :data:`GLUED` and displays it if
asked, so a chapter runs wherever the package is installed.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import torch
from IPython.core.formatters import format_display_data
from IPython.display import display as _show

from ._checks import check_positive_int
from ._format import power_of_ten, scientific
from .plotting.style import use_book_style
from .runtime import figure_pack, get_device, make_generator, static_widgets

# myst-nb finds a glued value in a display output whose metadata holds
# {"scrapbook": {"name", "mime_prefix"}} and whose MIME types start with that prefix
# (empty when the value is also shown). Writing that output here, rather than calling
# myst_nb.glue, spares each chapter's kernel the import of myst_nb.ext.glue, which
# loads Sphinx: about 3 s per chapter. A test checks the two outputs are identical.
GLUE_MIME_PREFIX = "application/papermill.record/"


def _book_glue(name: str, value, display: bool) -> None:
    bundle, metadata = format_display_data(value)
    prefix = "" if display else GLUE_MIME_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    _show({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


# a book build (myst-nb) pastes glued values into the text; elsewhere none reads them
_myst_glue = _book_glue if importlib.util.find_spec("myst_nb") is not None else None

GLUED: dict = {}  # name -> value, outside a book build


def glue(name: str, value, display: bool = True) -> None:
    """Make ``value`` available to the text as ``{glue:text}`name```; show it if
    ``display``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    if isinstance(value, np.generic):  # np.float64(0.5) would reach the page as text
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"value: expected a finite number for {name!r}, got {value}")
    if not isinstance(display, bool):
        raise TypeError(f"display: expected a bool, got {type(display).__name__}")
    if _myst_glue is not None:
        _myst_glue(name, value, display=display)
        return
    GLUED[name] = value
    if display:
        _show(value)


class NumberTable:
    """A table :func:`number_table` has already displayed: its HTML is ``data``.

    Displaying it again does nothing (``_ipython_display_``), so a cell that ends with
    the call, or wraps it in ``display``, still shows the table once."""

    def __init__(self, html: str):
        self.data = html

    def _ipython_display_(self) -> None:
        """Already shown when it was made."""

    def __repr__(self) -> str:
        return f"NumberTable({len(self.data)} characters of HTML)"


def number_table(columns, rows, digits: int = 2) -> NumberTable:
    """Display a small table of computed numbers for a chapter's text, wherever the
    call stands in its cell (a table that is not the cell's last expression used to be
    dropped silently), and return it (:class:`NumberTable`, its HTML in ``data``).

    ``columns`` are the headers, the first over the row labels; ``rows`` maps each
    label to its cells, one per further column. Real numbers are shown with ``digits``
    decimals, anything else as its text."""
    from html import escape

    from IPython.display import HTML, display

    if not isinstance(columns, (list, tuple)):
        raise TypeError(
            f"columns: expected a list of headers, got {type(columns).__name__}"
        )
    if len(columns) < 2:
        raise ValueError(
            "columns: expected at least two headers (labels and one column of cells)"
        )
    if not isinstance(rows, dict) or not rows:
        raise ValueError(
            f"rows: expected a non-empty dict label -> cells, got {rows!r}"
        )
    check_positive_int("digits", digits, minimum=0)

    def cell(value) -> str:
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float):
            return f"{value:.{digits}f}"
        return str(value)

    body = []
    for label, cells in rows.items():
        cells = list(cells)
        if len(cells) != len(columns) - 1:
            raise ValueError(
                f"rows[{label!r}]: expected {len(columns) - 1} cells, got {len(cells)}"
            )
        body.append(
            "<tr>"
            + "".join(f"<td>{escape(cell(c))}</td>" for c in (label, *cells))
            + "</tr>"
        )
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    html = (
        f'<table class="number-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    display(HTML(html))
    return NumberTable(html)


def scientific_text(x: float, digits: int = 2) -> str:
    """A number for a sentence or a table cell, as a reader reads it: ``digits``
    significant digits, plain decimals from 0.001 to 10⁴ (``0.0041``), powers of ten
    outside (``3.6 × 10⁻¹⁵``, never ``3.6e-15``), and ``0`` for zero (never ``-0``).
    Glue the string it returns (``glue("gap", scientific_text(gap))``)."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, torch.Tensor) and x.numel() == 1:
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise TypeError(f"x: expected a real number, got {type(x).__name__}")
    if not math.isfinite(x):
        raise ValueError(f"x: expected a finite number, got {x}")
    check_positive_int("digits", digits)
    if digits > 17:
        raise ValueError(f"digits: expected at most 17 digits, got {digits}")
    return scientific(float(x), digits)


def multiple_text(factor: float) -> str:
    """A multiple of a run's training as a table cell or in a sentence: ``"2.4"`` below
    10, ``"37"`` below 100, one significant figure up to a million (``"3 × 10²"``,
    ``"10⁶"``), ``"more than 10⁶"`` beyond, and
    ``"never, at this slope"`` for ``inf`` (what
    :func:`icl_lib.analysis.curves.training_budget` gives a curve that does not
    fall)."""
    if isinstance(factor, bool) or not isinstance(factor, int | float):
        raise TypeError(f"factor: expected a number, got {type(factor).__name__}")
    if not factor > 0:
        raise ValueError(f"factor: expected a positive number or inf, got {factor!r}")
    if factor == math.inf:
        return "never, at this slope"
    if factor < 10:
        return f"{factor:.1f}"
    if factor < 100:
        return f"{factor:.0f}"
    if factor > 1e6:  # beyond that the digits say nothing an extrapolation can carry
        return "more than 10⁶"
    exponent = math.floor(math.log10(factor))
    mantissa = round(factor / 10**exponent)
    if mantissa == 10:  # 9.6e5 rounds to 1 x 10^6
        mantissa, exponent = 1, exponent + 1
    power = power_of_ten(exponent)
    return power if mantissa == 1 else f"{mantissa} × {power}"


def _check_budget(budget) -> None:
    """``budget``: :func:`icl_lib.analysis.curves.training_budget`'s result."""
    if not isinstance(budget, dict) or not {"reached", "slope", "factor"} <= set(
        budget
    ):
        raise TypeError(
            "budget: expected training_budget's dict with 'reached', 'slope' and "
            f"'factor', got {budget!r}"
        )


def trend_summary(budgets: dict, goal: str = "the goal") -> str:
    """Sentences on a set of logged runs, grouped by what their ends say about more
    training: which reach ``goal``, which have stopped falling, and which still fall,
    with the range of multiples of their training that their slopes would need.

    ``budgets``: a name (a noun phrase, e.g. "the mixture model's ratio") ->
    :func:`icl_lib.analysis.curves.training_budget`'s result, or a list of them for
    one run read over several stretches of its training (the range then spans them
    all; a run has stopped falling only if it has over every stretch).
    """
    if not isinstance(budgets, dict) or not budgets:
        raise ValueError(
            "budgets: expected a non-empty dict name -> training budget, got "
            f"{budgets!r}"
        )
    windows = {
        name: list(value) if isinstance(value, list | tuple) else [value]
        for name, value in budgets.items()
    }
    for name, runs in windows.items():
        if not isinstance(name, str) or not name or not runs:
            raise ValueError(
                f"budgets: expected phrases -> one or more budgets, got {name!r}"
            )
        for budget in runs:
            _check_budget(budget)
    if not isinstance(goal, str) or not goal:
        raise ValueError(f"goal: expected a non-empty phrase, got {goal!r}")

    def listed(names):
        names = list(names)
        return (
            ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        )

    def verb(names, one, many):
        return many if len(names) > 1 else one

    reached = [n for n, runs in windows.items() if runs[0]["reached"] is not None]
    finite = {
        n: [b["factor"] for b in runs if b["factor"] < math.inf]
        for n, runs in windows.items()
        if n not in reached
    }
    stopped = [n for n, factors in finite.items() if not factors]
    falling = {n: factors for n, factors in finite.items() if factors}
    out = []
    if reached:
        out.append(f"{listed(reached)} {verb(reached, 'reaches', 'reach')} {goal}.")
    if stopped:
        out.append(f"{listed(stopped)} {verb(stopped, 'has', 'have')} stopped falling.")
    if falling:
        every = [f for factors in falling.values() for f in factors]
        low, high = (multiple_text(f) for f in (min(every), max(every)))
        span = (
            f"about {low}"
            if low == high
            else f"at least {low}"
            if max(every) > 1e6
            else f"about {low} to {high}"
        )
        slopes = "slopes" if len(every) > 1 else "slope"
        out.append(
            f"{listed(falling)} still {verb(falling, 'falls', 'fall')}; at the "
            f"log-log {slopes} of the table, {goal} is {span} times the training away."
        )
    return " ".join(sentence[0].upper() + sentence[1:] for sentence in out)


def setup_notebook(seed: int = 0) -> torch.device:
    """Fix the global seed, use one CPU thread, apply the book's figure style; return
    the device. Headless (:func:`static_widgets`), widgets get inert comms.

    Every experiment in the book still passes its own seed or generator; the global seed
    only makes incidental randomness (e.g. a default ``nn.Linear`` initialisation)
    repeatable. The book's tensors are small, and two threads that contend for a shared
    2-core CPU run such work several times slower than one. The device is CUDA where
    present, else the CPU.
    """
    make_generator(seed)  # the same rule for a seed as everywhere: an int >= 0
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    use_book_style()
    if figure_pack():  # the book build: every figure as PNG (the site) and SVG (slides)
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png", "svg")
    if static_widgets():  # widgets built by a cell send nothing (see static_widgets)
        import comm  # ipywidgets >= 8 opens its comms through this package

        comm.create_comm = comm.DummyComm
    return get_device()
