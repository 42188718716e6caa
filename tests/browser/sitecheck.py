"""The browser suite's machinery (imported by conftest.py and test_site.py): serve
``_build/html`` on 127.0.0.1, open pages in Chromium.

Every page of the built book is opened once, in Debian's headless ``chromium`` driven by
Playwright's Python package (no browser download of its own), with every request that
leaves 127.0.0.1 aborted, so the site is checked the way an offline reader sees it. What
the page did and shows is collected into a :class:`PageReport` that the tests in
``test_site.py`` read. Every page gets a full-page screenshot under
``_build/screenshots/`` (chapters, ``NN_name.png``, also in dark mode,
``NN_name.dark.png``).

Run with ``make browser`` after ``make book``. ``ICL_CHROMIUM`` overrides the browser
binary.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest
import yaml

# ICL_BOOK_ROOT: check another checkout's build (default: this repository).
ROOT = Path(
    os.environ.get("ICL_BOOK_ROOT", Path(__file__).resolve().parents[2])
).resolve()
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = os.environ.get("ICL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
CHAPTER_RE = re.compile(r"^chapters/(\d\d)_[A-Za-z0-9_]+\.html$")
_REFRESH = re.compile(r"<meta[^>]+http-equiv=[\"']?refresh", re.IGNORECASE)
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads"}


# --- discovery: from the built site and _toc.yml, never a hard-coded list
# -------------------


def site_pages() -> list[str]:
    """Every HTML page of the built site, relative to ``_build/html`` (assets
    excluded)."""
    if not SITE.is_dir():
        return []
    return sorted(
        p.relative_to(SITE).as_posix()
        for p in SITE.rglob("*.html")
        if not SKIP_DIRS.intersection(p.relative_to(SITE).parts[:-1])
    )


def chapter_pages() -> list[str]:
    """The numbered chapter pages of the built site: ``chapters/NN_*.html``."""
    return [p for p in site_pages() if CHAPTER_RE.match(p)]


def toc_files() -> list[str]:
    """Every ``file:`` entry of ``_toc.yml`` (root included), as written there."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [f.removesuffix(".md").removesuffix(".ipynb") for f in found]


def toc_chapters() -> list[str]:
    """The numbered chapters listed in ``_toc.yml``, e.g. ``chapters/01_overview``."""
    return [f for f in toc_files() if CHAPTER_RE.match(f + ".html")]


def book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


# --- anchors of a static page
# ---------------------------------------------------------------


class _IdCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" or (tag == "a" and name == "name"):
                if value:
                    self.ids.add(value)


@functools.cache
def static_ids(rel_path: str) -> frozenset[str]:
    """The ids (and ``<a name>``) of a built page, read from the HTML file itself."""
    collector = _IdCollector()
    collector.feed((SITE / rel_path).read_text(encoding="utf-8"))
    return frozenset(collector.ids)


# --- the page report
# ------------------------------------------------------------------------


@dataclass
class PageReport:
    """What one page did and showed in the browser."""

    path: str  # relative to _build/html
    console_errors: list[str] = field(
        default_factory=list
    )  # console.error and uncaught exceptions
    bad_requests: list[str] = field(
        default_factory=list
    )  # failed, aborted (off-site) or >= 400
    dom: dict = field(default_factory=dict)  # the result of PAGE_PROBE (see below)
    dark: dict = field(default_factory=dict)  # DARK_PROBE, chapter pages only
    phone: dict = field(
        default_factory=dict
    )  # OVERFLOW_PROBE on a phone-sized window, chapters only
    solutions: list[dict] = field(
        default_factory=list
    )  # dropdown behaviour, chapter pages only
    download: dict = field(
        default_factory=dict
    )  # the fetched .ipynb download, chapter pages only
    live: list[dict] = field(
        default_factory=list
    )  # each explorer's sliders moved by the keyboard, chapter pages only
    screenshots: list[Path] = field(default_factory=list)
    visit_error: str = ""  # why the page could not be opened and probed
    redirected_to: str = ""  # where a meta-refresh page (index.html) led


# Collected in the page once MathJax has typeset. Text checks read every text node
# outside code, scripts and MathJax's own output (so hidden dropdown content is checked
# too).
PAGE_PROBE = r"""
() => {
  const SKIP = 'script,style,noscript,template,pre,code,textarea,mjx-container,.highlight';
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && !el.closest(SKIP)) texts.push(n.nodeValue);
  }
  const prose = texts.join(' ');
  const snippet = (s, i) => s.slice(Math.max(0, i - 40), i + 40).replace(/\s+/g, ' ');
  const rawTex = [];
  for (const pat of ['$', '\\(', '\\[']) {  // a lone '$' is math that did not parse
    let i = prose.indexOf(pat);
    if (i >= 0) rawTex.push(pat + ' in: ' + snippet(prose, i));
  }
  const dollar = /\$[^$\s][^$\n]{0,80}?\\[A-Za-z]+[^$\n]{0,80}?\$/.exec(prose);
  if (dollar) rawTex.push('$...$ in: ' + snippet(prose, dollar.index));
  // Prose plus what cells printed (not their source code, which may well say `explore(...)`).
  const allText = prose + ' ' + Array.from(document.querySelectorAll('.cell_output')).map(e => e.textContent).join(' ');
  const glueLiteral = [];
  const gi = allText.indexOf('{glue');
  if (gi >= 0) glueLiteral.push(snippet(allText, gi));
  // MyST syntax left as text: a directive fence that did not open (a backtick in its title, say)
  // or a role that did not parse.
  const rawMyst = /(```|~~~|:::)\s*\{[\w:.-]+\}|\{[a-z][\w:.-]*\}`/.exec(prose);
  const STRAY = /<[\w.]+ object at 0x[0-9a-f]+>|<Figure size \d+x\d+ with \d+ Axes>|\bClaim\(id=|<matplotlib\.[\w.]+ at 0x/;
  const stray = Array.from(document.querySelectorAll('.cell_output')).map(e => {
    const m = STRAY.exec(e.textContent);
    return m ? '#' + ((e.closest('section[id]') || {}).id || '') + ': ' + e.textContent.slice(m.index, m.index + 50).replace(/\s+/g, ' ') : null;
  }).filter(x => x);
  const widgetRepr = /\b(interactive|[A-Z]\w*(Slider|Box|Dropdown|Output))\((children|value|layout)=/.exec(allText);

  const math = Array.from(document.querySelectorAll('.math'));
  const cells = Array.from(document.querySelectorAll('div.cell'));
  const widgetCells = cells.filter(c => /\bexplore\s*\(/.test((c.querySelector('.cell_input') || {}).textContent || ''));
  const blockText = (el, sel) => ((el.querySelector(sel) || {}).textContent || '').trim();
  const claimsTables = Array.from(document.querySelectorAll('table.claims-table'));
  return {
    title: document.title,
    raw_tex: rawTex,
    math_count: math.length,
    math_untypeset: math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80)),
    math_errors: Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error]')).map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80))
      .concat(Array.from(document.querySelectorAll('mjx-assistive-mml mtext')).map(t => t.textContent.trim())
        .filter(t => t.startsWith('\\')).map(t => 'undefined macro ' + t)),  // MathJax's noundefined: the name in red
    mathjax_loaded: !!window.MathJax,
    images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0,
                                                    alt: i.getAttribute('alt') || '', in_article: !!i.closest('article')})),
    // How much the browser shrinks each figure to fit the column (its text shrinks as much).
    figure_scales: Array.from(document.querySelectorAll('.cell_output img, figure img'))
      .filter(i => i.clientWidth > 0 && i.naturalWidth > 0)
      .map(i => ({src: '#' + ((i.closest('section[id]') || {}).id || '') + ' ' + (i.currentSrc || i.src).split('/').pop().slice(0, 12),
                  natural: i.naturalWidth, shown: i.clientWidth,
                  scale: i.naturalWidth / i.clientWidth})),
    pasted_text: Array.from(document.querySelectorAll('[class*="pasted"]')).map(e => ({cls: e.className, text: e.textContent.trim(),
      weight: getComputedStyle(e).fontWeight, parent_weight: e.parentElement ? getComputedStyle(e.parentElement).fontWeight : ''})),
    glue_literal: glueLiteral,
    raw_myst: rawMyst ? snippet(prose, rawMyst.index) : null,
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
    live_ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
    widget_boxes: document.querySelectorAll('.widget-area, .widget-subarea, .jupyter-widgets, .jp-OutputArea-output .widget, script[type="application/vnd.jupyter.widget-view+json"], script[type="application/vnd.jupyter.widget-state+json"]').length,
    widget_repr: widgetRepr ? snippet(allText, widgetRepr.index) : null,
    stray_repr: stray,
    // The static counterpart of a widget cell: an earlier cell with a figure that calls the same
    // plotting function (the function passed to explore, or the functions its lambda calls).
    widget_cells: widgetCells.map(c => {
      const src = c.querySelector('.cell_input').textContent;
      const names = new Set();
      const first = /\bexplore\s*\(\s*([A-Za-z_][\w.]*)\s*,/.exec(src);
      if (first && first[1] !== 'lambda') names.add(first[1].split('.').pop());
      const lambda = /\bexplore\s*\(\s*lambda[^:]*:([^,]*(\([^)]*\))?)/.exec(src);
      if (lambda) for (const k of lambda[1].matchAll(/\b([A-Za-z_]\w*)\s*\(/g)) names.add(k[1]);
      const before = cells.filter(o => o.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING);
      // (a prefix match: `smoother_fits`, the small multiples of `smoother_fit`, counts)
      const uses = (o) => Array.from(names).some(n => new RegExp('\\b' + n).test((o.querySelector('.cell_input') || {}).textContent || ''));
      const counterparts = before.filter(o => o.querySelector('.cell_output img') && uses(o));
      return {
        source: src.trim().slice(0, 120),
        plot_functions: Array.from(names),
        remove_output: c.classList.contains('tag_remove-output'),
        has_output: !!c.querySelector('.cell_output'),
        live_figures: c.querySelectorAll('.icl-live-figure').length,
        static_counterpart_images: counterparts.reduce((k, o) => k + o.querySelectorAll('.cell_output img').length, 0),
      };
    }),
    colab_links: Array.from(document.querySelectorAll('a[href^="https://colab.research.google.com"]')).map(a => a.href),
    download_notebook: Array.from(document.querySelectorAll('a.btn-download-notebook-button')).map(a => a.href),
    prf_blocks: Array.from(document.querySelectorAll('div.proof')).map(d => ({
      kind: Array.from(d.classList).filter(c => !['proof', 'admonition', 'dropdown', 'toggle', 'toggle-hidden'].includes(c))[0] || 'proof',
      title: blockText(d, '.admonition-title'),
      body: d.textContent.replace(blockText(d, '.admonition-title'), '').trim().length,
    })),
    exercises: Array.from(document.querySelectorAll('div.exercise')).map(d => ({title: blockText(d, '.admonition-title'), body: blockText(d, 'section').length})),
    solutions: Array.from(document.querySelectorAll('div.solution')).map(d => ({title: blockText(d, '.admonition-title'), body: blockText(d, 'section').length})),
    claims_tables: claimsTables.map(t => ({
      rows: t.querySelectorAll('tbody tr').length,
      ids: Array.from(t.querySelectorAll('tbody tr')).map(r => (r.querySelector('.claim-id') || {}).textContent),
      verdicts: Array.from(t.querySelectorAll('tbody tr')).map(r => (r.cells[r.cells.length - 1] || {}).textContent.trim()),
    })),
  };
}
"""

# Content that sticks out of the text column without a scroll bar of its own (a wide
# table or equation that would push the page sideways), and whether the page scrolls
# sideways at all.
OVERFLOW_PROBE = r"""
() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const aRect = article.getBoundingClientRect();
  const scrolls = (el) => {
    for (let p = el.parentElement; p && p !== article; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  };
  const overflowing = [];
  for (const el of article.querySelectorAll('table, img, .cell_output, .math, mjx-container, figure, .admonition, .proof, p, li')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > aRect.right + 2 && !scrolls(el))
      overflowing.push(el.tagName.toLowerCase() + '.' + Array.from(el.classList).join('.') +
                       ' sticks out by ' + Math.round(r.right - aRect.right) + 'px');
  }
  // Display equations and tables wider than their box: they scroll, so nothing overflows, but
  // the reader sees them cut off (checked at desktop width only; on a phone scrolling is expected).
  const clippedMath = [];
  for (const m of article.querySelectorAll('mjx-container[display="true"]')) {
    if (m.scrollWidth > m.clientWidth + 2) {
      const holder = m.closest('div.math[id]') || m.closest('.admonition[id]') || m.closest('section[id]');
      const where = (holder && holder.id) ? '#' + holder.id : '';
      const tex = ((m.querySelector('mjx-assistive-mml') || {}).textContent || '').replace(/\s+/g, ' ').slice(0, 60);
      clippedMath.push(`${where} ${m.scrollWidth - m.clientWidth}px too wide: ${tex}`);
    }
  }
  // Tables that scroll sideways: the reader does not see the last columns (the verdict).
  for (const t of article.querySelectorAll('table.claims-table, .cell_output .text_html')) {
    if (t.scrollWidth > t.clientWidth + 2)
      clippedMath.push(`${t.tagName.toLowerCase()}.${Array.from(t.classList).join('.')} ${t.scrollWidth - t.clientWidth}px too wide (scrolls sideways)`);
  }
  return {overflowing: overflowing, clipped_math: clippedMath, page_width: document.documentElement.scrollWidth,
          viewport_width: window.innerWidth};
}
"""

# In dark mode: every content image must stay visible, i.e. either the CSS gives it an
# opaque light background or the image itself is opaque at its corners (a transparent
# figure with dark lines would vanish on the dark page).
DARK_PROBE = r"""
() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const result = {theme: document.documentElement.dataset.theme, images: []};
  for (const img of article.querySelectorAll('img')) {
    if (!img.naturalWidth) continue;
    const bg = getComputedStyle(img).backgroundColor;
    const m = bg.match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/);
    const lightBg = !!m && (m[4] === undefined || +m[4] === 1) && (0.2126 * m[1] + 0.7152 * m[2] + 0.0722 * m[3]) > 200;
    let opaque = null;
    try {
      const c = document.createElement('canvas');
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const w = c.width - 1, h = c.height - 1;
      opaque = [[0, 0], [w, 0], [0, h], [w, h], [w >> 1, 0], [0, h >> 1]]
        .every(([x, y]) => ctx.getImageData(x, y, 1, 1).data[3] === 255);
    } catch (e) { opaque = null; }
    result.images.push({src: img.currentSrc || img.src, background: bg, light_background: lightBg, opaque: opaque,
                        visible: lightBg || opaque === true});
  }
  return result;
}
"""

WAIT_FOR_MATH = r"""
async () => {
  if (!document.querySelector('.math')) return 'no math';
  for (let i = 0; i < 200 && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++)
    await new Promise(r => setTimeout(r, 50));
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return 'MathJax never started';
  await MathJax.startup.promise;
  return 'typeset';
}
"""

EAGER_IMAGES = r"""
async () => {
  for (const img of document.images) img.loading = 'eager';
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
    new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); setTimeout(r, 10000); })));
}
"""


class Site:
    """A local HTTP server for ``_build/html`` and one headless Chromium, opened
    lazily."""

    def __init__(self):
        handler = functools.partial(_QuietHandler, directory=str(SITE))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self._playwright = self._browser = None
        self.reports: dict[str, PageReport] = {}

    # the browser
    # -------------------------------------------------------------------------
    def browser(self):
        if self._browser is None:
            if not Path(CHROMIUM).exists():
                pytest.fail(
                    f"{CHROMIUM} not found: install Debian's chromium (apt-get install "
                    "-y chromium) "
                    "or point ICL_CHROMIUM at a Chromium binary",
                    pytrace=False,
                )
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
        return self._browser

    def close(self):
        if self._browser is not None:
            self._browser.close()
            self._playwright.stop()
        self.server.shutdown()
        self.server.server_close()

    # one visit per page
    # ------------------------------------------------------------------
    def report(self, rel_path: str) -> PageReport:
        """The page's report; a page the browser could not open fails the test that
        asks."""
        if rel_path not in self.reports:
            try:
                self.reports[rel_path] = self._visit(rel_path)
            except (
                Exception
            ) as exc:  # Playwright's errors: reported as text, not a traceback
                self.reports[rel_path] = PageReport(
                    rel_path, visit_error=f"{type(exc).__name__}: {exc}"
                )
        report = self.reports[rel_path]
        if report.visit_error:
            pytest.fail(
                f"could not open {rel_path} in Chromium: {report.visit_error}",
                pytrace=False,
            )
        return report

    def _visit(self, rel_path: str) -> PageReport:
        report = PageReport(rel_path)
        context = self.browser().new_context(viewport=VIEWPORT, service_workers="block")
        context.route("**/*", self._offline_route(report))
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.on(
            "console",
            lambda m: (
                m.type == "error"
                and report.console_errors.append(
                    f"console.error: {m.text} "
                    f"({m.location.get('url', '')}:{m.location.get('lineNumber', '')})"
                )
            ),
        )
        page.on("pageerror", lambda e: report.console_errors.append(f"uncaught: {e}"))
        page.on(
            "requestfailed",
            lambda r: report.bad_requests.append(f"failed: {r.url} ({r.failure})"),
        )
        page.on(
            "response",
            lambda r: (
                r.status >= 400
                and report.bad_requests.append(f"HTTP {r.status}: {r.url}")
            ),
        )
        try:
            page.goto(self.base + rel_path, wait_until="load")
            if _REFRESH.search((SITE / rel_path).read_text(encoding="utf-8")):
                # A redirect page (the site's index.html): check the page it lands on.
                page.wait_for_url(lambda url: url != self.base + rel_path)
                page.wait_for_load_state("load")
                report.redirected_to = page.url
            page.evaluate(EAGER_IMAGES)
            math_state = page.evaluate(WAIT_FOR_MATH)
            if math_state == "MathJax never started":
                report.console_errors.append(
                    "MathJax never started on a page with math"
                )
            page.wait_for_load_state("networkidle")
            report.dom = page.evaluate(PAGE_PROBE)
            report.dom.update(page.evaluate(OVERFLOW_PROBE))
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            light = SCREENSHOTS / (
                Path(rel_path)
                .with_suffix("")
                .as_posix()
                .replace("/", "-")
                .removeprefix("chapters-")
                + ".png"
            )
            page.screenshot(path=str(light), full_page=True)
            report.screenshots.append(light)
            if CHAPTER_RE.match(rel_path):
                self._chapter_extras(page, report)
        finally:
            context.close()
        return report

    def search(self, query: str) -> dict:
        """Type ``query`` into the site's search page (offline, searchindex.js) and read
        the hits."""
        context = self.browser().new_context(viewport=VIEWPORT, service_workers="block")
        errors: list[str] = []
        context.route("**/*", self._offline_route(PageReport("search.html")))
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(self.base + "search.html?q=" + query, wait_until="load")
            page.wait_for_function(
                "() => /Search finished/.test((document.querySelector('#search-results "
                ".search-summary') || {}).textContent || '')",
                timeout=30_000,
            )
            hits = page.evaluate(
                "() => Array.from(document.querySelectorAll('#search-results ul.search "
                "> li > a')).map(a => a.href)"
            )
            progress = page.inner_text("#search-results .search-summary")
        except (
            Exception
        ) as exc:  # Playwright's errors: reported as text, not a traceback
            pytest.fail(
                f"search for {query!r} did not finish: {type(exc).__name__}: {exc}",
                pytrace=False,
            )
        finally:
            context.close()
        return {"hits": hits, "progress": progress, "errors": errors}

    def _offline_route(self, report: PageReport):
        def handle(route):
            url = route.request.url
            if url.startswith(self.base) or url.startswith(("data:", "blob:")):
                route.continue_()
            else:
                route.abort(
                    "blockedbyclient"
                )  # an offline reader would not get it either

        return handle

    def _chapter_extras(self, page, report: PageReport):
        stem = Path(report.path).stem
        # The solution dropdowns: closed at first, open on a click on their title.
        for i, handle in enumerate(page.query_selector_all("div.solution")):
            body = handle.query_selector("section")
            closed = body is None or not body.is_visible()
            title = handle.query_selector(".admonition-title")
            if title is not None:
                title.click()
                page.wait_for_timeout(300)
            opened = body is not None and body.is_visible()
            report.solutions.append(
                {"index": i, "closed_at_first": closed, "opens_on_click": opened}
            )

        # The notebook download: fetched the way the button's link does.
        hrefs = report.dom.get("download_notebook", [])
        if hrefs:
            response = page.request.get(hrefs[0])
            report.download = {
                "url": hrefs[0],
                "status": response.status,
                "content_type": response.headers.get("content-type", ""),
                "body": response.body() if response.ok else b"",
            }

        # The explorers (icl_lib.live_figures): each slider moved by the keyboard.
        report.live = self._move_sliders(page)

        # Dark mode, as the theme's switch sets it (solutions left open, so they are
        # seen too).
        page.evaluate("""() => {
            if (document.activeElement) document.activeElement.blur();
            window.scrollTo(0, 0);
            document.documentElement.dataset.theme = 'dark';
            document.documentElement.dataset.mode = 'dark';
        }""")
        page.wait_for_timeout(300)
        report.dark = page.evaluate(DARK_PROBE)
        dark = SCREENSHOTS / f"{stem}.dark.png"
        page.screenshot(path=str(dark), full_page=True)
        report.screenshots.append(dark)

        # A phone: the same page, light, 390 px wide.
        page.evaluate(
            "() => { document.documentElement.dataset.theme = 'light'; "
            "document.documentElement.dataset.mode = 'light'; }"
        )
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(500)
        report.phone = page.evaluate(OVERFLOW_PROBE)

    def _move_sliders(self, page) -> list[dict]:
        """Focus each explorer's range inputs in turn and press an arrow key (right,
        or left at the last stop); record the frame, its picture and its alt text
        before and after, and the bytes of every frame the figure can show."""
        found = []
        for f, box in enumerate(page.query_selector_all(".icl-live-figure")):
            box.scroll_into_view_if_needed()
            state = (
                "b => { const i = b.querySelector('img.icl-live-frame');"
                " return {frame: b.getAttribute('data-frame'), src: i.currentSrc || i.src,"
                " alt: i.alt, loaded: i.complete && i.naturalWidth > 0,"
                " outputs: Array.from(b.querySelectorAll('output')).map(o => o.textContent),"
                " valuetexts: Array.from(b.querySelectorAll('input[type=range]'))"
                "   .map(r => r.getAttribute('aria-valuetext'))}; }"
            )
            frames = box.evaluate(
                "b => JSON.parse(b.querySelector('script.icl-live-frames').textContent)"
            )
            moves = []
            for k, slider in enumerate(box.query_selector_all("input[type=range]")):
                at_end = slider.evaluate("r => r.value === r.max")
                before = box.evaluate(state)
                slider.focus()
                focused = slider.evaluate("r => document.activeElement === r")
                page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
                page.wait_for_function(
                    "i => { const img = i.closest('.icl-live-figure')"
                    ".querySelector('img.icl-live-frame');"
                    " return img.complete && img.naturalWidth > 0; }",
                    arg=slider,
                    timeout=10_000,
                )
                moves.append(
                    {
                        "control": k,
                        "focused": focused,
                        "before": before,
                        "after": box.evaluate(state),
                    }
                )
            sizes = [
                len(page.request.get(urljoin(page.url, fr["src"])).body())
                for fr in frames["frames"]
            ]
            found.append(
                {
                    "index": f,
                    "controls": frames["controls"],
                    "frames": frames["frames"],
                    "bytes": sizes,
                    "moves": moves,
                }
            )
        return found


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def internal_target(url: str, base: str) -> tuple[str, str] | None:
    """``(path relative to the site, fragment)`` for a link inside the site, else
    None."""
    if not url.startswith(base):
        return None
    rest, fragment = urldefrag(url)
    path = unquote(urlsplit(rest).path).lstrip("/")
    return path, unquote(fragment)


# --- what the MyST source of a page asks for
# ------------------------------------------------

_FENCE = re.compile(r"^\s*(`{3,}|:{3,}|~{3,})\s*(.*?)\s*$")
_ROLE_OR_CODE = re.compile(
    r"(\{[\w:.-]+\})(`+)(.+?)\2|(`+)(.+?)\4"
)  # a role is kept, a code span dropped
_DIRECTIVE = re.compile(r"^\{([\w:.-]+)\}")


def page_source(rel_path: str) -> str | None:
    """The MyST source that Sphinx copied next to the site for ``rel_path``, if any."""
    source = SITE / "_sources" / (rel_path.removesuffix(".html") + ".md")
    return source.read_text(encoding="utf-8") if source.exists() else None


def prose_and_directives(source: str) -> tuple[str, list[str]]:
    """The source without code (code cells, code blocks, inline code), and its directive
    names.

    Fences nest: a directive fence stays open until a bare fence of the same character
    and at least its length closes it, so a directive's closing line is not taken for a
    code block.
    """
    prose, directives, stack = [], [], []  # stack of (char, length, is_code)
    for line in source.splitlines():
        m = _FENCE.match(line)
        in_code = bool(stack) and stack[-1][2]
        if m:
            fence, info = m.group(1), m.group(2)
            if (
                stack
                and fence[0] == stack[-1][0]
                and len(fence) >= stack[-1][1]
                and not info
            ):
                stack.pop()
                continue
            if not in_code:
                d = _DIRECTIVE.match(info)
                is_code = d is None or d.group(1) in (
                    "code-cell",
                    "code-block",
                    "code",
                    "sourcecode",
                    "raw",
                )
                stack.append((fence[0], len(fence), is_code))
                if d and not is_code:
                    directives.append(d.group(1))
                continue
        if not in_code:
            prose.append(
                _ROLE_OR_CODE.sub(lambda m: m.group(0) if m.group(1) else " ", line)
            )
    return "\n".join(prose), directives


def glue_text_roles(source: str) -> int:
    """How many ``{glue:text}`` roles the source's prose uses (each renders a
    ``.pasted-text``)."""
    prose, _ = prose_and_directives(source)
    return len(re.findall(r"\{glue:text\}`", prose))


# --- what was checked, with counts
# ----------------------------------------------------------


def summary_rows(site: Site) -> list[dict]:
    """One row per visited page: how many things of each kind the suite looked at."""
    rows = []
    for path, r in sorted(site.reports.items()):
        if r.visit_error:
            rows.append({"page": path, "error": r.visit_error})
            continue
        d = r.dom
        rows.append(
            {
                "page": path,
                "math": d["math_count"],
                "images": len(d["images"]),
                "links": len(d["links"]),
                "internal_links": sum(
                    internal_target(u, site.base) is not None for u in d["links"]
                ),
                "glue_values": sum(
                    "pasted-text" in p["cls"].split() for p in d["pasted_text"]
                ),
                "prf_blocks": len(d["prf_blocks"]),
                "exercises": len(d["exercises"]),
                "solutions": len(d["solutions"]),
                "claims_rows": sum(t["rows"] for t in d["claims_tables"]),
                "widget_cells": len(d["widget_cells"]),
                "screenshots": [str(s.relative_to(ROOT)) for s in r.screenshots],
                "problems": len(r.console_errors) + len(r.bad_requests),
            }
        )
    return rows
