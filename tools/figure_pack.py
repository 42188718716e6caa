"""Export every figure of the executed book as SVG, for a lecturer's slides.

    python tools/figure_pack.py      # after make book (which runs it)

The chapters draw each figure in two formats when ``ICL_FIGURE_PACK=1`` (``make book``
sets it; :func:`icl_lib.notebook.setup_notebook`): PNG, which the site shows, and SVG,
which the site leaves out (``nb_mime_priority_overrides`` in ``_config.yml``). This
script reads the SVGs from the executed chapters in the build's execution cache
(``_build/.jupyter_cache``, matched as the build matches them: the notebooks that
Jupyter Book writes to ``_build/jupyter_execute`` hold no outputs for a chapter it took
from the cache, and ``make book`` executes every chapter ahead of it) and
writes ``_build/figures/<chapter>/<name>.svg``, ``<name>`` being the figure's label in
the chapter (``fig-...``; for an unlabelled drawing, such as an explorer's views, the
slug of the section it stands in), and an ``index.html`` that shows each as a
thumbnail with the book's figure number (Fig. 7.3) and its caption, the caption's
math typeset by the site's own MathJax when the pack sits beside the built site. A
labelled figure without its SVG is an error.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import execute_chapters  # noqa: E402 (the path above)

EXECUTED = None  # None: the chapters in the execution cache
OUT = ROOT / "_build" / "figures"
SVG = "image/svg+xml"


def cached_chapters() -> dict[str, dict]:
    """``{chapter stem: executed notebook}`` of every numbered chapter of ``_toc.yml``
    found in the execution cache (a chapter whose code changed since is left out)."""
    from jupyter_cache import get_cache
    from myst_parser.config.main import MdParserConfig

    if not execute_chapters.CACHE.exists():
        return {}
    config = execute_chapters.book_config()
    md = MdParserConfig(
        enable_extensions=set(config["parse"]["myst_enable_extensions"])
    )
    cache = get_cache(str(execute_chapters.CACHE))
    found = {}
    for path in execute_chapters.toc_pages():
        if not path.stem[:2].isdigit():
            continue
        try:
            _, merged = cache.merge_match_into_notebook(
                execute_chapters.read_page(path, md)
            )
        except KeyError:
            continue
        found[path.stem] = json.loads(json.dumps(merged))  # plain dicts
    return found


def _slug(heading: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")
    return words or "figure"


def chapter_figures(notebook) -> list[dict]:
    """``[{"name", "caption", "number", "svgs"}]`` of one executed chapter (a notebook
    file or its dict), in page order: one entry per code cell that drew something
    (``svgs``: its SVG documents). ``number`` is the figure's number in its chapter,
    as the book counts its labelled figures (None for an unlabelled drawing, which is
    named after the section it stands in)."""
    if isinstance(notebook, Path):
        notebook = json.loads(notebook.read_text())
    found, section, numbered, per_section = [], "figure", 0, {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            headings = re.findall(r"^#{2,4} +(.+)$", source, re.M)
            if headings:
                section = _slug(headings[-1])
            continue
        if cell["cell_type"] != "code":
            continue
        svgs = [
            "".join(out["data"][SVG]) if isinstance(out["data"][SVG], list)
            else out["data"][SVG]
            for out in cell.get("outputs", [])
            if SVG in out.get("data", {})
        ]  # fmt: skip
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if figure.get("name"):
            numbered += 1
            name, number = figure["name"], numbered
        elif svgs:
            per_section[section] = per_section.get(section, 0) + 1
            name, number = f"{section}-{per_section[section]}", None
        else:
            continue
        found.append(
            {
                "name": name,
                "caption": figure.get("caption", ""),
                "labelled": bool(figure.get("name")),
                "number": number,
                "svgs": svgs,
            }
        )
    return found


def export(executed: Path | None = EXECUTED, out: Path = OUT) -> dict[str, int]:
    """Write the pack from the execution cache, or from the executed notebooks
    ``executed/NN_*.ipynb``; returns ``{chapter: number of SVG files}``. Raises if a
    labelled figure has no SVG (a chapter executed without ``ICL_FIGURE_PACK=1``)."""
    if executed is None:
        notebooks = cached_chapters()
    else:
        notebooks = {p.stem: p for p in sorted(executed.glob("[0-9][0-9]_*.ipynb"))}
    if not notebooks:
        where = executed or "the execution cache"
        raise SystemExit(f"no executed chapters in {where}: run make book first")
    counts, rows, missing = {}, [], []
    for chapter, notebook in sorted(notebooks.items()):
        folder = out / chapter
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.svg"):
            old.unlink()
        counts[chapter] = 0
        for figure in chapter_figures(notebook):
            if figure["labelled"] and not figure["svgs"]:
                missing.append(f"{chapter}: {figure['name']}")
            for i, svg in enumerate(figure["svgs"]):
                name = figure["name"] + (f"-{i + 1}" if len(figure["svgs"]) > 1 else "")
                (folder / f"{name}.svg").write_text(svg)
                number = (
                    figure["number"] and f"Fig. {int(chapter[:2])}.{figure['number']}"
                )
                rows.append((chapter, name, number or "", figure["caption"]))
                counts[chapter] += 1
    if missing:
        raise SystemExit(
            "figures without an SVG: "
            + ", ".join(missing)
            + ". The execution cache predates ICL_FIGURE_PACK=1: run make clean book"
        )
    (out / "index.html").write_text(_index(rows))
    return counts


# the site's own MathJax (sphinx-mathjax-offline), when the pack sits beside the site
MATHJAX = "../html/_static/mathjax/tex-chtml.js"


def _index(rows) -> str:
    items = "\n".join(
        f"<tr><td><a href='{html.escape(chapter)}/{html.escape(name)}.svg'>"
        f"<img src='{html.escape(chapter)}/{html.escape(name)}.svg' width='240' "
        f"alt='{html.escape(number or name)}' loading='lazy'></a></td>"
        f"<td>{html.escape(number)}<br><code>{html.escape(chapter)}/"
        f"{html.escape(name)}.svg</code></td><td>{html.escape(caption)}</td></tr>"
        for chapter, name, number, caption in rows
    )
    return (
        "<!doctype html><meta charset='utf-8'><title>Figures of the book</title>\n"
        "<script>window.MathJax = {tex: {inlineMath: [['$', '$']]}};</script>\n"
        f"<script async src='{MATHJAX}'></script>\n"
        "<h1>Figures of the book, as SVG</h1>\n"
        "<p>Each figure is a vector drawing: it scales to any slide without blurring. "
        "Click a thumbnail for the file.</p>\n"
        "<table><tr><th>figure</th><th>number and file</th><th>caption</th></tr>\n"
        f"{items}\n</table>\n"
    )


if __name__ == "__main__":
    counts = export()
    total = sum(counts.values())
    where = OUT.relative_to(ROOT)
    print(f"figure pack: {total} SVG files in {where}/", file=sys.stderr)
    for chapter, n in counts.items():
        print(f"  {chapter}: {n}", file=sys.stderr)
