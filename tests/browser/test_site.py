"""The built book, opened in headless Chromium the way a reader sees it: offline, every
page.

Pages and chapters are discovered from ``_build/html`` and ``_toc.yml`` (see
``sitecheck``). Every page is loaded once; the tests below read what that visit
recorded. Run ``make browser`` after ``make book``; the chapters' screenshots land in
``_build/screenshots/``.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sitecheck import (
    ROOT,
    SITE,
    book_config,
    chapter_pages,
    glue_text_roles,
    internal_target,
    page_source,
    prose_and_directives,
    site_pages,
    static_ids,
    toc_chapters,
    toc_files,
)

from icl_lib.claims import VERDICT_MARKS

pytestmark = pytest.mark.browser

PAGES = site_pages()
CHAPTERS = chapter_pages()
SETUP_MARKER = "# Setup: the same cell in every chapter"


def _stem(rel_path: str) -> str:
    return rel_path.removesuffix(".html")


# --- the site as a whole
# ---------------------------------------------------------------------


def test_site_is_built():
    assert (SITE / "index.html").exists(), (
        f"no built site at {SITE}: run `make book` first"
    )
    assert CHAPTERS, f"no chapter pages (chapters/NN_*.html) under {SITE}"


@pytest.mark.parametrize("page", PAGES)
def test_every_page_states_both_licences_in_its_footer(page):
    """Text, figures and exercises under CC BY 4.0, code under MIT (LICENSE-text,
    LICENSE): the footer of every page says so, with links to both."""
    html = (SITE / page).read_text()
    if html.startswith('<meta http-equiv="Refresh"'):
        pytest.skip(f"{page} only redirects to the first page")
    footer = re.search(r'<p class="licence-footer">(.*?)</p>', html, re.S)
    assert footer, f"{page}: no licence footer (html.extra_footer in _config.yml)"
    text = footer.group(1)
    assert "creativecommons.org/licenses/by/4.0/" in text and "CC BY 4.0" in text
    assert "opensource.org/license/mit" in text and "MIT" in text


def test_every_toc_entry_has_a_page_and_every_chapter_page_is_in_the_toc():
    built = {_stem(p) for p in PAGES}
    missing = [f for f in toc_files() if f not in built]
    assert not missing, f"_toc.yml entries without a built page: {missing}"
    stale = sorted({_stem(p) for p in CHAPTERS} - set(toc_chapters()))
    assert not stale, (
        f"chapter pages not in _toc.yml (stale build? run `make clean book`): {stale}"
    )


# --- every page
# ------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_no_console_or_page_errors(site, page):
    errors = site.report(page).console_errors
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES)
def test_every_request_succeeds_offline(site, page):
    bad = site.report(page).bad_requests
    assert not bad, (
        "requests that failed, left 127.0.0.1 or returned >= 400:\n" + "\n".join(bad)
    )


@pytest.mark.parametrize("page", PAGES)
def test_no_raw_tex_in_the_text(site, page):
    raw = site.report(page).dom["raw_tex"]
    assert not raw, (
        "TeX that MathJax did not typeset, in the visible text:\n" + "\n".join(raw)
    )


@pytest.mark.parametrize("page", PAGES)
def test_no_raw_myst_syntax_in_the_text(site, page):
    raw = site.report(page).dom["raw_myst"]
    assert raw is None, (
        "MyST syntax shown as text (a directive fence that did not open, e.g. a "
        "backtick in its "
        f"title, or a role that did not parse): {raw!r}"
    )


# A reference role that renders its target's kind ({prf:ref} gives "Proposition 3")
# after the same word typed in the source reads "Proposition Proposition 3".
REFERENCE_WORDS = (
    "Proposition Theorem Definition Lemma Corollary Remark Exercise Algorithm Example "
    "Section Figure Equation Table"
).split()
# A reference renders its own word ("Exercise 3"), so "Exercise Exercise 3" and
# "exercise Exercise 3" are doubled; "example example" in a table is not a reference.
DOUBLED = re.compile(
    "|".join(rf"\b(?:{word}|{word.lower()})\s+{word}\b" for word in REFERENCE_WORDS)
)


@pytest.mark.parametrize("page", PAGES)
def test_no_reference_word_is_doubled(page):
    html = (SITE / page).read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    doubled = [m.group(0) for m in DOUBLED.finditer(text)]
    assert not doubled, f"doubled words before a reference: {doubled}"


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset(site, page):
    dom = site.report(page).dom
    if dom["math_count"]:
        assert dom["mathjax_loaded"], "the page has math but MathJax did not load"
    assert not dom["math_untypeset"], (
        f"math elements without MathJax output: {dom['math_untypeset']}"
    )
    assert not dom["math_errors"], f"MathJax errors (red TeX): {dom['math_errors']}"


@pytest.mark.parametrize("page", PAGES)
def test_images_load(site, page):
    broken = [i["src"] for i in site.report(page).dom["images"] if not i["ok"]]
    assert not broken, f"images that did not load (naturalWidth 0): {broken}"


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_has_meaningful_alt_text(site, page):
    """A screen reader reads a figure's alt text: a sentence, not a file name."""
    missing = [
        f"{i['src'].split('/')[-1]} (alt: {i['alt']!r})"
        for i in site.report(page).dom["images"]
        if i["in_article"]
        and (len(i["alt"].split()) < 4 or re.search(r"\.(png|svg|jpe?g)$", i["alt"]))
    ]
    assert not missing, f"figures without alt text of four words or more: {missing}"


# The book's figures are drawn at 100 dpi with 11 pt text (15 px); shrunk by more than
# this factor to fit the ~690 px column, that text falls below ~9 px on the page.
MAX_FIGURE_SHRINK = 1.75


@pytest.mark.parametrize("page", PAGES)
def test_figures_are_not_shrunk_unreadably(site, page):
    shrunk = [
        f"{f['src']}: {f['natural']} px drawn, {f['shown']} px shown "
        f"(x{f['scale']:.2f})"
        for f in site.report(page).dom["figure_scales"]
        if f["scale"] > MAX_FIGURE_SHRINK
    ]
    assert not shrunk, (
        "figures so wide that the page shrinks them (and their text) by more than "
        f"x{MAX_FIGURE_SHRINK} "
        "(use a figsize of at most ~7 in wide, or larger fonts):\n" + "\n".join(shrunk)
    )


@pytest.mark.parametrize("page", PAGES)
def test_glue_values_render(site, page):
    dom = site.report(page).dom
    assert not dom["glue_literal"], f"glue syntax left as text: {dom['glue_literal']}"
    pasted = [p for p in dom["pasted_text"] if "pasted-text" in p["cls"].split()]
    empty = [p for p in pasted if p["text"].lower() in ("", "nan", "-nan", "none")]
    assert not empty, f"glued values that render empty or as NaN/None: {empty}"
    source = page_source(page)
    if source is not None:
        wanted = glue_text_roles(source)
        assert len(pasted) == wanted, (
            f"the source has {wanted} {{glue:text}} roles but the page shows "
            f"{len(pasted)} pasted values "
            "(a glue key that did not resolve renders nothing)"
        )


@pytest.mark.parametrize("page", CHAPTERS)
def test_glued_values_read_as_ordinary_text(site, page):
    """myst-nb draws pasted values bold; the book's CSS makes a glued number or word
    read like the words around it (a reader need not see which were computed)."""
    pasted = [
        p
        for p in site.report(page).dom["pasted_text"]
        if "pasted-text" in p["cls"].split()
    ]
    loud = [p["text"] for p in pasted if p["weight"] != p["parent_weight"]]
    assert not loud, f"glued values in another weight than their sentence: {loud[:5]}"


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_and_anchors_resolve(site, page):
    report = site.report(page)
    live_ids = set(report.dom["live_ids"])
    broken = []
    for url in report.dom["links"]:
        scheme = urlsplit(url).scheme
        if scheme == "file":
            broken.append(f"{url}: a file:// link")
            continue
        target = internal_target(url, site.base)
        if target is None:
            continue  # external (not fetched offline) or mailto:/javascript:
        path, fragment = target
        if path == "" or path.endswith("/"):
            path += "index.html"
        if not (SITE / path).is_file():
            broken.append(f"{url}: no file {path}")
            continue
        if fragment and path.endswith(".html"):
            ids = static_ids(path) | (live_ids if path == page else set())
            if fragment not in ids:
                broken.append(f"{url}: no id {fragment!r} in {path}")
    assert not broken, "broken internal links:\n" + "\n".join(sorted(set(broken)))


@pytest.mark.parametrize("page", PAGES)
def test_no_empty_widget_boxes(site, page):
    dom = site.report(page).dom
    assert dom["widget_boxes"] == 0, (
        f"{dom['widget_boxes']} widget elements on the static page "
        "(they need a kernel: tag the cell remove-output)"
    )
    assert dom["widget_repr"] is None, (
        f"a widget's text repr leaked into the page: {dom['widget_repr']!r}"
    )


@pytest.mark.parametrize("page", PAGES)
def test_nothing_overflows_the_text_column(site, page):
    dom = site.report(page).dom
    assert dom["page_width"] <= dom["viewport_width"], (
        f"the page scrolls sideways: {dom['page_width']} px wide in a "
        f"{dom['viewport_width']} px window"
    )
    assert not dom["overflowing"], "content wider than the text column:\n" + "\n".join(
        dom["overflowing"]
    )
    assert not dom["clipped_math"], (
        "equations or tables cut off at the edge of their box:\n"
        + "\n".join(dom["clipped_math"])
    )


@pytest.mark.parametrize("page", PAGES)
def test_no_stray_python_reprs_in_outputs(site, page):
    stray = site.report(page).dom["stray_repr"]
    assert not stray, (
        "cells that print a Python object's repr (end the cell with `;` or assign the "
        "value):\n" + "\n".join(stray)
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_nothing_overflows_on_a_phone(site, chapter):
    phone = site.report(chapter).phone
    assert phone["page_width"] <= phone["viewport_width"], (
        f"on a phone the page scrolls sideways: {phone['page_width']} px wide in a "
        f"{phone['viewport_width']} px window"
    )
    assert not phone["overflowing"], (
        "on a phone, content wider than the text column:\n"
        + "\n".join(phone["overflowing"])
    )


# --- every chapter
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_colab_link_opens_this_chapters_notebook_at_the_books_ref(site, chapter):
    repo = book_config()["repository"]
    owner_repo = urlsplit(repo["url"]).path.strip("/").removesuffix(".git")
    prefix = repo.get("path_to_book", "").strip("/")
    notebook = "/".join(x for x in (prefix, _stem(chapter) + ".ipynb") if x)
    # main, or on a release's commit its tag (tools/release.py): the notebook is there
    ref = repo.get("branch")
    assert ref == "main" or re.fullmatch(r"v\d+\.\d+\.\d+", ref or ""), (
        f"_config.yml repository.branch is {ref!r}, expected 'main' or a release tag"
    )
    expected = (
        f"https://colab.research.google.com/github/{owner_repo}/blob/{ref}/{notebook}"
    )
    links = site.report(chapter).dom["colab_links"]
    assert links == [expected], (
        f"Colab launch links {links}, expected exactly [{expected}]"
    )
    on_disk = ROOT / _stem(chapter).removeprefix(prefix + "/" if prefix else "")
    on_disk = on_disk.with_suffix(".ipynb")
    assert on_disk.is_file(), (
        f"the Colab link opens {notebook}, which is not in the repository"
    )
    if (ROOT / ".git").exists():
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", str(on_disk.relative_to(ROOT))],
            cwd=ROOT,
            capture_output=True,
        )
        assert tracked.returncode == 0, (
            f"{notebook} is not committed: Colab would not find it on main"
        )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_download_button_offers_the_notebook(site, chapter):
    download = site.report(chapter).download
    assert download, "no 'Download notebook file' (.ipynb) button on the page"
    assert Path(urlsplit(download["url"]).path).name == Path(chapter).stem + ".ipynb", (
        download["url"]
    )
    assert download["status"] == 200, (
        f"{download['url']} answered HTTP {download['status']}"
    )
    notebook = json.loads(download["body"])
    assert notebook.get("nbformat") == 4, (
        f"not an nbformat-4 notebook: {download['url']}"
    )
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    sources = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in notebook["cells"]
    ]
    assert any(s.startswith(SETUP_MARKER) for s in sources), (
        "the downloaded notebook lacks the setup cell"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_theorem_and_proof_blocks_render(site, chapter):
    dom = site.report(chapter).dom
    _, directives = prose_and_directives(page_source(chapter) or "")
    wanted = Counter(d.split(":", 1)[1] for d in directives if d.startswith("prf:"))
    shown = Counter(b["kind"] for b in dom["prf_blocks"])
    assert shown == wanted, (
        f"prf blocks in the source {dict(wanted)}, rendered {dict(shown)}"
    )
    assert any(k != "proof" for k in shown), (
        "no theorem/definition/lemma block in the chapter"
    )
    for block in dom["prf_blocks"]:
        assert block["body"] > 0, f"an empty {block['kind']} block: {block}"
        if block["kind"] != "proof":
            assert block["title"], (
                f"a {block['kind']} block without its numbered title: {block}"
            )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_exercises_and_dropdown_solutions_render(site, chapter):
    report = site.report(chapter)
    dom = report.dom
    _, directives = prose_and_directives(page_source(chapter) or "")
    assert len(dom["exercises"]) == directives.count("exercise") >= 1, (
        f"{directives.count('exercise')} exercises in the source, "
        f"{len(dom['exercises'])} rendered (at least 1 expected)"
    )
    assert len(dom["solutions"]) == directives.count("solution") >= 1, (
        f"{directives.count('solution')} solutions in the source, "
        f"{len(dom['solutions'])} rendered (at least 1 expected)"
    )
    for ex in dom["exercises"]:
        assert ex["title"].startswith("Exercise") and ex["body"] > 0, (
            f"exercise renders wrong: {ex}"
        )
    for sol in dom["solutions"]:
        assert sol["title"].startswith("Solution to") and sol["body"] > 0, (
            f"solution renders wrong: {sol}"
        )
    for state in report.solutions:
        assert state["closed_at_first"] and state["opens_on_click"], (
            f"solution dropdown misbehaves: {state}"
        )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reproduction_table_is_present(site, chapter):
    tables = site.report(chapter).dom["claims_tables"]
    assert tables, "no reproduction table (table.claims-table) in the chapter"
    claims = {c["id"]: c for c in json.loads((SITE / "claims.json").read_text())}
    for table in tables:
        assert table["rows"] >= 1, "an empty reproduction table"
        for claim_id, verdict in zip(table["ids"], table["verdicts"], strict=True):
            assert claim_id in claims, (
                f"claim {claim_id} is in the chapter's table but not in claims.json"
            )
            assert verdict.startswith(VERDICT_MARKS[claims[claim_id]["verdict"]]), (
                f"claim {claim_id}: the table says {verdict!r}, claims.json "
                f"{claims[claim_id]['verdict']!r}"
            )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_widget_cells_show_their_explorer_and_keep_a_static_counterpart(site, chapter):
    """On the site each widget cell shows its explorer's frames (test_explorers_on_site
    moves the sliders); the static small multiples drawn earlier by the same
    function stay, for the student edition and the PDF, which drop the explorer."""
    cells = site.report(chapter).dom["widget_cells"]
    assert cells, "no interactive cell (icl_lib.widgets.explore) in the chapter"
    for cell in cells:
        assert not cell["remove_output"] and cell["live_figures"] == 1, (
            "widget cell without its explorer on the site (tagged remove-output, or "
            f"not built with ICL_LIVE_FIGURES=1): {cell['source']!r}"
        )
        assert cell["plot_functions"], (
            f"cannot tell which function the widget plots: {cell['source']!r}"
        )
        assert cell["static_counterpart_images"] >= 1, (
            f"no earlier figure drawn by {cell['plot_functions']} (the widget's static "
            f"counterpart): {cell['source']!r}"
        )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figures_stay_visible_in_dark_mode(site, chapter):
    dark = site.report(chapter).dark
    assert dark["theme"] == "dark"
    vanishing = [i for i in dark["images"] if not i["visible"]]
    assert not vanishing, (
        f"transparent figures without a light background in dark mode: {vanishing}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_search_finds_the_chapter_offline(site, chapter):
    title = site.report(chapter).dom["title"].split(" \u2014 ")[0]
    words = re.findall(r"[A-Za-z][a-z]{4,}", title)
    assert words, f"no searchable word in the title {title!r}"
    query = max(words, key=len)
    result = site.search(query)
    assert not result["errors"], result["errors"]
    pages = {urlsplit(h).path.lstrip("/") for h in result["hits"]}
    assert chapter in pages, (
        f"searching {query!r} did not find {chapter}: {result['progress']!r}, hits "
        f"{sorted(pages)}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_full_page_screenshots_are_saved(site, chapter):
    shots = site.report(chapter).screenshots
    assert len(shots) == 2, shots
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{shot} is not a PNG"
