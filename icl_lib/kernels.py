"""Dot-product kernels ``K(a, b)``: how similar two inputs are, batched.

* ``linear``: ``<a, b>`` (linear attention, chapter 2);
* ``relu``: ``max(<a, b>, 0)`` (ReLU attention);
* ``exp``: ``exp(<a, b> / temperature)`` (the numerator of softmax attention);
* ``gaussian``: ``exp(-||a - b||^2 / (2 bandwidth^2))`` (the classical smoother).

The prompt samplers of :mod:`icl_lib.tasks.sphere` draw Gaussian processes with them and
the kernel learners of :mod:`icl_lib.learners.kernel` regress with them. Chapter 8.
"""

from __future__ import annotations

import torch

from ._checks import check_finite, check_real, check_tensor

KERNELS = ("linear", "relu", "exp", "gaussian")


def check_pair(a, b):
    """Check point batches ``a (B, N, d)``, ``b (B, M, d)``: same B, d and dtype."""
    check_tensor("a", a, 3)
    check_tensor("b", b, 3)
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        B, d = a.shape[0], a.shape[2]
        raise ValueError(
            f"b: expected shape (B, M, d) = ({B}, M, {d}) to match a, "
            f"got {tuple(b.shape)}"
        )
    if a.dtype != b.dtype:
        raise TypeError(f"b: expected dtype {a.dtype} (the dtype of a), got {b.dtype}")
    check_finite("a", a)
    check_finite("b", b)


def kernel_matrix(
    a: torch.Tensor,
    b: torch.Tensor,
    kernel: str = "exp",
    *,
    temperature: float = 1.0,
    bandwidth: float = 1.0,
) -> torch.Tensor:
    """The kernel between every row of ``a (B, N, d)`` and every row of ``b (B, M, d)``:
    ``(B, N, M)``.

    Args:
        kernel: one of ``KERNELS``.
        temperature: ``tau > 0`` of the ``exp`` kernel ``exp(<a, b> / tau)``.
        bandwidth: ``h > 0`` of the ``gaussian`` kernel ``exp(-||a - b||^2 / (2 h^2))``.
    """
    check_pair(a, b)
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {KERNELS}, got {kernel!r}")
    # both scales are checked whichever kernel reads one: a bad one is never ignored
    check_real("temperature", temperature, minimum=0.0, strict=True)
    check_real("bandwidth", bandwidth, minimum=0.0, strict=True)
    inner = a @ b.transpose(1, 2)  # (B, N, M)
    if kernel == "linear":
        return inner
    if kernel == "relu":
        return inner.clamp(min=0)
    return torch.exp(log_kernel(a, b, inner, kernel, temperature, bandwidth))


def log_kernel(a, b, inner, kernel, temperature, bandwidth):
    """``log K`` of the ``exp`` and ``gaussian`` kernels (both are exponentials of a
    score), from the points ``a (B, N, d)``, ``b (B, M, d)`` and their inner products
    ``inner (B, N, M)``."""
    check_pair(a, b)
    expected = (a.shape[0], a.shape[1], b.shape[1])
    if not isinstance(inner, torch.Tensor) or tuple(inner.shape) != expected:
        raise ValueError(
            f"inner: expected the tensor a @ b^T of shape {expected}, got "
            f"{tuple(getattr(inner, 'shape', ())) or type(inner).__name__}"
        )
    check_finite("inner", inner)
    if kernel not in ("exp", "gaussian"):
        raise ValueError(f"kernel: expected 'exp' or 'gaussian', got {kernel!r}")
    check_real("temperature", temperature, minimum=0.0, strict=True)
    check_real("bandwidth", bandwidth, minimum=0.0, strict=True)
    if kernel == "exp":
        return inner / check_real("temperature", temperature, minimum=0.0, strict=True)
    h = check_real("bandwidth", bandwidth, minimum=0.0, strict=True)
    sq = (
        (a * a).sum(-1).unsqueeze(2) + (b * b).sum(-1).unsqueeze(1) - 2 * inner
    )  # ||a - b||^2
    return -sq.clamp(min=0) / (2 * h * h)
