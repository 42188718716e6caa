"""Chapter 1's map of the book: the nine chapters as a graph of which needs which.

Each chapter is a box with its number, its perspective on in-context learning and that
perspective's claim in a few words; an arrow runs from a chapter to one that needs it,
solid where the later chapter requires it, dashed where it only helps. The edges are
those of the instructors' page (``tools/course.py``, ``REQUIRES`` and ``HELPS``), which
``tests/test_plotting_ch1_diagrams.py`` keeps equal to :data:`REQUIRES` and
:data:`HELPS` here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from .style import NEUTRAL, PALETTE

# Chapter -> (its perspective, its claim in a few words, lines broken by hand).
CHAPTERS = {
    1: ("overview", "trained on random tasks,\na transformer\nlearns in context"),
    2: ("gradient descent", "a linear attention\nlayer can be one\ngradient step"),
    3: ("stability", "an algorithm learned\nfrom finitely many\ntasks generalises"),
    4: (
        "Bayesian",
        "the posterior predictive\nof the prior, if the tasks\nare diverse enough",
    ),
    5: (
        "algorithm selection",
        "one model runs\nseveral learners and\npicks one per prompt",
    ),
    6: ("mechanistic", "induction heads copy\nwhat followed an\nearlier match"),
    7: ("implicit dynamics", "a context acts like\na rank-1 update\nof a weight"),
    8: ("kernel regression", "attention is a\nkernel smoother"),
    9: (
        "beyond attention",
        "state-space models\nlearn some tasks;\nrecall favours a cache",
    ),
}
# Chapter -> the chapters it requires, and those that only help (tools/course.py).
REQUIRES = {1: (), 2: (1,), 3: (1,), 4: (1,), 5: (1, 2, 4), 6: (1,), 7: (1,),
            8: (1, 2, 4), 9: (1, 2)}  # fmt: skip
HELPS = {4: (3,), 6: (2,), 7: (2,), 9: (6, 7)}
# Where each box sits: (column, row), row 0 at the top. A chapter sits one row below
# its deepest requirement, and beside the chapter that helps it.
LAYOUT = {1: (2.0, 0), 3: (0.0, 1), 4: (1.0, 1), 2: (2.0, 1), 6: (3.0, 1),
          7: (4.0, 1), 5: (1.0, 2), 8: (2.0, 2), 9: (3.5, 2)}  # fmt: skip

_BOX_W, _BOX_H = 0.86, 0.62  # in column / row units
_X_STEP, _Y_STEP = 2.3, 1.75  # inches-ish: data units per column and per row


def _implied(start: int, end: int) -> bool:
    """Whether ``end`` needs ``start`` through another chapter it needs."""
    stack = [c for c in REQUIRES[end] if c != start]
    while stack:
        chapter = stack.pop()
        if start in REQUIRES[chapter]:
            return True
        stack.extend(REQUIRES[chapter])
    return False


def _edges() -> list[tuple[int, int, str]]:
    """``(from, to, line style)``: required edges not implied by a longer path, solid;
    helpful ones, dashed."""
    edges = [
        (r, c, "-") for c, rs in REQUIRES.items() for r in rs if not _implied(r, c)
    ]
    return edges + [(h, c, "--") for c, hs in HELPS.items() for h in hs]


def book_map_diagram():
    """The map of the book (chapter 1): nine boxes, one per chapter, with the chapter's
    perspective and its claim in a few words, and arrows from each chapter to the ones
    that build on it (solid: required; dashed: helpful). Every arrow points forward in
    the book. Returns the Figure."""
    fig, ax = plt.subplots(figsize=(10.5, 5.6))
    ax.set_axis_off()
    centre = {c: (_X_STEP * x, -_Y_STEP * y) for c, (x, y) in LAYOUT.items()}
    width, height = _X_STEP * _BOX_W, _Y_STEP * _BOX_H
    for start, end, style in _edges():
        (x0, y0), (x1, y1) = centre[start], centre[end]
        if y0 != y1:  # down a row: bottom edge to top edge
            tail, head, bend = (x0, y0 - height / 2), (x1, y1 + height / 2), 0.0
        elif abs(LAYOUT[end][0] - LAYOUT[start][0]) == 1:  # neighbours: side to side
            tail, head, bend = (x0 + width / 2, y0), (x1 - width / 2, y1), 0.0
        else:  # over the boxes between them: top edge to top edge, arched
            tail, head, bend = (x0, y0 + height / 2), (x1, y1 + height / 2), -0.25
        ax.annotate(
            "",
            xy=head,
            xytext=tail,
            arrowprops={
                "arrowstyle": "-|>",
                "ls": style,
                "color": NEUTRAL,
                "lw": 1.2,
                "shrinkA": 2,
                "shrinkB": 2,
                "connectionstyle": f"arc3,rad={bend}",
            },
        )
    for chapter, (x, y) in centre.items():
        perspective, claim = CHAPTERS[chapter]
        colour = PALETTE[4] if chapter == 1 else PALETTE[0]
        ax.add_patch(
            FancyBboxPatch(
                (x - width / 2, y - height / 2),
                width,
                height,
                boxstyle="round,pad=0.02,rounding_size=0.12",
                fc=colour,
                alpha=0.16 if chapter != 1 else 0.35,
                ec=NEUTRAL,
            )
        )
        ax.text(
            x,
            y + height / 2 - 0.12,
            f"{chapter}. {perspective}",
            ha="center",
            va="top",
            fontsize=10,
            fontweight="bold",
        )
        ax.text(x, y - 0.12, claim, ha="center", va="center", fontsize=8.8)
    ax.plot([], [], "-", color=NEUTRAL, label="needs")
    ax.plot([], [], "--", color=NEUTRAL, label="uses, or helps")
    ax.legend(loc="lower left", fontsize=9, frameon=False)
    xs = [x for x, _ in centre.values()]
    ys = [y for _, y in centre.values()]
    ax.set_xlim(min(xs) - width / 2 - 0.1, max(xs) + width / 2 + 0.1)
    ax.set_ylim(min(ys) - height / 2 - 0.1, max(ys) + height / 2 + 0.1)
    return fig
