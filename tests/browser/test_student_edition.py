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


STUDENT_PAGES = sorted(  # the site's pages; _static holds the theme's template macros
    p.relative_to(STUDENT) for p in STUDENT.rglob("*.html") if "_static" not in p.parts
)
REPOSITORY = "https://github.com/icl-textbook/icl-book"


def _links(page: Path) -> list[str]:
    text = (STUDENT / page).read_text(encoding="utf-8")
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', text)]


@pytest.mark.parametrize("page", STUDENT_PAGES, ids=str)
def test_no_link_of_the_student_edition_leads_to_a_solution(page):
    """Every link is followed: a page link resolves to a page of the student edition,
    a Colab link opens a student notebook of this edition (which holds no solution), a
    link to the repository goes only to its issue forms, and no link reaches the page
    sources or a notebook of the repository."""
    for link in _links(page):
        target = link.split("#")[0].split("?")[0]
        if link.startswith("https://colab.research.google.com/"):
            path = re.search(r"/blob/gh-pages/[\w.-]+/student/notebooks/(.+)$", link)
            assert path, f"{page}: Colab opens {link}, not a student notebook"
            assert (STUDENT / "notebooks" / path.group(1)).exists(), link
        elif link.startswith(REPOSITORY):
            assert link == f"{REPOSITORY}/issues/new/choose", f"{page}: links to {link}"
        elif link.startswith(("http://", "https://", "mailto:", "#")) or not target:
            continue
        else:
            assert "_sources" not in link and not target.endswith((".md", ".ipynb"))
            resolved = (STUDENT / page).parent / target
            assert resolved.exists(), f"{page}: {link} does not resolve"


def test_the_student_notebooks_are_published_with_the_edition():
    notebooks = sorted((STUDENT / "notebooks" / "chapters").glob("*.ipynb"))
    assert len(notebooks) == len(CHAPTER_PAGES)
    for notebook in notebooks:
        assert "{solution}" not in notebook.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", CHAPTER_PAGES, ids=str)
def test_the_student_edition_shows_static_figures_not_explorers(page):
    """The student edition drops the explorers (_ext/live_figures.py): its readers see
    the chapter's static small multiples, as the PDF's do."""
    assert 'class="icl-live-figure"' in (BOOK / page).read_text(encoding="utf-8"), (
        f"{page}: no explorer in the main edition (built without ICL_LIVE_FIGURES=1?)"
    )
    assert "icl-live-figure" not in (STUDENT / page).read_text(encoding="utf-8")
    assert not (STUDENT / "_images" / "live").exists()
