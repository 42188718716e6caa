"""Small multiples: one plotting function drawn on several panels, with one legend for
all."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_hex

from .._checks import check_positive_int, check_sequence
from . import _inputs as _in
from .style import NEUTRAL, TRANSFORMER, color_for


def small_multiples(
    plot: Callable | Sequence[Callable],
    panels: Sequence[Mapping],
    *,
    ncols: int | None = None,
    sharey: bool = False,
    panel_size: tuple[float, float] = (3.3, 3.3),
    width_ratios: Sequence[float] | None = None,
    legend: bool = True,
):
    """Draw ``plot(**panel, ax=ax)`` on one axis per panel; returns the Figure.

    ``plot`` is one plotting function for every panel, or a sequence of them, one per
    panel. Every panel's own legend is removed and one legend with every distinct label
    goes below the panels (``legend=False``: none). ``plot`` is any function of this
    package that takes ``ax``, or one written with the same convention.
    """
    check_sequence("panels", panels, "a sequence of keyword mappings")
    panels = [_in.mapping("panels[i]", panel) for panel in panels]
    if not callable(plot) and (
        isinstance(plot, (str, bytes)) or not hasattr(plot, "__iter__")
    ):
        raise TypeError(
            f"plot: expected a drawing function or one per panel, got "
            f"{type(plot).__name__}"
        )
    if not panels:
        raise ValueError("panels: expected at least one panel, got none")
    plots = [plot] * len(panels) if callable(plot) else list(plot)
    if len(plots) != len(panels) or not all(callable(p) for p in plots):
        raise TypeError(
            f"plot: expected a plotting function or {len(panels)} of them (one per "
            f"panel), got {plot!r}"
        )
    ncols = len(panels) if ncols is None else check_positive_int("ncols", ncols)
    nrows = -(-len(panels) // ncols)
    sharey, legend = _in.flag("sharey", sharey), _in.flag("legend", legend)
    panel_size = _in.pair("panel_size", panel_size, "(width, height)")
    if min(panel_size) <= 0:
        raise ValueError(f"panel_size: expected positive inches, got {panel_size}")
    if width_ratios is not None:
        width_ratios = _in.numbers("width_ratios", width_ratios, minimum=0, strict=True)
        if len(width_ratios) != ncols:
            raise ValueError(
                f"width_ratios: expected {ncols} ratios (one per column), got "
                f"{len(width_ratios)}"
            )
    width = min(10.0, panel_size[0] * ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width, panel_size[1] * nrows),
        sharey=sharey,
        squeeze=False,
        width_ratios=width_ratios,
    )
    axes = axes.ravel()
    for ax, draw, panel in zip(axes, plots, panels, strict=False):
        draw(**panel, ax=ax)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    handles = {}
    for ax in axes[: len(panels)]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    _check_distinct_handles(handles)
    if legend and handles:
        fig.legend(
            handles.values(),
            handles.keys(),
            loc="outside lower center",
            ncol=min(len(handles), 3),
            fontsize=9,
        )
    return fig


def _check_distinct_handles(handles: Mapping) -> None:
    """One legend for several panels: two labels drawn alike would be one entry to a
    reader (each panel's lines are checked by the function that drew them)."""
    seen = {}
    for label, handle in handles.items():
        if not hasattr(handle, "get_linestyle") or not hasattr(handle, "get_marker"):
            continue  # bars, patches: told apart by colour and position
        key = (to_hex(handle.get_color()), handle.get_linestyle(), handle.get_marker())
        if key in seen:
            raise ValueError(
                f"series {seen[key]!r} and {label!r} share colour {key[0]}, line style "
                f"{key[1]!r} and marker {key[2]!r} in the shared legend; a reader "
                "cannot tell them apart"
            )
        seen[key] = label


def implicit_update_panels(
    delta_W,
    outputs: Mapping[str, float],
    *,
    truth: float | None = None,
    title: str = "",
):
    """One prompt's implicit update: ``dW(Y)`` as an image, its singular values, the
    outputs.

    Args:
        delta_W: ``(hidden, m)`` array, one prompt's update (chapter 7).
        outputs: label -> prediction (e.g. ``T_W(C, x)``, ``T_{W + dW}(C \\ Y, x)``).
        truth: the true label, drawn as a dashed line (optional).
    """
    M = _in.numbers("delta_W", delta_W, ndim=2)
    truth = _in.optional_real("truth", truth)
    if not _in.mapping("outputs", outputs):
        raise ValueError("outputs: expected at least one prediction, got none")
    for label, value in outputs.items():
        _in.numbers(f"outputs[{label!r}]", [value])
    if M.ndim != 2:
        raise ValueError(
            f"delta_W: expected a 2-D array (hidden, m), got shape {M.shape}"
        )
    fig, axes = plt.subplots(1, 3, figsize=(10.0, 3.2), width_ratios=[1.1, 1, 1.2])
    lim = float(np.abs(M).max()) or 1.0
    im = axes[0].imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    fig.colorbar(im, ax=axes[0], shrink=0.8)
    axes[0].set(title=r"$\Delta W(Y)$", xlabel="input coordinate", ylabel="hidden unit")
    axes[0].grid(False)
    s = np.linalg.svd(M, compute_uv=False)
    axes[1].semilogy(range(1, len(s) + 1), s + 1e-300, "o-", color=TRANSFORMER, ms=4)
    axes[1].set_ylim(1e-20, max(float(s[0]) * 10, 1e-18))
    axes[1].set(title="singular values", xlabel="index")
    labels = list(outputs)
    values = [float(outputs[k]) for k in labels]
    axes[2].barh(
        range(len(labels)),
        values,
        color=[color_for(k, i) for i, k in enumerate(labels)],
    )
    axes[2].set_yticks(range(len(labels)), labels, fontsize=9)
    axes[2].invert_yaxis()
    axes[2].axvline(0, color=NEUTRAL, lw=1)
    if truth is not None:
        axes[2].axvline(
            float(truth), color=TRANSFORMER, ls="--", lw=1.2, label="true $y_q$"
        )
        axes[2].legend(fontsize=9, loc="best")
    axes[2].set_title("prediction of $y_q$")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
