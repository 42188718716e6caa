"""Sphinx extension: which edition and version a page belongs to, and where its launch
buttons go.

- Every page's footer says which version it is and the commit it was built from (an
  erratum report names both), and holds a version switcher that ``_static/versions.js``
  fills from the published site's ``versions.json`` (``tools/site_versions.py``); on a
  local build there is no such file and the switcher stays hidden.
- The issue button opens the chooser of the repository's issue forms (erratum,
  question, teaching report), not a blank issue.
- A page without a notebook of its own (the instructor and status pages are MyST text)
  gets no launch button: Colab cannot open a ``.md`` file.
- The student edition (``icl_edition = "student"``, ``tools/student_config.py``) offers
  no download of a page's source, and opens Colab on the student notebooks that
  ``tools/student_notebooks.py`` writes into the edition's site (``notebooks/``),
  without the solutions; the published branch (``icl_pages_branch``) holds them under
  the edition's folder, ``icl_site_path``.

The version is ``pyproject.toml``'s (a release's tag must name it); the ref is the
book's ``repository.branch`` (a branch, or the tag of a release); the commit is
``ICL_COMMIT`` or ``GITHUB_SHA`` where set, else ``git rev-parse``.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path

RELEASE_TAG = re.compile(r"v(\d+\.\d+\.\d+)")


def book_version(root: Path) -> str:
    """The version in ``pyproject.toml``."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def build_commit(root: Path) -> str:
    """The commit the book is built from, short; the environment's first."""
    for name in ("ICL_COMMIT", "GITHUB_SHA"):
        if os.environ.get(name):
            return os.environ[name][:12]
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        raise RuntimeError(
            f"{root}: the commit of this build is unknown (no git checkout); "
            "set ICL_COMMIT to the commit the copy was made from"
        ) from error
    return done.stdout.strip()


def _text(words: str) -> str:
    return html.escape(words, quote=False)


def edition_line(ref: str, version: str, commit: str, edition: str) -> str:
    """The footer's sentence: which edition, version and commit this page is."""
    name = "Student edition" if edition == "student" else "Instructors' edition"
    tag = RELEASE_TAG.fullmatch(ref)
    if tag:
        if tag.group(1) != version:
            raise ValueError(
                f"repository.branch: the tag {ref} names another version than "
                f"pyproject.toml's {version}; make a release with tools/release.py"
            )
        which = f"release {version} (tag {ref}, commit {commit})"
    else:
        which = f"development version: branch {ref} at commit {commit}"
    return (
        f'<p class="edition-line">{_text(name)}, {_text(which)}. '
        '<span class="version-switcher" hidden><label>Other versions: '
        '<select aria-label="Other versions of this book"></select></label></span></p>'
    )


def book_root(source: Path) -> Path:
    """The repository's root: the first folder from ``source`` up that holds
    ``pyproject.toml`` (a single page is built from ``chapters/``)."""
    for folder in (source, *source.parents):
        if (folder / "pyproject.toml").exists():
            return folder
    raise FileNotFoundError(f"{source}: no pyproject.toml here or in a parent folder")


def add_edition_line(app, config) -> None:
    options = config.html_theme_options
    root = book_root(Path(app.srcdir).resolve())
    ref = options.get("repository_branch", "main")
    line = edition_line(ref, book_version(root), build_commit(root), config.icl_edition)
    options["extra_footer"] = options.get("extra_footer", "") + line


def _has_notebook(app, pagename: str) -> bool:
    return Path(app.env.doc2path(pagename)).with_suffix(".ipynb").exists()


def _issue_buttons(buttons: list) -> list:
    found = []
    for button in buttons:
        if button.get("label") == "source-issues-button":
            found.append(button)
        found += _issue_buttons(button.get("buttons", []))
    return found


# the download buttons that hand out a page's source, which holds the solutions
SOURCE_BUTTONS = ("download-source-button", "download-notebook-button")


def _drop_sources(buttons: list) -> None:
    """Remove the source downloads from ``buttons`` and the groups in it (the student
    edition copies no source, so they would also point at a missing ``_sources``)."""
    for group in list(buttons):
        if group.get("label") in SOURCE_BUTTONS:
            buttons.remove(group)
        elif "buttons" in group:
            _drop_sources(group["buttons"])
            if not group["buttons"]:
                buttons.remove(group)


def fix_header_buttons(app, pagename, templatename, context, doctree) -> None:
    buttons = context.get("header_buttons")
    if not buttons:
        return
    # the theme's issue button opens a blank issue; the chooser offers the erratum,
    # question and teaching-report forms (.github/ISSUE_TEMPLATE) with their labels
    for button in _issue_buttons(buttons):
        button["url"] = button["url"].split("/issues/new")[0] + "/issues/new/choose"
        button["tooltip"] = "Report an erratum or ask a question"
    if app.config.icl_edition == "student":
        _drop_sources(buttons)
    launch = [b for b in buttons if b.get("label") == "launch-buttons"]
    if not launch:
        return
    if not _has_notebook(app, pagename):
        for group in launch:
            buttons.remove(group)
        return
    if app.config.icl_edition != "student":
        return
    options = app.config.html_theme_options
    repo = options["repository_url"].rstrip("/").split("github.com/")[-1]
    path = f"{app.config.icl_site_path.strip('/')}/notebooks/{pagename}.ipynb"
    url = (
        f"https://colab.research.google.com/github/{repo}/blob/"
        f"{app.config.icl_pages_branch}/{path}"
    )
    for group in launch:
        group["buttons"] = [
            {**button, "url": url, "tooltip": "Launch the student notebook on Colab"}
            for button in group["buttons"]
            if button.get("text") == "Colab"
        ]


def write_own_versions(app, exception) -> None:
    """A build's own ``versions.json``: this version alone, so that the switcher finds
    its file (and stays hidden) until ``tools/site_versions.py`` writes the published
    site's list over it."""
    if exception is None and app.builder.format == "html":
        ref = app.config.html_theme_options.get("repository_branch", "main")
        name = ref if RELEASE_TAG.fullmatch(ref) else "latest"
        entry = [{"name": name, "path": "./"}]
        (Path(app.outdir) / "versions.json").write_text(json.dumps(entry) + "\n")


def setup(app):
    app.add_config_value("icl_edition", "full", "html", [str])
    app.add_config_value(
        "icl_site_path", os.environ.get("ICL_SITE_PATH", "latest"), "html", [str]
    )
    app.add_config_value("icl_pages_branch", "gh-pages", "html", [str])
    app.connect("config-inited", add_edition_line)
    app.connect("html-page-context", fix_header_buttons, priority=600)
    app.connect("build-finished", write_own_versions)
    app.add_js_file("versions.js", defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
