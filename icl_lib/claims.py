"""Claims: the book's measured number beside what it is compared with, a mark, the
mark's reason and a verdict.

Every claim has a *kind*, which says what its verdict means:

* ``identity``: an exact equation, checked in float64 (the mark is at most
  ``IDENTITY_TOLERANCE``);
* ``monte_carlo``: a closed form checked against a Monte Carlo estimate on the page's
  sample; it passes when the estimate lies within ``z`` of its standard errors of the
  closed form;
* ``reproduction``: the paper's setup and the number the paper prints, with a tolerance
  that the chapter justifies;
* ``goal``: a finding of the book. A goal names the *alternative* it rules out (a
  learner or a hypothesis, with its value on the same prompts) and the reason for its
  mark; the alternative must fail the mark (or sit on it, when the goal's standard
  error decides: better than the alternative by more than ``z`` of them), or
  :class:`ClaimSet` refuses the goal. A
  goal decided on sampled prompts carries its standard error; one whose number is not a
  sample mean says why (``se_note``);
* ``control``: a learner that must fail the mark of the goal it belongs to (``of``). It
  "fails, as it must", or it passes and the goal cannot separate: a goal that the
  book's learner passed is then ``undecided`` (a miss stays a miss: the learner fails
  even what the control does). A rival the page names but could not measure (a control
  run not trained, no positive control to show that the mark can be met) is the goal's
  ``confound``, and the goal is ``undecided`` whatever it reads;
* ``check``: a check of the setup, or of a proposition's hypothesis on the data. It
  must hold for the chapter's argument to apply, but it is not a finding.

Goals alone count as findings (:func:`ledger_counts`); controls and checks are listed
apart. A paper's number (``paper``) is only a number the paper prints, with where it is
printed (``paper_note``); a target computed on the page is the claim's ``target``.

Each chapter collects its claims in one :class:`ClaimSet`, shows it as tables and saves
it as ``_build/claims/<chapter>.json``; the book's Sphinx extension
(``_ext/claims_table.py``) gathers those files into the reproducibility page and
``_build/html/claims.json`` after :func:`check_ledger` has checked the whole ledger. A
claim's verdict is computed from the measured value and its mark, never typed. A value
with a standard error (``se``) within ``z`` standard errors (2 unless the chapter states
a correction for several groups) of its mark is ``undecided``: the sample does not say
on which side of the mark the learner is.
"""

from __future__ import annotations

import html
import json
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ._format import scientific

KINDS = ("identity", "monte_carlo", "reproduction", "goal", "control", "check")
VERDICTS = ("pass", "miss", "undecided")
CONTROL_VERDICTS = ("fails", "passes", "undecided")
VERDICT_MARKS = {  # how the tables show each verdict
    "pass": "✅ met",
    "miss": "❌ not met",
    "undecided": "❔ undecided",  # followed by why (claims_html)
    "fails": "✅ fails, as a control should",
    "passes": "❌ meets the mark too: the mark cannot tell them apart",
}
MONTE_CARLO_Z = (
    3.0  # standard errors a Monte Carlo estimate may lie from its closed form
)
UNDECIDED_Z = 2.0  # standard errors within which a goal's verdict is undecided
IDENTITY_TOLERANCE = 1e-8  # the loosest mark an identity may have (float64 rounding)
# A goal whose alternative cannot be computed says why, after this prefix.
NO_ALTERNATIVE = "none computable: "
# Where a paper prints a number: paper_note must name the place.
PAPER_PLACE = re.compile(
    r"\b(fig(ure)?s?|tables?|tab|sec(tion)?s?|§|eqs?|equations?|thm|theorems?|"
    r"prop(osition)?|lemma|corollary|appendix|app|p|pp|page|abstract|algorithm)\b\.?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Claim:
    """One claim: the keys of ``claims.json``."""

    id: str  # "<chapter>.<name>", unique across the book
    chapter: str  # the chapter's short name, e.g. "overview"
    kind: str  # one of KINDS
    description: str  # what is measured, in one sentence
    paper: float | None  # a number the paper prints, or None
    book: float  # measured on this build
    tolerance: str  # the mark in words, e.g. "<= 1.2" or "within 10% of the paper"
    verdict: str  # VERDICTS, or CONTROL_VERDICTS for a control
    citation: str = ""  # whose number, e.g. "Garg et al. 2022"
    paper_note: str = (
        ""  # where the paper prints it (figure, table, section), or why none
    )
    se: float | None = None  # standard error of ``book``, where it is a sample estimate
    target: float | None = None  # a closed form or a target computed on the page
    low: float | None = None  # the mark: ``book`` passes in [low, high]
    high: float | None = None
    z: float | None = None  # standard errors of the undecided band (with ``se``)
    alternative: str = ""  # a goal's alternative: the learner or hypothesis ruled out
    alternative_value: float | None = None  # its value on the same prompts
    alternative_se: float | None = None
    mark_reason: str = ""  # why the mark is where it is
    se_note: str = ""  # a goal without a standard error: why it has none
    confound: str = ""  # a goal: a rival named but not measured (then undecided)
    control_of: str = ""  # a control: the goal whose mark it must fail

    def __post_init__(self):
        # Every field checked, so that a claim read back from JSON (load_claims) or
        # built by hand holds what a ClaimSet would have written.
        for name in ("id", "chapter", "kind", "description", "tolerance", "verdict"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"{name}: expected a non-empty string, got {value!r}")
        for name in (
            "citation",
            "paper_note",
            "alternative",
            "mark_reason",
            "se_note",
            "control_of",
            "confound",
        ):
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
        allowed = CONTROL_VERDICTS if self.kind == "control" else VERDICTS
        if self.verdict not in allowed:
            raise ValueError(
                f"verdict: expected one of {allowed} for the {self.kind} {self.id}, "
                f"got {self.verdict!r}"
            )
        # Every number stored as a Python float (a NumPy or 0-d torch number would
        # not survive json.dumps in save).
        for name in (
            "book",
            "paper",
            "target",
            "low",
            "high",
            "z",
            "alternative_value",
            "se",
            "alternative_se",
        ):
            if name == "book" or getattr(self, name) is not None:
                object.__setattr__(
                    self, name, _real(name, getattr(self, name), self.id)
                )
        for name in ("se", "alternative_se"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(
                    f"{name}: expected a finite standard error >= 0 for {self.id}, "
                    f"got {value}"
                )
        if self.low is None and self.high is None:
            raise ValueError(
                f"low, high: expected the mark of {self.id} (at least one bound), got "
                "neither"
            )
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(
                f"low, high: expected low <= high for {self.id}, got {self.low} > "
                f"{self.high}"
            )
        if self.paper is not None and not (
            self.citation.strip() and PAPER_PLACE.search(self.paper_note)
        ):
            raise ValueError(
                f"paper, citation, paper_note: a paper's number ({self.id}) is one the "
                "paper prints, with whose it is (citation) and where it is printed "
                "(paper_note naming a figure, table, section, equation or page); got "
                f"citation={self.citation!r}, paper_note={self.paper_note!r}"
            )
        if self.kind == "reproduction" and self.paper is None:
            raise ValueError(
                f"paper: a reproduction claim ({self.id}) compares with a paper's "
                "printed number in the paper's setup; expected it, got None"
            )
        if self.se is not None and self.kind in ("identity", "reproduction"):
            raise ValueError(
                f"se: expected no standard error for the {self.kind} {self.id} (a "
                "sampled number is a goal, a check or a monte_carlo claim), got "
                f"{self.se}"
            )
        if self.kind == "monte_carlo" and not (
            self.se is not None and self.se > 0 and self.target is not None
        ):
            raise ValueError(
                f"se, target: a monte_carlo claim ({self.id}) compares an estimate "
                f"with its closed form; expected a standard error > 0 and the closed "
                f"form, got se={self.se!r}, target={self.target!r}"
            )
        if (self.se is not None or self.alternative_se is not None) and self.z is None:
            raise ValueError(
                f"z: expected the standard errors of the undecided band of {self.id}, "
                "which has a standard error, got None"
            )
        if self.kind == "goal":
            self._check_goal()
        elif self.alternative or self.alternative_value is not None or self.confound:
            raise ValueError(
                f"alternative, confound: only a goal names an alternative or a "
                f"confound; {self.id} is a "
                f"{self.kind} (a control is recorded with ClaimSet.control)"
            )
        if (self.kind == "control") != bool(self.control_of):
            raise ValueError(
                f"control_of: expected the goal of a control, and only of a control "
                f"({self.id}, a {self.kind}), got {self.control_of!r}"
            )
        if self.verdict == "undecided" and self.kind not in (
            "goal",
            "control",
            "check",
        ):
            raise ValueError(
                f"verdict: only a goal, a control or a check can be undecided, "
                f"{self.id} is a {self.kind}"
            )

    def _check_goal(self):
        if not self.alternative.strip():
            raise ValueError(
                f"alternative: a goal ({self.id}) names the learner or hypothesis it "
                f"rules out, or says why none can be computed ('{NO_ALTERNATIVE}...'); "
                "got nothing"
            )
        if self.alternative_value is None and not (
            self.alternative.startswith(NO_ALTERNATIVE)
            and self.alternative[len(NO_ALTERNATIVE) :].strip()
        ):
            raise ValueError(
                f"alternative_value: a goal ({self.id}) gives its alternative's value "
                f"on the same prompts, or says why none can be computed "
                f"('{NO_ALTERNATIVE}<why>'); got {self.alternative!r} without a value"
            )
        # An alternative on the mark itself is allowed when the goal has a standard
        # error: then the undecided band, not the bound, decides between the two
        # ("better than the alternative by more than z standard errors").
        on_bound = self.alternative_value in (self.low, self.high)
        if (
            self.alternative_value is not None
            and _inside(self.alternative_value, self.low, self.high)
            and not (on_bound and self.se is not None and self.se > 0)
        ):
            raise ValueError(
                f"alternative_value: the alternative of {self.id} "
                f"({self.alternative}: {_fmt(self.alternative_value)}) meets the "
                f"goal's own mark ({self.tolerance}); such a goal cannot separate the "
                "claim from its alternative"
            )
        if not self.mark_reason.strip():
            raise ValueError(
                f"mark_reason: a goal ({self.id}) says why its mark is where it is "
                "(from the standard error, from the alternative, or an external target "
                "named as such); got nothing"
            )
        if self.se is None and not self.se_note.strip():
            raise ValueError(
                f"se, se_note: a goal ({self.id}) carries the standard error of its "
                "number, or says why it has none (se_note); got neither"
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


_BAND = "; a value within "


def _undecided_band(z: float, se: float) -> str:
    """The mark's band of doubt in words: '; a value within 2 se (0.0075) of it is
    undecided' (printed beside any verdict, so it never reads as the verdict)."""
    return f"{_BAND}{z:.3g} se ({_fmt(z * se)}) of it is undecided"


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    return scientific(x, 4 if x == 0 or 1e-3 <= abs(x) < 1e4 else 3)


def _claim_list(claims, name: str = "claims") -> list[Claim]:
    """``claims`` as a list of Claim, or a TypeError that names the argument."""
    if isinstance(claims, (str, bytes, Claim)) or not hasattr(claims, "__iter__"):
        raise TypeError(
            f"{name}: expected a list of Claim, got {type(claims).__name__}"
        )
    claims = list(claims)
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(
                f"{name}: expected Claim entries, got {type(claim).__name__}"
            )
    return claims


def _inside(x: float, low: float | None, high: float | None) -> bool:
    return (low is None or x >= low) and (high is None or x <= high)


def _margin(x: float, low: float | None, high: float | None) -> float:
    """Distance from ``x`` to the nearest bound of the mark [low, high]."""
    return min(abs(x - b) for b in (low, high) if b is not None)


def _decide(book, low, high, se=None, z=UNDECIDED_Z) -> str:
    """The verdict of a number against the mark [low, high]: "pass" inside, "miss"
    outside, "undecided" within ``z`` standard errors of a bound (when ``se`` is
    given)."""
    if se is not None and _margin(book, low, high) < z * se:
        return "undecided"
    return "pass" if _inside(book, low, high) else "miss"


def _control_verdict(verdict: str) -> str:
    """A control's verdict from :func:`decide` of its number against its goal's mark:
    a control that misses the mark "fails", as it must."""
    return {"pass": "passes", "miss": "fails", "undecided": "undecided"}[verdict]


class ClaimSet:
    """The claims of one chapter. ``at_most``, ``at_least``, ``close_to``,
    ``monte_carlo`` and ``control`` record a claim and return nothing (a notebook cell
    that ends with one prints no repr); ``claims[id]`` reads it back.

    Example::

        claims = ClaimSet("overview")
        claims.at_most(
            "overview.noiseless_error_at_2d", "error / d at k = 2d",
            kind="goal", book=0.01, goal=0.05, se=0.001,
            alternative="least squares on the first k - 1 examples",
            alternative_value=0.08,
            mark_reason="an external target: Garg et al.'s accuracy, to 5 %")
        claims.control("overview.untrained_at_2d", "the untrained model",
                       of="overview.noiseless_error_at_2d", book=1.0, se=0.02)
        claims.table()   # HTML tables for the notebook, findings first
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

    def _new_id(self, id) -> None:
        if not isinstance(id, str) or not id.startswith(self.chapter + "."):
            raise ValueError(
                f"id: expected a string starting with '{self.chapter}.', got {id!r}"
            )
        if any(c.id == id for c in self.claims):
            raise ValueError(f"id: {id!r} is already claimed in this chapter")

    def _add(
        self,
        id,
        kind,
        description,
        book,
        criterion,
        low,
        high,
        *,
        target=None,
        se=None,
        z=UNDECIDED_Z,
        alternative="",
        alternative_value=None,
        alternative_se=None,
        mark_reason="",
        se_note="",
        confound="",
        paper=None,
        citation="",
        paper_note="",
    ) -> None:
        self._new_id(id)
        if kind not in KINDS or kind in ("control", "monte_carlo"):
            raise ValueError(
                f"kind: expected one of "
                f"{tuple(k for k in KINDS if k not in ('control', 'monte_carlo'))} "
                f"for {id} (a control is recorded with ClaimSet.control, a Monte Carlo "
                f"check with ClaimSet.monte_carlo), got {kind!r}"
            )
        book = _real("book", book, id)
        z = _real("z", z, id)
        if not z > 0:
            raise ValueError(f"z: expected a number of standard errors > 0, got {z}")
        if se is not None:
            se = _real("se", se, id)
            if se < 0:
                raise ValueError(
                    f"se: expected a finite standard error >= 0 for {id}, got {se}"
                )
        if alternative_value is not None:
            alternative_value = _real("alternative_value", alternative_value, id)
        if alternative_se is not None:
            alternative_se = _real("alternative_se", alternative_se, id)
        verdict = _decide(book, low, high, se, z)
        if se is not None:
            criterion += _undecided_band(z, se)
        if (
            verdict == "pass"
            and alternative_value is not None
            and alternative_se is not None
            and _margin(alternative_value, low, high) < z * alternative_se
        ):
            verdict = "undecided"
            criterion += (
                f"; cannot separate: the alternative lies within {z:.3g} of its se of "
                "the mark"
            )
        if verdict != "undecided" and isinstance(confound, str) and confound.strip():
            verdict = "undecided"
            criterion += f"; cannot be read: {confound}"
        uses_z = se is not None or alternative_se is not None
        self.claims.append(
            Claim(
                id=id,
                chapter=self.chapter,
                kind=kind,
                description=description,
                paper=None if paper is None else _real("paper", paper, id),
                book=book,
                tolerance=criterion,
                verdict=verdict,
                citation=citation,
                paper_note=paper_note,
                se=se,
                target=None if target is None else _real("target", target, id),
                low=low,
                high=high,
                z=z if uses_z else None,
                alternative=alternative,
                alternative_value=alternative_value,
                alternative_se=alternative_se,
                mark_reason=mark_reason,
                se_note=se_note,
                confound=confound,
            )
        )

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
        sample grows, so a wrong closed form cannot hide behind it. ``citation`` names
        where the closed form comes from.
        """
        self._new_id(id)
        se = _real("se", se, id)
        if not se > 0:
            raise ValueError(f"se: expected a standard error > 0 for {id}, got {se}")
        z = _real("z", z, id)
        if not z > 0:
            raise ValueError(f"z: expected a number of standard errors > 0, got {z}")
        closed_form = _real("closed_form", closed_form, id)
        estimate = _real("estimate", estimate, id)
        low, high = closed_form - z * se, closed_form + z * se
        self.claims.append(
            Claim(
                id=id,
                chapter=self.chapter,
                kind="monte_carlo",
                description=description,
                paper=None,
                book=estimate,
                tolerance=f"within {z:.3g} se (se = {_fmt(se)}) of the closed form "
                f"{_fmt(closed_form)}",
                verdict=_decide(estimate, low, high),
                citation=citation,
                paper_note=paper_note,
                se=se,
                target=closed_form,
                low=low,
                high=high,
                z=z,
            )
        )

    def at_most(self, id, description, *, kind, book, goal, **context) -> None:
        """Passes when ``book <= goal``; an identity needs a float64-level goal.

        ``context``: for every kind ``paper``, ``citation`` and ``paper_note`` (a
        number the paper prints and where); ``se`` and ``z`` (within ``z`` standard
        errors of the mark the verdict is undecided; 2 unless a correction for several
        groups is stated in ``mark_reason``); for a goal ``alternative`` (what it rules
        out), ``alternative_value`` (its value on the same prompts, which must miss the
        mark), ``alternative_se``, ``mark_reason``, without ``se`` ``se_note``, and
        ``confound``, a rival the page names but could not measure, which leaves the
        goal undecided whatever it reads.
        """
        goal = _real("goal", goal, id)
        if kind == "identity" and not goal <= IDENTITY_TOLERANCE:
            raise ValueError(
                f"goal: an identity ({id}) is checked to float64 rounding, expected at "
                f"most {IDENTITY_TOLERANCE}, got {goal}"
            )
        self._add(
            id, kind, description, book, f"<= {_fmt(goal)}", None, goal, **context
        )

    def at_least(self, id, description, *, kind, book, goal, **context) -> None:
        """Passes when ``book >= goal`` (an identity is an error: use ``at_most``);
        ``context`` as for :meth:`at_most`."""
        if kind == "identity":
            raise ValueError(
                f"kind: an identity ({id}) is an error at most {IDENTITY_TOLERANCE}; "
                "record it with at_most"
            )
        goal = _real("goal", goal, id)
        self._add(
            id, kind, description, book, f">= {_fmt(goal)}", goal, None, **context
        )

    def close_to(
        self,
        id,
        description,
        *,
        kind,
        book,
        target=None,
        paper=None,
        rel_tol=None,
        abs_tol=None,
        **context,
    ) -> None:
        """Passes when ``|book - reference| <= rel_tol * |reference|`` (or
        ``<= abs_tol``).

        A reproduction's reference is ``paper``, the number the paper prints; every
        other kind's is ``target``, a value computed on the page (``paper`` may then
        stand beside it as context). ``context`` as for :meth:`at_most`.
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
        if kind == "reproduction":
            if target is not None:
                raise ValueError(
                    f"target: a reproduction ({id}) is compared with the paper's "
                    f"number (paper), got target={target!r}"
                )
            if paper is None:
                raise ValueError(
                    f"paper: a reproduction claim ({id}) compares with a paper's "
                    "printed number in the paper's setup; expected it, got None"
                )
            reference, name = _real("paper", paper, id), "the paper"
        else:
            if target is None:
                raise ValueError(
                    f"target: a {kind} ({id}) is compared with a value computed on the "
                    "page; expected target (a paper's printed number goes in paper, "
                    "as context), got None"
                )
            reference, name = _real("target", target, id), "the target"
        if rel_tol is not None:
            width = rel_tol * abs(reference)
            # whole per cents as "5%"; a finer band keeps its digit ("1.5%", not "2%")
            pct = (
                f"{rel_tol:.0%}"
                if round(rel_tol * 100, 6).is_integer()
                else f"{rel_tol:.1%}"
            )
            criterion = f"within {pct} of {name} {_fmt(reference)}"
        else:
            width = abs_tol
            criterion = f"within {_fmt(abs_tol)} of {name} {_fmt(reference)}"
        self._add(
            id,
            kind,
            description,
            book,
            criterion,
            reference - width,
            reference + width,
            target=None if kind == "reproduction" else reference,
            paper=paper,
            **context,
        )

    def control(self, id, description, *, of, book, se=None) -> None:
        """A learner that must fail the mark of goal ``of`` (recorded before it), on
        the same prompts. Its verdict is "fails" outside the mark (beyond the goal's
        ``z`` standard errors when ``se`` is given), "passes" inside it and
        "undecided" in between; unless it fails, the goal cannot separate the claim
        from this control, and a goal that passed becomes undecided."""
        self._new_id(id)
        if not isinstance(of, str) or not any(c.id == of for c in self.claims):
            raise ValueError(
                f"of: expected the id of a goal recorded before this control, got "
                f"{of!r}"
            )
        goal = self[of]
        if goal.kind != "goal":
            raise ValueError(
                f"of: expected the id of a goal, got {of!r}, a {goal.kind} claim"
            )
        book = _real("book", book, id)
        z = goal.z if goal.z is not None else UNDECIDED_Z
        if se is not None:
            se = _real("se", se, id)
            if se < 0:
                raise ValueError(f"se: expected a finite standard error >= 0, got {se}")
        verdict = _control_verdict(_decide(book, goal.low, goal.high, se, z))
        mark = goal.tolerance.split(_BAND)[0]
        criterion = f"must fail its goal's mark: {mark}"
        if se is not None:
            criterion += _undecided_band(z, se)
        self.claims.append(
            Claim(
                id=id,
                chapter=self.chapter,
                kind="control",
                description=description,
                paper=None,
                book=book,
                tolerance=criterion,
                verdict=verdict,
                se=se,
                low=goal.low,
                high=goal.high,
                z=z if se is not None else None,
                control_of=of,
            )
        )
        if verdict != "fails" and goal.verdict == "pass":
            i = self.claims.index(goal)
            reason = "passes" if verdict == "passes" else "may pass"
            self.claims[i] = replace(
                goal,
                verdict="undecided",
                tolerance=f"{goal.tolerance}; cannot separate: a control (listed "
                f"with the controls) {reason} it",
            )

    def __getitem__(self, id: str) -> Claim:
        for claim in self.claims:
            if claim.id == id:
                return claim
        raise KeyError(f"id: no claim {id!r} in chapter {self.chapter!r}")

    def table(self):
        """The claims as HTML tables, findings first (an ``IPython.display.HTML``
        object): a line of counts, then one table per group of kinds."""
        from IPython.display import HTML

        return HTML(grouped_claims_html(self.claims))

    def summary(self, rows: Mapping[str, str]):
        """A small HTML table of some claims for the text: ``label -> claim id``, one
        row each with the measured value, the mark and the verdict (an
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
                _value(claim),
                claim.tolerance,
                VERDICT_MARKS[claim.verdict],
            )
            body.append(
                "<tr>"
                + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
                + "</tr>"
            )
        head = "".join(
            f"<th>{t}</th>" for t in ("quantity", "this model", "mark", "verdict")
        )
        return HTML(
            f'<table class="claims-summary"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
        )

    def save(self, directory=None) -> Path | None:
        """Check the chapter's ledger (:func:`check_ledger`) and write
        ``<directory>/<chapter>.json``; the default is the book's ``_build/claims``.

        Outside the book (no ``_config.yml`` above the working directory and no
        ``ICL_CLAIMS_DIR``) there is nowhere to collect claims: nothing is written and
        None returned.
        """
        if directory is not None and not isinstance(directory, (str, os.PathLike)):
            raise TypeError(
                f"directory: expected a path or None, got {type(directory).__name__}"
            )
        check_ledger(self.claims)
        directory = Path(directory) if directory is not None else default_claims_dir()
        if directory is None:
            return None
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.chapter}.json"
        path.write_text(json.dumps([c.to_dict() for c in self.claims], indent=1) + "\n")
        return path


def check_ledger(claims) -> None:
    """Check the rules of the ledger across ``claims`` (a chapter's or the whole
    book's) and raise ValueError listing every claim that breaks one:

    1. every verdict follows from the number, its mark and its standard error; a
       control names a goal of the ledger, and a goal whose control does not fail is
       not a pass;
    2. every goal names its alternative, whose value misses the goal's mark (or says
       why none can be computed), and the reason for its mark;
    3. every goal carries its standard error or says why it has none;
    4. a paper's number says whose it is and where it is printed.

    Rules 2-4 are checked by :class:`Claim` itself; this function checks them again
    for claims built by hand and adds the rules that need the whole ledger.
    """
    claims = _claim_list(claims)
    problems = []
    by_id = {c.id: c for c in claims}
    for claim in claims:
        try:
            Claim(**claim.to_dict())
        except (TypeError, ValueError) as error:
            problems.append(str(error))
            continue
        z = claim.z if claim.z is not None else UNDECIDED_Z
        # a Monte Carlo check's band is already in standard errors
        se = None if claim.kind == "monte_carlo" else claim.se
        computed = _decide(claim.book, claim.low, claim.high, se, z)
        if claim.kind == "control":
            computed = _control_verdict(computed)
            goal = by_id.get(claim.control_of)
            if goal is None or goal.kind != "goal":
                problems.append(
                    f"{claim.id}: a control of {claim.control_of!r}, which is not a "
                    "goal of this ledger"
                )
            elif claim.verdict != "fails" and goal.verdict == "pass":
                problems.append(
                    f"{goal.id}: {goal.verdict} although its control {claim.id} does "
                    f"not fail the mark ({claim.verdict}): it cannot separate"
                )
        # A pass may have become undecided (a control, or an alternative within its
        # standard errors of the mark), a miss only by a control that does not fail;
        # never the other way round.
        downgraded = claim.verdict == "undecided" and (
            computed == "pass" or (computed == "miss" and bool(claim.confound))
        )
        if claim.confound and computed != "undecided" and claim.verdict != "undecided":
            problems.append(
                f"{claim.id}: names a confound ({claim.confound}) but reads "
                f"{claim.verdict!r}: a rival that was not measured leaves it undecided"
            )
        if claim.verdict != computed and not downgraded:
            problems.append(
                f"{claim.id}: verdict {claim.verdict!r}, but {_fmt(claim.book)} "
                f"against [{_fmt(claim.low)}, {_fmt(claim.high)}] gives {computed!r}"
            )
    if problems:
        raise ValueError("the ledger breaks its rules:\n- " + "\n- ".join(problems))


def ledger_counts(claims) -> dict[str, dict[str, int]]:
    """``{kind: {verdict: count}}`` over ``claims``, every kind and verdict present
    (zeros included)."""
    counts = {
        kind: dict.fromkeys(CONTROL_VERDICTS if kind == "control" else VERDICTS, 0)
        for kind in KINDS
    }
    for claim in _claim_list(claims):
        counts[claim.kind][claim.verdict] += 1
    return counts


PLURALS = {
    "goal": "goals",
    "reproduction": "reproductions",
    "identity": "identities",
    "Monte Carlo check": "Monte Carlo checks",
    "check of the setup": "checks of the setup",
    "control": "controls",
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else PLURALS[word]}"


def ledger_sentence(claims) -> str:
    """The ledger in a few short clauses, findings first, each kind apart, e.g.
    "Findings: 7 of 9 met, 1 not met, 1 too close to call. Reproductions: 2 of 2
    within tolerance. Controls: all 3 fail their findings' marks, as controls should"
    (no final full stop).
    Kinds absent from ``claims`` are left out."""
    counts = ledger_counts(claims)
    parts = []
    goals = counts["goal"]
    n = sum(goals.values())
    if n:
        rest = [f"{goals['miss']} not met"] if goals["miss"] else []
        if goals["undecided"]:
            rest.append(f"{goals['undecided']} undecided")
        parts.append(
            f"Findings: {goals['pass']} of {n} met" + "".join(", " + r for r in rest)
        )
    # (kind, heading, the words after "k of n")
    for kind, heading, words in (
        ("reproduction", "Reproductions", "within tolerance"),
        ("identity", "Identities", "hold to rounding"),
        ("monte_carlo", "Monte Carlo checks", "agree with their closed forms"),
        ("check", "Checks of the setup", "hold"),
    ):
        n = sum(counts[kind].values())
        if n:
            parts.append(f"{heading}: {counts[kind]['pass']} of {n} {words}")
    controls = counts["control"]
    if sum(controls.values()):
        parts.append("Controls: " + _controls_sentence(controls))
    return ". ".join(parts)


def _controls_sentence(controls: dict[str, int]) -> str:
    """The controls in words a reader cannot misread: "all 3 fail their findings' marks,
    as controls should", or "none of the 3 fails its finding's mark as a control should:
    1 meets it too, so that mark cannot tell its finding from the control; 2 are too
    close to call"."""
    n = sum(controls.values())
    fails, passes, open_ = controls["fails"], controls["passes"], controls["undecided"]
    if n == 1:
        if fails:
            return "the one control fails its finding's mark, as it should"
        if passes:
            return (
                "the one control meets its finding's mark too, so that mark cannot "
                "tell the finding from the control"
            )
        return "the one control is too close to its finding's mark to call"
    if fails == n:
        return f"all {n} fail their findings' marks, as controls should"
    if fails == 0:
        head = f"none of the {n} fails its finding's mark as a control should"
    else:
        verb = (
            "fails its finding's mark" if fails == 1 else "fail their findings' marks"
        )
        head = f"{fails} of {n} {verb}, as controls should"
    parts = []
    if passes:
        parts.append(
            "1 meets it too, so that mark cannot tell its finding from the control"
            if passes == 1
            else f"{passes} meet them too, so those marks cannot tell their findings "
            "from the controls"
        )
    if open_:
        parts.append(
            "1 is too close to call" if open_ == 1 else f"{open_} are too close to call"
        )
    return head + ": " + "; ".join(parts)


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


def _with_se(value: float, se: float | None) -> str:
    """``value ± se``, the standard error to two significant digits and the value to
    the same decimal place (``0.0181 ± 0.0010``); the value alone without one."""
    if se is None:
        return _fmt(value)
    if se == 0:
        return f"{_fmt(value)} ± 0"
    decimals = 1 - math.floor(math.log10(se))
    if decimals > 8:  # a tiny standard error: powers of ten
        return f"{scientific(value, 4)} ± {scientific(se, 2)}"
    decimals = max(decimals, 0)
    return f"{value:.{decimals}f} ± {se:.{decimals}f}"


def _value(claim: Claim) -> str:
    """The measured number, with its standard error where it has one."""
    return _with_se(claim.book, claim.se)


# The groups of the chapter tables and the reproducibility page, findings first.
GROUPS = (
    ("Findings, each beside the alternative it rules out", ("goal",)),
    ("Reproductions: the paper's setup and printed number", ("reproduction",)),
    (
        "Identities and Monte Carlo checks: exact equations in float64, closed forms "
        "within three standard errors",
        ("identity", "monte_carlo"),
    ),
    ("Controls: learners that should not meet a finding's mark", ("control",)),
    ("Checks of the setup and of hypotheses on the data", ("check",)),
)


# how to read the tables, above them (the words a lecture leaves out are defined here)
READING_GUIDE = (
    "How to read the tables: each finding is measured on the book's model (with its "
    "standard error, ±, where it has one) beside the simplest other explanation of "
    "the same behaviour, measured on the same prompts. The mark is the threshold "
    "between the two, with the reason it sits there. ✅ the finding meets its mark; "
    "❌ it does not; ❔ undecided: the value lies within two standard errors of the "
    "mark (too close to call), or a control meets the mark too, or a rival the "
    "chapter names was not measured. A control is a learner that should not meet a "
    "finding's mark; if it does, the mark cannot tell the finding from it."
)


def grouped_claims_html(claims, *, with_chapter: bool = False) -> str:
    """A line of counts (:func:`ledger_sentence`), then one titled table per group of
    kinds, findings first. Used by the chapters and by the reproducibility page."""
    claims = _claim_list(claims)
    if not isinstance(with_chapter, bool):
        raise TypeError(
            f"with_chapter: expected True or False, got {type(with_chapter).__name__}"
        )
    parts = [f'<p class="claims-counts">{html.escape(ledger_sentence(claims))}.</p>']
    if any(c.kind == "goal" for c in claims):
        parts.append(f'<p class="claims-legend">{html.escape(READING_GUIDE)}</p>')
    for title, kinds in GROUPS:
        group = [c for c in claims if c.kind in kinds]
        if group:
            parts.append(
                f'<p class="claims-group"><strong>{html.escape(title)}</strong></p>'
            )
            parts.append(
                claims_html(
                    group,
                    with_chapter=with_chapter,
                    with_kind=len(kinds) > 1,
                    ledger=claims,
                )
            )
    return "\n".join(parts)


def _undecided_reason(claim: Claim, controlled: set[str]) -> str:
    """Why a claim is undecided, to follow its mark: a control meets the goal's mark
    too (``controlled``: the goals with such a control), the goal names a confound
    that leaves the test unreadable (given in its mark), or the value lies within its
    standard errors of the mark."""
    if claim.verdict != "undecided":
        return ""
    if claim.id in controlled:
        return ": a control meets the mark too"
    if claim.confound:
        return ": the test cannot be read (its mark says why)"
    return ": too close to call"


def claims_html(
    claims, *, with_chapter: bool = False, with_kind: bool = True, ledger=None
) -> str:
    """An HTML table of ``claims``, one row each: the claim (what is measured, with
    the paper's number as context, then its id), the book's number with its
    standard error, the alternative on the same prompts (when a goal is among them),
    the mark with its reason, and the verdict.

    Every cell carries its column's class (``claim-what``, ``claim-book``, ...), which
    the book's stylesheet uses to fit the table in the text column; the id is in a
    ``span.claim-id``, prefixed by the chapter with ``with_chapter`` and followed by
    the kind with ``with_kind``. ``ledger``, the whole list ``claims`` belong to
    (default: ``claims``), says which goals have a control that meets their mark, for
    the reason beside an undecided verdict."""
    claims = _claim_list(claims)
    ledger = claims if ledger is None else _claim_list(ledger, "ledger")
    for name, flag in (("with_chapter", with_chapter), ("with_kind", with_kind)):
        if not isinstance(flag, bool):
            raise TypeError(
                f"{name}: expected True or False, got {type(flag).__name__}"
            )
    with_alternative = any(c.kind == "goal" for c in claims)
    columns = [
        ("what", "claim"),
        ("book", "measured"),
        ("alternative", "alternative, same prompts"),
        ("criterion", "mark and its reason"),
        ("verdict", "result"),
    ]
    shown = [
        (key, title)
        for key, title in columns
        if key != "alternative" or with_alternative
    ]
    esc = html.escape
    rows = []
    controlled = {
        c.control_of for c in ledger if c.kind == "control" and c.verdict == "passes"
    }
    for c in claims:
        # the paper's number (or the source of a formula) as context of the description
        paper = (f"paper: {_fmt(c.paper)} " if c.paper is not None else "") + (
            f"[{c.citation}]" if c.citation else ""
        )
        if c.paper_note:
            paper += f" ({c.paper_note})"
        what = (
            f"{c.description.rstrip('.')}. {paper.strip()}" if paper else c.description
        )
        head = f'<span class="claim-id">{esc(c.id)}</span>'
        if with_chapter:
            head = f'<span class="claim-chapter">{esc(c.chapter)}</span> ' + head
        if with_kind:
            head += f' <span class="claim-kind">({esc(c.kind)})</span>'
        if c.kind == "goal" and c.alternative_value is not None:
            alternative = (
                f"{c.alternative}: {_with_se(c.alternative_value, c.alternative_se)}"
            )
        else:
            alternative = c.alternative
        criterion = esc(c.tolerance)
        if c.mark_reason:
            criterion += f"<br><em>Why:</em> {esc(c.mark_reason)}"
        if c.se_note:
            criterion += f"<br><em>No standard error:</em> {esc(c.se_note)}"
        cells = {
            "what": f"{esc(what)}<br>{head}",  # the id, for reference, below
            "book": esc(_value(c)),
            "alternative": esc(alternative),
            "criterion": criterion,
            "verdict": esc(VERDICT_MARKS[c.verdict] + _undecided_reason(c, controlled)),
        }
        rows.append(
            "<tr>"
            + "".join(f'<td class="claim-{key}">{cells[key]}</td>' for key, _ in shown)
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
