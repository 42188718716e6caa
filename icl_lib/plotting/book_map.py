"""Chapter 1's map of the book: the nine chapters as a graph of which needs which.

Each chapter is a box with its number, its perspective on in-context learning and that
perspective's claim in a few words; an arrow runs from a chapter to one that needs it,
solid where the later chapter requires it, dashed where it only helps. Every chapter
needs chapter 1, so chapter 1 is a banner across the top that says so, with no arrow of
its own: nine arrows from it would cross the others. The edges are those of the
instructors' page (``tools/course.py`` reads :data:`REQUIRES` and :data:`HELPS` from
here), and ``tests/test_plotting_ch1_diagrams.py`` checks that the drawn arrows are
exactly those edges and that no two of them cross.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from .style import NEUTRAL, PALETTE

# Chapter -> (its perspective, its claim in a few words, lines broken by hand).
CHAPTERS = {
    1: ("overview", "trained on random tasks, a transformer learns in context"),
    2: ("gradient descent", "a linear attention\nlayer can be one\ngradient step"),
    3: ("stability", "an algorithm learned\nfrom finitely many\ntasks generalises"),
    4: (
        "Bayesian",
        "the Bayes predictor of\nthe prior the tasks came\nfrom, if they are diverse",
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
        "state-space models\nlearn some tasks;\nattention recalls better",
    ),
}
# Chapter -> the chapters it requires, and those that only help (tools/course.py).
REQUIRES = {1: (), 2: (1,), 3: (1,), 4: (1,), 5: (1, 2, 4), 6: (1,), 7: (1,),
            8: (1, 2, 4), 9: (1, 2)}  # fmt: skip
HELPS = {4: (3,), 6: (2,), 7: (2,), 9: (6, 7)}
# Where each box sits: (column, row), row 0 at the top; chapter 1 is the banner across
# row 0. Chapters 5 and 8 both need 2 and 4: with both in one row two of their four
# arrows would cross, so 5 sits between 2 and 4 and 8 below it, its two arrows passing
# either side of 5.
LAYOUT = {1: (2.0, 0), 3: (0.0, 1), 4: (1.0, 1), 2: (2.0, 1), 6: (3.0, 1),
          7: (4.0, 1), 5: (1.5, 2), 9: (3.5, 2), 8: (1.5, 3)}  # fmt: skip
# Where an arrow leaves and enters a box, where the default (bottom to top between
# rows, side to side within one) would run through a box: (start side, where along
# it from -1 to 1, end side, where along it, curvature).
PORTS = {
    (4, 8): ("bottom", -0.3, "left", 0.0, 0.3),
    (2, 8): ("bottom", 0.3, "right", 0.0, -0.3),
    (2, 7): ("top", 0.2, "top", -0.2, -0.3),
    (4, 5): ("bottom", 0.45, "top", -0.45, 0.0),
    (2, 5): ("bottom", -0.45, "top", 0.45, 0.0),
    (2, 9): ("bottom", 0.2, "top", -0.45, 0.0),
    (6, 9): ("bottom", 0.2, "top", -0.1, 0.0),
    (7, 9): ("bottom", -0.2, "top", 0.3, 0.0),
}

_BOX_W, _BOX_H = 0.86, 0.62  # in column / row units
_X_STEP, _Y_STEP = 2.3, 1.45  # data units per column and per row
_BANNER_H = 0.45  # chapter 1's banner, in row units


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
    """The drawn arrows, ``(from, to, line style)``: required edges not implied by a
    longer path, solid; helpful ones, dashed. None leaves chapter 1, which every
    chapter needs (its banner says so)."""
    edges = [
        (r, c, "-")
        for c, rs in REQUIRES.items()
        for r in rs
        if r != 1 and not _implied(r, c)
    ]
    return edges + [(h, c, "--") for c, hs in HELPS.items() for h in hs if h != 1]


def _anchor(centre, side: str, where: float) -> tuple[float, float]:
    """A point on a box's side: ``where`` runs from -1 to 1 along it (left to right,
    or bottom to top)."""
    (x, y), w, h = centre, _X_STEP * _BOX_W / 2, _Y_STEP * _BOX_H / 2
    return {
        "top": (x + where * w, y + h),
        "bottom": (x + where * w, y - h),
        "left": (x - w, y + where * h),
        "right": (x + w, y + where * h),
    }[side]


def _route(start: int, end: int, centre: dict) -> tuple:
    """``(tail, head, curvature)`` of the arrow from ``start`` to ``end``."""
    if (start, end) in PORTS:
        side0, at0, side1, at1, bend = PORTS[(start, end)]
        tail, head = (
            _anchor(centre[start], side0, at0),
            _anchor(centre[end], side1, at1),
        )
        return tail, head, bend
    if LAYOUT[start][1] == LAYOUT[end][1]:  # neighbours in a row: side to side
        return (
            _anchor(centre[start], "right", 0.0),
            _anchor(centre[end], "left", 0.0),
            0.0,
        )
    return _anchor(centre[start], "bottom", 0.0), _anchor(centre[end], "top", 0.0), 0.0


def _arrow_paths(fig) -> dict[tuple[int, int], list[tuple[float, float]]]:
    """Each arrow the map ``fig`` draws, as the polyline of its line without the
    head, in data units: ``(from, to) -> [(x, y), ...]`` (for the crossing test)."""
    fig.canvas.draw()
    ax = fig.axes[0]
    paths = {}
    for text in ax.texts:
        patch = getattr(text, "arrow_patch", None)
        edge = getattr(patch, "_book_map_edge", None)
        if edge is None:
            continue
        shaft = patch.get_path().to_polygons(closed_only=False)[0]
        points = ax.transData.inverted().transform(shaft)
        paths[edge] = [tuple(p) for p in points]
    return paths


def book_map_diagram():
    """The map of the book (chapter 1): chapter 1 as a banner that every chapter needs,
    and below it eight boxes, one per chapter, with the chapter's perspective and its
    claim in a few words, and arrows from each chapter to the ones that build on it
    (solid: required; dashed: helpful). Every arrow points forward in the book, and no
    two arrows cross. Returns the Figure."""
    fig, ax = plt.subplots(figsize=(10.5, 6.2))
    ax.set_axis_off()
    centre = {c: (_X_STEP * x, -_Y_STEP * y) for c, (x, y) in LAYOUT.items()}
    width, height = _X_STEP * _BOX_W, _Y_STEP * _BOX_H
    for start, end, style in _edges():
        tail, head, bend = _route(start, end, centre)
        arrow = ax.annotate(
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
        arrow.arrow_patch._book_map_edge = (start, end)
    xs = [x for c, (x, _) in centre.items() if c != 1]
    left, right = min(xs) - width / 2, max(xs) + width / 2
    banner_h = _Y_STEP * _BANNER_H
    top = centre[3][1] + height / 2 + 0.62 * _Y_STEP  # room for the arched arrow
    for chapter, (x, y) in centre.items():
        perspective, claim = CHAPTERS[chapter]
        if chapter == 1:
            box = (left, top, right - left, banner_h)
            title_y, claim_y = top + banner_h - 0.1, top + 0.28 * banner_h
            claim = f"{claim}; every chapter below builds on it"
            colour, alpha = PALETTE[4], 0.35
        else:
            box = (x - width / 2, y - height / 2, width, height)
            title_y, claim_y = y + height / 2 - 0.12, y - 0.12
            colour, alpha = PALETTE[0], 0.16
        ax.add_patch(
            FancyBboxPatch(
                box[:2],
                *box[2:],
                boxstyle="round,pad=0.02,rounding_size=0.12",
                fc=colour,
                alpha=alpha,
                ec=NEUTRAL,
            )
        )
        ax.text(
            box[0] + box[2] / 2,
            title_y,
            f"{chapter}. {perspective}",
            ha="center",
            va="top",
            fontsize=10,
            fontweight="bold",
        )
        ax.text(
            box[0] + box[2] / 2, claim_y, claim, ha="center", va="center", fontsize=8.8
        )
    ax.plot([], [], "-", color=NEUTRAL, label="needs")
    ax.plot([], [], "--", color=NEUTRAL, label="uses, or helps")
    ax.legend(loc="lower left", fontsize=9, frameon=False)
    bottom = min(y for _, y in centre.values()) - height / 2
    ax.set_xlim(left - 0.1, right + 0.1)
    ax.set_ylim(bottom - 0.1, top + banner_h + 0.1)
    return fig
