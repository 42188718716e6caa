"""Figures of predictive distributions: calibration and predictive bands (chapter 4).

Arrays in, a Figure out, an optional ``ax``; nothing here runs a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import _inputs as _in
from .curves import _axis, _is_model
from .style import NEUTRAL, color_for, finish_axes, line_styles


def calibration_plot(
    levels: Sequence[float],
    observed: Mapping[str, Sequence[float]],
    *,
    title: str = "",
    ax=None,
):
    """Observed share of labels below each nominal quantile level against the level,
    one line per predictor; the diagonal is perfect calibration."""
    levels = _in.numbers("levels", levels, minimum=0)
    _in.curves("observed", observed, len(levels))
    fig, ax = _axis(ax, (4.2, 4.0))
    ax.plot([0, 1], [0, 1], color=NEUTRAL, ls=":", lw=1, label="calibrated")
    colors = [color_for(name, i + 1) for i, name in enumerate(observed)]
    markers = ["o" if _is_model(name) else None for name in observed]
    lines = line_styles(list(observed), colors, markers=markers)
    for i, (name, values) in enumerate(observed.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != levels.shape:
            raise ValueError(
                f"observed[{name!r}]: expected {levels.shape[0]} values (one per "
                f"level), got {values.shape}"
            )
        ax.plot(
            levels,
            values,
            lines[i],
            color=colors[i],
            marker=markers[i],
            ms=3,
            lw=1.8,
            label=name,
        )
    ax.set(
        xlabel="nominal quantile level q",
        ylabel="share of labels below the q-quantile",
        title=title,
        xlim=(0, 1),
        ylim=(0, 1),
    )
    ax.legend(fontsize=9, loc="upper left")
    finish_axes(ax)
    return fig


def predictive_band(
    ts: Sequence[float],
    band: Mapping[str, Sequence[float]],
    *,
    truth: Sequence[float] | None = None,
    title: str = "",
    xlabel: str = "query x = t u",
    ax=None,
):
    """The model's and the exact predictive mean with their central intervals along a
    line of queries: ``band`` has ``model_mean``, ``model_lo``, ``model_hi`` and the
    same for ``exact_`` (:func:`icl_lib.analysis.calibration.predictive_band`);
    ``truth`` is the noiseless ``<w, t u>``."""
    ts = _in.numbers("ts", ts)
    _in.curves("band", band, len(ts))
    wanted = [
        f"{name}_{s}" for name in ("model", "exact") for s in ("mean", "lo", "hi")
    ]
    if not set(wanted) <= set(band):
        raise ValueError(f"band: expected the keys {wanted}, got {sorted(band)}")
    truth = _in.optional_like("truth", truth, "ts", ts)
    fig, ax = _axis(ax, (6.0, 3.8))
    for name, label, fill in (
        ("exact", "Bayes (exact)", 0.25),
        ("model", "transformer", 0.12),
    ):
        color = color_for("bayes" if name == "exact" else "transformer")
        lo, hi = (np.asarray(band[f"{name}_{s}"], dtype=float) for s in ("lo", "hi"))
        band_label = f"{label}: 90 % band"
        ax.fill_between(ts, lo, hi, color=color, alpha=fill, lw=0, label=band_label)
        ax.plot(
            ts,
            np.asarray(band[f"{name}_mean"], dtype=float),
            color=color,
            lw=2,
            ls="-" if name == "exact" else "--",
            label=f"{label}: mean",
        )
    if truth is not None:
        ax.plot(
            ts,
            truth,
            color=NEUTRAL,
            ls=":",
            lw=1,
            label="<w, x>",
        )
    ax.set(xlabel=xlabel, ylabel="label y", title=title)
    ax.legend(fontsize=9, loc="upper left")
    finish_axes(ax)
    return fig
