"""Self-checking exercises (icl_lib.exercises): each check passes the reference answer,
fails typical wrong answers with a message that helps, and never shows the reference."""

import pytest
import torch

from icl_lib import exercises
from icl_lib.analysis.recall import guaranteed_recall
from icl_lib.models.recurrent import linear_attention_recurrent
from icl_lib.theory.gd_construction import gd_products


def gd_step(xs, ys, x_query, eta):
    return eta / xs.shape[1] * torch.einsum("bnd,bn,bd->b", xs, ys, x_query)


def gd_weights(d, eta, n):
    return gd_products(d, eta, n)


REFERENCES = {
    "ex-gd-code-step": gd_step,
    "ex-gd-code-weights": gd_weights,
    "ex-frontiers-code-recurrence": linear_attention_recurrent,
    "ex-frontiers-code-always-right": guaranteed_recall,
}

WRONG = {  # exercise -> [(a typical wrong answer, a phrase its message must hold)]
    "ex-gd-code-step": [
        (lambda xs, ys, xq, eta: gd_step(xs, ys, xq, eta) * xs.shape[1], "factor"),
        (lambda xs, ys, xq, eta: -gd_step(xs, ys, xq, eta), "sign"),
        (lambda xs, ys, xq, eta: gd_step(xs, ys, xq, eta)[:, None], "shape"),
        (lambda xs, ys, xq, eta: xs.sum(), "shape"),
        (lambda xs, ys, xq: None, "raised TypeError"),
    ],
    "ex-gd-code-weights": [
        (
            lambda d, eta, n: (gd_products(d, eta, n)[0], -gd_products(d, eta, n)[1]),
            "sign",
        ),
        (lambda d, eta, n: gd_products(d, eta * n, n), "factor"),
        (lambda d, eta, n: gd_products(d, eta, n)[0], "pair"),
        (lambda d, eta, n: (torch.eye(d), torch.eye(d)), "expected a"),
    ],
    "ex-frontiers-code-recurrence": [
        # not causal: every output reads the whole sequence
        (
            lambda q, k, v: q @ k.transpose(1, 2) @ v,
            "differ",
        ),
        # reading the state before writing the current token
        (
            lambda q, k, v: (
                linear_attention_recurrent(q, k, v) - (q * k).sum(-1, keepdim=True) * v
            ),
            "first output differs",
        ),
    ],
    "ex-frontiers-code-always-right": [
        (lambda M: guaranteed_recall(M.T), "transpose"),  # rows instead of columns
        (lambda M: (M.diagonal() > 0).double().mean().item(), "wrong for"),
        (lambda M: "all", "expected a number"),
    ],
}


def test_every_check_has_a_reference_here():
    assert set(exercises.exercise_ids()) == set(REFERENCES) == set(WRONG)


@pytest.mark.parametrize("exercise", sorted(REFERENCES))
def test_the_reference_answer_passes(exercise):
    verdict = exercises.check(exercise, REFERENCES[exercise], show=False)
    assert verdict.passed, verdict.message


@pytest.mark.parametrize(
    ("exercise", "wrong", "phrase"),
    [(e, w, p) for e, answers in WRONG.items() for w, p in answers],
)
def test_a_typical_wrong_answer_fails_with_a_helpful_message(exercise, wrong, phrase):
    verdict = exercises.check(exercise, wrong, show=False)
    assert not verdict.passed
    assert phrase in verdict.message, verdict.message


def test_a_message_never_shows_the_reference_output():
    xs, ys, xq, _ = exercises._gd_prompts(0)
    reference = gd_step(xs, ys, xq, 0.5)
    verdict = exercises.check(
        "ex-gd-code-step", lambda *a: gd_step(*a) + 1e-3 * torch.randn(16), show=False
    )
    for value in reference[:4].tolist():
        assert f"{value:.3g}" not in verdict.message


def test_no_answer_yet_and_an_unknown_exercise(capsys):
    verdict = exercises.check("ex-gd-code-step", None)
    assert not verdict.passed and "No answer yet" in capsys.readouterr().out
    with pytest.raises(KeyError, match="exercise: expected one of"):
        exercises.check("ex-nope", gd_step)
