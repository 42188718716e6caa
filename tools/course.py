"""The course guide's data and measurements: which chapter needs which, the teaching
paths through the book, and per chapter its reading time and exercises, measured from
the chapter sources. The page ``chapters/instructors.md`` draws its tables and its graph
from here at build time; ``tests/test_course.py`` checks the data against the chapters.

    python tools/course.py      # print the chapters at a glance
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import style_metrics

from icl_lib.plotting import book_map

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"

# Chapter -> the chapters its "Prerequisites" paragraph requires, and those it says
# help or are used once: one copy, the one chapter 1's map of the book draws.
REQUIRES = book_map.REQUIRES
HELPS = book_map.HELPS

# Teaching paths: name -> sessions, each a tuple of chapters taught in one sitting.
PATHS = {
    "a semester module, one chapter a lecture": tuple((c,) for c in range(1, 10)),
    'four lectures, "why ICL works"': ((1,), (2,), (4,), (5,)),
    'four lectures, "what the network computes"': ((1,), (2,), (7,), (9,)),
    "a one-week intensive, two chapters a day": (
        (1, 2),
        (3, 4),
        (5, 6),
        (7, 8),
        (9,),
    ),
}

# Independent student reads: per chapter, the minutes a reader who knows regression
# and transformers (not ICL theory) needed to understand the lecture, and a clarity
# rating, each on the rendered page of one version of the chapter
# (data/student_reads.json).
READS = ROOT / "data" / "student_reads.json"
# A read stays valid while the lecture keeps its length within this share: a chapter
# rewritten beyond it needs a new read (tests/test_course.py).
READ_STALE_AFTER = 0.25


@dataclass(frozen=True)
class StudentRead:
    """One independent read of a chapter's lecture (see :data:`READS`)."""

    minutes: int  # to understand the lecture, working through its maths
    clarity: float  # of 5, against the best d2l or QuantEcon lecture
    date: str
    lecture_words: int  # the lecture's length in the version read
    note: str = ""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter: its label, its solution's length in words, and what
    :data:`EXERCISE_PLAN` sets by hand: its kind (:data:`KINDS`), difficulty (1 a
    warm-up, 2 standard, 3 hard), a student's minutes, and its place in the chapter's
    lab (1 first; 0 when it is not in the lab)."""

    label: str
    solution_words: int
    kind: str
    difficulty: int
    minutes: int
    lab: int


EXERCISE_PLAN = ROOT / "data" / "exercise_plan.json"
KINDS = ("proof", "derivation", "coding", "experiment")
LAB_MINUTES = (70, 90)  # a lab fills a 90-minute session, with room to start up


def exercise_plan() -> dict[str, dict]:
    """Label -> the hand-set kind, difficulty, minutes and lab of every exercise;
    checked against :data:`KINDS` and the ranges above."""
    import json

    plan = json.loads(EXERCISE_PLAN.read_text())["exercises"]
    for label, entry in plan.items():
        if set(entry) != {"kind", "difficulty", "minutes", "lab"}:
            raise ValueError(
                f"{EXERCISE_PLAN.name}: {label} has fields {sorted(entry)}"
            )
        if entry["kind"] not in KINDS:
            raise ValueError(f"{label}: kind {entry['kind']!r} is not one of {KINDS}")
        if entry["difficulty"] not in (1, 2, 3) or not 5 <= entry["minutes"] <= 120:
            raise ValueError(f"{label}: difficulty or minutes out of range: {entry}")
        if not isinstance(entry["lab"], int) or entry["lab"] < 0:
            raise ValueError(
                f"{label}: lab must be a place (1, 2, ...) or 0, got {entry}"
            )
    return plan


def chapter_paths() -> dict[int, Path]:
    """Chapter number -> its MyST source."""
    return {
        int(path.name[:2]): path for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.md"))
    }


def title(path: Path) -> str:
    """The chapter's title, its first ``# `` heading."""
    return re.search(r"^# (.+)$", path.read_text(), re.M).group(1).strip()


def prerequisite_mentions(path: Path) -> set[int]:
    """The chapters named in the chapter's **Prerequisites.** paragraph, as
    ``chapter 2``, ``chapters 1, 2 and 4`` or a ``{doc}`0N_...``` reference."""
    text = path.read_text()
    match = re.search(r"\*\*Prerequisites\.\*\*(.*?)\n\s*\n", text, re.S)
    if match is None:
        raise ValueError(f"{path.name}: no **Prerequisites.** paragraph")
    paragraph = " ".join(match.group(1).split())
    found = {int(n) for n in re.findall(r"\{doc\}`0(\d)_", paragraph)}
    for run in re.findall(r"[Cc]hapters? ((?:\d+(?:, | and )?)+)", paragraph):
        found |= {int(n) for n in re.findall(r"\d+", run)}
    return found


def student_reads() -> dict[int, StudentRead]:
    """Chapter number -> its latest independent student read."""
    import json

    rows = json.loads(READS.read_text())["reads"]
    return {int(number): StudentRead(**row) for number, row in rows.items()}


# Worked labs: per chapter, a reader who had the lecture worked its lab's exercises
# in order as that student (pen and paper, and Python against
# icl_lib.exercises.check), then graded each against its solution and reported the
# minutes a student would need (data/lab_reads.json).
LAB_READS = ROOT / "data" / "lab_reads.json"
GRADES = ("right", "partly right", "wrong")


@dataclass(frozen=True)
class LabRead:
    """One worked lab of a chapter (see :data:`LAB_READS`): per exercise label, the
    minutes a student would need and how the answer came out (:data:`GRADES`)."""

    date: str
    minutes: dict[str, int]
    grades: dict[str, str]
    note: str = ""

    @property
    def total(self) -> int:
        return sum(self.minutes.values())


def lab_reads() -> dict[int, LabRead]:
    """Chapter number -> its latest worked lab, checked: every exercise has minutes
    (5-120) and a grade."""
    import json

    found = {}
    for number, row in json.loads(LAB_READS.read_text())["reads"].items():
        read = LabRead(**row)
        if set(read.minutes) != set(read.grades):
            raise ValueError(
                f"{LAB_READS.name}: chapter {number}: minutes for "
                f"{sorted(read.minutes)} but grades for {sorted(read.grades)}"
            )
        for label, minutes in read.minutes.items():
            if not isinstance(minutes, int) or not 5 <= minutes <= 120:
                raise ValueError(f"{label}: minutes must be 5-120, got {minutes!r}")
            grade = read.grades[label]
            if grade not in GRADES:
                raise ValueError(f"{label}: grade {grade!r} is not one of {GRADES}")
        found[int(number)] = read
    return found


def lecture_words(path: Path) -> int:
    """Words of the lecture: from the top to 'What this chapter checked', outside
    code, dropdowns, exercises and solutions (``tools/style_metrics.py --lecture``)."""
    return style_metrics.measure(style_metrics.lecture(path.read_text()))["words"]


def exercises(path: Path, plan: dict | None = None) -> list[Exercise]:
    """The chapter's exercises in order, each with its solution's length and its entry
    of the hand-set plan (:func:`exercise_plan` unless ``plan`` is given)."""
    plan = exercise_plan() if plan is None else plan
    text = path.read_text()
    blocks = re.findall(r"```\{exercise\}\n:label: ([\w-]+)\n(.*?)\n```", text, re.S)
    found = []
    for label, _ in blocks:
        if label not in plan:
            raise KeyError(
                f"{label} of {path.name} has no entry in {EXERCISE_PLAN.name}"
            )
        solution = re.search(
            r"```\{solution\} " + re.escape(label) + r"\n(.*?)\n```", text, re.S
        )
        answer = solution.group(1) if solution else ""
        found.append(Exercise(label, len(re.findall(r"\w+", answer)), **plan[label]))
    return found


def lab(path: Path) -> list[Exercise]:
    """The chapter's lab: its exercises in the lab's order."""
    found = sorted((e for e in exercises(path) if e.lab), key=lambda e: e.lab)
    if [e.lab for e in found] != list(range(1, len(found) + 1)):
        raise ValueError(f"{path.name}: the lab's places are {[e.lab for e in found]}")
    return found


def path_is_ordered(sessions) -> bool:
    """Whether every chapter of a path comes after the chapters it requires, all of
    which the path teaches (in an earlier or the same session)."""
    taught: set[int] = set()
    for session in sessions:
        for chapter in session:
            if not set(REQUIRES[chapter]) <= taught | set(session) - {chapter}:
                return False
        taught |= set(session)
    return True


# Whether ``end`` needs ``start`` through another chapter it needs: the rule chapter 1's
# map uses to leave an arrow out, so the guide's graph and the map agree.
implied = book_map._implied


def prerequisite_graph():
    """The chapters as nodes in layers (a chapter one layer below its deepest
    requirement), required chapters as solid arrows (those implied by a longer path
    left out), helpful ones dashed."""
    import matplotlib.pyplot as plt

    depth: dict[int, int] = {}
    for chapter in sorted(REQUIRES):
        depth[chapter] = 1 + max((depth[r] for r in REQUIRES[chapter]), default=-1)
    layers: dict[int, list[int]] = {}
    for chapter, level in depth.items():
        layers.setdefault(level, []).append(chapter)
    # within a layer, a chapter beside the one that helps it
    order = {3: 0, 4: 1, 2: 2, 6: 3, 7: 4}
    for row in layers.values():
        row.sort(key=lambda c: order.get(c, c))
    position = {
        chapter: (1.3 * (i - (len(row) - 1) / 2), -level)
        for level, row in layers.items()
        for i, chapter in enumerate(row)
    }
    fig, ax = plt.subplots(figsize=(8.0, 3.6))
    ax.set_axis_off()
    edges = [(r, c, "-") for c, rs in REQUIRES.items() for r in rs if not implied(r, c)]
    edges += [(h, c, "--") for c, hs in HELPS.items() for h in hs]
    for start, end, style in edges:
        same_layer = depth[start] == depth[end]
        ax.annotate(
            "",
            xy=position[end],
            xytext=position[start],
            arrowprops={
                "arrowstyle": "-|>",
                "ls": style,
                "color": "#666666",
                "shrinkA": 14,
                "shrinkB": 14,
                "connectionstyle": f"arc3,rad={0.45 if same_layer else 0.0}",
            },
        )
    for chapter, (x, y) in position.items():
        ax.text(
            x,
            y,
            str(chapter),
            ha="center",
            va="center",
            fontsize=13,
            bbox={"boxstyle": "circle,pad=0.5", "fc": "#56B4E9", "alpha": 0.35},
        )
    xs = [x for x, _ in position.values()]
    ys = [y for _, y in position.values()]
    ax.set_xlim(min(xs) - 0.7, max(xs) + 0.7)
    ax.set_ylim(min(ys) - 0.5, max(ys) + 0.7)
    return fig


if __name__ == "__main__":
    for number, path in chapter_paths().items():
        found = exercises(path)
        minutes = sum(e.minutes for e in found if e.lab)
        print(
            f"{number}  {title(path)[:48]:48s} {lecture_words(path):5d} words  "
            f"{len(found)} exercises, a lab of {minutes} minutes"
        )
