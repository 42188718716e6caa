"""Ridge regression's error stability in closed form (chapter 3).

Replacing example ``i`` of a prompt by ``(x', y')`` moves the ridge solution
``w = (X^T X + lam I)^{-1} X^T y`` by

``w' - w = A'^{-1} [(y' - <x', w>) x' - (y_i - <x_i, w>) x_i]``,
``A' = X'^T X' + lam I`` (the Gram matrix after the replacement),

which :func:`ridge_replacement_change` evaluates. With inputs in a ball of radius
``R``, labels bounded by ``Y`` and the per-example regularisation ``lam_1``
(``lam = m lam_1``), every prediction moves by at most :func:`ridge_stability_bound`,
``2 R^2 Y (1 + R^2 / lam_1) / (lam_1 m)``: uniform stability ``O(1 / m)`` (Bousquet and
Elisseeff 2002).
"""

from __future__ import annotations

import torch

from .._checks import (
    check_finite,
    check_positive_int,
    check_prompt,
    check_real,
    check_tensor,
)


def ridge_replacement_change(
    xs, ys, x_query, position: int, x_new, y_new, lam: float
) -> torch.Tensor:
    """``<w' - w, x_query>`` from the closed form above: ``(B,)``.

    Args:
        xs, ys, x_query: the prompts ``(B, m, d)``, ``(B, m)``, ``(B, d)``.
        position: the replaced example (0-based).
        x_new, y_new: the new example ``(B, d)``, ``(B,)``.
        lam: ``lam >= 0`` (``0`` needs ``X'^T X'`` invertible: least squares).
    """
    B, m, d = check_prompt(xs, ys, x_query)
    position = check_positive_int("position", position, minimum=0)
    if position >= m:
        raise ValueError(f"position: expected an index below m = {m}, got {position}")
    check_tensor("x_new", x_new, 2)
    check_tensor("y_new", y_new, 1)
    if tuple(x_new.shape) != (B, d) or tuple(y_new.shape) != (B,):
        raise ValueError(
            f"x_new, y_new: expected shapes (B, d) = {(B, d)} and (B,) = {(B,)}, got "
            f"{tuple(x_new.shape)} and {tuple(y_new.shape)}"
        )
    check_finite("x_new", x_new)
    check_finite("y_new", y_new)
    lam = check_real("lam", lam, minimum=0.0)
    eye = torch.eye(d, dtype=xs.dtype, device=xs.device)
    w = torch.linalg.solve(
        xs.transpose(1, 2) @ xs + lam * eye, (xs.transpose(1, 2) @ ys.unsqueeze(-1))
    ).squeeze(-1)  # (B, d)
    x_old, y_old = xs[:, position], ys[:, position]
    gram_new = (
        xs.transpose(1, 2) @ xs
        - x_old.unsqueeze(2) * x_old.unsqueeze(1)
        + x_new.unsqueeze(2) * x_new.unsqueeze(1)
        + lam * eye
    )
    rhs = (y_new - (x_new * w).sum(-1)).unsqueeze(-1) * x_new - (
        y_old - (x_old * w).sum(-1)
    ).unsqueeze(-1) * x_old
    dw = torch.linalg.solve(gram_new, rhs.unsqueeze(-1)).squeeze(-1)
    return (dw * x_query).sum(-1)


def ridge_stability_bound(
    m: int, lam_1: float, radius: float, label_bound: float
) -> float:
    """``2 R^2 Y (1 + R^2 / lam_1) / (lam_1 m)``: the most one replaced example can
    move a ridge prediction (``||x|| <= R``, ``|y| <= Y``, regularisation
    ``lam = m lam_1``); the proof is in chapter 3."""
    m = check_positive_int("m", m)
    lam_1 = check_real("lam_1", lam_1, minimum=0.0, strict=True)
    r = check_real("radius", radius, minimum=0.0)
    y = check_real("label_bound", label_bound, minimum=0.0)
    return 2 * r**2 * y * (1 + r**2 / lam_1) / (lam_1 * m)
