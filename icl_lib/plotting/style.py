"""The book's one figure style and one palette.

A seaborn theme (white grid, white figure background so that figures stay legible in the
site's dark mode) and one colour-blind-safe palette (Okabe and Ito 2008). Each learner
keeps its colour across the whole book (:func:`color_for`); other series take the
palette in order.
"""

from __future__ import annotations

import seaborn as sns

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
