"""Argument checks of the drawing functions: what a plot reads, refused by name.

A plot takes plain numbers (lists, arrays or tensors). A curve may hold NaN where a
learner is undefined (it draws as a gap); positions on an axis, and anything on a log
axis, must be finite, and infinity is never drawn.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .._checks import check_bool


def numbers(
    name: str, values, *, ndim: int = 1, nan: bool = False, minimum=None, strict=False
) -> np.ndarray:
    """``values`` as a float array of ``ndim`` dimensions: no infinity, NaN only if
    ``nan`` (a curve's gap), every other entry ``>= minimum`` (``>`` if ``strict``)."""
    if isinstance(values, (str, bytes, Mapping)) or values is None:
        raise TypeError(f"{name}: expected numbers, got {type(values).__name__}")
    try:
        raw = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values)
        if raw.dtype.kind not in "biuf":  # text, objects: not numbers
            raise TypeError
        array = raw.astype(float)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{name}: expected numbers, got {type(values).__name__}"
        ) from error
    if array.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim}-D numbers, got shape {array.shape}")
    if array.size == 0:  # nothing to draw
        raise ValueError(f"{name}: expected at least one number, got none")
    if np.isinf(array).any() or (not nan and np.isnan(array).any()):
        raise ValueError(
            f"{name}: expected finite numbers{' or NaN' if nan else ''}, got "
            f"{array.ravel()[~np.isfinite(array.ravel())][:3].tolist()}"
        )
    if minimum is not None:
        present = array[~np.isnan(array)]
        bad = present <= minimum if strict else present < minimum
        if bad.any():
            sign = ">" if strict else ">="
            raise ValueError(
                f"{name}: expected numbers {sign} {minimum}, got "
                f"{present[bad][:3].tolist()}"
            )
    return array


def mapping(name: str, value) -> Mapping:
    """A mapping (name -> values)."""
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name}: expected a mapping name -> values, got {type(value).__name__}"
        )
    return value


def curves(name: str, value, length: int | None = None, **options) -> dict:
    """A mapping name -> curve, at least one, each checked by :func:`numbers` (NaN
    allowed: a gap), ``length`` points each when given."""
    if not mapping(name, value):
        raise ValueError(f"{name}: expected at least one curve, got none")
    out = {}
    for key, curve in value.items():
        array = numbers(f"{name}[{key!r}]", curve, nan=True, **options)
        if length is not None and array.shape[0] != length:
            raise ValueError(
                f"{name}[{key!r}]: expected {length} values (one per x position), got "
                f"{array.shape[0]}"
            )
        out[key] = array
    return out


def labels(name: str, value) -> list[str]:
    """A sequence of labels (not a single string), at least one."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise TypeError(
            f"{name}: expected a sequence of labels, got {type(value).__name__}"
        )
    out = [str(label) for label in value]
    if not out:
        raise ValueError(f"{name}: expected at least one label, got none")
    return out


def pool_size(size) -> float:
    """A pool size ``M >= 1``, or ``inf`` for an infinite pool (fresh tasks)."""
    if isinstance(size, bool) or not isinstance(size, (int, float, np.number)):
        raise TypeError(f"pool_sizes: expected numbers, got {type(size).__name__}")
    if not (size >= 1):  # NaN fails too
        raise ValueError(f"pool_sizes: expected sizes >= 1 or inf, got {size}")
    return float(size)


def colormap(name: str, value) -> str:
    """The name of a registered matplotlib colormap."""
    import matplotlib

    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a colormap name, got {type(value).__name__}")
    if value not in matplotlib.colormaps:
        raise ValueError(f"{name}: expected a matplotlib colormap name, got {value!r}")
    return value


def flag(name: str, value) -> bool:
    """A switch: True or False (a string such as "no" would read as True)."""
    return check_bool(name, value)


def optional_mapping(name: str, value) -> Mapping:
    """A mapping, or ``{}`` for None (an option left out)."""
    return {} if value is None else mapping(name, value)


def optional_real(name: str, value) -> float | None:
    """A finite number, or None (an option left out)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.number)
    ):
        raise TypeError(
            f"{name}: expected a number or None, got {type(value).__name__}"
        )
    return float(numbers(name, [value])[0])


def pair(name: str, value, meaning: str) -> tuple[float, float]:
    """Two finite numbers; ``meaning`` names them in the error, e.g. "(c, slope)"."""
    array = numbers(name, value)
    if array.shape != (2,):
        raise ValueError(
            f"{name}: expected two numbers {meaning}, got {array.shape[0]}"
        )
    return float(array[0]), float(array[1])


def limits(name: str, value) -> tuple[float, float] | None:
    """Axis limits ``(low, high)``, or None (automatic)."""
    return None if value is None else pair(name, value, "(low, high)")


def axes(name: str, value):
    """A matplotlib Axes to draw into, or None (a new figure)."""
    from matplotlib.axes import Axes

    if value is not None and not isinstance(value, Axes):
        raise TypeError(
            f"{name}: expected a matplotlib Axes or None, got {type(value).__name__}"
        )
    return value


def optional_like(
    name: str, value, ref_name: str, ref: np.ndarray
) -> np.ndarray | None:
    """Numbers of the shape of ``ref`` (named ``ref_name``), or None (left out)."""
    if value is None:
        return None
    array = numbers(name, value)
    if array.shape != ref.shape:
        raise ValueError(
            f"{name}: expected the shape of {ref_name} {ref.shape}, got {array.shape}"
        )
    return array
