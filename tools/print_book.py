"""Print the whole executed book to one PDF: ``_build/book.pdf``, and the student
edition (no solutions) to ``_build/book-student.pdf``.

    python tools/print_book.py      # make print, after make book

The book is built once more as a single HTML page from the main build's execution cache
(no notebook runs again), served on localhost and printed by the headless Chromium the
browser suite uses (Debian's ``chromium``, or ``ICL_CHROMIUM``), after MathJax has
typeset every formula. Theorem boxes, glued numbers, tables and figures are the site's
own; the sidebars and buttons are the theme's screen-only furniture and stay off the
paper. Every page is numbered, the PDF's outline (bookmarks) follows the headings, and
it is tagged for screen readers.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_config import cached_config, student_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# edition -> (its configuration, the single-page build's folder, the PDF)
EDITIONS = {
    "full": (cached_config, ROOT / "_build" / "print", ROOT / "_build" / "book.pdf"),
    "student": (
        student_config,
        ROOT / "_build" / "print-student",
        ROOT / "_build" / "book-student.pdf",
    ),
}
# the page number at the foot of every page (Chromium fills the two classes)
FOOTER = (
    '<div style="font-size: 8px; width: 100%; text-align: center; color: #555;">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)
CHROMIUM = os.environ.get("ICL_CHROMIUM", "/usr/bin/chromium")
# the flags of tests/browser/sitecheck.py: no network beyond localhost, no first-run UI
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
# What a printed page does without: the theme's sidebars, header buttons and the
# prev/next footer (they print as empty boxes), the headings' permalink marks and the
# code cells the site folds away.
PRINT_CSS = """
@page { size: A4; }
.bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article, .header-article,
.prev-next-area, .bd-footer, .bd-footer-article, .bd-header, .skip-link,
#pst-back-to-top, .theme-switch-button, .search-button, .headerlink,
details.hide.above-input { display: none !important; }
.bd-page-width, .bd-container, .bd-container__inner, .bd-main, .bd-content,
.bd-article-container, .bd-article {
  max-width: 100% !important; width: 100% !important; margin: 0 !important;
  padding: 0 !important; }
figure, .prf\\:theorem, .proof, table, pre { break-inside: avoid; }
pre { white-space: pre-wrap !important; word-break: break-word; }
table.claims-table { display: table !important; width: 100% !important; }
h1 { break-before: page; }
"""


def single_page(output: Path) -> Path:
    """Where the single-page build under ``output`` puts the book."""
    return output / "_build" / "singlehtml"


def build_single_page(edition: str = "full") -> Path:
    """The book as one HTML page, from the execution cache of ``make book``; returns
    the folder of the single-page site."""
    if edition not in EDITIONS:
        raise ValueError(f"edition: expected one of {list(EDITIONS)}, got {edition!r}")
    if not (ROOT / "_build" / ".jupyter_cache").exists():
        raise SystemExit("no execution cache under _build/: run make book first")
    make_config, output, _ = EDITIONS[edition]
    config = output.parent / f"{output.name}_config.yml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(make_config(), sort_keys=False))
    subprocess.run(
        [
            str(Path(sys.executable).parent / "jupyter-book"),
            "build",
            str(ROOT),
            "--builder",
            "singlehtml",
            "--config",
            str(config),
            "--path-output",
            str(output),
            "-W",
            "-n",
            "--keep-going",
            "-q",
        ],  # fmt: skip
        check=True,
        env={**os.environ, "ICL_STATIC_WIDGETS": "1"},
    )
    return single_page(output)


def root_page() -> str:
    """The single page's path in the build: the table of contents' root, e.g.
    ``chapters/intro.html`` (``index.html`` only redirects there)."""
    root = yaml.safe_load((ROOT / "_toc.yml").read_text())["root"]
    return f"{root}.html"


def print_pdf(site: Path, pdf: Path) -> int:
    """Print the single-page book under ``site`` to ``pdf`` in headless Chromium;
    returns the PDF's size in bytes."""
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} not found: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # The single page sits at the root page's path (chapters/intro.html) but its asset
    # URLs are relative to the build's top: a copy at the top resolves them.
    page = site / "book.html"
    page.write_bytes((site / root_page()).read_bytes())
    url = f"http://127.0.0.1:{server.server_address[1]}/{page.name}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            tab = browser.new_page()
            tab.goto(url, wait_until="load", timeout=180_000)
            # every formula typeset before the page is printed (MathJax 3)
            tab.evaluate(
                "async () => { if (window.MathJax && MathJax.startup)"
                " await MathJax.startup.promise; }"
            )
            tab.add_style_tag(content=PRINT_CSS)
            # solutions, folded proofs and "Going deeper" dropdowns print open (the
            # folded code cells stay off the paper: PRINT_CSS)
            tab.evaluate(
                "() => document.querySelectorAll('details:not(.hide)')"
                ".forEach(d => { d.open = true; })"
            )
            tab.emulate_media(media="print")
            tab.pdf(
                path=str(pdf),
                format="A4",
                print_background=True,
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=FOOTER,
                margin={
                    "top": "16mm",
                    "bottom": "18mm",
                    "left": "14mm",
                    "right": "14mm",
                },
                outline=True,
                tagged=True,
            )
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return pdf.stat().st_size


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


if __name__ == "__main__":
    for name, (_, _, pdf) in EDITIONS.items():
        size = print_pdf(build_single_page(name), pdf)
        print(f"{name}: {pdf.relative_to(ROOT)} ({size / 1e6:.1f} MB)", file=sys.stderr)
