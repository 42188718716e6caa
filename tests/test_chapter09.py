"""Chapter 9's shape (issue 40): the lecture is one argument (the recall bound, what a
trained memory recalls, trained recall models, the Open box, the summary); the other
comparisons follow it folded; citations that would render alike are not merged."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "chapters" / "09_frontiers.md").read_text(encoding="utf-8")
HEADINGS = re.findall(r"^(#{2,3} .+)$", TEXT, re.M)


def _section(start: str, end: str) -> str:
    return TEXT[TEXT.index(start) : TEXT.index(end)]


def test_the_lecture_runs_bound_then_memories_then_recall_then_the_open_question():
    order = [
        "## Theory",
        "### How many pairs a matrix state can recall",
        "## Experiment 1: what a trained linear memory recalls",
        "## Experiment 2: associative recall in trained models",
        "## Summary",
        "## Other comparisons at laptop scale",
        "## What this chapter checked",
        "## Exercises",
    ]
    assert [h for h in HEADINGS if h in order] == order
    lecture = _section("## The question", "## Summary")
    assert "{admonition} Open: capacity or training?" in lecture
    # the side comparisons are not on the lecture's main path
    for aside in ("reg_budget", "par_none", "identity_gap(", "power_law_budget("):
        assert aside not in lecture, aside


def test_the_other_comparisons_are_folded():
    other = _section(
        "## Other comparisons at laptop scale", "## What this chapter checked"
    )
    prose = re.sub(r"````\{dropdown\}.*?\n````\n", "", other, flags=re.S)
    prose = re.sub(r"```\{code-cell\}.*?\n```\n", "", prose, flags=re.S)
    assert len(prose.split()) < 120  # a short introduction, the rest in dropdowns
    for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)\n```", other, re.S):
        tags = re.search(r"tags: \[([^\]]*)\]", cell)
        assert tags, cell[:80]
        assert "remove-cell" in tags[1] or "hide-output" in tags[1], cell[:80]


def test_the_selective_layer_has_its_diagram_and_its_key_value_form():
    theory = _section(
        "### Three mixers", "### How many pairs a matrix state can recall"
    )
    assert "selective_layer_diagram()" in theory
    assert "$$ (eq-selective-memory)" in theory


def test_two_papers_of_one_author_year_are_cited_apart():
    # {cite}`a,b` renders "Arora et al., 2024, Arora et al., 2024"
    for keys in re.findall(r"\{cite(?::[pt])?\}`([^`]+)`", TEXT):
        assert "," not in keys or "arora2024" not in keys, keys


def test_the_capacity_figure_draws_the_tight_frame():
    exp1 = _section("## Experiment 1", "## Experiment 2")
    assert "frame_recall_accuracy(" in exp1 and "tight frame" in exp1
    # the lecture's figure draws the memories in the worst case with the bound and on
    # random values with the hard wall; the frames are drawn after the lecture, in the
    # detailed figure it points to
    checked = _section("## What this chapter checked", "## Explore")
    assert "name: fig-frontiers-capacity-detail" in checked
    assert "frames[N]" in checked and "fig-frontiers-capacity-detail" in exp1


def test_the_recall_controls_and_training_losses_are_drawn_after_the_lecture():
    # the lecture is self-contained: the rival it rules out (too small a state) is drawn
    # in its own figure, and the controls and training losses sit after the summary,
    # where the lecture does not send the reader
    lecture = _section("## The question", "## Summary")
    checked = _section("## What this chapter checked", "## Explore")
    for name in ("fig-frontiers-recall-controls", "fig-frontiers-recall-training"):
        assert f"name: {name}" in checked and name not in lecture, name
    assert 'WIDE = "selective SSM, N = 32"' in lecture
    assert "[*fr.NAMES.values(), WIDE, PICK]" in lecture
