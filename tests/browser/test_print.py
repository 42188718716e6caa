"""The printed book (``_build/book.pdf``, ``make print``) and the figure pack
(``_build/figures``, ``make book``), read back as a reader and a lecturer get them."""

from __future__ import annotations

import re
import sys

import pytest
import yaml
from sitecheck import ROOT

PDF = ROOT / "_build" / "book.pdf"
STUDENT_PDF = ROOT / "_build" / "book-student.pdf"
FIGURES = ROOT / "_build" / "figures"

pytestmark = pytest.mark.browser


def _chapter_titles() -> dict[str, str]:
    """``{file stem: title}`` of every page of the table of contents, from the first
    heading of its MyST source."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [
        entry["file"]
        for part in toc.get("parts", [])
        for entry in part.get("chapters", [])
    ]
    titles = {}
    for file in files:
        source = (ROOT / file).with_suffix(".md").read_text()
        heading = re.search(r"^# (.+)$", source, re.M)
        titles[file] = heading.group(1).strip()
    return titles


@pytest.fixture(scope="module")
def pdf_text() -> list[str]:
    if not PDF.exists():
        pytest.fail(f"no {PDF}: run `make print` after `make book`", pytrace=False)
    from pypdf import PdfReader

    reader = PdfReader(str(PDF))
    return [page.extract_text() or "" for page in reader.pages]


def _squash(text: str) -> str:
    """Text without whitespace or soft hyphens: a title broken over lines still
    matches."""
    return re.sub(r"[\s\u00ad]+", "", text)


def test_the_pdf_holds_every_chapter_title(pdf_text):
    whole = _squash("\n".join(pdf_text))
    missing = [
        title
        for title in _chapter_titles().values()
        if _squash(re.sub(r"[`*$\\]", "", title)) not in whole
    ]
    assert not missing, f"titles not found in the PDF: {missing}"
    assert len(pdf_text) > 50, f"a book of {len(pdf_text)} pages is too short"


def test_the_pdf_has_no_unresolved_reference_or_raw_markup(pdf_text):
    whole = "\n".join(pdf_text)
    assert "??" not in whole, "an unresolved reference ('??') in the PDF"
    for raw in ("{glue", "{prf:ref}", "{numref}", ":::{", "```{"):
        assert raw not in whole, f"raw MyST {raw!r} in the PDF"


def test_the_pdf_keeps_theorems_numbers_and_figures(pdf_text):
    whole = "\n".join(pdf_text)
    assert re.search(r"\bTheorem \d+", whole), "no numbered theorem box in the PDF"
    assert re.search(r"\bFig\. \d+", whole), "no numbered figure caption in the PDF"
    # a glued number reaches the page as digits (e.g. a chapter's error ratios)
    assert len(re.findall(r"\d\.\d\d", whole)) > 100


def test_every_page_is_numbered_and_the_pdf_has_bookmarks_and_tags(pdf_text):
    from pypdf import PdfReader

    total = len(pdf_text)
    for number in (1, total // 2, total):
        assert f"{number} / {total}" in pdf_text[number - 1], (
            f"page {number} unnumbered"
        )
    reader = PdfReader(str(PDF))

    def titles(outline):  # the outline nests: the book, its parts, their chapters
        for entry in outline:
            if isinstance(entry, list):
                yield from titles(entry)
            else:
                yield entry.title

    bookmarks = _squash(" ".join(titles(reader.outline)))
    missing = [
        title
        for title in _chapter_titles().values()
        if _squash(re.sub(r"[`*$\\]", "", title))[:20] not in bookmarks
    ]
    assert not missing, f"the PDF's outline lacks {missing}"
    root = reader.trailer["/Root"]
    assert "/StructTreeRoot" in root, "the PDF is not tagged for screen readers"


def test_the_student_pdf_has_the_exercises_and_no_solution(pdf_text):
    from pypdf import PdfReader

    if not STUDENT_PDF.exists():
        pytest.fail(f"no {STUDENT_PDF}: run `make print`", pytrace=False)
    student = "\n".join(
        p.extract_text() or "" for p in PdfReader(str(STUDENT_PDF)).pages
    )
    whole = "\n".join(pdf_text)
    assert whole.count("Solution to Exercise") > 40
    assert "Solution to Exercise" not in student
    assert _squash("Exercise 1.1") in _squash(student)


def test_the_figure_pack_has_an_svg_per_labelled_figure():
    labels = {}
    for source in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md")):
        text = source.read_text()
        labels[source.stem] = set(re.findall(r"^\s+name: (fig-[\w-]+)\s*$", text, re.M))
    for chapter, names in labels.items():
        files = {p.stem for p in (FIGURES / chapter).glob("*.svg")}
        missing = names - files
        assert not missing, f"{chapter}: no SVG for {sorted(missing)}"
        for name in names:
            head = (FIGURES / chapter / f"{name}.svg").read_text()[:400]
            assert "<svg" in head, f"{chapter}/{name}.svg is not an SVG"
    assert (FIGURES / "index.html").exists()


def test_the_print_build_shows_static_figures_not_explorers():
    """The single-page build the PDF is printed from drops the explorers
    (_ext/live_figures.py): paper shows the chapters' static small multiples."""
    sys.path.insert(0, str(ROOT / "tools"))
    import print_book

    page = (
        print_book.single_page(print_book.EDITIONS["full"][1]) / print_book.root_page()
    )
    if not page.exists():
        pytest.fail(f"no {page}: run `make print` after `make book`", pytrace=False)
    assert "icl-live-figure" not in page.read_text(encoding="utf-8")
