"""Releases a class can pin (tools/release.py): the book pinned to a tag names it in
every setup cell and launch URL, and the version lands in the package, the citation
and the changelog."""

import datetime
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import release  # noqa: E402
import sync_chapters  # noqa: E402


@pytest.fixture
def book(tmp_path):
    """A copy of the files a release edits."""
    (tmp_path / "chapters").mkdir()
    for name in ("_config.yml", "pyproject.toml", "CITATION.cff", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    for page in ("changelog.md", "intro.md"):
        shutil.copy(ROOT / "chapters" / page, tmp_path / "chapters")
    return tmp_path


def test_pinning_to_a_tag_changes_only_the_ref_line(book):
    before = (book / "_config.yml").read_text()
    assert release.current_ref(book) == "main"
    release.set_ref("v9.9.9", book)
    after = (book / "_config.yml").read_text()
    assert release.current_ref(book) == "v9.9.9"
    changed = [
        (a, b)
        for a, b in zip(before.splitlines(), after.splitlines(), strict=True)
        if a != b
    ]
    assert changed == [("  branch: main", "  branch: v9.9.9")]


def test_a_pinned_book_installs_and_opens_the_tag(book, monkeypatch):
    release.set_ref("v9.9.9", book)
    monkeypatch.setattr(sync_chapters, "ROOT", book)
    cell = sync_chapters.setup_cell()
    assert '/icl-book", "v9.9.9"\n' in cell  # ICL_REPO, ICL_BRANCH = url, the tag
    assert '"--branch", ICL_BRANCH' in cell  # the clone checks out ICL_BRANCH


def test_a_release_writes_its_version_everywhere(book):
    release.set_version("9.9.9", datetime.date(2030, 1, 2), book)
    assert 'version = "9.9.9"' in (book / "pyproject.toml").read_text()
    citation = (book / "CITATION.cff").read_text()
    assert 'version: "9.9.9"\ndate-released: "2030-01-02"' in citation
    changelog = (book / "chapters" / "changelog.md").read_text()
    assert "## Unreleased\n\nNothing yet.\n\n## 9.9.9 (2030-01-02)" in changelog


def test_bad_versions_and_refs_are_refused(book):
    with pytest.raises(ValueError, match="version: expected X.Y.Z"):
        release.set_version("1.2", datetime.date(2030, 1, 2), book)
    with pytest.raises(ValueError, match="ref: expected a branch or tag name"):
        release.set_ref("v1.0; rm -rf /", book)


def test_pinning_to_a_tag_rewrites_the_readmes_colab_links(book):
    release.set_ref("v9.9.9", book)
    links = [
        line
        for line in (book / "README.md").read_text().splitlines()
        if "colab.research.google.com/github" in line
    ]
    assert len(links) == 9
    assert all("/blob/v9.9.9/chapters/" in line for line in links)
    release.set_ref("main", book)
    assert (book / "README.md").read_text() == (ROOT / "README.md").read_text()


def test_the_citation_offers_the_book_and_both_versions_move(book):
    import yaml

    citation = yaml.safe_load((book / "CITATION.cff").read_text())
    assert citation["preferred-citation"]["type"] == "book"
    release.set_version("9.9.9", datetime.date(2030, 1, 2), book)
    citation = yaml.safe_load((book / "CITATION.cff").read_text())
    for entry in (citation, citation["preferred-citation"]):
        assert (entry["version"], entry["date-released"]) == ("9.9.9", "2030-01-02")


def test_every_page_names_its_edition_version_and_commit():
    sys.path.insert(0, str(ROOT / "_ext"))
    import edition

    tag = edition.edition_line("v1.2.3", "1.2.3", "abc123def456", "full")
    assert (
        "Instructors' edition, release 1.2.3 (tag v1.2.3, commit abc123def456)" in tag
    )
    branch = edition.edition_line("main", "1.2.3", "abc123def456", "student")
    assert (
        "Student edition, development version: branch main at commit abc123def456"
        in branch
    )
    assert 'class="version-switcher" hidden' in branch
    with pytest.raises(ValueError, match="tag v1.2.4 names another version"):
        edition.edition_line("v1.2.4", "1.2.3", "abc123def456", "full")
    assert edition.book_version(ROOT) == release.VERSION.search(
        (ROOT / "pyproject.toml").read_text()
    ).group(0)


def test_a_single_page_built_from_the_chapters_finds_the_books_version():
    sys.path.insert(0, str(ROOT / "_ext"))
    import edition

    assert edition.book_root(ROOT / "chapters") == ROOT
    with pytest.raises(FileNotFoundError, match="no pyproject.toml"):
        edition.book_root(Path("/"))


def test_the_front_pages_bibtex_names_the_citations_version(book):
    """The BibTeX block of the introduction and CITATION.cff name one version, and a
    release moves both."""
    import re

    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    intro = (ROOT / "chapters" / "intro.md").read_text()
    assert re.search(
        r"version\s*=\s*\{" + re.escape(citation["version"]) + r"\}", intro
    )
    release.set_version("9.9.9", datetime.date(2030, 1, 2), book)
    moved = (book / "chapters" / "intro.md").read_text()
    assert re.search(r"version\s*=\s*\{9\.9\.9\}", moved)
    assert re.search(r"year\s*=\s*\{2030\}", moved)
