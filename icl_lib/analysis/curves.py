"""Error and accuracy of any in-context predictor as a function of the context size
``k``.

The curve ``k -> E[(prediction - y_{k+1})^2] / d`` is the book's basic measurement (Garg
et al. 2022, Figure 2): the same prompts serve every predictor and every ``k``, so
curves are comparable point by point. A *predictor* is a classical learner
``f(xs, ys, x_query) -> (B,)`` from :mod:`icl_lib.learners`, or a model of
:mod:`icl_lib.models` (anything with that ``predict`` method). A causal model (with
``predict_prefixes``) gives every ``k`` from one forward pass.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import torch

from .._checks import (
    check_bool,
    check_finite,
    check_float_tensor,
    check_positive_int,
    check_real,
    check_sequence,
    check_tensor,
)
from ..prompts import PromptBatch


def _as_int(value):
    """``value`` as a Python int if it is an integer of any kind (``__index__``),
    else unchanged (for the check to name)."""
    try:
        return operator.index(value)
    except TypeError:
        return value


def _context_sizes(batch, ks, name: str = "ks") -> list[int]:
    """``batch`` a PromptBatch, ``ks`` a non-empty sequence of context sizes below its
    ``n_points``. ``name`` is the argument an error names: a sequence (``ks``, ``ms``:
    an element is ``ks[i]``), or a single size (``k``, ``m``) passed as ``[k]``."""
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    ks = check_sequence(name, ks, "a sequence of context sizes", nonempty=True)
    element = f"{name}[i]" if name.endswith("s") else name
    ks = [
        # NumPy integers (np.arange) count as ints; bools and floats do not
        check_positive_int(
            element, k if isinstance(k, (bool, float)) else _as_int(k), minimum=0
        )
        for k in ks
    ]
    if max(ks) >= batch.n_points:
        raise ValueError(
            f"{name}: expected context sizes below n_points = {batch.n_points}, got "
            f"{max(ks)}"
        )
    return ks


def predictions(predictor, batch: PromptBatch, ks: Sequence[int]) -> torch.Tensor:
    """The prediction of ``y_k`` from the first ``k`` examples, per prompt and ``k``:
    ``(B, len(ks))``.

    ``predictor`` is a callable ``(xs, ys, x_query) -> (B,)`` or an object with
    ``predict``; one with ``predict_prefixes(xs, ys) -> (B, n)`` is called once for
    every ``k`` (it is causal).
    """
    ks = _context_sizes(batch, ks)
    with torch.no_grad():
        if hasattr(predictor, "predict_prefixes"):
            predictor.eval()
            return predictor.predict_prefixes(batch.xs, batch.ys)[:, ks]
        predict = getattr(predictor, "predict", predictor)
        if not callable(predict):
            raise TypeError(
                "predictor: expected a learner (xs, ys, x_query) -> (B,) or a model "
                "with "
                f"predict, got {type(predictor).__name__}"
            )
        columns = []
        for k in ks:
            xs, ys, x_query, _ = batch.prompt(k)
            column = predict(xs, ys, x_query)
            if not isinstance(column, torch.Tensor) or column.shape != ys.shape[:1]:
                got = getattr(column, "shape", type(column).__name__)
                raise ValueError(
                    f"predictor: expected one prediction per prompt, shape "
                    f"({batch.batch_size},), got {got}"
                )
            columns.append(column)
        return torch.stack(columns, dim=1)


def error_curve(
    predictor,
    batch: PromptBatch,
    ks: Sequence[int],
    *,
    normalise: bool = True,
    min_context: int = 0,
) -> torch.Tensor:
    """Mean squared error of the prediction of ``y_k`` from ``k`` examples, per ``k``:
    ``(len(ks),)``.

    Args:
        predictor: a learner or a model (see :func:`predictions`).
        batch: prompts with at least ``max(ks) + 1`` points.
        ks: context sizes.
        normalise: divide by ``d`` (so that predicting 0 scores about 1 for
        ``w, x ~ N(0, I)``).
        min_context: the smallest context the predictor is defined for (e.g. 3 for
        3-NN); the
            curve is NaN below it, and the predictor is not called there.

    Returns float64 errors.
    """
    ks = _context_sizes(batch, ks)  # every k, not only those >= min_context
    check_positive_int("min_context", min_context, minimum=0)
    normalise = check_bool("normalise", normalise)
    defined = [k for k in ks if k >= min_context]
    errors = torch.full((len(ks),), float("nan"), dtype=torch.float64)
    if defined:
        pred = predictions(predictor, batch, defined)
        values = ((pred - batch.ys[:, defined]) ** 2).double().mean(0)
        errors[[i for i, k in enumerate(ks) if k >= min_context]] = values.cpu()
    return errors / batch.dim if normalise else errors


def error_with_se(
    predictor, batch: PromptBatch, k: int, *, normalise: bool = True
) -> tuple[float, float]:
    """The mean squared error of the prediction of ``y_k`` from ``k`` examples, and its
    standard error over the prompts: ``(mean, se)``, floats.

    The mean equals :func:`error_curve` at ``k``; ``se`` is the sample standard
    deviation of the per-prompt squared errors over ``sqrt(B)`` (both divided by ``d``
    when ``normalise``), the scale on which a Monte Carlo estimate is compared with its
    closed form.
    """
    (k,) = _context_sizes(batch, [k], name="k")
    normalise = check_bool("normalise", normalise)
    if batch.batch_size < 2:
        raise ValueError(
            "batch: expected at least 2 prompts for a standard error, got "
            f"{batch.batch_size}"
        )
    errors = ((predictions(predictor, batch, [k])[:, 0] - batch.ys[:, k]) ** 2).double()
    scale = batch.dim if normalise else 1
    mean, se = errors.mean().item(), (errors.std() / errors.numel() ** 0.5).item()
    return mean / scale, se / scale


def excess_error_curve(
    predictor, batch: PromptBatch, ks: Sequence[int], *, normalise: bool = True
) -> torch.Tensor:
    """Mean squared error against the noiseless target ``<w, x_k>``, per ``k``:
    ``(len(ks),)``, float64.

    With label noise ``sigma^2`` this is the error of :func:`error_curve` less its
    floor ``sigma^2`` (exactly in expectation, and without the floor's sampling noise),
    the excess risk over the Bayes-irreducible part. ``batch`` must keep its task
    vectors ``w`` (a :class:`~icl_lib.tasks.RegressionBatch`).
    """
    if not hasattr(batch, "w"):
        raise TypeError(
            "batch: expected prompts that keep their task vectors w (a "
            f"RegressionBatch), got {type(batch).__name__}"
        )
    return excess_errors(predictor, batch, ks, normalise=normalise).mean(0)


def excess_errors(
    predictor, batch: PromptBatch, ks: Sequence[int], *, normalise: bool = True
) -> torch.Tensor:
    """The squared errors against the noiseless target ``<w, x_k>`` prompt by prompt:
    ``(B, len(ks))``, float64, whose mean over prompts is
    :func:`excess_error_curve` (kept per prompt for paired standard errors, e.g.
    :func:`ratio_of_means`)."""
    if not hasattr(batch, "w"):
        raise TypeError(
            "batch: expected prompts that keep their task vectors w (a "
            f"RegressionBatch), got {type(batch).__name__}"
        )
    ks = _context_sizes(batch, ks)
    normalise = check_bool("normalise", normalise)
    pred = predictions(predictor, batch, ks)
    target = torch.einsum("bkd,bd->bk", batch.xs[:, ks], batch.w)
    errors = ((pred - target) ** 2).double().cpu()
    return errors / batch.dim if normalise else errors


def ratio_of_means(numerator, denominator) -> tuple[float, float]:
    """``mean(numerator) / mean(denominator)`` over paired samples and its delta-method
    standard error: ``(ratio, se)``, floats.

    ``numerator``, ``denominator``: ``(B,)`` values measured on the same ``B`` prompts
    (e.g. a model's and the Bayes predictor's excess errors), so their correlation
    enters: ``se^2 = var(a - r b) / (B mean(b)^2)``. The denominator's mean must not
    be 0.
    """
    a = check_finite("numerator", check_tensor("numerator", numerator, 1)).double()
    b = check_finite("denominator", check_tensor("denominator", denominator, 1))
    b = b.double()
    if b.shape != a.shape:
        raise ValueError(
            f"denominator: expected the shape of numerator {tuple(a.shape)}, got "
            f"{tuple(b.shape)}"
        )
    if a.numel() < 2:
        raise ValueError(f"numerator: expected at least 2 samples, got {a.numel()}")
    mean_b = b.mean()
    if mean_b == 0:
        raise ValueError("denominator: expected a mean other than 0, got 0")
    ratio = a.mean() / mean_b
    se = (a - ratio * b).std() / (a.numel() ** 0.5 * mean_b.abs())
    return ratio.item(), se.item()


def sign(values: torch.Tensor) -> torch.Tensor:
    """``+1`` where ``values >= 0``, else ``-1`` (a classifier's label from its
    score)."""
    check_float_tensor("values", values)
    return torch.where(values >= 0, 1.0, -1.0).to(values.dtype)


def accuracy(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of ``sign(scores)`` equal to ``labels`` in ``{-1, +1}``."""
    check_float_tensor("scores", scores)
    check_float_tensor("labels", labels)
    if scores.shape != labels.shape:
        raise ValueError(
            f"labels: expected the shape of scores {tuple(scores.shape)}, got "
            f"{tuple(labels.shape)}"
        )
    if scores.numel() == 0:
        raise ValueError("scores: expected at least one score, got none")
    _check_signs("labels", labels)
    return (sign(scores) == labels).double().mean().item()


def _check_signs(name: str, labels: torch.Tensor) -> None:
    """Class labels in ``{-1, +1}`` (a 0/1 coding would score half right)."""
    if not bool(((labels == 1) | (labels == -1)).all()):
        bad = labels[(labels != 1) & (labels != -1)][:3].tolist()
        raise ValueError(f"{name}: expected labels -1 or +1, got {bad}")


def accuracy_curve(predictor, batch: PromptBatch, ks: Sequence[int]) -> torch.Tensor:
    """Fraction of prompts where ``sign(prediction of y_k) = y_k``, per ``k``:
    ``(len(ks),)``."""
    ks = _context_sizes(batch, ks)
    _check_signs("batch", batch.ys[:, ks])
    pred = predictions(predictor, batch, ks)
    return (sign(pred) == batch.ys[:, ks]).double().mean(0)


def logged(curve, key) -> tuple[list, list]:
    """``(steps, values)`` of the quantity ``key`` of a logged training curve (a
    manifest's ``curve``), checked: increasing integer steps, one finite value each."""
    if not isinstance(curve, dict) or "step" not in curve:
        raise ValueError(
            "curve: expected a manifest curve (a dict with 'step'), got "
            f"{sorted(curve) if isinstance(curve, dict) else type(curve).__name__}"
        )
    if not isinstance(key, str) or key == "step" or key not in curve:
        raise ValueError(
            f"key: expected a logged quantity of the curve, one of "
            f"{sorted(k for k in curve if k != 'step')}, got {key!r}"
        )
    steps = check_sequence("curve['step']", curve["step"], "a list of steps")
    values = check_sequence(f"curve[{key!r}]", curve[key], "a list of logged values")
    steps = [
        check_positive_int(f"curve['step'][{i}]", s, minimum=0)
        for i, s in enumerate(steps)
    ]
    values = [check_real(f"curve[{key!r}][{i}]", v) for i, v in enumerate(values)]
    if not steps or len(values) != len(steps):
        raise ValueError(
            f"curve: expected one {key!r} value per logged step ({len(steps)}), got "
            f"{len(values)}"
        )
    if any(b <= a for a, b in itertools.pairwise(steps)):
        raise ValueError(
            f"curve['step']: expected increasing steps, got {steps[:8]}..."
        )
    return steps, values


def logged_range(curve: dict, start: int, stop: int | None = None, *, key="loss"):
    """``(min, max)`` of a logged training curve (a manifest's ``curve``) over the
    steps ``start <= step`` (``< stop``): how flat a plateau is."""
    steps, values = logged(curve, key)
    check_positive_int("start", start, minimum=0)
    if stop is not None:
        check_positive_int("stop", stop, minimum=0)
    inside = [
        v
        for s, v in zip(steps, values, strict=True)
        if s >= start and (stop is None or s < stop)
    ]
    if not inside:
        raise ValueError(
            f"start: expected a logged step in [{start}, {stop}), got none"
        )
    return min(inside), max(inside)


def first_step_below(curve: dict, level: float, *, key="loss") -> int | None:
    """The first logged step whose ``key`` is below ``level`` (None if never): when a
    run leaves a plateau."""
    steps, values = logged(curve, key)
    level = check_real("level", level)
    return next((s for s, v in zip(steps, values, strict=True) if v < level), None)


def settled_step(curve: dict, level: float, *, key="loss") -> int | None:
    """The first logged step from which ``key`` stays at most ``level`` to the end of
    the run (None if the last value is above it): when a goal is reached for good."""
    steps, values = logged(curve, key)
    level = check_real("level", level)
    settled = None
    for s, v in zip(steps, values, strict=True):
        if v > level:
            settled = None
        elif settled is None:
            settled = s
    return settled


def significant_rises(errors: torch.Tensor, n_se: float = 2.0) -> list[int]:
    """Positions ``i >= 1`` where the error rises from column ``i - 1`` to ``i`` by
    more than ``n_se`` standard errors, paired over prompts.

    ``errors (B, K)``: per-prompt squared errors at ``K`` consecutive context sizes
    (:func:`icl_lib.analysis.selection.squared_errors`). A learner that uses every
    example has none: its error falls (or stays) as ``k`` grows.
    """
    if not isinstance(errors, torch.Tensor) or errors.ndim != 2:
        raise ValueError(
            "errors: expected a (B, K) tensor of per-prompt errors, got "
            f"{getattr(errors, 'shape', type(errors).__name__)}"
        )
    finite = bool(torch.isfinite(errors).all())
    if errors.shape[0] < 2 or not finite:
        raise ValueError(
            "errors: expected at least 2 prompts of finite errors, got "
            f"{errors.shape[0]} prompts" + ("" if finite else " with NaN or inf")
        )
    if not (isinstance(n_se, int | float) and n_se > 0 and n_se < float("inf")):
        raise ValueError(f"n_se: expected a positive finite number, got {n_se!r}")
    steps = (errors[:, 1:] - errors[:, :-1]).double()
    mean = steps.mean(0)
    se = steps.std(0) / steps.shape[0] ** 0.5
    return [i + 1 for i in range(steps.shape[1]) if mean[i] > n_se * se[i]]


def power_law_budget(
    curve: dict, level: float, *, key="loss", from_fraction: float = 0.5
) -> tuple[float, float]:
    """``(slope, steps)``: the log-log slope of a logged curve over its last part
    (steps from ``from_fraction`` of the run on) and the number of steps at which a
    power law with that slope, through the last logged value, reaches ``level``.

    A rough extrapolation of "how much more training": the learning-rate schedule
    shapes the curve, and a longer run would have its own. ``steps`` is the last
    logged step if the curve is already at or below ``level``, and ``inf`` if the fitted
    slope is not negative.
    """
    steps, values = logged(curve, key)
    if not (isinstance(level, int | float) and 0 < level < float("inf")):
        raise ValueError(f"level: expected a positive finite number, got {level!r}")
    from_fraction = check_real("from_fraction", from_fraction, minimum=0.0)
    if not 0 <= from_fraction < 1:
        raise ValueError(
            f"from_fraction: expected a number in [0, 1), got {from_fraction!r}"
        )
    last = steps[-1]
    kept = [
        (s, v) for s, v in zip(steps, values, strict=True) if s >= from_fraction * last
    ]
    if len(kept) < 2 or any(v <= 0 for _, v in kept):
        raise ValueError(
            f"curve: expected at least 2 positive logged values of {key!r} from step "
            f"{from_fraction * last:g} on"
        )
    x = torch.log(torch.tensor([s for s, _ in kept], dtype=torch.float64))
    y = torch.log(torch.tensor([v for _, v in kept], dtype=torch.float64))
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    if values[-1] <= level:
        return slope, float(last)
    if slope >= 0:
        return slope, float("inf")
    return slope, float(last * (level / values[-1]) ** (1 / slope))


def training_budget(
    curve: dict, level: float, *, key="loss", from_fraction: float = 0.5
) -> dict:
    """How far a logged curve ends from ``level``, and how much more training a power
    law would say it needs: ``{"end", "reached", "slope", "factor"}``.

    ``end``: the last logged value of ``key``; ``reached``: the first logged step from
    which it stays at most ``level`` (:func:`settled_step`; None if never); ``slope``
    and the extrapolated steps: :func:`power_law_budget` over the run from
    ``from_fraction`` on; ``factor``: those steps as a multiple of the last logged step
    (1.0 once reached, ``inf`` if the slope is not negative). The same caveat as
    there: a schedule that anneals shapes the slope, so ``factor`` illustrates the
    distance to ``level``, not the length of a run that would reach it.
    """
    slope, needed = power_law_budget(curve, level, key=key, from_fraction=from_fraction)
    steps, values = logged(curve, key)
    reached = settled_step(curve, level, key=key)
    return {
        "end": values[-1],
        "reached": reached,
        "slope": slope,
        "factor": 1.0 if reached is not None else needed / steps[-1],
    }
