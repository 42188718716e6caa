"""Write the configuration of the student edition: the book's ``_config.yml`` with the
exercises' solutions hidden (sphinx-exercise's ``hide_solutions``), no page sources
copied into the site and no download button, and the execution cache of the main build,
so that the edition is rebuilt from that cache without running any notebook again.
Its Colab buttons open the student notebooks (``tools/student_notebooks.py``) that the
published site holds under the edition's folder (``ICL_SITE_PATH``, default ``latest``,
then ``student``), and it has no button to the repository, whose sources hold the
solutions.

    python tools/student_config.py _build/student_config.yml   # make book-student
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def cached_config() -> dict:
    """The book's configuration, usable from another output folder: the main build's
    execution cache and the book's own extensions, by absolute path (another edition
    built from it runs no notebook again)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["cache"] = str(ROOT / "_build" / ".jupyter_cache")
    local = config["sphinx"].get("local_extensions", {})
    config["sphinx"]["local_extensions"] = {
        name: str(ROOT / folder) for name, folder in local.items()
    }
    return config


def student_config() -> dict:
    """The student edition's configuration, as a dict."""
    config = cached_config()
    config["title"] = f"{config['title']} (student edition)"
    config.setdefault("html", {})["use_download_button"] = False
    config["html"]["use_repository_button"] = False
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["icl_edition"] = "student"
    site = os.environ.get("ICL_SITE_PATH", "latest").strip("/")
    sphinx["icl_site_path"] = f"{site}/student"
    sphinx["hide_solutions"] = True
    sphinx["html_copy_source"] = False  # the sources hold the solutions
    sphinx["html_show_sourcelink"] = False
    return config


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python tools/student_config.py OUTPUT.yml")
    out = Path(sys.argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(student_config(), sort_keys=False))
