"""Chapter 1's two diagrams: the picture of in-context learning and the map of the book.
Each draws without error, as a schematic (no axes), and closes; the map's arrows are
the instructors' page's (tools/course.py), and no two of them cross."""

import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from icl_lib.plotting import book_map
from icl_lib.plotting.book_map import book_map_diagram
from icl_lib.plotting.meta_learning import meta_learning_diagram

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import course  # noqa: E402 (the path above)


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.mark.parametrize("draw", [meta_learning_diagram, book_map_diagram])
def test_a_chapter_1_diagram_draws_a_schematic_and_closes(draw):
    before = set(plt.get_fignums())
    fig = draw()
    assert all(not ax.axison for ax in fig.axes)  # a schematic, not a plot
    assert _texts(fig)
    fig.canvas.draw()  # lays out every text and arrow without error
    plt.close(fig)
    assert set(plt.get_fignums()) == before


def test_the_picture_shows_both_loops_and_the_fixed_weights():
    fig = meta_learning_diagram()
    texts = _texts(fig)
    assert "pre-training" in texts and "in-context learning" in texts
    assert "fixed" in texts and "forward pass" in texts and "$x_q$" in texts
    plt.close(fig)


def test_the_map_draws_every_chapter_once():
    fig = book_map_diagram()
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    for chapter in range(1, 10):
        assert sum(t.startswith(f"{chapter}. ") for t in texts) == 1
    plt.close(fig)


def test_the_map_has_the_instructors_pages_arrows():
    assert book_map.REQUIRES == course.REQUIRES
    assert book_map.HELPS == course.HELPS
    assert set(book_map.CHAPTERS) == set(book_map.LAYOUT) == set(course.REQUIRES)
    # chapter 1 draws no arrows: its banner says that every chapter needs it, so
    # every other chapter must need it, directly or through a chapter it needs
    for chapter in range(2, 10):
        assert 1 in course.REQUIRES[chapter] or course.implied(1, chapter)
    solid = {(a, b) for a, b, style in book_map._edges() if style == "-"}
    dashed = {(a, b) for a, b, style in book_map._edges() if style == "--"}
    required = {(r, c) for c, rs in course.REQUIRES.items() for r in rs if r != 1}
    assert solid == {(r, c) for r, c in required if not course.implied(r, c)}
    assert dashed == {(h, c) for c, hs in course.HELPS.items() for h in hs}
    fig = book_map_diagram()
    assert "every chapter below builds on it" in _texts(fig)
    assert set(book_map._arrow_paths(fig)) == solid | dashed  # each drawn once
    plt.close(fig)


def _cross(p, q, r, s) -> bool:
    """Whether the segments pq and rs cross at a point inside both."""

    def side(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2, d3, d4 = side(r, s, p), side(r, s, q), side(p, q, r), side(p, q, s)
    return d1 * d2 < 0 and d3 * d4 < 0


def test_no_two_arrows_of_the_map_cross():
    fig = book_map_diagram()
    paths = book_map._arrow_paths(fig)
    plt.close(fig)
    edges = sorted(paths)
    crossings = []
    for i, one in enumerate(edges):
        for other in edges[i + 1 :]:
            a, b = paths[one], paths[other]
            if any(
                _cross(a[j], a[j + 1], b[m], b[m + 1])
                for j in range(len(a) - 1)
                for m in range(len(b) - 1)
            ):
                crossings.append((one, other))
    assert not crossings


def test_the_crossing_test_sees_a_crossing():
    assert _cross((0, 0), (1, 1), (0, 1), (1, 0))
    assert not _cross((0, 0), (1, 0), (0, 1), (1, 1))
    assert not _cross((0, 0), (1, 1), (1, 1), (2, 0))  # a shared end is no crossing


def test_every_arrow_of_the_map_points_forward_and_down_or_across():
    for start, end, _ in book_map._edges():
        assert start < end  # forward in the book
        assert book_map.LAYOUT[start][1] <= book_map.LAYOUT[end][1]  # never up
