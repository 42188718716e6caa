"""Property-based fuzzing of icl_lib's public API (issue 24): every public callable,
fed one value no caller could mean at a time, must refuse it with an error that names
the argument. The machinery and the fixtures are in ``tests/api_fuzz.py``;
``python tools/fuzz_report.py`` prints the outcome classes."""

from __future__ import annotations

import math
from pathlib import Path

import api_fuzz as F
import pytest
import torch

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True, scope="module")
def _data_untouched():
    """No fuzzed call may write into the book's data folder (writers get temp ones)."""
    before = {
        p: p.stat().st_mtime for p in DATA.rglob("*") if "long_runs" not in p.parts
    }
    yield
    after = {
        p: p.stat().st_mtime for p in DATA.rglob("*") if "long_runs" not in p.parts
    }
    assert after == before, f"the fuzz suite changed data/: {set(after) ^ set(before)}"


FUZZED = sorted(
    name
    for name in F.public_callables()
    if not F.exemption(name) and name not in F.BACKLOG
)


# The backlog only shrinks: a callable leaves it when it gets fixtures; none joins.
FROZEN_BACKLOG = {
    "icl_lib.analysis.induction.phase_change",
    "icl_lib.training.checkpoints.load_weights",
    "icl_lib.training.preset.evaluate",
}


def test_the_backlog_only_shrinks():
    joined = sorted(F.BACKLOG - FROZEN_BACKLOG)
    assert not joined, f"give these fixtures or a reason, not a backlog entry: {joined}"


def test_every_public_callable_is_fuzzed_exempt_or_in_the_backlog():
    """A new public callable gets fuzzed by the fixtures of its parameters' names and
    types; one they cannot call fails here until it has fixtures or a reason."""
    missing = [name for name in FUZZED if F.baseline(name) is None]
    assert not missing, f"no fixture for a required parameter of {missing}"
    stale = sorted(name for name in F.BACKLOG if name not in F.public_callables())
    assert not stale, f"api_fuzz_backlog.txt lists callables that are gone: {stale}"
    ready = sorted(name for name in F.BACKLOG if F.baseline(name) is not None)
    assert not ready, f"these backlog entries now have fixtures, remove them: {ready}"


@pytest.mark.parametrize("name", FUZZED)
def test_the_baseline_call_succeeds(name):
    base = F.baseline(name)
    F.call(base)
    if F.uses_model(base):  # and with its models in eval mode, as loaded
        F.call(base, eval_mode=True)


@pytest.mark.parametrize("name", FUZZED)
def test_bad_arguments_fail_by_name(name):
    # the same draws as tools/fuzz_report.py (hypothesis, derandomised)
    rows = F.worst_outcomes(F.baseline(name)).values()
    failures = [
        f"{param} ({kind}): {outcome}, {detail}"
        for param, kind, outcome, detail in rows
        if outcome != "clear"
    ]
    assert not failures, "\n".join(failures)


# --- the harness itself: it must tell the classes apart ------------------------------


def _ratio(xs: torch.Tensor, scale: float) -> torch.Tensor:
    """A checked function: xs (B, n) and a finite scale > 0."""
    if not isinstance(xs, torch.Tensor):
        raise TypeError(f"xs: expected a torch.Tensor, got {type(xs).__name__}")
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: expected a finite number > 0, got {scale}")
    return xs / scale


def _base(obj):
    return F.Baseline(
        "f",
        obj,
        {"xs": lambda: torch.ones(4, 3), "scale": lambda: 2.0},
        ["xs", "scale"],
    )


def test_the_classes_are_told_apart():
    assert F.classify(_base(_ratio), "scale", math.nan)[0] == "clear"
    assert F.classify(_base(_ratio), "xs", "abc")[0] == "clear"
    # an error that names another argument is raw, not clear
    names_scale = _base(lambda xs, scale: _ratio(torch.ones(1), math.nan))
    assert F.classify(names_scale, "xs", "abc")[0] == "raw"
    assert F.classify(_base(lambda xs, scale: xs.shape), "xs", "abc")[0] == "raw"
    assert (
        F.classify(_base(lambda xs, scale: xs / scale), "scale", math.nan)[0]
        == "silent"
    )


def test_a_hang_is_caught(monkeypatch):
    import time

    monkeypatch.setattr(F, "TIMEOUT_S", 1)
    assert F.classify(_base(lambda xs, scale: time.sleep(3)), "xs", 1)[0] == "hang"


def test_an_empty_input_may_give_an_empty_result_and_an_edge_value_a_result():
    def scaled(xs, scale):
        return xs * scale

    assert F.classify(_base(scaled), "xs", torch.ones(0, 3), empty_ok=True)[0] == (
        "clear"
    )
    assert F.classify(_base(scaled), "xs", torch.ones(0, 3))[0] == "silent"
    assert F.classify(_base(scaled), "xs", torch.ones(4), empty_ok=True)[0] == (
        "silent"
    )
    assert F.classify(_base(_ratio), "scale", 0.01, meant=True)[0] == "clear"

    def underflows(xs, scale):  # a valid value failing on an inner tensor's check
        raise ValueError("logits: expected finite values, got 1 NaN or inf of 96")

    assert F.classify(_base(underflows), "scale", 0.01, meant=True)[0] == "raw"


def test_models_meet_every_value_in_eval_mode_too():
    base = F.Baseline(
        "f",
        lambda model, xs: model.training,
        {"model": lambda: torch.nn.Linear(2, 1), "xs": lambda: torch.ones(4, 2)},
        ["xs"],
    )
    assert F.uses_model(base)
    assert F.call(base) is True
    assert F.call(base, eval_mode=True) is False

    def forward(model, xs):  # what the eval-mode chunking of issue 42 did
        if not model.training:
            return xs.shape[0]
        if not isinstance(xs, torch.Tensor):
            raise TypeError(f"xs: expected a torch.Tensor, got {type(xs).__name__}")
        return xs

    base.obj = forward
    assert F.worst_outcomes(base)[("xs", "none")][2] == "raw"


def test_the_kinds_of_bad_value_of_issue_42():
    """Sequences given None, a number or []; a layer where a model was meant; a
    disagreement along a non-batch axis; a huge size; a small scale (float32)."""

    def kinds(name, param):
        base = F.baseline(name)
        return set(F.mutation_kinds(base, param, base.kwargs[param]()))

    assert {"none", "number", "empty"} <= kinds(
        "icl_lib.analysis.curves.predictions", "ks"
    )
    assert "wrong model" in kinds("icl_lib.training.losses.query_mse", "model")
    assert {"longer last axis", "empty"} <= kinds(
        "icl_lib.learners.bayes.mixture_posterior", "means"
    )
    assert "longer last axis" in kinds("icl_lib.tasks.sphere.psd_projection", "cov")
    assert "huge" in kinds("icl_lib.tasks.regression.linear_regression", "dim")
    assert "huge" not in kinds("icl_lib.tasks.regression.linear_regression", "seed")
    base = F.baseline("icl_lib.analysis.calibration.bucket_cost")
    assert F.edge_values(base, "noise_std", 0.5) == {"small": 0.01}
