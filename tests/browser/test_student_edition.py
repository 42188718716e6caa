"""The student edition (``make book-student``, built by ``make book``): every exercise
of the book is there, no solution is, and the page sources are not published."""

import html
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "_build" / "html"
STUDENT = ROOT / "_build" / "student" / "_build" / "html"
CHAPTER_PAGES = sorted(p.relative_to(BOOK) for p in BOOK.glob("chapters/0*.html"))

pytestmark = pytest.mark.browser


def _blocks(page: str, kind: str) -> list[str]:
    """The text of each exercise or solution admonition of a built page."""
    found = re.findall(
        rf'<div class="{kind}[^"]*admonition[^"]*"[^>]*>(.*?)</div>\s*(?=<|$)',
        page,
        re.S,
    )
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", b)).split()) for b in found]


def test_the_student_edition_was_built():
    assert (STUDENT / "index.html").exists(), "run `make book` (or make book-student)"
    assert CHAPTER_PAGES, "run `make book` first"


@pytest.mark.parametrize("page", CHAPTER_PAGES, ids=str)
def test_every_exercise_is_there_and_no_solution(page):
    book = (BOOK / page).read_text(encoding="utf-8")
    student = (STUDENT / page).read_text(encoding="utf-8")
    labels = re.findall(r'id="(ex-[\w-]+)"', book)
    assert labels, f"{page}: no exercise in the main edition"
    for label in labels:
        assert f'id="{label}"' in student, f"{page}: exercise {label} is missing"
    assert 'class="solution' in book
    assert 'class="solution' not in student, f"{page}: a solution is shown"
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", student)).split())
    for solution in _blocks(book, "solution"):
        # a distinctive run of the solution's words must not appear on the student page
        words = [w for w in solution.split() if len(w) > 3][4:14]
        if len(words) >= 6:
            assert " ".join(words) not in text, f"{page}: solution text shown"


def test_the_page_sources_are_not_published():
    assert (BOOK / "_sources").exists()
    assert not (STUDENT / "_sources").exists()
