"""Make a release a class can pin: ``make release VERSION=X.Y.Z``.

A release is a commit tagged ``vX.Y.Z`` whose book is pinned to that tag. Its
``_config.yml`` names the tag as the repository's ref, so the site built from it opens
every notebook on Colab from the tag (the launch buttons), and each notebook's setup
cell installs ``icl_lib`` from the tag (``make sync`` renders it from the same line).
The version goes into ``pyproject.toml`` and ``CITATION.cff`` with the date, and the
changelog's "Unreleased" section takes the version as its title. A second commit then
points the book back at its branch, so that ``main`` keeps building from ``main``.

    python tools/release.py 0.1.0     # two commits and the tag vX.Y.Z, nothing pushed
    git push origin main v0.1.0       # publish them

The working tree must be clean, and the version must be new.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.compile(r"\d+\.\d+\.\d+")


def current_ref(root: Path = ROOT) -> str:
    """The ref the book builds from: ``repository.branch`` in ``_config.yml``."""
    text = (root / "_config.yml").read_text()
    return re.search(r"^repository:\n(?:  .*\n)*?  branch: (\S+)", text, re.M).group(1)


def set_ref(ref: str, root: Path = ROOT) -> None:
    """Point the book at ``ref`` (a branch or a tag): the one line of ``_config.yml``
    that the launch buttons, the footer and the setup cells read (comments and layout
    kept), and the README's Colab links, so that a reader of the README at a tag opens
    the tag's notebooks."""
    if not re.fullmatch(r"[\w./-]+", ref):
        raise ValueError(f"ref: expected a branch or tag name, got {ref!r}")
    path = root / "_config.yml"
    text = path.read_text()
    new, count = re.subn(
        r"^(repository:\n(?:  .*\n)*?  branch: )\S+", rf"\g<1>{ref}", text, flags=re.M
    )
    if count != 1:
        raise ValueError(f"{path}: expected one repository.branch line, found {count}")
    path.write_text(new)
    readme = root / "README.md"
    text, count = re.subn(
        r"(colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/)[\w./-]+?(/chapters/)",
        rf"\g<1>{ref}\g<2>",
        readme.read_text(),
    )
    if count == 0:
        raise ValueError(f"{readme}: expected the chapters' Colab links, found none")
    readme.write_text(text)


def set_version(version: str, date: datetime.date, root: Path = ROOT) -> None:
    """Write ``version`` into ``pyproject.toml``, ``CITATION.cff`` (with
    ``date-released``) and the introduction's BibTeX block (with the year), and title
    the changelog's "Unreleased" section with it."""
    if not VERSION.fullmatch(version):
        raise ValueError(f"version: expected X.Y.Z, got {version!r}")
    pyproject = root / "pyproject.toml"
    text, count = re.subn(
        r'^version = "[^"]*"',
        f'version = "{version}"',
        pyproject.read_text(),
        flags=re.M,
    )
    if count != 1:
        raise ValueError(f"{pyproject}: expected one version line, found {count}")
    pyproject.write_text(text)

    # the software's version and the book's (preferred-citation), each with its date
    citation = root / "CITATION.cff"
    text = re.sub(r"^( *)date-released: .*\n", "", citation.read_text(), flags=re.M)
    text, count = re.subn(
        r'^( *)version: "[^"]*"\n',
        rf'\g<1>version: "{version}"\n\g<1>date-released: "{date.isoformat()}"\n',
        text,
        flags=re.M,
    )
    if count != 2:
        raise ValueError(f"{citation}: expected two version lines, found {count}")
    citation.write_text(text)

    # the BibTeX block of the introduction (the site's front page)
    intro = root / "chapters" / "intro.md"
    text, count = re.subn(
        r"(version\s*=\s*\{)[^}]*(\})", rf"\g<1>{version}\g<2>", intro.read_text()
    )
    text = re.sub(r"(year\s*=\s*\{)\d{4}(\})", rf"\g<1>{date.year}\g<2>", text)
    if count != 1:
        raise ValueError(f"{intro}: expected one BibTeX version field, found {count}")
    intro.write_text(text)

    changelog = root / "chapters" / "changelog.md"
    text, count = re.subn(
        r"^## Unreleased.*$",
        f"## Unreleased\n\nNothing yet.\n\n## {version} ({date.isoformat()})",
        changelog.read_text(),
        count=1,
        flags=re.M,
    )
    if count != 1:
        raise ValueError(f"{changelog}: expected an '## Unreleased' section")
    changelog.write_text(text)


def _run(*command: str) -> str:
    done = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _sync() -> None:
    subprocess.run([sys.executable, "tools/sync_chapters.py"], cwd=ROOT, check=True)


def release(version: str) -> None:
    """The two commits and the tag of :mod:`release`'s docstring."""
    if not VERSION.fullmatch(version):
        raise SystemExit(f"VERSION: expected X.Y.Z, got {version!r}")
    tag = f"v{version}"
    if _run("git", "status", "--porcelain"):
        raise SystemExit("the working tree has changes: commit or stash them first")
    if _run("git", "tag", "--list", tag):
        raise SystemExit(f"{tag} exists already")
    # the branch the release is made on: main, or release-X.Y for a patch release
    branch = _run("git", "rev-parse", "--abbrev-ref", "HEAD")
    if branch == "HEAD":
        raise SystemExit("no branch is checked out: make a release from a branch")
    set_version(version, datetime.date.today())
    set_ref(tag)
    _sync()
    _run("git", "commit", "-q", "-am", f"Release {version}: the book pinned to {tag}")
    _run("git", "tag", "-a", tag, "-m", f"Release {version}")
    set_ref(branch)
    _sync()
    _run("git", "commit", "-q", "-am", f"After {version}: the book follows {branch}")
    print(f"tagged {tag}; publish with: git push origin {branch} {tag}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", help="the new version, X.Y.Z")
    release(parser.parse_args().version)
