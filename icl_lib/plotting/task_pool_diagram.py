"""Chapter 3's two Bayes predictors drawn in the space of task vectors (d = 2).

Raventós et al. (2023) train on tasks drawn from a finite pool ``w^(1..M)`` of draws
from the Gaussian prior ``N(0, I)``. After a context, the Bayes predictor of the pool
(dMMSE) puts posterior weight on the pool's points only, while ridge, the Bayes
predictor of the Gaussian prior, has a continuous Gaussian posterior. This figure shows
both in the plane of ``w``: the prior's circles, the pool's points with their posterior
weights as areas, ridge's posterior ellipses, and each posterior's mean.

Arrays in, a Figure out: the caller computes the posterior weights
(:func:`icl_lib.learners.pool.pool_posterior`) and ridge's posterior; nothing here
runs a learner. Import it by its module path:
``from icl_lib.plotting.task_pool_diagram import task_pool_diagram``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Ellipse
from matplotlib.patheffects import Normal, Stroke

from .._checks import check_sequence
from . import _inputs as _in
from .style import NEUTRAL, PALETTE, TRANSFORMER, finish_axes, learner_color

DMMSE = PALETTE[1]  # the colour dMMSE takes in the chapter's curves
RIDGE = learner_color("ridge")
LIKELIHOOD_SDS = (1, 2, 3, 4)  # the likelihood's level sets, in its sds
MARKS = 5  # the z-order of the means and the task: above every disc and ellipse


def _panel(index: int, panel) -> tuple[np.ndarray, np.ndarray, str]:
    """One panel's ``(pool (M, 2), weights (M,), title)``, checked by name."""
    name = f"panels[{index}]"
    panel = _in.mapping(name, panel)
    unknown = set(panel) - {"pool", "weights", "title"}
    if unknown or not {"pool", "weights"} <= set(panel):
        raise ValueError(
            f"{name}: expected keys 'pool', 'weights' and optionally 'title', got "
            f"{sorted(panel)}"
        )
    pool = _in.numbers(f"{name}['pool']", panel["pool"], ndim=2)
    if pool.shape[1] != 2:
        raise ValueError(
            f"{name}['pool']: expected shape (M, 2), tasks in the plane, got "
            f"{pool.shape}"
        )
    weights = _in.numbers(f"{name}['weights']", panel["weights"], minimum=0.0)
    if weights.shape != (pool.shape[0],):
        raise ValueError(
            f"{name}['weights']: expected {pool.shape[0]} weights (one per pool task), "
            f"got shape {weights.shape}"
        )
    if not np.isclose(weights.sum(), 1.0, atol=1e-6):
        raise ValueError(
            f"{name}['weights']: expected posterior weights summing to 1, got a sum "
            f"of {weights.sum():.6g}"
        )
    title = panel.get("title", "")
    if not isinstance(title, str):
        raise TypeError(f"{name}['title']: expected a str, got {type(title).__name__}")
    return pool, weights, title


def _covariance(value, name: str = "ridge_cov") -> np.ndarray:
    cov = _in.numbers(name, value, ndim=2)
    if cov.shape != (2, 2):
        raise ValueError(f"{name}: expected shape (2, 2), got {cov.shape}")
    if not np.allclose(cov, cov.T, atol=1e-9) or np.linalg.eigvalsh(cov).min() <= 0:
        raise ValueError(
            f"{name}: expected a symmetric positive definite (2, 2) covariance, got "
            f"{cov.tolist()}"
        )
    return cov


def _ellipse(mean, cov, scale: float, **style) -> Ellipse:
    """The level set of ``N(mean, cov)`` at ``scale`` standard deviations."""
    values, vectors = np.linalg.eigh(cov)
    angle = float(np.degrees(np.arctan2(vectors[1, 1], vectors[0, 1])))
    width, height = 2 * scale * np.sqrt(values[::-1])
    return Ellipse(tuple(mean), width, height, angle=angle, **style)


def task_pool_diagram(
    panels: Sequence[Mapping],
    *,
    ridge_mean,
    ridge_cov,
    task=None,
    likelihood=None,
    prior_sd: float = 1.0,
    extent: float = 2.6,
):
    """A finite task pool against the Gaussian prior, in the plane of ``w``.

    Args:
        panels: one mapping per panel, ``{"pool": (M, 2), "weights": (M,),
            "title": str}``: the pool's task vectors and their posterior weights after
            the context (non-negative, summing to 1), e.g. a small and a large ``M``.
        ridge_mean: ``(2,)``, the posterior mean under the prior ``N(0, prior_sd^2 I)``
            after the same context: ridge's ``w``.
        ridge_cov: ``(2, 2)``, that posterior's covariance, drawn as its 1- and 2-sd
            ellipses.
        task: ``(2,)``, the task that drew the context (a star), or None.
        likelihood: ``(mean (2,), cov (2, 2))`` or None: the likelihood of the
            context as a Gaussian in ``w`` (least squares' ``w`` and
            ``sigma^2 (X^T X)^{-1}``), drawn as dashed level sets at 1 to 4 sd in
            dMMSE's colour: the function dMMSE's weights follow on the pool's points.
        prior_sd: the prior's standard deviation, drawn as circles of 1 and 2 sd.
        extent: half-width of the square drawn around 0.

    Every pool point is drawn as a small open circle; its posterior weight as a
    filled disc whose area is proportional to the weight; the pool's posterior mean
    (dMMSE's ``w``) as a cross; ridge's mean as a plus; both, and the task, drawn above
    the discs with a white halo. One legend, below the panels.
    Chapter 3.
    """
    check_sequence("panels", panels, "a sequence of panel mappings", nonempty=True)
    drawn = [_panel(i, panel) for i, panel in enumerate(panels)]
    mean = _in.numbers("ridge_mean", ridge_mean)
    if mean.shape != (2,):
        raise ValueError(f"ridge_mean: expected shape (2,), got {mean.shape}")
    cov = _covariance(ridge_cov)
    if task is not None:
        task = _in.numbers("task", task)
        if task.shape != (2,):
            raise ValueError(f"task: expected shape (2,) or None, got {task.shape}")
    if likelihood is not None:
        if not isinstance(likelihood, Sequence) or len(likelihood) != 2:
            raise ValueError("likelihood: expected (mean, cov) or None")
        like_mean = _in.numbers("likelihood[0]", likelihood[0])
        if like_mean.shape != (2,):
            raise ValueError(
                f"likelihood[0]: expected shape (2,), got {like_mean.shape}"
            )
        like_cov = _covariance(likelihood[1], "likelihood[1]")
    prior_sd = float(_in.numbers("prior_sd", [prior_sd], minimum=0, strict=True)[0])
    extent = float(_in.numbers("extent", [extent], minimum=0, strict=True)[0])

    fig, axes = plt.subplots(
        1, len(drawn), figsize=(4.3 * len(drawn), 4.6), squeeze=False
    )
    for ax, (pool, weights, title) in zip(axes[0], drawn, strict=True):
        for k, ls in ((1, ":"), (2, ":")):
            ax.add_patch(
                plt.Circle((0, 0), k * prior_sd, fill=False, ls=ls, color=NEUTRAL)
            )
        for k, alpha in ((2, 0.12), (1, 0.25)):
            ax.add_patch(_ellipse(mean, cov, k, color=RIDGE, alpha=alpha, lw=0))
        ax.add_patch(_ellipse(mean, cov, 1, fill=False, color=RIDGE, lw=1.5))
        if likelihood is not None:
            for k in LIKELIHOOD_SDS:
                ax.add_patch(
                    _ellipse(
                        like_mean, like_cov, k, fill=False, color=DMMSE, ls="--", lw=0.9
                    )
                )
        ax.scatter(*pool.T, s=14, facecolors="none", edgecolors=NEUTRAL, lw=0.8)
        ax.scatter(
            *pool.T, s=1200 * weights, color=DMMSE, alpha=0.75, edgecolors="none"
        )
        dmmse_mean = weights @ pool
        # The three marks sit above the discs and the ellipses, each with a white halo,
        # so that a disc drawn over dMMSE's mean (a large pool) cannot hide it.
        # Ridge's plus is drawn large and dMMSE's cross small on top of it, so that both
        # show where the two means meet; the task's star goes last.
        for point, marker, color, ms, mew in (
            (mean, "+", RIDGE, 19, 2.0),
            (dmmse_mean, "x", DMMSE, 9, 2.5),
            (task, "*", TRANSFORMER, 13, 1.0),
        ):
            if point is None:
                continue
            (line,) = ax.plot(*point, marker, color=color, ms=ms, mew=mew, zorder=MARKS)
            line.set_path_effects(
                [Stroke(linewidth=mew + 3, foreground="white"), Normal()]
            )
        ax.set(
            xlim=(-extent, extent),
            ylim=(-extent, extent),
            aspect="equal",
            xlabel="$w_1$",
            ylabel="$w_2$",
            title=title,
        )
        ax.grid(False)
        finish_axes(ax)
    handles = [
        Line2D(
            [],
            [],
            ls=":",
            color=NEUTRAL,
            label="prior $\\mathcal{N}(0, I)$: 1 and 2 sd",
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            mfc="none",
            mec=NEUTRAL,
            label="pool tasks $w^{(i)}$",
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            color=DMMSE,
            alpha=0.75,
            ms=10,
            label="dMMSE's weight on a pool task (area)",
        ),
        Line2D(
            [], [], ls="", marker="x", color=DMMSE, mew=2.5, label="dMMSE's $\\hat w$"
        ),
        Line2D(
            [],
            [],
            ls="-",
            lw=6,
            color=RIDGE,
            alpha=0.35,
            label="ridge's posterior: 1 and 2 sd",
        ),
        *(
            [
                Line2D(
                    [],
                    [],
                    ls="--",
                    lw=0.9,
                    color=DMMSE,
                    label="likelihood of the examples: 1 to 4 sd",
                )
            ]
            if likelihood is not None
            else []
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="+",
            color=RIDGE,
            mew=2.5,
            ms=11,
            label="ridge's $\\hat w$",
        ),
    ]
    if task is not None:
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker="*",
                color=TRANSFORMER,
                ms=11,
                label="the prompt's task",
            )
        )
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=9)
    return fig
