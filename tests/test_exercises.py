"""Self-checking exercises (icl_lib.exercises): each check passes the reference answer,
fails typical wrong answers with a message that helps, and never shows the reference."""

import re
import textwrap
from pathlib import Path

import pytest
import torch

from icl_lib import exercises
from icl_lib.analysis.induction import prefix_matching_from_patterns
from icl_lib.analysis.recall import guaranteed_recall
from icl_lib.learners.kernel import functional_gd, nadaraya_watson
from icl_lib.learners.linear import bayes_posterior_predictive, ols, ridge
from icl_lib.learners.pool import dmmse
from icl_lib.learners.risk import best_gd_step_error
from icl_lib.learners.selection import noise_mixture_posterior_mean, noise_posterior
from icl_lib.models.recurrent import linear_attention_recurrent
from icl_lib.tasks.induction import induction_targets
from icl_lib.theory.gd_construction import gd_products
from icl_lib.theory.implicit import rank_one


def gd_step(xs, ys, x_query, eta):
    return eta / xs.shape[1] * torch.einsum("bnd,bn,bd->b", xs, ys, x_query)


def gd_weights(d, eta, n):
    return gd_products(d, eta, n)


def replace_one(learner, xs, ys, x_query, j, x_new, y_new):
    xs2, ys2 = xs.clone(), ys.clone()
    xs2[:, j], ys2[:, j] = x_new, y_new
    return (learner(xs2, ys2, x_query) - learner(xs, ys, x_query)).abs()


def prefix_score(pattern, tokens):
    return prefix_matching_from_patterns(pattern[:, None, None], tokens)[0, 0].item()


def rank_one_update(W, delta, a):
    return rank_one(W, delta[None], a[None])[0]


def smoother(xs, ys, x_query, h):
    return nadaraya_watson(xs, ys, x_query, "gaussian", bandwidth=h)


def fgd(xs, ys, x_query, eta, steps):
    return functional_gd(xs, ys, x_query, "exp", lr=eta, steps=steps)


def mutating_replace_one(learner, xs, ys, x_query, j, x_new, y_new):
    before = learner(xs, ys, x_query)
    xs[:, j], ys[:, j] = x_new, y_new  # changes the caller's prompt
    return (learner(xs, ys, x_query) - before).abs()


def null_component(xs, xq):
    """x_q . u for u the first axis projected off the span of the examples."""
    d = xs.shape[2]
    e1 = torch.zeros(d, dtype=xs.dtype)
    e1[0] = 1.0
    projector = torch.eye(d, dtype=xs.dtype) - torch.linalg.pinv(xs) @ xs  # (B, d, d)
    return ((projector @ e1) * xq).sum(-1)


def coverage(mean, var, y, level):
    z = 2**0.5 * torch.erfinv(torch.tensor(level, dtype=mean.dtype))
    return ((y - mean).abs() <= z * var.sqrt()).double().mean().item()


REFERENCES = {
    "ex-overview-code-least-squares": ols,
    "ex-overview-code-best-step-error": best_gd_step_error,
    "ex-bayes-code-predictive": lambda xs, ys, xq, s, t: tuple(
        bayes_posterior_predictive(xs, ys, xq, prior_std=t, noise_std=s)
    ),
    "ex-bayes-code-coverage": coverage,
    "ex-selection-code-noise-posterior": lambda xs, ys, lv, t: noise_posterior(
        xs, ys, lv, prior_std=t
    ),
    "ex-selection-code-mixture-prediction": lambda xs, ys, xq, lv, t: (
        noise_mixture_posterior_mean(xs, ys, xq, lv, prior_std=t)
    ),
    "ex-gd-code-step": gd_step,
    "ex-gd-code-weights": gd_weights,
    "ex-stability-code-dmmse": dmmse,
    "ex-stability-code-replace-one": replace_one,
    "ex-mech-code-induction-targets": induction_targets,
    "ex-mech-code-prefix-score": prefix_score,
    "ex-implicit-code-rank-one": rank_one_update,
    "ex-implicit-code-least-norm": lambda A, Y: Y @ torch.linalg.pinv(A),
    "ex-kernel-code-smoother": smoother,
    "ex-kernel-code-fgd": fgd,
    "ex-frontiers-code-recurrence": linear_attention_recurrent,
    "ex-frontiers-code-always-right": guaranteed_recall,
}

WRONG = {  # exercise -> [(a typical wrong answer, a phrase its message must hold)]
    "ex-overview-code-least-squares": [
        # a solution that fits, plus a direction the examples cannot see (k < d only)
        (lambda xs, ys, xq: ols(xs, ys, xq) + null_component(xs, xq), "the shortest"),
        (lambda xs, ys, xq: ridge(xs, ys, xq, lam=1.0), "the first at index"),
        (lambda xs, ys, xq: -ols(xs, ys, xq), "sign"),
    ],
    "ex-overview-code-best-step-error": [
        (lambda d, k: d / (k + d), "wrong for"),
        (lambda d, k: (d + 1) / (k + d + 1) if k else 0.0, "prediction is 0"),
        (lambda d, k: "small", "expected a number"),
    ],
    "ex-bayes-code-predictive": [
        (  # the posterior variance of w . x_q, without the label's noise
            lambda xs, ys, xq, s, t: (lambda p: (p.mean, p.var - s**2))(
                bayes_posterior_predictive(xs, ys, xq, prior_std=t, noise_std=s)
            ),
            "own noise",
        ),
        (lambda xs, ys, xq, s, t: ols(xs, ys, xq), "pair"),
        (  # the predictive standard deviation for its variance
            lambda xs, ys, xq, s, t: (lambda p: (p.mean, p.var.sqrt()))(
                bayes_posterior_predictive(xs, ys, xq, prior_std=t, noise_std=s)
            ),
            "standard deviation",
        ),
    ],
    "ex-bayes-code-coverage": [
        (lambda m, v, y, level: coverage(m, v**2, y, level), "variance"),
        (lambda m, v, y, level: ((y - m).abs() <= v.sqrt()).double().mean(), "wrong"),
        (  # a one-sided interval: below the upper end only
            lambda m, v, y, level: (
                (
                    (y - m)
                    <= 2**0.5
                    * torch.erfinv(torch.tensor(level, dtype=m.dtype))
                    * v.sqrt()
                )
                .double()
                .mean()
            ),
            "symmetric",
        ),
    ],
    "ex-selection-code-noise-posterior": [
        (  # ignores the context: the uniform prior
            lambda xs, ys, lv, t: torch.full((len(xs), len(lv)), 1 / len(lv)),
            "the first at index",
        ),
        (lambda xs, ys, lv, t: noise_posterior(xs, ys, lv)[:, :1], "shape"),
        (  # the levels in reverse order
            lambda xs, ys, lv, t: noise_posterior(xs, ys, lv).flip(-1),
            "the first at index",
        ),
        (  # ignores the prior's spread (a worked lab's answer passed before)
            lambda xs, ys, lv, t: noise_posterior(xs, ys, lv),
            "prior_std 2.0",
        ),
    ],
    "ex-selection-code-mixture-prediction": [
        (lambda xs, ys, xq, lv, t: ols(xs, ys, xq), "the first at index"),
        (  # the two ridges averaged with equal weights: ignores the posterior
            lambda xs, ys, xq, lv, t: (
                sum(ridge(xs, ys, xq, lam=s**2) for s in lv) / len(lv)
            ),
            "the first at index",
        ),
        (
            lambda xs, ys, xq, lv, t: torch.zeros(len(xs), dtype=xs.dtype),
            "0 everywhere",
        ),
        (  # penalties sigma^2, not sigma^2 / tau^2: ignores the prior's spread
            lambda xs, ys, xq, lv, t: noise_mixture_posterior_mean(xs, ys, xq, lv),
            "prior_std 0.5",
        ),
    ],
    "ex-stability-code-dmmse": [
        # the pool's mean: ignores the context
        (lambda xs, ys, xq, pool, s: xq @ pool.mean(0), "the first at index"),
        (lambda xs, ys, xq, pool, s: torch.zeros(len(xs), dtype=xs.dtype), "one task"),
        # the likelihood with noise 1 whatever noise_std is
        (
            lambda xs, ys, xq, pool, s: dmmse(xs, ys, xq, pool, 1.0),
            "the first at index",
        ),
    ],
    "ex-stability-code-replace-one": [
        (
            lambda f, xs, ys, xq, j, x, y: replace_one(f, xs, ys, xq, j + 1, x, y),
            "the first at index",
        ),
        (lambda f, xs, ys, xq, j, x, y: -replace_one(f, xs, ys, xq, j, x, y), "sign"),
        (mutating_replace_one, "changed the prompt"),
    ],
    "ex-mech-code-induction-targets": [
        (  # the earlier copies themselves
            lambda t: (
                (t[:, :, None] == t[:, None, :])
                & torch.ones(t.shape[1], t.shape[1], dtype=torch.bool).tril(-1)
            ),
            "earlier copies themselves",
        ),
        (lambda t: induction_targets(t).double(), "boolean"),
        (lambda t: induction_targets(t)[:, :-1], "shape"),
    ],
    "ex-mech-code-prefix-score": [
        # averaging over every position, repeated or not
        (lambda p, t: (p * induction_targets(t)).sum(-1).mean().item(), "Average only"),
        (lambda p, t: "high", "expected a number"),
        (  # attention on the earlier copies, not on the tokens after them
            lambda p, t: (
                (
                    p
                    * (
                        (t[:, :, None] == t[:, None, :])
                        & torch.ones(t.shape[1], t.shape[1], dtype=torch.bool).tril(-1)
                    )
                )
                .sum(-1)[induction_targets(t).any(-1)]
                .mean()
                .item()
            ),
            "followed each copy",
        ),
    ],
    "ex-implicit-code-rank-one": [
        (lambda W, d, a: (W @ d)[:, None] * a[None, :], "factor"),  # no 1 / ||a||^2
        (  # another solution of (W + dW) a = W (a + delta), not the smallest
            lambda W, d, a: (
                rank_one_update(W, d, a)
                + torch.outer(
                    torch.ones(W.shape[0], dtype=W.dtype),
                    torch.linalg.svd(torch.stack([a, torch.zeros_like(a)])).Vh[-1],
                )
            ),
            "not the smallest",
        ),
        (lambda W, d, a: -rank_one_update(W, d, a), "sign"),
    ],
    "ex-implicit-code-least-norm": [
        (lambda A, Y: Y @ A.T, "the first at index"),
        (  # the normal equations: right only where A has independent columns
            lambda A, Y: (
                Y
                @ torch.linalg.solve(
                    A.T @ A + 1e-12 * torch.eye(A.shape[1], dtype=A.dtype), A.T
                )
            ),
            "where no W fits exactly",
        ),
        (lambda A, Y: torch.linalg.lstsq(A.T, Y.T).solution, "shape"),
        (
            lambda A, Y: torch.zeros(Y.shape[0], A.shape[0], dtype=A.dtype),
            "0 everywhere",
        ),
    ],
    "ex-kernel-code-smoother": [
        (
            lambda xs, ys, xq, h: smoother(xs, ys, xq, h * h),
            "the first at index",
        ),  # h^2 for h
        (lambda xs, ys, xq, h: smoother(xs, ys, xq, h) * 2, "factor"),
        (  # the kernel's weights not normalised to sum to 1
            lambda xs, ys, xq, h: (
                torch.exp(-((xs - xq[:, None]) ** 2).sum(-1) / (2 * h * h)) * ys
            ).sum(-1),
            "the first at index",
        ),
    ],
    "ex-kernel-code-fgd": [
        (lambda xs, ys, xq, eta, steps: fgd(xs, ys, xq, eta, 1), "residuals"),
        (lambda xs, ys, xq, eta, steps: fgd(xs, ys, xq, eta * 6, steps), "factor"),
        (lambda xs, ys, xq, eta, steps: -fgd(xs, ys, xq, eta, steps), "sign"),
    ],
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
            "the first at index",
        ),
        # reading the state before writing the current token
        (
            lambda q, k, v: (
                linear_attention_recurrent(q, k, v) - (q * k).sum(-1, keepdim=True) * v
            ),
            "first output differs",
        ),
        (  # the state halved at every step: a decay the layer does not have
            lambda q, k, v: torch.stack(
                [
                    sum(
                        0.5 ** (t - s)
                        * (q[:, t] * k[:, s]).sum(-1, keepdim=True)
                        * v[:, s]
                        for s in range(t + 1)
                    )
                    for t in range(q.shape[1])
                ],
                dim=1,
            ),
            "agree before token 1",
        ),
    ],
    "ex-frontiers-code-always-right": [
        (lambda M: guaranteed_recall(M.T), "column q"),  # rows instead of columns
        (lambda M: (M.diagonal() > 0).double().mean().item(), "wrong for"),
        (  # the size of the diagonal for its sign
            lambda M: (
                (M.diagonal().abs() > M.abs().sum(0) - M.diagonal().abs())
                .double()
                .mean()
                .item()
            ),
            "signed entry",
        ),
        (lambda M: "all", "expected a number"),
        (  # >= for >: a tie reads 0 for one sign vector (a worked lab's slip)
            lambda M: (
                (M.diagonal() >= M.abs().sum(0) - M.diagonal().abs())
                .double()
                .mean()
                .item()
            ),
            "compare strictly",
        ),
        (  # the count of the queries, not their fraction
            lambda M: guaranteed_recall(M) * M.shape[0],
            "not their count",
        ),
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


def _chapter_solutions():
    """(label, the signature line of its starter cell, the solution's code) of every
    coding exercise in the chapters."""
    found = []
    for path in sorted(Path(__file__).resolve().parents[1].glob("chapters/0*.md")):
        text = path.read_text()
        pattern = (
            r"```\{solution\} (ex-[\w-]+-code-[\w-]+)\n:class: dropdown\n\n(.*?)\n```"
        )
        for label, body in re.findall(pattern, text, re.S):
            # the trailing semicolon keeps the Verdict's repr out of the reader's page
            call = re.search(r'check\("' + label + r'", (\w+)\);', text)
            assert call, f"{path.name}: no `check({label!r}, f);` cell for {label}"
            starter = call.group(1)
            signature = re.search(rf"^def {starter}\(.*\):$", text, re.M).group(0)
            code = "\n".join(
                line[4:] for line in body.splitlines() if line.startswith("    ")
            )
            found.append((label, signature, code))
    return found


def test_every_coding_exercise_of_the_chapters_has_a_check():
    labels = [label for label, _, _ in _chapter_solutions()]
    assert sorted(labels) == sorted(exercises.exercise_ids())


@pytest.mark.parametrize(
    ("label", "signature", "code"), _chapter_solutions(), ids=lambda v: str(v)[:40]
)
def test_the_solution_printed_in_the_chapter_passes_its_check(label, signature, code):
    namespace = {"torch": torch}
    # functions of an earlier exercise that a later solution uses
    namespace["find_induction_targets"] = induction_targets
    namespace["noise_level_posterior"] = lambda xs, ys, lv, t: noise_posterior(
        xs, ys, lv, prior_std=t
    )
    exec(signature + "\n" + textwrap.indent(code, "    "), namespace)  # noqa: S102
    name = signature.split("(")[0].removeprefix("def ")
    verdict = exercises.check(label, namespace[name], show=False)
    assert verdict.passed, verdict.message


def test_every_check_fails_at_least_three_typical_wrong_answers():
    few = {e: len(answers) for e, answers in WRONG.items() if len(answers) < 3}
    assert not few, f"checks with fewer than three typical wrong answers: {few}"


@pytest.mark.parametrize("exercise", sorted(REFERENCES))
@pytest.mark.parametrize("variant", [1, 2, 999_999])
def test_the_reference_passes_every_variant(exercise, variant):
    verdict = exercises.check(
        exercise, REFERENCES[exercise], variant=variant, show=False
    )
    assert verdict.passed, verdict.message


def test_a_variant_runs_the_answer_on_other_inputs():
    seen = {}

    def spy(xs, ys, xq, eta):
        seen.setdefault("first", xs.clone())
        return gd_step(xs, ys, xq, eta)

    firsts = []
    for variant in (0, 1):
        seen.clear()
        assert exercises.check(
            "ex-gd-code-step", spy, variant=variant, show=False
        ).passed
        firsts.append(seen["first"])
    assert not torch.equal(*firsts)


@pytest.mark.parametrize("bad", [-1, 10**6 + 1, 1.5, "1", None])
def test_a_variant_out_of_range_is_refused_by_name(bad):
    with pytest.raises((TypeError, ValueError), match="variant"):
        exercises.check("ex-gd-code-step", gd_step, variant=bad, show=False)


def test_a_float32_answer_passes_with_a_note_on_precision():
    def in_float32(xs, ys, xq, eta):
        return gd_step(xs.float(), ys.float(), xq.float(), eta)

    verdict = exercises.check("ex-gd-code-step", in_float32, show=False)
    assert verdict.passed and "float32" in verdict.message, verdict.message


def test_a_coverage_averaged_in_float32_passes():
    """The usual PyTorch line averages the inside flags in float32 (`.float().mean()`),
    off by about 1e-8 from the float64 fraction: the same count of labels, so right."""

    def in_float32(mean, var, y, level):
        z = 2**0.5 * torch.erfinv(torch.tensor(level, dtype=mean.dtype))
        return ((y - mean).abs() <= z * var.sqrt()).float().mean().item()

    for variant in range(4):
        verdict = exercises.check(
            "ex-bayes-code-coverage", in_float32, variant=variant, show=False
        )
        assert verdict.passed, verdict.message


def test_an_answer_wrong_in_one_entry_is_told_where():
    def one_wrong(xs, ys, xq, eta):
        out = gd_step(xs, ys, xq, eta)
        out[5] += 1.0
        return out

    verdict = exercises.check("ex-gd-code-step", one_wrong, show=False)
    assert not verdict.passed
    assert "1 of 16 entries wrong, the first at index 5" in verdict.message


def test_the_always_right_check_holds_the_cases_its_hint_names():
    """A negative diagonal entry larger than the rest of its column, and a matrix whose
    rows and columns disagree, are among the test matrices of every variant."""
    for variant in (0, 1, 7):
        matrices = exercises._crosstalk_matrices(exercises._seed(19, variant))
        assert any(bool((M.diagonal() < 0).any()) for M in matrices)
        assert any(guaranteed_recall(M) != guaranteed_recall(M.T) for M in matrices)
        signed = [guaranteed_recall(M) for M in matrices]
        size = [
            (M.diagonal().abs() > M.abs().sum(0) - M.diagonal().abs()).double().mean()
            for M in matrices
        ]
        assert any(abs(a - b) > 0 for a, b in zip(signed, size, strict=True))
