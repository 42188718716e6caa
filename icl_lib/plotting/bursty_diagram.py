"""Chapter 6's token diagram of Reddy's bursty classification task (Reddy 2024, after
Chan et al. 2022): a schematic drawn with matplotlib, no data.

A sequence is ``x_1 l_1 ... x_N l_N x_q``: items ``x_i`` of classes, each followed by
its class's label ``l_i``, then a query item ``x_q`` whose label is the target. In a
*bursty* sequence the context holds ``N / B`` classes, ``B`` times each, one of them
the query's: an induction circuit can read the label off the context (layer 0: each
label attends to the item before it; layer 1: the query attends to the labels that
follow items of its class). In an *i.i.d.* sequence the classes are drawn
independently from many, so the query's class is rarely in the context and the label
has to come from the weights.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from .style import NEUTRAL, PALETTE

__all__ = ["bursty_sequence_diagram"]

_TIMES = {1: "once", 2: "twice", 3: "three times", 4: "four times"}  # burstiness

# Short class names (items are instances of them) and the label each class maps to.
CLASSES = ("owl", "fox", "cat", "elk", "yak", "ant", "bee", "gnu", "emu")
LABELS = (7, 2, 19, 11, 30, 5, 24, 16, 9)
CLASS_COLOURS = (*PALETTE, "#999933")  # one per class name
LABEL_COLOUR = "#DDDDDD"
ROW_Y = 0.0  # bottom of the token boxes in each panel
BOX = 0.8  # width of a token box (one unit per token)


def _check(n_pairs, burstiness) -> None:
    for name, value, low, high in (
        ("n_pairs", n_pairs, 2, 8),
        ("burstiness", burstiness, 1, 4),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
        if not low <= value <= high:
            raise ValueError(
                f"{name}: expected an int from {low} to {high}, got {value}"
            )
    if n_pairs % burstiness:
        raise ValueError(
            f"burstiness: expected a divisor of n_pairs = {n_pairs} (the context holds "
            f"n_pairs / burstiness classes, burstiness times each), got {burstiness}"
        )


def bursty_classes(n_pairs: int = 8, burstiness: int = 2) -> tuple[list[int], int]:
    """The classes of the context items of the drawn bursty sequence, and the query's.

    ``n_pairs / burstiness`` classes, ``burstiness`` times each, in a fixed interleaved
    order (no class twice in a row unless there is only one); the query's class is one
    of them, the second-to-last to appear in the context.
    """
    _check(n_pairs, burstiness)
    n_classes = n_pairs // burstiness
    # Each repetition of the classes is rotated by one, so that they do not come in
    # the same order every time.
    order = [(c + r) % n_classes for r in range(burstiness) for c in range(n_classes)]
    query = order[-2] if n_classes > 1 else order[-1]
    return order, query


def _token(ax, x: float, text: str, colour: str, alpha: float, below: str) -> None:
    ax.add_patch(Rectangle((x, ROW_Y), BOX, BOX, fc=colour, alpha=alpha, ec="k"))
    ax.text(x + BOX / 2, ROW_Y + BOX / 2, text, ha="center", va="center", fontsize=9)
    ax.text(x + BOX / 2, ROW_Y - 0.3, below, ha="center", va="center", fontsize=9)


def _row(ax, classes: list[int], query: int, title: str, *, top: bool) -> dict:
    """Draw one sequence; return the x positions of its labels, by class, and of the
    query."""
    n = len(classes)
    ax.set_axis_off()
    ax.set_xlim(-0.3, 2 * n + 3.6)
    ax.set_ylim(-0.6, 2.6 if top else 1.4)
    ax.text(-0.2, 2.35 if top else 1.2, title, ha="left", va="center", fontsize=10.5)
    labels_at: dict[int, list[float]] = {}
    for i, k in enumerate(classes):
        x_item, x_label = 2.0 * i, 2.0 * i + 1
        colour = CLASS_COLOURS[k]
        _token(ax, x_item, CLASSES[k], colour, 0.35, f"$x_{i + 1}$")
        _token(ax, x_label, str(LABELS[k]), LABEL_COLOUR, 1.0, f"$\\ell_{i + 1}$")
        labels_at.setdefault(k, []).append(x_label)
    x_query = 2.0 * n
    _token(ax, x_query, CLASSES[query], CLASS_COLOURS[query], 0.6, "$x_q$")
    ax.add_patch(
        Rectangle((x_query, ROW_Y), BOX, BOX, fc="none", ec="k", lw=2.0)
    )  # the query, outlined
    return {"labels": labels_at, "query": x_query}


def _arc(ax, start: float, end: float, peak: float, colour: str) -> None:
    """An arrow over the row from token ``start`` to token ``end`` whose arc rises
    about ``peak`` units above the boxes, whatever the distance."""
    distance = abs(end - start)
    ax.add_patch(
        FancyArrowPatch(
            (start + BOX / 2, ROW_Y + BOX),
            (end + BOX / 2, ROW_Y + BOX),
            arrowstyle="-|>",
            mutation_scale=10,
            color=colour,
            lw=1.2,
            connectionstyle=f"arc3,rad={2 * peak / distance:.3f}",
        )
    )


def bursty_sequence_diagram(n_pairs: int = 8, burstiness: int = 2):
    """Reddy's task in tokens: a bursty sequence read by the induction circuit (top)
    and an i.i.d. sequence whose query's class is not in the context (bottom).

    Top: ``n_pairs / burstiness`` classes, ``burstiness`` times each, one of them the
    query's. Layer 0: each label attends to the item before it (short arcs); layer 1:
    the query attends to the labels that follow items of its class (long arcs), and
    the network predicts that label. Bottom: ``n_pairs`` classes drawn independently,
    none the query's: the label can only come from the weights.
    Returns the Figure.
    """
    classes, query = bursty_classes(n_pairs, burstiness)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(10.5, 4.2), gridspec_kw={"height_ratios": [3.3, 2.0]}
    )
    drawn = _row(
        top,
        classes,
        query,
        f"bursty (each class {_TIMES[burstiness]}): the query's class is in the "
        "context",
        top=True,
    )
    layer0, layer1 = PALETTE[6], PALETTE[0]
    for xs in drawn["labels"].values():
        for x in xs:
            _arc(top, x, x - 1, 0.45, layer0)  # label -> the item before it
    for x in drawn["labels"][query]:
        _arc(top, drawn["query"], x, 1.05, layer1)  # query -> labels of its class
    _output(top, drawn["query"], f"label {LABELS[query]}", layer1)
    top.text(
        drawn["query"] + 1.0,
        1.6,
        "layer 1: the query attends\nto the labels after its class",
        ha="left",
        va="center",
        fontsize=9,
        color=layer1,
    )
    top.text(
        2 * n_pairs - 0.2,
        2.35,
        "layer 0: each label attends to its item",
        ha="right",
        va="center",
        fontsize=9,
        color=layer0,
    )
    # i.i.d.: every context class differs from the query's (a class outside the top row)
    n_top = n_pairs // burstiness
    iid = [(n_top + i) % len(CLASSES) for i in range(n_pairs)]
    iid_query = query  # the same query; its class is not among the context's
    iid = [k if k != iid_query else (k + 1) % len(CLASSES) for k in iid]
    drawn = _row(
        bottom,
        iid,
        iid_query,
        "i.i.d. (classes drawn independently from many): the query's class is "
        "rarely in the context",
        top=False,
    )
    _output(bottom, drawn["query"], "label from\nthe weights", NEUTRAL)
    return fig


def _output(ax, x_query: float, text: str, colour: str) -> None:
    """An arrow from the query to what the network answers."""
    y = ROW_Y + BOX / 2
    ax.annotate(
        "",
        xy=(x_query + BOX + 0.65, y),
        xytext=(x_query + BOX + 0.05, y),
        arrowprops={"arrowstyle": "-|>", "color": NEUTRAL},
    )
    ax.text(
        x_query + BOX + 0.75, y, text, ha="left", va="center", fontsize=10, color=colour
    )
