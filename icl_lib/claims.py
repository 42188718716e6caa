"""Claims: the book's measured number beside the paper's, with a criterion and a
verdict.

Every claim has a *kind*, which says what its verdict compares:

* ``identity``: an exact equation, checked in float64 (the criterion is at most
  ``IDENTITY_TOLERANCE``);
* ``reproduction``: the paper's setup and the paper's number, with a tolerance that the
  chapter justifies (e.g. by the seed-to-seed spread);
* ``goal``: the book's own target or a baseline the book must beat; a paper's number
  from another setup is shown as context, never used as the pass mark;
* ``monte_carlo``: a closed form checked against a Monte Carlo estimate on the page's
  sample, which passes when the estimate lies within ``z`` of its standard errors of the
  closed form (the standard error is reported with the claim).

Each chapter collects its claims in one :class:`ClaimSet`, shows it as a table and saves
it as ``_build/claims/<chapter>.json``; the book's Sphinx extension
(``_ext/claims_table.py``) gathers those files into the reproducibility page and
``_build/html/claims.json``. A claim's verdict is computed from the measured value and
its criterion, never typed. A measured value with a standard error (``se``) that lies
within two standard errors of its goal gets the verdict ``undecided``: the sample does
not say on which side of the goal the model is.
"""

from __future__ import annotations

import html
import json
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

VERDICTS = ("pass", "miss", "undecided")
VERDICT_MARKS = {"pass": "✅ pass", "miss": "❌ miss", "undecided": "❔ undecided"}
KINDS = ("identity", "monte_carlo", "reproduction", "goal")
MONTE_CARLO_Z = (
    3.0  # standard errors a Monte Carlo estimate may lie from its closed form
)
IDENTITY_TOLERANCE = (
    1e-8  # the loosest criterion an identity may have (float64 rounding)
)


@dataclass(frozen=True)
class Claim:
    """One reproduction claim (the keys of ``claims.json``, plus ``citation`` and
    ``paper_note``)."""

    id: str  # "<chapter>.<name>", unique across the book
    chapter: str  # the chapter's short name, e.g. "overview"
    kind: str  # "identity", "monte_carlo", "reproduction" or "goal" (see KINDS)
    description: str  # what is measured, in one sentence
    paper: float | None  # the paper's number, or None where the paper reports none
    book: float  # measured on this build
    tolerance: str  # the criterion in words, e.g. "<= 1.2" or "within 10% of the paper"
    verdict: str  # "pass", "miss" or "undecided" (see VERDICTS)
    citation: str = (
        ""  # reference of the paper's number, e.g. "Garg et al. 2022, Fig. 2"
    )
    paper_note: str = ""  # where in the paper, or why there is no number
    se: float | None = None  # standard error of ``book``, where it is a sample mean

    def __post_init__(self):
        # Every field checked, so that a claim read back from JSON (load_claims) or
        # built by hand holds what a ClaimSet would have written.
        for name in ("id", "chapter", "kind", "description", "tolerance", "verdict"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"{name}: expected a non-empty string, got {value!r}")
        for name in ("citation", "paper_note"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(
                    f"{name}: expected a string, got {getattr(self, name)!r}"
                )
        if not self.chapter.isidentifier():
            raise ValueError(
                f"chapter: expected a short identifier such as 'overview', got "
                f"{self.chapter!r}"
            )
        if not self.id.startswith(self.chapter + ".") or self.id == self.chapter + ".":
            raise ValueError(
                f"id: expected '{self.chapter}.<name>' for chapter {self.chapter!r}, "
                f"got {self.id!r}"
            )
        if self.kind not in KINDS:
            raise ValueError(
                f"kind: expected one of {KINDS} for {self.id}, got {self.kind!r}"
            )
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"verdict: expected one of {VERDICTS} for {self.id}, got "
                f"{self.verdict!r}"
            )
        _real("book", self.book, self.id)
        if self.paper is not None:
            _real("paper", self.paper, self.id)
        if self.kind == "reproduction" and (self.paper is None or not self.citation):
            raise ValueError(
                f"paper, citation: a reproduction claim ({self.id}) compares with a "
                f"paper's number in the paper's setup; expected both, got "
                f"{self.paper!r}, {self.citation!r}"
            )
        if self.se is not None and (
            self.kind not in ("goal", "monte_carlo")
            or _real("se", self.se, self.id) < 0
        ):
            raise ValueError(
                f"se: expected a finite standard error >= 0 of a goal or monte_carlo "
                f"claim ({self.id}), got {self.se} for a {self.kind} claim"
            )
        if self.kind == "monte_carlo" and not (
            self.se is not None and self.se > 0 and self.paper is not None
        ):
            raise ValueError(
                f"se, paper: a monte_carlo claim ({self.id}) compares an estimate with "
                f"its closed form; expected a standard error > 0 and the closed form, "
                f"got se={self.se!r}, paper={self.paper!r}"
            )
        if self.verdict == "undecided" and self.se is None:
            raise ValueError(
                f"verdict: 'undecided' needs a standard error ({self.id}), got se=None"
            )

    def to_dict(self) -> dict:
        return asdict(self)


def _real(name: str, value, id: str) -> float:
    """``value`` as a finite float: a Python, NumPy or 0-d torch number, never a bool
    or a string (``float("0.05")`` would turn a typed number into a measurement)."""
    if hasattr(value, "item") and not isinstance(value, numbers.Number):
        # NumPy scalars, arrays and tensors of one element (what float() would take)
        size = value.numel() if hasattr(value, "numel") else getattr(value, "size", 0)
        if size == 1:
            value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name}: expected a real number for {id}, got {type(value).__name__} "
            f"{value!r}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number for {id}, got {value}")
    return value


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.4g}"
    return f"{x:.2e}"


class ClaimSet:
    """The claims of one chapter. ``at_most``, ``at_least`` and ``close_to`` record a
    claim and return nothing (a notebook cell that ends with one prints no repr);
    ``claims[id]`` reads it back.

    Example::

        claims = ClaimSet("overview")
        claims.at_most("overview.noiseless_error_at_2d", "error / d at k = 2d",
                       kind="goal", book=0.01, goal=0.05, paper=0.0006,
                       citation="Garg et al. 2022", paper_note="d = 20, 12 layers")
        claims.table()   # an HTML table for the notebook
        claims.save()    # _build/claims/overview.json when run inside the book
    """

    def __init__(self, chapter: str):
        if not isinstance(chapter, str) or not chapter.isidentifier():
            raise ValueError(
                "chapter: expected a short identifier such as 'overview', got "
                f"{chapter!r}"
            )
        self.chapter = chapter
        self.claims: list[Claim] = []

    def _add(
        self,
        id,
        kind,
        description,
        book,
        tolerance,
        ok,
        paper=None,
        citation="",
        paper_note="",
        se=None,
        goal=None,
    ) -> None:
        if not isinstance(id, str) or not id.startswith(self.chapter + "."):
            raise ValueError(
                f"id: expected a string starting with '{self.chapter}.', got {id!r}"
            )
        if any(c.id == id for c in self.claims):
            raise ValueError(f"id: {id!r} is already claimed in this chapter")
        # kind, and a reproduction's paper and citation, are checked by Claim itself
        book = _real("book", book, id)
        verdict = "pass" if ok else "miss"
        if se is not None and kind == "monte_carlo":
            se = _real("se", se, id)
        elif se is not None:
            se = _real("se", se, id)
            if kind != "goal" or se < 0:
                raise ValueError(
                    "se: expected a finite standard error >= 0 of a goal claim "
                    f"({id}), "
                    f"got {se} for a {kind} claim"
                )
            if abs(book - goal) < 2 * se:
                verdict = "undecided"
            tolerance += f" (undecided within 2 se = {_fmt(2 * se)})"
        claim = Claim(
            id=id,
            chapter=self.chapter,
            kind=kind,
            description=description,
            paper=None if paper is None else _real("paper", paper, id),
            book=book,
            tolerance=tolerance,
            verdict=verdict,
            citation=citation,
            paper_note=paper_note,
            se=se,
        )
        self.claims.append(claim)

    def monte_carlo(
        self,
        id,
        description,
        *,
        estimate,
        se,
        closed_form,
        z=MONTE_CARLO_Z,
        citation="",
        paper_note="",
    ) -> None:
        """A ``monte_carlo`` claim: passes when
        ``|estimate - closed_form| <= z * se``.

        ``estimate`` is a sample mean on the page's prompts and ``se`` its standard
        error; a tolerance in standard errors, unlike a relative one, tightens as the
        sample grows, so a wrong closed form cannot hide behind it.
        """
        se = _real("se", se, id)
        if not se > 0:
            raise ValueError(f"se: expected a standard error > 0 for {id}, got {se}")
        z = _real("z", z, id)
        if not z > 0:
            raise ValueError(f"z: expected a number of standard errors > 0, got {z}")
        closed_form = _real("closed_form", closed_form, id)
        ok = abs(_real("estimate", estimate, id) - closed_form) <= z * se
        self._add(
            id,
            "monte_carlo",
            description,
            estimate,
            f"within {z:g} se (se = {_fmt(se)}) of the closed form",
            ok,
            closed_form,
            citation,
            paper_note,
            se=se,
        )

    def at_most(self, id, description, *, kind, book, goal, **context) -> None:
        """Passes when ``book <= goal``; an identity needs a float64-level goal.

        ``context``: ``paper``, ``citation`` and ``paper_note`` (see :class:`Claim`),
        and for a goal ``se``, the standard error of ``book``: within ``2 se`` of the
        goal the verdict is ``undecided``.
        """
        goal = _real("goal", goal, id)
        if kind == "identity" and not goal <= IDENTITY_TOLERANCE:
            raise ValueError(
                f"goal: an identity ({id}) is checked to float64 rounding, expected at "
                f"most {IDENTITY_TOLERANCE}, got {goal}"
            )
        ok = _real("book", book, id) <= goal
        self._add(
            id, kind, description, book, f"<= {_fmt(goal)}", ok, goal=goal, **context
        )

    def at_least(self, id, description, *, kind, book, goal, **context) -> None:
        """Passes when ``book >= goal`` (an identity is an error: use ``at_most``)."""
        if kind == "identity":
            raise ValueError(
                f"kind: an identity ({id}) is an error at most {IDENTITY_TOLERANCE}; "
                "record it with at_most"
            )
        goal = _real("goal", goal, id)
        ok = _real("book", book, id) >= goal
        self._add(
            id, kind, description, book, f">= {_fmt(goal)}", ok, goal=goal, **context
        )

    def close_to(
        self,
        id,
        description,
        *,
        kind,
        book,
        paper,
        rel_tol=None,
        abs_tol=None,
        citation="",
        paper_note="",
    ) -> None:
        """Passes when ``|book - paper| <= rel_tol * |paper|`` (or ``<= abs_tol``).

        For a ``goal`` the reference ``paper`` is the book's own target value.
        """
        if (rel_tol is None) == (abs_tol is None):
            raise ValueError(
                "rel_tol, abs_tol: expected exactly one of them, got "
                f"rel_tol={rel_tol!r}, abs_tol={abs_tol!r}"
            )
        if kind == "identity" and not (abs_tol or 1.0) <= IDENTITY_TOLERANCE:
            raise ValueError(
                f"abs_tol: an identity ({id}) is checked to float64 rounding, expected "
                f"at most {IDENTITY_TOLERANCE}, got abs_tol={abs_tol!r}"
            )
        for name, tol in (("rel_tol", rel_tol), ("abs_tol", abs_tol)):
            if tol is not None and _real(name, tol, id) < 0:
                raise ValueError(
                    f"{name}: expected a tolerance >= 0 for {id}, got {tol}"
                )
        paper = _real("paper", paper, id)
        gap = abs(_real("book", book, id) - paper)
        reference = "the target" if kind == "goal" else "the paper"
        if rel_tol is not None:
            criterion, ok = (
                f"within {rel_tol:.0%} of {reference}",
                gap <= rel_tol * abs(paper),
            )
        else:
            criterion, ok = f"within {_fmt(abs_tol)} of {reference}", gap <= abs_tol
        self._add(
            id, kind, description, book, criterion, ok, paper, citation, paper_note
        )

    def __getitem__(self, id: str) -> Claim:
        for claim in self.claims:
            if claim.id == id:
                return claim
        raise KeyError(f"id: no claim {id!r} in chapter {self.chapter!r}")

    def cannot_decide(self, id: str, reason: str) -> None:
        """Set goal claim ``id`` to ``undecided`` because its pass mark cannot separate
        the claim from its alternative on this evidence (e.g. a negative control that
        should fail the mark passes it); ``reason`` is appended to its criterion."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"reason: expected a non-empty string, got {reason!r}")
        claim = self[id]
        if claim.kind != "goal" or claim.se is None:
            raise ValueError(
                f"id: only a goal claim with a standard error can be undecided, got "
                f"{id!r} ({claim.kind}, se={claim.se})"
            )
        i = self.claims.index(claim)
        self.claims[i] = replace(
            claim,
            verdict="undecided",
            tolerance=f"{claim.tolerance}; cannot be decided: {reason}",
        )

    def table(self):
        """The claims as an HTML table (an ``IPython.display.HTML`` object)."""
        from IPython.display import HTML

        return HTML(claims_html(self.claims))

    def summary(self, rows: Mapping[str, str]):
        """A small HTML table of some claims for the text: ``label -> claim id``, one
        row each with the measured value, the criterion and the verdict (an
        ``IPython.display.HTML`` object)."""
        from IPython.display import HTML

        if not isinstance(rows, Mapping) or not rows:
            raise ValueError(
                f"rows: expected a non-empty mapping label -> claim id, got {rows!r}"
            )
        body = []
        for label, id in rows.items():
            claim = self[id]
            cells = (
                label,
                _fmt(claim.book),
                claim.tolerance,
                VERDICT_MARKS[claim.verdict],
            )
            body.append(
                "<tr>"
                + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
                + "</tr>"
            )
        head = "".join(
            f"<th>{t}</th>" for t in ("quantity", "this model", "goal", "verdict")
        )
        return HTML(
            f'<table class="claims-summary"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
        )

    def save(self, directory=None) -> Path | None:
        """Write ``<directory>/<chapter>.json``; the default is the book's
        ``_build/claims``.

        Outside the book (no ``_config.yml`` above the working directory and no
        ``ICL_CLAIMS_DIR``) there is nowhere to collect claims: nothing is written and
        None returned.
        """
        if directory is not None and not isinstance(directory, (str, os.PathLike)):
            raise TypeError(
                f"directory: expected a path or None, got {type(directory).__name__}"
            )
        directory = Path(directory) if directory is not None else default_claims_dir()
        if directory is None:
            return None
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.chapter}.json"
        path.write_text(json.dumps([c.to_dict() for c in self.claims], indent=1) + "\n")
        return path


def default_claims_dir() -> Path | None:
    """``$ICL_CLAIMS_DIR``, else ``_build/claims`` of the book that contains the working
    directory."""
    if os.environ.get("ICL_CLAIMS_DIR"):
        return Path(os.environ["ICL_CLAIMS_DIR"])
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "_config.yml").exists() and (folder / "_toc.yml").exists():
            return folder / "_build" / "claims"
    return None


def load_claims(directory) -> list[Claim]:
    """Every claim saved under ``directory``, checked against the schema, sorted by file
    name."""
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory: expected a path, got {type(directory).__name__}")
    if not Path(directory).is_dir():
        raise ValueError(f"directory: expected an existing folder, got {directory}")
    claims = []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            rows = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from error
        if not isinstance(rows, list):
            raise ValueError(
                f"{path}: expected a list of claims, got a JSON {type(rows).__name__}"
            )
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ValueError(
                    f"{path}: claim {i}: expected an object, got {type(row).__name__}"
                )
            try:
                claims.append(Claim(**row))  # Claim checks every field
            except (TypeError, ValueError) as error:
                raise ValueError(f"{path}: claim {i}: {error}") from error
    ids = [c.id for c in claims]
    if len(ids) != len(set(ids)):
        raise ValueError(
            f"{directory}: duplicate claim ids "
            f"{sorted({i for i in ids if ids.count(i) > 1})}"
        )
    return claims


def claims_html(claims, *, with_chapter: bool = False, with_kind: bool = True) -> str:
    """An HTML table of ``claims`` (used by the chapters and the reproducibility
    page, which groups the claims by kind and so leaves the kind column out).

    Every cell carries its column's class (``claim-id``, ``claim-paper``, ...), which
    the book's stylesheet uses to fit the table in the text column."""
    if isinstance(claims, (str, bytes)) or not hasattr(claims, "__iter__"):
        raise TypeError(
            f"claims: expected a list of Claim, got {type(claims).__name__}"
        )
    for name, flag in (("with_chapter", with_chapter), ("with_kind", with_kind)):
        if not isinstance(flag, bool):
            raise TypeError(
                f"{name}: expected True or False, got {type(flag).__name__}"
            )
    claims = list(claims)
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(
                f"claims: expected Claim entries, got {type(claim).__name__}"
            )
    columns = [
        ("chapter", "chapter"),
        ("id", "claim"),
        ("kind", "kind"),
        ("what", "what is measured"),
        ("paper", "paper"),
        ("book", "book"),
        ("criterion", "criterion"),
        ("verdict", "verdict"),
    ]
    shown = [
        (key, title)
        for key, title in columns
        if (key != "chapter" or with_chapter) and (key != "kind" or with_kind)
    ]
    rows = []
    for c in claims:
        paper = _fmt(c.paper) + (f" [{c.citation}]" if c.citation else "")
        if c.paper_note:
            paper += f" ({c.paper_note})"
        values = {
            "chapter": c.chapter,
            "id": c.id,
            "kind": c.kind,
            "what": c.description,
            "paper": paper,
            "book": _fmt(c.book),
            "criterion": c.tolerance,
            "verdict": VERDICT_MARKS[c.verdict],
        }
        rows.append(
            "<tr>"
            + "".join(
                f'<td class="claim-{key}">{html.escape(str(values[key]))}</td>'
                for key, _ in shown
            )
            + "</tr>"
        )
    header = (
        "<tr>"
        + "".join(f'<th class="claim-{key}">{title}</th>' for key, title in shown)
        + "</tr>"
    )
    return (
        f'<table class="claims-table"><thead>{header}</thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
