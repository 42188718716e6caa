"""Index the versions of the published site: ``python tools/site_versions.py SITE``.

The published site (the ``gh-pages`` branch, ``.github/workflows/pages.yml``) holds one
folder per version: ``latest/`` built from the branch, and ``vX.Y.Z/`` for each release
tag, each with the instructors' edition at its root and the student edition under
``student/``. This script writes what ties them together:

- in the root of every edition, ``versions.json``: each version's folder for that
  edition, relative to it (the footer's switcher, ``_static/versions.js``, reads it);
- ``index.html`` at the site's root: every version, both editions, newest release first;
- ``.nojekyll``, so that GitHub Pages serves the ``_static`` and ``_images`` folders.
"""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path

RELEASE = re.compile(r"v(\d+)\.(\d+)\.(\d+)")
EDITIONS = {"": "instructors' edition", "student": "student edition"}


def versions(site: Path) -> list[str]:
    """The version folders of ``site``: ``latest`` (if built), then the releases,
    newest first."""
    if not site.is_dir():
        raise FileNotFoundError(f"site: expected a folder, got {site}")
    releases = [
        p.name for p in site.iterdir() if p.is_dir() and RELEASE.fullmatch(p.name)
    ]
    releases.sort(key=lambda n: tuple(int(g) for g in RELEASE.fullmatch(n).groups()))
    found = (["latest"] if (site / "latest").is_dir() else []) + releases[::-1]
    if not found:
        raise ValueError(f"site: expected a latest/ or vX.Y.Z/ folder in {site}")
    return found


def _relative(edition: str, from_version: str, to_version: str) -> str:
    if from_version == to_version:
        return "./"
    up = "../../" if edition else "../"
    return f"{up}{to_version}/{edition + '/' if edition else ''}"


def write_index(site: Path) -> list[str]:
    """Write every ``versions.json``, the root ``index.html`` and ``.nojekyll``; return
    the versions, in the switcher's order."""
    found = versions(site)
    for version in found:
        for edition in EDITIONS:
            folder = site / version / edition
            if not (folder / "index.html").exists():
                continue
            entries = [
                {"name": other, "path": _relative(edition, version, other)}
                for other in found
                if (site / other / edition / "index.html").exists()
            ]
            (folder / "versions.json").write_text(json.dumps(entries, indent=1) + "\n")
    rows = []
    for version in found:
        links = [
            f'<a href="{version}/{edition + "/" if edition else ""}">{name}</a>'
            for edition, name in EDITIONS.items()
            if (site / version / edition / "index.html").exists()
        ]
        title = "latest (the branch)" if version == "latest" else version
        rows.append(f"<li>{html.escape(title)}: {', '.join(links)}</li>")
    (site / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>In-Context Learning: Theory You Can Run</title></head><body>"
        "<h1>In-Context Learning: Theory You Can Run</h1>"
        "<p>Every version of the book. A class pins a release: its pages, notebooks "
        "and library stay as they were. The student edition has no solutions.</p>"
        f"<ul>{''.join(rows)}</ul></body></html>\n"
    )
    (site / ".nojekyll").write_text("")
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the checkout of the published branch")
    print(" ".join(write_index(parser.parse_args().site)))
