"""Sphinx extension: gather the chapters' reproduction claims.

Chapters save their claims to ``_build/claims/<chapter>.json`` when they execute (see
``icl_lib.claims``). This extension, run after every notebook has executed:

- checks the whole ledger (``icl_lib.claims.check_ledger``): a goal without an
  alternative that misses its mark, a verdict that does not follow from its number, or
  a control's goal that passes although the control does not fail, stops the build;
- fills each ``{claims-table}`` directive (the reproducibility page) with all claims,
  goals (the findings) first, controls and checks apart, after a line of counts;
- writes ``claims.json`` next to the built HTML: a list of objects with the fields of
  ``icl_lib.claims.Claim``.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from icl_lib.claims import check_ledger, grouped_claims_html, load_claims

logger = logging.getLogger(__name__)


class claims_placeholder(nodes.General, nodes.Element):
    """Replaced by the claims table once every chapter has executed."""


class ClaimsTable(SphinxDirective):
    has_content = False

    def run(self):
        return [claims_placeholder()]


def _claims_dir(app) -> Path:
    return Path(app.srcdir) / "_build" / "claims"


def _load(app):
    folder = _claims_dir(app)
    claims = load_claims(folder) if folder.exists() else []
    try:
        check_ledger(claims)
    except ValueError as error:
        logger.warning(f"claims: {error}")
    if not claims:
        logger.warning(
            f"claims: no claims under {folder}; build from a clean cache (make book) "
            "so every chapter executes"
        )
    return claims


def fill_tables(app, doctree, docname):
    placeholders = list(doctree.findall(claims_placeholder))
    if not placeholders:
        return
    claims = _load(app)
    content = [nodes.raw("", grouped_claims_html(claims), format="html")]
    for node in placeholders:
        node.replace_self([n.deepcopy() for n in content])


def write_json(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    claims = _load(app)
    out = Path(app.outdir) / "claims.json"
    out.write_text(json.dumps([c.to_dict() for c in claims], indent=1) + "\n")


def setup(app):
    app.add_node(claims_placeholder)
    app.add_directive("claims-table", ClaimsTable)
    app.connect("doctree-resolved", fill_tables)
    app.connect("build-finished", write_json)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
