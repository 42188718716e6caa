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
    for name in ("_config.yml", "pyproject.toml", "CITATION.cff"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "chapters" / "changelog.md", tmp_path / "chapters")
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
