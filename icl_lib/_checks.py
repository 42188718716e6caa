"""Argument checks shared by every public function of ``icl_lib``.

Each check raises a ``ValueError`` or ``TypeError`` whose message names the argument,
what was expected and what came, so that bad input never fails silently.

One policy for numbers: a count or size is a Python or numpy integer, a real number a
Python or numpy integer or float; a bool is neither (``True`` is not a count), and a
tensor is a tensor (pass ``.item()`` for one number).
"""

from __future__ import annotations

import math

import numpy as np
import torch

FLOAT_DTYPES = (torch.float32, torch.float64)
MAX_PROMPT_ELEMENTS = 2**28  # 1 GiB of float32 inputs: more than a laptop should draw


def check_tensor(name: str, value, ndim: int, *, floating: bool = True) -> torch.Tensor:
    """Check that ``value`` is a torch tensor with ``ndim`` dimensions (and a float
    dtype)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    if value.ndim != ndim:
        raise ValueError(
            f"{name}: expected {ndim} dimensions, got shape {tuple(value.shape)}"
        )
    if floating and value.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name}: expected dtype float32 or float64, got {value.dtype}")
    return value


def check_finite(name: str, value: torch.Tensor) -> torch.Tensor:
    """The book's policy for data: prompts (inputs, labels, queries) are finite. A NaN
    or inf in a prompt is refused at the public boundary, by name, instead of
    propagating into every prediction and error."""
    # A finite sum means every entry is finite (NaN and inf propagate), and a sum is
    # 10-40x cheaper than isfinite on a CPU; only a non-finite sum (a bad entry, or an
    # overflow of huge finite ones) needs the exact test.
    if math.isfinite(value.detach().sum().item()):
        return value
    if not bool(torch.isfinite(value).all()):
        bad = (~torch.isfinite(value)).sum().item()
        raise ValueError(
            f"{name}: expected finite values, got {bad} NaN or inf of {value.numel()}"
        )
    return value


def check_same_shape(name: str, value, ref_name: str, ref) -> None:
    """Two 1-D tensors of one shape (``name`` is the one blamed)."""
    check_tensor(ref_name, ref, 1)
    check_tensor(name, value, 1)
    if value.shape != ref.shape:
        raise ValueError(
            f"{name}: expected the shape of {ref_name} {tuple(ref.shape)}, got "
            f"{tuple(value.shape)}"
        )


def check_sequences(xs, ys) -> tuple[int, int, int]:
    """Check whole prompts ``xs (B, n, d)`` and ``ys (B, n)`` of one dtype; returns
    ``(B, n, d)``."""
    check_tensor("xs", xs, 3)
    check_tensor("ys", ys, 2)
    B, n, d = xs.shape
    if B == 0 or d == 0:  # no prompt, or inputs with no coordinate
        raise ValueError(
            f"xs: expected at least one prompt of inputs of dimension >= 1, got shape "
            f"{tuple(xs.shape)}"
        )
    if tuple(ys.shape) != (B, n):
        raise ValueError(
            f"ys: expected shape (B, N) = {(B, n)} to match xs, got {tuple(ys.shape)}"
        )
    if ys.dtype != xs.dtype:
        raise TypeError(
            f"ys: expected dtype {xs.dtype} (the dtype of xs), got {ys.dtype}"
        )
    check_finite("xs", xs)
    check_finite("ys", ys)
    return B, n, d


def check_prompt(xs, ys, x_query) -> tuple[int, int, int]:
    """Check a batch of prompts ``xs (B, N, d)``, ``ys (B, N)``, ``x_query (B, d)``.

    Returns ``(B, N, d)``. All three tensors must share dtype and device.
    """
    B, N, d = check_sequences(xs, ys)
    check_tensor("x_query", x_query, 2)
    if tuple(x_query.shape) != (B, d):
        raise ValueError(
            f"x_query: expected shape (B, d) = {(B, d)} to match xs, got "
            f"{tuple(x_query.shape)}"
        )
    for name, t in (("ys", ys), ("x_query", x_query)):
        if t.dtype != xs.dtype:
            raise TypeError(
                f"{name}: expected dtype {xs.dtype} (the dtype of xs), got {t.dtype}"
            )
        if t.device != xs.device:
            raise ValueError(
                f"{name}: expected device {xs.device} (that of xs), got {t.device}"
            )
    check_finite("x_query", x_query)
    return B, N, d


def _is_integer(value) -> bool:
    """A Python or numpy integer, not a bool (numpy's ``np.int64(3)`` is as good as
    ``3``; ``True`` is not a count)."""
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_real(value) -> bool:
    """A Python or numpy integer or float, not a bool."""
    return _is_integer(value) or isinstance(value, (float, np.floating))


def check_positive_int(name: str, value, *, minimum: int = 1) -> int:
    """Check that ``value`` is an integer (Python or numpy, not a bool) at least
    ``minimum`` and at most ``MAX_PROMPT_ELEMENTS``; return it as a Python int.

    One rule for huge counts: a size, count or index above ``MAX_PROMPT_ELEMENTS``
    (2**28) would allocate more than 1 GiB, or loop for days, so it is refused here by
    name, before any allocation (a seed is not a count: :func:`check_seed`)."""
    if not _is_integer(value):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")
    if value > MAX_PROMPT_ELEMENTS:
        raise ValueError(
            f"{name}: expected an int <= {MAX_PROMPT_ELEMENTS} (2**28: larger sizes "
            f"do not fit in memory), got {value}"
        )
    return int(value)


def check_seed(name: str, value) -> int:
    """Check a random seed: an integer in ``[0, 2**64)`` (numpy's rule, and
    ``runtime.make_generator``'s; torch would wrap a negative one silently); return
    it as a Python int."""
    if not _is_integer(value):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if not 0 <= value < 2**64:
        raise ValueError(f"{name}: expected an int in [0, 2**64), got {value}")
    return int(value)


def check_real(
    name: str, value, *, minimum: float | None = None, strict: bool = False
) -> float:
    """Check that ``value`` is a finite real number, optionally ``>= minimum`` (``>`` if
    strict)."""
    if not _is_real(value):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__}")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    if minimum is not None:
        if strict and not value > minimum:
            raise ValueError(f"{name}: expected a number > {minimum}, got {value}")
        if not strict and not value >= minimum:
            raise ValueError(f"{name}: expected a number >= {minimum}, got {value}")
    return value


def check_dtype(name: str, dtype) -> torch.dtype:
    """Check that ``dtype`` is torch.float32 or torch.float64."""
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name}: expected torch.float32 or torch.float64, got {dtype}")
    return dtype


def check_sizes(batch_size, n_points, dim) -> None:
    """Check the three sizes every prompt sampler takes: positive ints whose inputs
    ``(batch_size, n_points, dim)`` fit in memory (refused before allocating)."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("n_points", n_points)
    check_positive_int("dim", dim)
    if batch_size * n_points * dim > MAX_PROMPT_ELEMENTS:
        raise ValueError(
            f"batch_size, n_points, dim: expected batch_size * n_points * dim <= "
            f"{MAX_PROMPT_ELEMENTS} (1 GiB of float32 inputs), got {batch_size} * "
            f"{n_points} * {dim} = {batch_size * n_points * dim}"
        )


def check_model(name: str, value, *methods: str):
    """Check that ``value`` has the callable ``methods`` an analysis uses (models are
    duck-typed: a test may dress an exact predictor as one)."""
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        wanted = ", ".join(f"{m}()" for m in methods)
        raise TypeError(
            f"{name}: expected a model with {wanted}, got {type(value).__name__}"
        )
    return value


def check_token_model(name: str, value):
    """Check a model of token sequences, ``model(tokens (B, T)) -> logits (B, T, V)``:
    a callable model whose ``config`` names its ``vocab_size`` (a layer such as
    ``nn.Linear`` would fail on integer tokens with torch's dtype error)."""
    check_model(name, value, "eval", "__call__")
    if not _is_integer(getattr(getattr(value, "config", None), "vocab_size", None)):
        raise TypeError(
            f"{name}: expected a token model (a config with vocab_size), got "
            f"{type(value).__name__}"
        )
    return value


def check_tensor_fields(record, skip: int = 0) -> None:
    """The policy for the tensor fields of a batch record (after the first ``skip``):
    a field annotated as a tensor holds one; a float tensor is finite; an integer
    tensor holds ids, indices or counts, so no negative entries (but in the fields the
    record's class lists in ``SIGNED_FIELDS``, where a negative value is a marker)."""
    import dataclasses

    signed = getattr(type(record), "SIGNED_FIELDS", ())
    for field in dataclasses.fields(record)[skip:]:
        value = getattr(record, field.name)
        if "Tensor" in str(field.type) and not isinstance(value, torch.Tensor):
            if value is None and "None" in str(field.type):
                continue
            raise TypeError(
                f"{field.name}: expected a torch.Tensor, got {type(value).__name__}"
            )
        if not isinstance(value, torch.Tensor) or value.dtype == torch.bool:
            continue
        if value.is_floating_point():
            check_finite(field.name, value)
        elif field.name not in signed and value.numel() and value.min().item() < 0:
            raise ValueError(
                f"{field.name}: expected ids, indices or counts >= 0, got "
                f"{value.min().item()}"
            )


def check_module(name: str, value) -> torch.nn.Module:
    """Check that ``value`` is a torch module (a model or a layer)."""
    if not isinstance(value, torch.nn.Module):
        raise TypeError(
            f"{name}: expected a torch.nn.Module, got {type(value).__name__}"
        )
    return value


def check_instance(name: str, value, types, expected: str):
    """Check that ``value`` is an instance of ``types``; ``expected`` says what in
    words (e.g. "a PromptBatch")."""
    if not isinstance(value, types):
        raise TypeError(f"{name}: expected {expected}, got {type(value).__name__}")
    return value


def check_float_tensor(name: str, value) -> torch.Tensor:
    """Check that ``value`` is a float tensor of any shape with finite entries (for
    the elementwise functions)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    check_tensor(name, value, value.ndim)
    return check_finite(name, value)


def check_per_prompt(name: str, values, batch_size: int) -> torch.Tensor:
    """Check one finite value per prompt: ``values (B,)`` with ``B = batch_size`` (a
    query's label, a prediction, a target sign)."""
    check_tensor(name, values, 1)
    if values.shape[0] != batch_size:
        raise ValueError(
            f"{name}: expected one value per prompt (B = {batch_size}), got "
            f"{values.shape[0]}"
        )
    return check_finite(name, values)


def check_sequence(name: str, value, expected: str, *, nonempty: bool = False):
    """Check that ``value`` is a sequence or other iterable, not a single string;
    ``expected`` says of what, in words (e.g. "a sequence of numbers").

    With ``nonempty``, it must hold at least one element (a curve at no context
    size, a sweep over nothing: ``numpy.stack`` refuses an empty list too), and its
    elements come back as a list (an iterator is read once)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name}: expected {expected}, got {type(value).__name__}")
    if nonempty:
        value = list(value)
        if not value:
            raise ValueError(f"{name}: expected {expected}, at least one, got none")
    return value


def check_bool(name: str, value) -> bool:
    """Check that a switch is True or False (numpy's bool too): a string such as "no"
    or a tensor would read as True and pass silently."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__}")
    return bool(value)


def check_optional_instance(name: str, value, types, expected: str):
    """:func:`check_instance`, with None allowed (an option left out)."""
    return None if value is None else check_instance(name, value, types, expected)


def check_cache(cache, prefix: str = "") -> None:
    """Check the activation cache a model's forward pass may fill: None or a dict, its
    keys prefixed by the string ``prefix``."""
    check_optional_instance("cache", cache, dict, "a dict to record activations in")
    check_instance("prefix", prefix, str, "a string")


def check_device(name: str, device) -> torch.device | None:
    """Check a device: None (where it stays), a name such as ``"cpu"``, or a
    torch.device."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"{name}: expected a device name or torch.device, got "
            f"{type(device).__name__}"
        )
    try:
        return torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"{name}: expected a torch device, got {device!r}") from error


def check_ids(name: str, value, ndim: int, upper: int) -> torch.Tensor:
    """Check an integer tensor of ``ndim`` dimensions whose entries index a set of
    ``upper`` elements (symbols, classes, concepts, prompts): each in ``[0, upper)``."""
    check_tensor(name, value, ndim, floating=False)
    if value.dtype == torch.bool or value.is_floating_point():
        raise TypeError(f"{name}: expected integer indices, got {value.dtype}")
    if value.numel():
        low, high = value.min().item(), value.max().item()
        if low < 0 or high >= upper:
            raise ValueError(
                f"{name}: expected indices in [0, {upper}), got [{low}, {high}]"
            )
    return value


def check_patterns(value) -> torch.Tensor:
    """Check attention patterns ``patterns (B, L, H, T, T)``: at least one sequence,
    a row over the ``T`` keys for each of its ``T`` queries, finite."""
    check_batch("patterns", check_tensor("patterns", value, 5))
    if value.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"patterns: expected (B, L, H, T, T), one row per query over the same "
            f"tokens, got shape {tuple(value.shape)}"
        )
    return check_finite("patterns", value)


def check_stream(name: str, value, width: int) -> torch.Tensor:
    """Check a sequence of hidden states ``(B, T, width)`` that a layer inside a model
    reads: a float tensor of the layer's width.

    Not its values: like torch's own layers, a layer passes NaN on. A model checks its
    prompts at its boundary, and :func:`icl_lib.training.loop.fit` names a diverged
    loss; a finiteness test here would cost a device sync per layer and step."""
    check_batch(name, check_tensor(name, value, 3))
    if value.shape[2] != width:
        raise ValueError(
            f"{name}: expected (B, T, {width}) states of the layer's width, got shape "
            f"{tuple(value.shape)}"
        )
    return value


def check_batch(name: str, value: torch.Tensor) -> torch.Tensor:
    """Check that a batched tensor holds at least one item along its first axis (an
    empty batch would give an empty result, or a mean of nothing: NaN)."""
    if value.shape[0] == 0:
        raise ValueError(
            f"{name}: expected at least one item in the batch (axis 0), got shape "
            f"{tuple(value.shape)}"
        )
    return value


def check_memory(name: str, elements: int, what: str) -> None:
    """Refuse, before allocating, a tensor of more than ``MAX_PROMPT_ELEMENTS``
    elements (1 GiB of float32); ``what`` says how ``elements`` came about."""
    if elements > MAX_PROMPT_ELEMENTS:
        raise ValueError(
            f"{name}: expected {what} <= {MAX_PROMPT_ELEMENTS} (1 GiB of float32), got "
            f"{elements}"
        )
