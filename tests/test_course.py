"""The course guide (chapters/instructors.md, tools/course.py): its prerequisite graph
matches what each chapter says it needs, its syllabi respect the graph, and its
measurements read every exercise."""

import re
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402

CHAPTERS = course.chapter_paths()


def test_every_chapter_has_its_place_in_the_graph():
    assert set(CHAPTERS) == set(course.REQUIRES) == set(range(1, 10))
    assert set(course.HELPS) <= set(course.REQUIRES)


@pytest.mark.parametrize("number", sorted(CHAPTERS))
def test_a_chapter_names_the_chapters_the_guide_says_it_needs(number):
    named = course.prerequisite_mentions(CHAPTERS[number])
    needed = set(course.REQUIRES[number]) | set(course.HELPS.get(number, ()))
    assert needed <= named, (
        f"chapter {number}'s Prerequisites paragraph names {sorted(named)}; the course "
        f"guide says it needs {sorted(needed)}"
    )


def test_every_requirement_points_backwards():
    for chapter, before in {**course.REQUIRES, **course.HELPS}.items():
        assert all(b < chapter for b in before), (chapter, before)


def test_every_syllabus_teaches_a_chapter_after_what_it_needs():
    for name, sessions in course.PATHS.items():
        assert course.path_is_ordered(sessions), name
    # the check can fail: chapter 5 before chapter 4, or chapter 8 without chapter 4
    assert not course.path_is_ordered(((1,), (2,), (5,), (4,)))
    assert not course.path_is_ordered(((1,), (2,), (8,)))
    assert course.path_is_ordered(((1, 2), (4, 5)))


@pytest.mark.parametrize("number", sorted(CHAPTERS))
def test_every_exercise_is_read_with_its_solution(number):
    path = CHAPTERS[number]
    found = course.exercises(path)
    assert len(found) == len(re.findall(r"```\{exercise\}", path.read_text()))
    assert all(e.solution_words > 20 for e in found), found
    assert 1000 < course.lecture_words(path) < 5000


@pytest.mark.parametrize("number", sorted(CHAPTERS))
def test_every_chapter_has_a_student_read_of_its_current_lecture(number):
    """The instructor page's times are measured reads, not a words-per-minute formula;
    a lecture rewritten by more than a quarter of its length needs a new read."""
    read = course.student_reads()[number]
    assert 10 <= read.minutes <= 300 and 1 <= read.clarity <= 5
    now = course.lecture_words(CHAPTERS[number])
    allowed = course.READ_STALE_AFTER * read.lecture_words
    assert abs(now - read.lecture_words) <= allowed, (
        f"chapter {number}'s lecture has {now} words; the student read of "
        f"{read.date} was of {read.lecture_words}: read it again"
    )


@pytest.mark.parametrize("number", sorted(CHAPTERS))
def test_every_chapter_has_a_worked_lab_of_its_current_lab(number):
    """The lab's times on the instructor page come from a worked lab of exactly the
    exercises the lab now holds; a lab that changes needs to be worked again."""
    read = course.lab_reads()[number]
    lab = [e.label for e in course.lab(CHAPTERS[number])]
    assert sorted(read.minutes) == sorted(lab), (
        f"chapter {number}'s lab is {lab}; the lab worked on {read.date} was "
        f"{sorted(read.minutes)}: work it again"
    )


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ({"minutes": {"ex-a": 10}, "grades": {"ex-b": "right"}}, "grades for"),
        ({"minutes": {"ex-a": 2}, "grades": {"ex-a": "right"}}, "minutes must be"),
        ({"minutes": {"ex-a": 10}, "grades": {"ex-a": "fine"}}, "is not one of"),
    ],
)
def test_a_worked_lab_with_a_bad_row_is_refused(tmp_path, monkeypatch, row, error):
    import json

    path = tmp_path / "lab_reads.json"
    path.write_text(json.dumps({"reads": {"1": {"date": "2026-01-01", **row}}}))
    monkeypatch.setattr(course, "LAB_READS", path)
    with pytest.raises(ValueError, match=error):
        course.lab_reads()


def test_an_exercise_takes_its_kind_from_the_hand_set_plan(tmp_path):
    chapter = tmp_path / "10_example.md"
    chapter.write_text(
        "# Example\n\n```{exercise}\n:label: ex-a\n\nProve it.\n```\n\n"
        "```{solution} ex-a\n:class: dropdown\n\nBy induction.\n```\n\n"
        "```{exercise}\n:label: ex-b\n\nRun `icl_lib.learners.ols` on it.\n```\n\n"
        "```{solution} ex-b\n:class: dropdown\n\nIt is exact.\n```\n"
    )
    plan = {
        "ex-a": {"kind": "proof", "difficulty": 2, "minutes": 20, "lab": 1},
        "ex-b": {"kind": "experiment", "difficulty": 1, "minutes": 15, "lab": 0},
    }
    proof, run = course.exercises(chapter, plan)
    assert (proof.label, proof.kind, proof.lab) == ("ex-a", "proof", 1)
    assert (run.label, run.kind, run.minutes) == ("ex-b", "experiment", 15)
    with pytest.raises(KeyError, match="ex-b of 10_example.md has no entry"):
        course.exercises(chapter, {"ex-a": plan["ex-a"]})


def test_every_exercise_of_the_book_is_in_the_plan_and_nothing_else():
    labels = {e.label for path in CHAPTERS.values() for e in course.exercises(path)}
    assert labels == set(course.exercise_plan())


def test_an_exercise_is_coding_exactly_when_it_checks_itself():
    from icl_lib import exercises as checks

    coding = {
        label
        for label, entry in course.exercise_plan().items()
        if entry["kind"] == "coding"
    }
    assert coding == set(checks.exercise_ids())


@pytest.mark.parametrize("number", sorted(CHAPTERS))
def test_every_chapter_has_a_lab_that_fills_a_session(number):
    found = course.lab(CHAPTERS[number])
    low, high = course.LAB_MINUTES
    assert low <= sum(e.minutes for e in found) <= high
    assert any(e.kind == "coding" for e in found)
    # the lab starts with something a student can do: a warm-up or a coding exercise
    assert found[0].difficulty == 1 or found[0].kind == "coding"


def test_the_graph_draws_every_chapter():
    fig = course.prerequisite_graph()
    labels = sorted(t.get_text() for t in fig.axes[0].texts if t.get_text())
    assert labels == sorted(str(c) for c in range(1, 10))
    plt.close(fig)


def test_an_implied_requirement_is_found():
    assert course.implied(1, 5)  # 5 needs 2, which needs 1
    assert not course.implied(2, 5)  # no other path from 2 to 5
    assert not course.implied(1, 2)


@pytest.mark.parametrize("number", sorted(CHAPTERS))
def test_every_chapter_names_its_lab_in_the_plans_order(number):
    """A chapter's **Lab.** paragraph, first under its Exercises heading, lists the
    plan's lab exercises in the plan's order (the instructor page's table)."""
    text = CHAPTERS[number].read_text()
    match = re.search(r"\n## Exercises\n\n\*\*Lab\.\*\*(.*?)\n\n", text, re.S)
    assert match, f"chapter {number}: no **Lab.** paragraph under ## Exercises"
    named = re.findall(r"\{ref\}`(ex-[\w-]+)`", match.group(1))
    assert named == [e.label for e in course.lab(CHAPTERS[number])]


def test_every_chapter_has_a_measured_time_on_the_colab_path():
    """The instructor page's Colab times come from `colab_check.py --record`."""
    import json

    times = json.loads((course.ROOT / "data" / "colab_times.json").read_text())
    assert set(times["seconds"]) == {path.stem for path in CHAPTERS.values()}
    assert all(5 < s < 600 for s in times["seconds"].values())
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", times["date"])
