"""Chapter 1's two diagrams: the picture of in-context learning and the map of the book.
Each draws without error, as a schematic (no axes), and closes; the map's arrows are
the instructors' page's (tools/course.py)."""

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
    solid = {(a, b) for a, b, style in book_map._edges() if style == "-"}
    implied = {(r, c) for c, rs in course.REQUIRES.items() for r in rs}
    assert solid == {(r, c) for r, c in implied if not course.implied(r, c)}


def test_every_arrow_of_the_map_points_forward_and_down_or_across():
    for start, end, _ in book_map._edges():
        assert start < end  # forward in the book
        assert book_map.LAYOUT[start][1] <= book_map.LAYOUT[end][1]  # never up
