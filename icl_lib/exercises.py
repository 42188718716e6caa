"""Exercises that check themselves: ``check("ex-id", answer)`` runs a student's
answer to a coding exercise on fresh inputs, compares it with the book's reference and
says what is wrong (the shape, the input where it fails, a constant factor, a sign),
never what the reference returns. Each chapter's coding exercises hold starter code,
with ``None`` as the answer until the student writes one, and a cell that calls
:func:`check`.

The references are in this module, as a reader of the library can see; the checks are
there to help a student working alone, not to grade.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ._checks import check_positive_int
from .analysis.induction import prefix_matching_from_patterns
from .analysis.recall import guaranteed_recall
from .learners.kernel import functional_gd, nadaraya_watson
from .learners.linear import bayes_posterior_predictive, ols, ridge
from .learners.pool import dmmse
from .learners.risk import best_gd_step_error
from .learners.selection import noise_mixture_posterior_mean, noise_posterior
from .models.lsa import lsa_layer
from .models.recurrent import linear_attention_parallel
from .prompts import token_matrix
from .tasks import linear_regression
from .tasks.induction import induction_targets
from .theory.implicit import rank_one

F64 = torch.float64


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: ``passed``, and a message for the student."""

    exercise: str
    passed: bool
    message: str

    def __str__(self) -> str:
        mark = "correct" if self.passed else "not yet"
        return f"{self.exercise}: {mark}. {self.message}"


_CHECKS: dict[str, Callable[[object, int], tuple[bool, str]]] = {}


def _register(exercise: str):
    def add(function):
        _CHECKS[exercise] = function
        return function

    return add


def exercise_ids() -> list[str]:
    """The exercises :func:`check` knows, in the book's order."""
    return list(_CHECKS)


def check(exercise: str, answer, *, variant: int = 0, show: bool = True) -> Verdict:
    """Check ``answer`` to the coding exercise ``exercise`` (its label, e.g.
    ``"ex-gd-code-step"``); print the verdict if ``show``, and return it.

    ``variant`` (an int in ``[0, 10**6]``) picks the inputs the answer is run on:
    variant 0 is the book's; another variant draws other prompts, matrices or sizes
    from its own seed, so that a lecturer can give each student or each term a
    different instance of the same check. Inputs are float64, and an answer is
    compared with the reference to float64 rounding; an answer computed in float32
    passes with a note, to float32's own precision.
    """
    if exercise not in _CHECKS:
        raise KeyError(f"exercise: expected one of {exercise_ids()}, got {exercise!r}")
    if not isinstance(show, bool):
        raise TypeError(f"show: expected a bool, got {type(show).__name__}")
    check_positive_int("variant", variant, minimum=0)
    if variant > MAX_VARIANT:
        raise ValueError(
            f"variant: expected an int in [0, {MAX_VARIANT}], got {variant}"
        )
    if answer is None:
        verdict = Verdict(exercise, False, "No answer yet: fill in the cell above.")
    else:
        _NOTES.clear()
        passed, message = _CHECKS[exercise](answer, int(variant))
        if passed and _NOTES:
            message = " ".join((message, *sorted(_NOTES)))
        verdict = Verdict(exercise, passed, message)
    if show:
        print(verdict)
    return verdict


MAX_VARIANT = 10**6


def _seed(base: int, variant: int) -> int:
    """The seed of one of a check's inputs in ``variant``: the book's own for 0."""
    return base + 7919 * variant


# ---------------------------------------------------------------------------
# helpers: run a student's function, compare outputs without showing the reference


def _call(function, *args):
    """``(output, None)`` or ``(None, message)`` if the call raised."""
    if not callable(function):
        return None, f"expected a function, got {type(function).__name__}."
    try:
        return function(*args), None
    except Exception as error:  # noqa: BLE001 (any error of the student's code)
        return None, f"your function raised {type(error).__name__}: {error}"


def _call_number(function, *args):
    """``(float, None)`` from a call that must return a number, else ``(None, why)``."""
    output, error = _call(function, *args)
    if error:
        return None, error
    try:
        return float(output), None
    except (TypeError, ValueError):
        return None, f"expected a number, got {type(output).__name__}."


# float32's rounding, for an answer computed in single precision
F32_RTOL, F32_ATOL = 1e-4, 1e-6
# notes for a passing answer, gathered by the comparisons of one check (check() clears)
_NOTES: set[str] = set()


def _compare(output, reference: torch.Tensor, where: str) -> tuple[bool, str]:
    """Whether ``output`` equals ``reference`` (float64, to rounding; float32's rounding
    with a note), and if not a message about ``output`` only: its type, its shape, a
    zero output, a constant factor or a sign, else the first entry that is wrong."""
    if not isinstance(output, torch.Tensor):
        return False, f"{where}: expected a tensor, got {type(output).__name__}."
    if tuple(output.shape) != tuple(reference.shape):
        return False, (
            f"{where}: expected shape {tuple(reference.shape)}, got "
            f"{tuple(output.shape)}."
        )
    output = output.detach().to(F64)
    if not bool(torch.isfinite(output).all()):
        return False, f"{where}: your output holds NaN or inf."
    if torch.allclose(output, reference, rtol=1e-7, atol=1e-9):
        return True, ""
    if torch.allclose(output, reference, rtol=F32_RTOL, atol=F32_ATOL):
        _NOTES.add(
            "Right to float32's precision (about 7 digits); the inputs are float64, "
            "and computing in float64 would match to its rounding."
        )
        return True, ""
    if not bool(output.any()) and bool(reference.any()):
        return False, f"{where}: your output is 0 everywhere."
    # a constant factor (including -1) explains a whole family of slips
    scale = (output * reference).sum() / (reference * reference).sum()
    if torch.allclose(output, scale * reference, rtol=1e-6, atol=1e-8):
        if torch.isclose(scale, torch.tensor(-1.0, dtype=F64)):
            return False, f"{where}: right up to the sign."
        return False, f"{where}: right up to a constant factor, {scale.item():.4g}."
    wrong = ~torch.isclose(output, reference, rtol=1e-7, atol=1e-9)
    first = tuple(int(i) for i in wrong.nonzero()[0])
    index = first[0] if len(first) == 1 else first
    share = (
        "every entry"
        if bool(wrong.all())
        else f"{int(wrong.sum())} of {wrong.numel()} entries"
    )
    return False, (
        f"{where}: {share} wrong, the first at index {index}, where you return "
        f"{output[first].item():.4g} (and not by one constant factor)."
    )


def _against(answer, cases) -> tuple[bool, str, int]:
    """Run ``answer`` on each ``(args, reference, where)`` of ``cases`` in turn:
    ``(passed, message, index of the first failing case or -1)``."""
    for index, (args, reference, where) in enumerate(cases):
        output, error = _call(answer, *args)
        if error:
            return False, error, index
        ok, message = _compare(output, reference, where)
        if not ok:
            return False, message, index
    return True, "", -1


# ---------------------------------------------------------------------------
# chapter 1


@_register("ex-overview-code-least-squares")
def _least_squares(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query) -> (B,)``: least squares of least norm, any ``k``."""
    cases = []
    for k in (8, 3):  # more examples than dimensions, then fewer
        batch = linear_regression(16, k + 1, 5, seed=_seed(k, variant), dtype=F64)
        xs, ys, xq, _ = batch.prompt(k)
        cases.append(((xs, ys, xq), ols(xs, ys, xq), f"k = {k} examples in d = 5"))
    ok, message, failed = _against(answer, cases)
    if ok:
        return True, "It is least squares, of least norm when k < d."
    if failed == 1 and "raised" not in message:
        message += (
            " With fewer examples than dimensions, many w fit: take the shortest."
        )
    return False, message


@_register("ex-overview-code-best-step-error")
def _best_step_error(answer, variant: int) -> tuple[bool, str]:
    """``answer(d, k) -> float``: the error per dimension of one optimal GD step on
    noiseless prompts."""
    for d, k in ((5, 0), (5, 10), (3, 7), (20, 40)):
        value, error = _call_number(answer, d, k)
        if error:
            return False, error
        if not math.isclose(value, best_gd_step_error(d, k), rel_tol=1e-9):
            hint = (
                " With no example the step does nothing: the prediction is 0."
                if k == 0
                else ""
            )
            return False, f"wrong for d = {d}, k = {k} (you return {value:.4g}).{hint}"
    return True, "It is the closed form of one optimal gradient step."


# ---------------------------------------------------------------------------
# chapter 2


def _gd_prompts(seed: int, n: int = 7, d: int = 3):
    return linear_regression(16, n + 1, d, seed=seed, dtype=F64).prompt(n)


@_register("ex-gd-code-step")
def _gd_step(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, eta) -> (B,)``: one GD step from ``w = 0``."""
    cases = []
    for seed, eta in ((0, 0.5), (1, 1.3)):
        xs, ys, xq, _ = _gd_prompts(_seed(seed, variant))
        N = xs.shape[1]
        reference = eta / N * torch.einsum("bnd,bn,bd->b", xs, ys, xq)
        where = f"on 16 prompts of N = {N} examples in d = 3, eta = {eta}"
        cases.append(((xs, ys, xq, eta), reference, where))
    ok, message, _ = _against(answer, cases)
    return ok, message if not ok else "It matches one gradient step on fresh prompts."


@_register("ex-gd-code-weights")
def _gd_weights(answer, variant: int) -> tuple[bool, str]:
    """``answer(d, eta, N) -> (W_KQ, W_PV)``, each ``(d + 1, d + 1)``: the layer that
    takes one GD step; the query's label slot must then hold minus the prediction."""
    for seed, (d, eta, N) in enumerate(((3, 0.5, 7), (2, 1.3, 5))):
        output, error = _call(answer, d, eta, N)
        if error:
            return False, error
        if not (isinstance(output, tuple | list) and len(output) == 2):
            return False, "expected a pair (W_KQ, W_PV)."
        kq, pv = output
        for name, matrix in (("W_KQ", kq), ("W_PV", pv)):
            if not isinstance(matrix, torch.Tensor) or matrix.shape != (d + 1, d + 1):
                got = (
                    tuple(matrix.shape) if isinstance(matrix, torch.Tensor) else matrix
                )
                return (
                    False,
                    f"{name}: expected a ({d + 1}, {d + 1}) tensor, got {got}.",
                )
        xs, ys, xq, _ = _gd_prompts(_seed(seed, variant), N, d)
        Z = token_matrix(xs, ys, xq).to(F64)  # (B, N + 1, d + 1): context, query
        out = lsa_layer(Z, kq.to(F64)[None], pv.to(F64)[None], query_only=True)
        prediction = -out[:, 0, d]  # minus the query's label slot
        reference = eta / N * torch.einsum("bnd,bn,bd->b", xs, ys, xq)
        where = f"the layer's prediction for d = {d}, eta = {eta}, N = {N}"
        ok, message = _compare(prediction, reference, where)
        if not ok:
            return False, message
    return True, "The layer with your weights takes one gradient step."


# ---------------------------------------------------------------------------
# chapter 3


@_register("ex-stability-code-dmmse")
def _dmmse(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, pool, noise_std) -> (B,)``: the posterior mean for
    tasks drawn uniformly from ``pool (M, d)``."""
    gen = torch.Generator().manual_seed(_seed(3, variant))
    cases = []
    for M, noise in ((1, 0.5), (6, 0.5), (6, 0.1)):
        pool = torch.randn(M, 3, generator=gen, dtype=F64)
        xs, ys, xq, _ = _gd_prompts(_seed(M, variant), 5, 3)
        where = f"a pool of {M} task{'s' * (M > 1)}, noise {noise}"
        cases.append(((xs, ys, xq, pool, noise), dmmse(xs, ys, xq, pool, noise), where))
    ok, message, failed = _against(answer, cases)
    if ok:
        return True, "It is the posterior mean over the pool on fresh prompts."
    if failed == 0 and "raised" not in message:
        message += " With one task in the pool, the posterior is sure of it."
    return False, message


@_register("ex-stability-code-replace-one")
def _replace_one(answer, variant: int) -> tuple[bool, str]:
    """``answer(learner, xs, ys, x_query, j, x_new, y_new) -> (B,)``: how far the
    learner's prediction moves when example ``j`` is replaced by ``(x_new, y_new)``."""
    xs, ys, xq, _ = _gd_prompts(_seed(4, variant), 6, 3)
    gen = torch.Generator().manual_seed(_seed(4, variant))
    x_new = torch.randn(16, 3, generator=gen, dtype=F64)
    y_new = torch.randn(16, generator=gen, dtype=F64)

    def learner(a, b, c):
        return ridge(a, b, c, lam=0.5)

    for j in (0, 4):
        xs2, ys2 = xs.clone(), ys.clone()
        xs2[:, j], ys2[:, j] = x_new, y_new
        reference = (learner(xs2, ys2, xq) - learner(xs, ys, xq)).abs()
        given = xs.clone(), ys.clone()
        output, error = _call(answer, learner, *given, xq, j, x_new, y_new)
        if error:
            return False, error
        if not (torch.equal(given[0], xs) and torch.equal(given[1], ys)):
            return False, "your function changed the prompt it was given: copy it."
        ok, message = _compare(output, reference, f"ridge, replacing example j = {j}")
        if not ok:
            return False, message
    return True, "It measures the change of a replaced example on fresh prompts."


# ---------------------------------------------------------------------------
# chapter 4


@_register("ex-bayes-code-predictive")
def _predictive(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, noise_std, prior_std) -> (mean, var)``, each ``(B,)``:
    the posterior predictive of Bayesian linear regression."""
    for noise, tau in ((0.5, 1.0), (0.1, 2.0)):
        xs, ys, xq, _ = _gd_prompts(_seed(11, variant), 4, 3)
        output, error = _call(answer, xs, ys, xq, noise, tau)
        if error:
            return False, error
        if not (isinstance(output, tuple | list) and len(output) == 2):
            return False, "expected a pair (mean, variance)."
        reference = bayes_posterior_predictive(
            xs, ys, xq, prior_std=tau, noise_std=noise
        )
        where = f"noise {noise}, prior scale {tau}"
        for part, got, want in zip(
            ("mean", "variance"), output, reference, strict=True
        ):
            ok, message = _compare(got, want, f"the {part}, {where}")
            if not ok:
                if part == "variance":
                    message += _variance_hint(got, want, noise)
                return False, message
    return True, "Mean and variance of the posterior predictive match."


def _variance_hint(got, want: torch.Tensor, noise: float) -> str:
    """What a wrong predictive variance most likely missed: the square of a standard
    deviation, or the label's own noise."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return ""
    got = got.detach().to(F64)
    if torch.allclose(got * got, want, rtol=1e-6, atol=1e-9):
        return " You return a standard deviation: the check wants the variance."
    if torch.allclose(got + noise**2, want, rtol=1e-6, atol=1e-9):
        return " The label's own noise is part of it."
    return ""


@_register("ex-bayes-code-coverage")
def _coverage(answer, variant: int) -> tuple[bool, str]:
    """``answer(mean, var, y, level) -> float``: the fraction of ``y`` inside the
    central interval of probability ``level`` of ``N(mean, var)``."""
    gen = torch.Generator().manual_seed(_seed(44, variant))
    mean = torch.randn(4000, generator=gen, dtype=F64)
    var = torch.rand(4000, generator=gen, dtype=F64) + 0.2
    y = mean + 1.3 * var.sqrt() * torch.randn(4000, generator=gen, dtype=F64)
    n = len(y)
    for level in (0.5, 0.9):
        value, error = _call_number(answer, mean, var, y, level)
        if error:
            return False, error
        half = math.sqrt(2) * torch.erfinv(torch.tensor(level, dtype=F64))
        inside = ((y - mean).abs() <= half * var.sqrt()).double().mean().item()
        # a fraction of n labels: right when it names the same count, whatever the
        # precision it was averaged in (a float32 mean is off by about 1e-8)
        if abs(value - inside) >= 0.5 / n:
            return False, (
                f"wrong at level {level}: you return {value:.4f}, about "
                f"{value * n:.0f} of the {n} labels inside; the interval is symmetric "
                "about the mean, and var is a variance."
            )
        if abs(value - inside) > 1e-9:
            _NOTES.add(
                "Right to float32's precision (about 7 digits); the inputs are "
                "float64, and computing in float64 would match to its rounding."
            )
    return True, "It counts the labels inside the central intervals."


# ---------------------------------------------------------------------------
# chapter 5


def _noise_prompts(seed: int):
    batch = linear_regression(16, 7, 3, noise_std=0.3, seed=seed, dtype=F64)
    return batch.prompt(6)


@_register("ex-selection-code-noise-posterior")
def _noise_posterior(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, levels, prior_std) -> (B, K)``: the posterior probabilities of
    the noise levels given each context."""
    xs, ys, _, _ = _noise_prompts(_seed(51, variant))
    # the prior's spread enters the marginal likelihood: a second one catches an
    # answer that ignores it
    cases = [
        (
            (xs, ys, levels, tau),
            noise_posterior(xs, ys, levels, prior_std=tau),
            f"levels {levels}, prior_std {tau}",
        )
        for levels, tau in (
            ((0.1, 1.0), 1.0),
            ((0.1, 0.3, 1.0), 1.0),
            ((0.1, 1.0), 2.0),
        )
    ]
    ok, message, _ = _against(answer, cases)
    return ok, message if not ok else "It is the posterior over the noise levels."


@_register("ex-selection-code-mixture-prediction")
def _mixture_prediction(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, levels, prior_std) -> (B,)``: the Bayes prediction
    when the noise level is drawn uniformly from ``levels``."""
    xs, ys, xq, _ = _noise_prompts(_seed(52, variant))
    levels = (0.1, 1.0)
    # each ridge's penalty is sigma^2 / tau^2: a second prior spread catches sigma^2
    cases = [
        (
            (xs, ys, xq, levels, tau),
            noise_mixture_posterior_mean(xs, ys, xq, levels, prior_std=tau),
            f"levels {levels}, prior_std {tau}",
        )
        for tau in (1.0, 0.5)
    ]
    ok, message, _ = _against(answer, cases)
    return ok, message if not ok else "It is the posterior-weighted mixture of ridges."


# ---------------------------------------------------------------------------
# chapter 6


def _repeated_tokens(seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    first = torch.randint(0, 12, (8, 7), generator=gen)
    return torch.cat((first, first, first[:, :3]), dim=1)  # (8, 17)


@_register("ex-mech-code-induction-targets")
def _induction_targets(answer, variant: int) -> tuple[bool, str]:
    """``answer(tokens (B, T)) -> (B, T, T)`` bool: where an induction head attends."""
    tokens = _repeated_tokens(_seed(6, variant))
    output, error = _call(answer, tokens.clone())
    if error:
        return False, error
    reference = induction_targets(tokens)
    if not isinstance(output, torch.Tensor) or output.dtype != torch.bool:
        return False, "expected a boolean tensor."
    ok, message = _compare(output.double(), reference.double(), "on 8 sequences")
    if ok:
        return True, "It marks the tokens that followed the earlier copies."
    if isinstance(output, torch.Tensor) and output.shape == reference.shape:
        shifted = torch.zeros_like(reference)
        shifted[:, :, :-1] = reference[:, :, 1:]
        if torch.equal(output, shifted):
            return False, message + " You mark the earlier copies themselves."
    return False, message


@_register("ex-mech-code-prefix-score")
def _prefix_score(answer, variant: int) -> tuple[bool, str]:
    """``answer(pattern (B, T, T), tokens (B, T)) -> float``: one head's prefix-matching
    score."""
    tokens = _repeated_tokens(_seed(7, variant))
    gen = torch.Generator().manual_seed(_seed(7, variant))
    logits = torch.randn(8, 17, 17, generator=gen, dtype=F64)
    mask = torch.ones(17, 17, dtype=torch.bool).tril()
    pattern = logits.masked_fill(~mask, float("-inf")).softmax(-1)
    value, error = _call_number(answer, pattern.clone(), tokens.clone())
    if error:
        return False, error
    reference = prefix_matching_from_patterns(pattern[:, None, None], tokens)[0, 0]
    if abs(value - reference.item()) > 1e-9:
        return False, (
            f"for a random causal pattern on 8 repeated sequences you return "
            f"{value:.4f}, which is wrong.{_prefix_hint(value, pattern, tokens)}"
        )
    return True, "It is the head's prefix-matching score."


def _prefix_hint(value: float, pattern: torch.Tensor, tokens: torch.Tensor) -> str:
    """The slip a wrong prefix-matching score most likely made, from the two usual
    ones: averaging over every position, or scoring the earlier copies themselves."""
    targets = induction_targets(tokens).to(F64)  # (B, T, T)
    queries = targets.any(-1)
    on_target = (pattern * targets).sum(-1)
    if abs(value - on_target.mean().item()) < 1e-9:
        return " Average only over positions whose token appeared before."
    T = tokens.shape[1]
    earlier = torch.ones(T, T, dtype=torch.bool).tril(-1)
    copies = ((tokens[:, :, None] == tokens[:, None, :]) & earlier).to(F64)
    on_copies = (pattern * copies).sum(-1)
    if any(
        abs(value - score) < 1e-9
        for score in (on_copies[queries].mean().item(), on_copies.mean().item())
    ):
        return (
            " You score attention on the earlier copies of the token; an induction"
            " head attends to the token that followed each copy."
        )
    return ""


# ---------------------------------------------------------------------------
# chapter 7


@_register("ex-implicit-code-rank-one")
def _rank_one(answer, variant: int) -> tuple[bool, str]:
    """``answer(W (p, m), delta (m,), a (m,)) -> (p, m)``: the smallest change of ``W``
    that maps ``a`` to ``W (a + delta)``."""
    gen = torch.Generator().manual_seed(_seed(17, variant))
    W = torch.randn(4, 6, generator=gen, dtype=F64)
    delta, a = (torch.randn(6, generator=gen, dtype=F64) for _ in range(2))
    output, error = _call(answer, W.clone(), delta.clone(), a.clone())
    if error:
        return False, error
    reference = rank_one(W, delta[None], a[None])[0]
    ok, message = _compare(output, reference, "for a random 4 x 6 W")
    if ok:
        return True, "(W + dW) a = W (a + delta), with the smallest dW."
    if isinstance(output, torch.Tensor) and output.shape == reference.shape:
        if torch.allclose((W + output.detach().to(F64)) @ a, W @ (a + delta)):
            return (
                False,
                "(W + dW) a = W (a + delta) holds, but dW is not the smallest.",
            )
    return False, message


@_register("ex-implicit-code-least-norm")
def _least_norm(answer, variant: int) -> tuple[bool, str]:
    """``answer(A (m, n), Y (p, n)) -> (p, m)``: the W of least Frobenius norm with
    ``W A = Y``, fine-tuning's endpoint from zero."""
    gen = torch.Generator().manual_seed(_seed(27, variant))
    cases = []
    # exact fits first; then more examples than inputs (no exact fit: least squares)
    # and inputs of rank 2 (many least-squares fits: the least norm), where the
    # normal equations fail
    for m, n, rank, note in (
        (6, 4, 4, ""),
        (5, 5, 5, ""),
        (4, 6, 4, ", where no W fits exactly"),
        (6, 4, 2, " of rank 2, where many W fit equally well"),
    ):
        A = torch.randn(m, rank, generator=gen, dtype=F64) @ torch.randn(
            rank, n, generator=gen, dtype=F64
        )
        Y = torch.randn(3, n, generator=gen, dtype=F64)
        where = f"for A of shape ({m}, {n}){note}"
        cases.append(((A.clone(), Y.clone()), Y @ torch.linalg.pinv(A), where))
    ok, message, _ = _against(answer, cases)
    return ok, message if not ok else "It interpolates with the least norm."


# ---------------------------------------------------------------------------
# chapter 8


@_register("ex-kernel-code-smoother")
def _smoother(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, h) -> (B,)``: the Gaussian Nadaraya-Watson smoother."""
    xs, ys, xq, _ = _gd_prompts(_seed(8, variant), 9, 2)
    cases = [
        (
            (xs, ys, xq, h),
            nadaraya_watson(xs, ys, xq, "gaussian", bandwidth=h),
            f"bandwidth h = {h}",
        )
        for h in (0.7, 2.0)
    ]
    ok, message, _ = _against(answer, cases)
    return ok, message if not ok else "It is the Gaussian kernel smoother."


@_register("ex-kernel-code-fgd")
def _fgd(answer, variant: int) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, eta, steps) -> (B,)``: ``steps`` steps of functional
    gradient descent from 0 with the kernel ``exp(<x, x'>)``."""
    xs, ys, xq, _ = _gd_prompts(_seed(18, variant), 6, 2)
    cases = [
        (
            (xs, ys, xq, 0.5, steps),
            functional_gd(xs, ys, xq, "exp", lr=0.5, steps=steps),
            f"{steps} step{'s' * (steps > 1)}",
        )
        for steps in (1, 4)
    ]
    ok, message, failed = _against(answer, cases)
    if ok:
        return True, "It follows functional gradient descent."
    if failed > 0 and "raised" not in message:
        message += " One step was right: check how the residuals update."
    return False, message


# ---------------------------------------------------------------------------
# chapter 9


@_register("ex-frontiers-code-recurrence")
def _recurrence(answer, variant: int) -> tuple[bool, str]:
    """``answer(q, k, v) -> (B, T, dv)``: causal linear attention by its recurrence."""
    gen = torch.Generator().manual_seed(_seed(9, variant))
    q, k = (torch.randn(4, 6, 3, generator=gen, dtype=F64) for _ in range(2))
    v = torch.randn(4, 6, 2, generator=gen, dtype=F64)
    output, error = _call(answer, q, k, v)
    if error:
        return False, error
    reference = linear_attention_parallel(q, k, v)
    ok, message = _compare(output, reference, "on 4 sequences of 6 tokens")
    if ok:
        return True, "Your recurrence gives causal linear attention's outputs."
    if isinstance(output, torch.Tensor) and output.shape == reference.shape:
        output = output.detach().to(F64)
        first = torch.allclose(output[:, 0], reference[:, 0])
        if not first:
            hint = " Already the first output differs: what does the state hold after "
            return False, message + hint + "the first token?"
        bad = next(
            t for t in range(6) if not torch.allclose(output[:, t], reference[:, t])
        )
        return False, message + f" The outputs agree before token {bad}, then differ."
    return False, message


@_register("ex-frontiers-code-always-right")
def _always_right(answer, variant: int) -> tuple[bool, str]:
    """``answer(M) -> float``: the fraction of queries right for every choice of the
    sign values, for a crosstalk matrix ``M (P, P)``."""
    matrices = _crosstalk_matrices(_seed(19, variant))
    for trial, M in enumerate(matrices):
        value, error = _call_number(answer, M.clone())
        if error:
            return False, error
        if abs(value - guaranteed_recall(M)) > 1e-12:
            P = M.shape[0]
            if trial == len(matrices) - 1:
                kind = "a tie: each diagonal entry equals the rest of its column"
            else:
                negative = "with a negative diagonal entry " if trial % 3 == 2 else ""
                kind = f"a random {P} x {P} matrix M {negative}".rstrip()
            return False, (
                f"wrong for {kind} (your answer {value:.3f})."
                f"{_always_right_hint(value, M)}"
            )
    return True, (
        f"It agrees with the worst case over all sign vectors on {len(matrices)} "
        "matrices."
    )


def _crosstalk_matrices(seed: int) -> list[torch.Tensor]:
    """Twelve crosstalk matrices ``I + 0.45 noise`` of sizes 3 to 6, in every third
    of which a diagonal entry is negative and larger than the rest of its column (the
    answer's sign is wrong for every choice of the values), then one tie."""
    gen = torch.Generator().manual_seed(seed)
    matrices = []
    for trial in range(12):
        P = 3 + trial % 4
        M = torch.eye(P, dtype=F64) + 0.45 * torch.randn(P, P, generator=gen, dtype=F64)
        if trial % 3 == 2:
            q = trial % P
            M[q, q] = -(M[:, q].abs().sum() - M[q, q].abs() + 0.5)
        matrices.append(M)
    # a tie, exact in floating point: for the sign vector that opposes the diagonal
    # the read-out is 0, which is not right (chapter 9's simplex)
    matrices.append(torch.full((3, 3), 0.5, dtype=F64) + 0.5 * torch.eye(3, dtype=F64))
    return matrices


def _always_right_hint(value: float, M: torch.Tensor) -> str:
    """The slip a wrong answer most likely made: rows for columns, or the size of the
    diagonal for its sign."""
    if abs(value - guaranteed_recall(M.T)) < 1e-12:
        return " Query q reads column q of M, not row q."
    if abs(value - guaranteed_recall(M) * M.shape[0]) < 1e-12:
        return " Return the fraction of the queries, not their count."
    others = M.abs().sum(0) - M.diagonal().abs()
    if abs(value - (M.diagonal() >= others).double().mean().item()) < 1e-12:
        return (
            " A diagonal entry that only equals the rest of its column gives a read-out"
            " of 0 for one choice of the values, which is not right: compare strictly."
        )
    if abs(value - (M.diagonal().abs() > others).double().mean().item()) < 1e-12:
        return (
            " A negative diagonal entry larger than the rest of its column makes the"
            " answer wrong for every choice of the values: compare the signed entry."
        )
    return " Test your function on M, on its transpose and on a negative diagonal."
