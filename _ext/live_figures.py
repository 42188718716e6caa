"""Sphinx extension: the explorers of the static site (``icl_lib.live_figures``).

An executed explorer cell's output is one HTML block (``.icl-live-figure``) that carries
its frames as ``data:`` URIs, so that the notebook is self-contained. In the full
edition's HTML build each frame is written once to ``_images/live/<digest>.png`` and the
block points at the file instead: the page stays light, the first frame loads lazily,
and ``_static/live_figures.js`` fetches the others when the figure nears the viewport.
The student edition and the print build (any builder but ``html``) drop the block: they
show the chapter's static small multiples, which every chapter draws beside its
explorer.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from docutils import nodes

MARKER = 'class="icl-live-figure"'
DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def _keep(app) -> bool:
    return app.builder.name == "html" and app.config.icl_edition != "student"


def _drop(raw) -> None:
    """Remove an explorer's block, and the cell's output box with it where the block was
    all it held (no empty frame is left on the page)."""
    node = raw
    while (
        node.parent is not None
        and "cell" not in node.parent.get("classes", [])
        and len(node.parent.children) == 1
    ):
        node = node.parent
    node.parent.remove(node)


def frames_to_files(app, doctree, docname) -> None:
    """Write each explorer frame of ``docname`` to a file and point the page at it, or
    drop the explorers from builds that show the static figures instead."""
    folder = Path(app.outdir) / "_images" / "live"
    up = "../" * docname.count("/")
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if "html" not in raw.get("format", "") or MARKER not in text:
            continue
        if not _keep(app):
            _drop(raw)
            continue

        text = DATA_URI.sub(lambda match: _to_file(match, folder, up), text)
        raw.replace(raw.children[0], nodes.Text(text))


def _to_file(match, folder: Path, up: str) -> str:
    """Write one ``data:`` frame to ``folder``, named by its digest; return its URL
    relative to the page."""
    png = base64.b64decode(match.group(1))
    name = hashlib.sha256(png).hexdigest()[:20] + ".png"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / name).exists():
        (folder / name).write_bytes(png)
    return f"{up}_images/live/{name}"


def setup(app):
    app.connect("doctree-resolved", frames_to_files)
    app.add_js_file("live_figures.js", defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
