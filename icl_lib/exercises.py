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

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .analysis.recall import guaranteed_recall
from .models.lsa import lsa_layer
from .models.recurrent import linear_attention_parallel
from .prompts import token_matrix
from .tasks import linear_regression

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


_CHECKS: dict[str, Callable[[object], tuple[bool, str]]] = {}


def _register(exercise: str):
    def add(function):
        _CHECKS[exercise] = function
        return function

    return add


def exercise_ids() -> list[str]:
    """The exercises :func:`check` knows, in the book's order."""
    return list(_CHECKS)


def check(exercise: str, answer, *, show: bool = True) -> Verdict:
    """Check ``answer`` to the coding exercise ``exercise`` (its label, e.g.
    ``"ex-gd-code-step"``); print the verdict if ``show``, and return it."""
    if exercise not in _CHECKS:
        raise KeyError(f"exercise: expected one of {exercise_ids()}, got {exercise!r}")
    if answer is None:
        verdict = Verdict(exercise, False, "No answer yet: fill in the cell above.")
    else:
        passed, message = _CHECKS[exercise](answer)
        verdict = Verdict(exercise, passed, message)
    if show:
        print(verdict)
    return verdict


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


def _compare(output, reference: torch.Tensor, where: str) -> tuple[bool, str]:
    """Whether ``output`` equals ``reference`` (float64, to rounding), and if not a
    message about ``output`` only: its type, its shape, a constant factor or a sign."""
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
    # a constant factor (including -1) explains a whole family of slips
    scale = (output * reference).sum() / (reference * reference).sum()
    if torch.allclose(output, scale * reference, rtol=1e-6, atol=1e-8):
        if torch.isclose(scale, torch.tensor(-1.0, dtype=F64)):
            return False, f"{where}: right up to the sign."
        return False, f"{where}: right up to a constant factor, {scale.item():.4g}."
    wrong = ~torch.isclose(output, reference, rtol=1e-7, atol=1e-9)
    return False, (
        f"{where}: {int(wrong.sum())} of {wrong.numel()} entries differ from the "
        "reference, and not by one constant factor."
    )


# ---------------------------------------------------------------------------
# chapter 2


def _gd_prompts(seed: int, n: int = 7, d: int = 3):
    return linear_regression(16, n + 1, d, seed=seed, dtype=F64).prompt(n)


@_register("ex-gd-code-step")
def _gd_step(answer) -> tuple[bool, str]:
    """``answer(xs, ys, x_query, eta) -> (B,)``: one GD step from ``w = 0``."""
    for seed, eta in ((0, 0.5), (1, 1.3)):
        xs, ys, xq, _ = _gd_prompts(seed)
        output, error = _call(answer, xs, ys, xq, eta)
        if error:
            return False, error
        N = xs.shape[1]
        reference = eta / N * torch.einsum("bnd,bn,bd->b", xs, ys, xq)
        where = f"on 16 prompts of N = {N} examples in d = 3, eta = {eta}"
        ok, message = _compare(output, reference, where)
        if not ok:
            return False, message
    return True, "It matches one gradient step from w = 0 on fresh prompts."


@_register("ex-gd-code-weights")
def _gd_weights(answer) -> tuple[bool, str]:
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
        xs, ys, xq, _ = _gd_prompts(seed, N, d)
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
# chapter 9


@_register("ex-frontiers-code-recurrence")
def _recurrence(answer) -> tuple[bool, str]:
    """``answer(q, k, v) -> (B, T, dv)``: causal linear attention by its recurrence."""
    gen = torch.Generator().manual_seed(9)
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
def _always_right(answer) -> tuple[bool, str]:
    """``answer(M) -> float``: the fraction of queries right for every choice of the
    sign values, for a crosstalk matrix ``M (P, P)``."""
    gen = torch.Generator().manual_seed(19)
    for trial in range(12):
        P = 3 + trial % 4
        M = torch.eye(P, dtype=F64) + 0.45 * torch.randn(P, P, generator=gen, dtype=F64)
        output, error = _call(answer, M.clone())
        if error:
            return False, error
        try:
            value = float(output)
        except (TypeError, ValueError):
            return False, f"expected a number, got {type(output).__name__}."
        if abs(value - guaranteed_recall(M)) > 1e-12:
            return False, (
                f"wrong for a random {P} x {P} matrix M (your answer {value:.3f}); "
                "test your function on M and on its transpose, and on a matrix with "
                "a negative diagonal entry."
            )
    return True, "It agrees with the worst case over all sign vectors on 12 matrices."
