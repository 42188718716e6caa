"""Sphinx extension: gather the chapters' reproduction claims.

Chapters save their claims to ``_build/claims/<chapter>.json`` when they execute (see
``icl_lib.claims``). This extension, run after every notebook has executed:

- fills each ``{claims-table}`` directive (the reproducibility page) with all claims,
  one table per kind (identities, reproductions, goals);
- writes ``claims.json`` next to the built HTML: a list of objects with the keys
  ``id, chapter, kind, description, paper, book, tolerance, verdict`` (plus
  ``citation``, ``paper_note``).
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from icl_lib.claims import KINDS, claims_html, load_claims

logger = logging.getLogger(__name__)
TITLES = {
    "identity": "Identities (exact equations, checked in float64)",
    "monte_carlo": "Monte Carlo checks (a closed form against its estimate, within "
    "three standard errors)",
    "reproduction": "Reproductions (the paper's setup and number)",
    "goal": "Goals (the book's targets and baselines; papers' numbers as context)",
}


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
    passed = sum(c.verdict == "pass" for c in claims)
    undecided = sum(c.verdict == "undecided" for c in claims)
    summary = f"{passed} of {len(claims)} claims pass on this build"
    if undecided:  # within two standard errors of their goal
        summary += f"; {undecided} undecided by their sample"
    content = [nodes.paragraph(text=summary + ".")]
    for kind in KINDS:
        group = [c for c in claims if c.kind == kind]
        if not group:
            continue
        ok = sum(c.verdict == "pass" for c in group)
        content.append(nodes.rubric(text=f"{TITLES[kind]}: {ok} of {len(group)} pass"))
        content.append(
            nodes.raw(
                "",
                claims_html(group, with_chapter=True, with_kind=False),
                format="html",
            )
        )
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
