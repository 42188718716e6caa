"""Claims: verdicts follow from the numbers, the JSON has the published schema."""

import json

import numpy as np
import pytest
import torch

from icl_lib.claims import Claim, ClaimSet, claims_html, load_claims

KEYS = {"id", "chapter", "kind", "description", "paper", "book", "tolerance", "verdict"}


def test_verdicts_are_computed():
    c = ClaimSet("demo")
    c.at_most("demo.a", "a", kind="goal", book=0.04, goal=0.05)
    assert c["demo.a"].verdict == "pass"
    c.at_most("demo.b", "b", kind="goal", book=0.06, goal=0.05)
    assert c["demo.b"].verdict == "miss"
    c.at_least("demo.c", "c", kind="goal", book=0.995, goal=0.99)
    assert c["demo.c"].verdict == "pass"
    c.close_to("demo.d", "d", kind="goal", book=0.21, paper=0.2, rel_tol=0.1)
    assert c["demo.d"].verdict == "pass"
    c.close_to("demo.e", "e", kind="goal", book=0.25, paper=0.2, rel_tol=0.1)
    assert c["demo.e"].verdict == "miss"
    c.close_to("demo.f", "f", kind="goal", book=1e-12, paper=0.0, abs_tol=1e-10)
    assert c["demo.f"].verdict == "pass"


def test_save_and_load_roundtrip(tmp_path):
    c = ClaimSet("demo")
    c.at_most(
        "demo.a", "a", kind="goal", book=1.0, goal=2.0, paper=1.5, citation="X et al."
    )
    path = c.save(tmp_path)
    rows = json.loads(path.read_text())
    assert KEYS <= set(rows[0]) and rows[0]["verdict"] == "pass"
    assert load_claims(tmp_path)[0] == c["demo.a"]
    assert "demo.a" in claims_html(c.claims) and "X et al." in claims_html(c.claims)


def test_bad_claims():
    c = ClaimSet("demo")
    with pytest.raises(ValueError, match="id: expected a string starting with 'demo.'"):
        c.at_most("other.a", "a", kind="goal", book=1, goal=1)
    c.at_most("demo.a", "a", kind="goal", book=1, goal=1)
    with pytest.raises(ValueError, match="already claimed"):
        c.at_most("demo.a", "a", kind="goal", book=1, goal=1)
    with pytest.raises(ValueError, match="book: expected a finite number"):
        c.at_most("demo.nan", "a", kind="goal", book=float("nan"), goal=1)
    with pytest.raises(ValueError, match="exactly one of them"):
        c.close_to("demo.x", "x", kind="goal", book=1, paper=1)
    with pytest.raises(ValueError, match="chapter: expected a short identifier"):
        ClaimSet("two words")


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    "record, error, match",
    [
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book=1, goal=INF),
            ValueError,
            "goal: expected a finite",
        ),
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book=1, goal=NAN),
            ValueError,
            "goal: expected a finite",
        ),
        (
            lambda c: c.at_least("demo.x", "x", kind="goal", book=1, goal=-INF),
            ValueError,
            "goal: expected a finite",
        ),
        (
            lambda c: c.close_to(
                "demo.x", "x", kind="goal", book=1, paper=2, rel_tol=INF
            ),
            ValueError,
            "rel_tol: expected a finite",
        ),
        (
            lambda c: c.close_to(
                "demo.x", "x", kind="goal", book=1, paper=2, abs_tol=INF
            ),
            ValueError,
            "abs_tol: expected a finite",
        ),
        (
            lambda c: c.close_to(
                "demo.x", "x", kind="goal", book=1, paper=2, abs_tol=-1
            ),
            ValueError,
            "abs_tol: expected a tolerance >= 0",
        ),
        (
            lambda c: c.close_to(
                "demo.x", "x", kind="goal", book=1, paper=2, rel_tol=-0.1
            ),
            ValueError,
            "rel_tol: expected a tolerance >= 0",
        ),
        (
            lambda c: c.close_to(
                "demo.x",
                "x",
                kind="reproduction",
                book=1,
                paper=NAN,
                rel_tol=0.1,
                citation="X",
            ),
            ValueError,
            "paper: expected a finite",
        ),
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book=1, goal=2, paper=NAN),
            ValueError,
            "paper: expected a finite",
        ),
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book="0.05", goal=1),
            TypeError,
            "book: expected a real number",
        ),
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book=True, goal=1),
            TypeError,
            "book: expected a real number",
        ),
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book=0.5, goal="1"),
            TypeError,
            "goal: expected a real number",
        ),
        (
            lambda c: c.at_most("demo.x", "x", kind="goal", book=0.5, goal=1, se=NAN),
            ValueError,
            "se: expected a finite",
        ),
    ],
)
def test_impossible_claims_are_refused_by_name(record, error, match):
    """A criterion that every value meets (an infinite goal or tolerance), a measurement
    that is not a number, or a NaN paper value never becomes a verdict."""
    c = ClaimSet("demo")
    with pytest.raises(error, match=match):
        record(c)
    assert not c.claims


def test_numpy_and_torch_scalars_are_measurements():
    c = ClaimSet("demo")
    c.at_most("demo.np", "x", kind="goal", book=np.float32(0.5), goal=np.float64(1.0))
    c.at_least("demo.t", "x", kind="goal", book=torch.tensor(2.0), goal=1)
    assert c["demo.np"].book == 0.5 and c["demo.t"].verdict == "pass"
    with pytest.raises(TypeError, match="book: expected a real number"):
        c.at_most("demo.v", "x", kind="goal", book=torch.ones(2), goal=1)


def test_a_claim_checks_itself():
    good = dict(
        id="demo.a",
        chapter="demo",
        kind="goal",
        description="x",
        paper=None,
        book=0.5,
        tolerance="<= 1",
        verdict="pass",
    )
    assert Claim(**good).verdict == "pass"
    for change, error, match in [
        ({"book": NAN}, ValueError, "book: expected a finite"),
        ({"book": "0.5"}, TypeError, "book: expected a real number"),
        ({"paper": INF}, ValueError, "paper: expected a finite"),
        ({"verdict": "maybe"}, ValueError, "verdict: expected one of"),
        (
            {"verdict": "undecided"},
            ValueError,
            "verdict: 'undecided' needs a standard error",
        ),
        ({"kind": "reproduction"}, ValueError, "paper, citation: a reproduction"),
        ({"id": "other.a"}, ValueError, "id: expected 'demo.<name>'"),
        ({"description": ""}, TypeError, "description: expected a non-empty string"),
        ({"se": -0.1}, ValueError, "se: expected a finite standard error"),
        (
            {"kind": "identity", "se": 0.1},
            ValueError,
            "se: expected a finite standard error",
        ),
    ]:
        with pytest.raises(error, match=match):
            Claim(**{**good, **change})


def test_load_claims_refuses_what_a_claim_set_would(tmp_path):
    c = ClaimSet("demo")
    c.at_most("demo.a", "a", kind="goal", book=1.0, goal=2.0)
    path = c.save(tmp_path)
    row = json.loads(path.read_text())[0]
    for bad, match in [
        ([{**row, "book": NAN}], "claim 0: book: expected a finite"),
        ([{**row, "book": "1.0"}], "claim 0: book: expected a real number"),
        ([{**row, "verdict": "passed"}], "claim 0: verdict: expected one of"),
        ([{**row, "extra": 1}], "claim 0: .*unexpected keyword argument 'extra'"),
        ([[1, 2]], "claim 0: expected an object, got list"),
        (row, "expected a list of claims, got a JSON dict"),
    ]:
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=match) as info:
            load_claims(tmp_path)
        assert str(path) in str(info.value)
    path.write_text("[{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_claims(tmp_path)


def test_duplicate_ids_across_files_are_rejected(tmp_path):
    for name in ("one", "two"):
        c = ClaimSet(name)
        c.at_most(f"{name}.a", "a", kind="goal", book=1, goal=1)
        c.save(tmp_path)
    (tmp_path / "three.json").write_text((tmp_path / "one.json").read_text())
    with pytest.raises(ValueError, match="duplicate claim ids"):
        load_claims(tmp_path)


def test_kinds_keep_their_promises():
    c = ClaimSet("demo")
    c.at_most("demo.exact", "an identity", kind="identity", book=1e-15, goal=1e-10)
    assert c["demo.exact"].kind == "identity" and c["demo.exact"].verdict == "pass"
    with pytest.raises(ValueError, match="goal: an identity"):
        c.at_most("demo.loose", "not exact", kind="identity", book=0.01, goal=0.05)
    with pytest.raises(ValueError, match="abs_tol: an identity"):
        c.close_to("demo.loose2", "x", kind="identity", book=1, paper=1, rel_tol=0.1)
    with pytest.raises(ValueError, match="kind: an identity"):
        c.at_least("demo.loose3", "x", kind="identity", book=1, goal=1)
    with pytest.raises(ValueError, match="paper, citation: a reproduction"):
        c.close_to("demo.repro", "x", kind="reproduction", book=1, paper=1, rel_tol=0.1)
    with pytest.raises(ValueError, match="kind: expected one of"):
        c.at_most("demo.odd", "x", kind="hope", book=1, goal=1)
    c.close_to("demo.target", "x", kind="goal", book=0.9, paper=1.0, abs_tol=0.2)
    assert c["demo.target"].tolerance == "within 0.2 of the target"
    assert '<td class="claim-kind">goal</td>' in claims_html(c.claims)
    # the reproducibility page groups by kind: no kind column, a chapter column
    page = claims_html(c.claims, with_chapter=True, with_kind=False)
    assert "claim-kind" not in page and '<td class="claim-chapter">demo</td>' in page


def test_a_goal_within_two_standard_errors_is_undecided():
    c = ClaimSet("demo")
    c.at_most("demo.near", "x", kind="goal", book=1.11, goal=1.1, se=0.013)
    c.at_most("demo.far", "x", kind="goal", book=1.2, goal=1.1, se=0.013)
    c.at_least("demo.above", "x", kind="goal", book=0.95, goal=0.9, se=0.02)
    c.at_most("demo.no_se", "x", kind="goal", book=1.11, goal=1.1)
    assert c["demo.near"].verdict == "undecided" and c["demo.near"].se == 0.013
    assert c["demo.far"].verdict == "miss"
    assert c["demo.above"].verdict == "pass"
    assert c["demo.no_se"].verdict == "miss"
    assert "undecided within 2 se" in c["demo.near"].tolerance
    with pytest.raises(ValueError, match="se: expected a finite standard error"):
        c.at_most("demo.bad", "x", kind="identity", book=0.0, goal=1e-12, se=0.1)
    with pytest.raises(ValueError, match="se: expected a finite standard error"):
        c.at_most("demo.neg", "x", kind="goal", book=1.0, goal=1.1, se=-1.0)


def test_summary_table_shows_chosen_claims():
    from icl_lib.claims import ClaimSet

    claims = ClaimSet("unit")
    claims.at_most("unit.a", "a", kind="goal", book=0.2, goal=0.1)
    claims.at_least("unit.b", "b", kind="goal", book=3.0, goal=1.0)
    html = claims.summary({"first": "unit.a", "second": "unit.b"}).data
    assert html.count("<tr>") == 3 and "first" in html and "❌ miss" in html
    assert "✅ pass" in html
    with pytest.raises(KeyError, match="no claim"):
        claims.summary({"x": "unit.c"})
    with pytest.raises(ValueError, match="rows: expected"):
        claims.summary({})


def test_a_monte_carlo_check_is_judged_in_standard_errors(tmp_path):
    """A closed form is checked against its estimate within three standard errors:
    the criterion tightens with the sample, so a formula off by a few percent fails
    once the sample is large enough to see it."""
    c = ClaimSet("demo")
    c.monte_carlo("demo.close", "x", estimate=1.02, se=0.01, closed_form=1.0)
    c.monte_carlo("demo.far", "x", estimate=1.04, se=0.01, closed_form=1.0)
    assert c["demo.close"].verdict == "pass" and c["demo.far"].verdict == "miss"
    assert c["demo.close"].kind == "monte_carlo" and c["demo.close"].se == 0.01
    assert c["demo.close"].paper == 1.0
    assert c["demo.close"].tolerance == "within 3 se (se = 0.01) of the closed form"
    path = c.save(tmp_path)
    assert [x.verdict for x in load_claims(path.parent)] == ["pass", "miss"]
    with pytest.raises(ValueError, match="se: expected a standard error > 0"):
        c.monte_carlo("demo.zero", "x", estimate=1.0, se=0.0, closed_form=1.0)
    with pytest.raises(ValueError, match="z: expected a number of standard errors"):
        c.monte_carlo("demo.z", "x", estimate=1.0, se=0.1, closed_form=1.0, z=0)
    with pytest.raises(ValueError, match="se, paper: a monte_carlo claim"):
        Claim(
            id="demo.bare",
            chapter="demo",
            kind="monte_carlo",
            description="x",
            paper=1.0,
            book=1.0,
            tolerance="t",
            verdict="pass",
        )


def test_a_goal_claim_that_cannot_be_decided_becomes_undecided_with_its_reason():
    claims = ClaimSet("unit")
    claims.at_most("unit.ratio", "a ratio", kind="goal", book=1.0, goal=1.2, se=0.01)
    claims.cannot_decide("unit.ratio", "the control passes too")
    claim = claims["unit.ratio"]
    assert claim.verdict == "undecided"
    assert claim.tolerance.endswith("cannot be decided: the control passes too")
    claims.at_most("unit.exact", "an identity", kind="identity", book=0.0, goal=1e-12)
    with pytest.raises(ValueError, match="only a goal claim with a standard error"):
        claims.cannot_decide("unit.exact", "no")
    with pytest.raises(ValueError, match="reason: expected a non-empty string"):
        claims.cannot_decide("unit.ratio", " ")
