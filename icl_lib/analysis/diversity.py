"""Task diversity (Raventos et al. 2023): a model trained on a pool of ``M`` tasks,
measured on the pool's tasks and on fresh ones, beside the two Bayes predictors.

:func:`pool_size_sweep` evaluates one trained model per pool size, and dMMSE (the
posterior mean over the model's own pool) and ridge (the posterior mean for
``w ~ N(0, I)``), on prompts of pool tasks and of fresh tasks. Errors are against the
noiseless target, divided by ``d`` (excess error over the noise floor ``sigma^2``).
:func:`transition_pool_size` locates the move from dMMSE to ridge. Chapter 3.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._checks import check_positive_int, check_real, check_sequence
from ..learners import dmmse, ridge
from ..tasks import TaskPool, linear_regression
from .curves import excess_errors

SERIES = ("transformer", "dMMSE", "ridge")
TASKS = ("pool", "fresh")


@dataclass(frozen=True)
class PoolSweep:
    """Excess error / d per pool size and context size.

    Attributes:
        pool_sizes: ``M`` per row, ``math.inf`` for an infinite pool.
        errors: ``(series, tasks) -> (len(pool_sizes), n_points)`` arrays, series in
            :data:`SERIES`, tasks in :data:`TASKS`. dMMSE is NaN for an infinite
            pool (there it is ridge).
        prompt_errors: the same keys, ``(len(pool_sizes), n_prompts)`` arrays: each
            prompt's error averaged over the context sizes, for standard errors
            paired over the prompts that every series sees (:meth:`prompt_means`).
            Empty for a sweep built from means alone.
    """

    pool_sizes: tuple
    errors: dict
    prompt_errors: dict = field(default_factory=dict)

    def mean(self, series: str, tasks: str) -> np.ndarray:
        """The error averaged over context sizes (the training loss's average), per
        ``M``."""
        return self.errors[self._key(series, tasks)].mean(axis=1)

    def prompt_means(self, series: str, tasks: str) -> np.ndarray:
        """Each prompt's error averaged over context sizes, per ``M``:
        ``(len(pool_sizes), n_prompts)``, whose mean over prompts is :meth:`mean`.

        The series see the same prompts (the fresh ones are shared by every pool
        size too), so a ratio of two series is paired prompt by prompt."""
        key = self._key(series, tasks)
        if key not in self.prompt_errors:
            raise ValueError(
                "prompt_errors: this sweep keeps no per-prompt errors (built from "
                "means alone); expected one from pool_size_sweep"
            )
        return self.prompt_errors[key]

    def position_curves(self, n_tasks, tasks: str) -> dict[str, np.ndarray]:
        """``series -> error per context size`` at pool size ``n_tasks``."""
        if n_tasks not in self.pool_sizes:
            raise ValueError(
                f"n_tasks: expected one of {self.pool_sizes}, got {n_tasks!r}"
            )
        row = self.pool_sizes.index(n_tasks)
        return {s: self.errors[self._key(s, tasks)][row] for s in SERIES}

    def transfer_gap(self) -> np.ndarray:
        """The model's fresh-task minus pool-task error, per ``M``."""
        return self.mean("transformer", "fresh") - self.mean("transformer", "pool")

    def paired_transfer_gap(self) -> np.ndarray:
        """The model's transfer gap minus ridge's, per ``M``.

        Both are measured on the same prompts, so the luck of which tasks a finite pool
        drew, which moves ridge's fresh-minus-pool gap too, cancels: what is left is the
        part of the model's gap that a fixed algorithm would not have.
        """
        ridge_gap = self.mean("ridge", "fresh") - self.mean("ridge", "pool")
        return self.transfer_gap() - ridge_gap

    def _key(self, series, tasks):
        if series not in SERIES or tasks not in TASKS:
            raise ValueError(
                f"series, tasks: expected one of {SERIES} and one of {TASKS}, got "
                f"{series!r}, {tasks!r}"
            )
        return series, tasks


def pool_size_sweep(
    entries: Sequence[tuple],
    *,
    dim: int,
    n_points: int,
    noise_std: float,
    n_prompts: int = 1024,
    seed: int = 1000,
) -> PoolSweep:
    """Evaluate one model per pool on pool tasks and on fresh tasks.

    Args:
        entries: ``(pool, model)`` pairs, ``pool`` a :class:`~icl_lib.tasks.TaskPool`
            or ``None`` for an infinite pool, ``model`` anything with ``predict``.
        dim: input dimension ``d`` (the pools' too).
        n_points: examples per prompt; errors are reported for every context size
            ``0..n_points - 1``.
        noise_std: the label noise ``sigma`` of training; ridge uses
            ``lam = sigma^2``.
        n_prompts: prompts per set.
        seed: the fresh-task prompts' seed (the same prompts for every pool); the
            pool-task prompts use ``seed + 1``. It must differ from the seed that drew
            the pools: prompts drawn with a pool's seed start with the pool's tasks.
    """
    check_positive_int("dim", dim)
    check_positive_int("n_points", n_points)
    sigma = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    check_positive_int("n_prompts", n_prompts)
    check_sequence("entries", entries, "(pool, model) pairs")
    entries = list(entries)
    if not entries:
        raise ValueError("entries: expected at least one (pool, model) pair, got none")
    ks = range(n_points)
    fresh = linear_regression(n_prompts, n_points, dim, noise_std=sigma, seed=seed)
    ridge_fn = functools.partial(ridge, lam=sigma**2)
    rows = {(s, t): [] for s in SERIES for t in TASKS}
    per_prompt = {(s, t): [] for s in SERIES for t in TASKS}
    sizes = []
    for pool, model in entries:
        if pool is not None and not isinstance(pool, TaskPool):
            raise TypeError(
                f"entries: expected (TaskPool or None, model) pairs, got a "
                f"{type(pool).__name__}"
            )
        if pool is not None and pool.dim != dim:
            raise ValueError(f"entries: expected pools of dim = {dim}, got {pool.dim}")
        sets = {"fresh": fresh}
        sets["pool"] = (
            pool.sample(n_prompts, n_points, noise_std=sigma, seed=seed + 1)
            if pool is not None
            else fresh
        )
        sizes.append(math.inf if pool is None else pool.n_tasks)
        for tasks, batch in sets.items():
            learners = {"transformer": model, "ridge": ridge_fn}
            if pool is not None:
                learners["dMMSE"] = functools.partial(
                    dmmse, pool=pool.weights, noise_std=sigma
                )
            else:
                rows["dMMSE", tasks].append(np.full(n_points, np.nan))
                per_prompt["dMMSE", tasks].append(np.full(n_prompts, np.nan))
            for series, learner in learners.items():
                errors = excess_errors(learner, batch, ks)  # (B, n_points)
                rows[series, tasks].append(errors.mean(0).numpy())
                per_prompt[series, tasks].append(errors.mean(1).numpy())
    return PoolSweep(
        tuple(sizes),
        {key: np.stack(value) for key, value in rows.items()},
        {key: np.stack(value) for key, value in per_prompt.items()},
    )


def _check_sweep(sweep) -> None:
    if not isinstance(sweep, PoolSweep):
        raise TypeError(f"sweep: expected a PoolSweep, got {type(sweep).__name__}")


def crossover_position(sweep: PoolSweep) -> np.ndarray:
    """``t(M) = (dMMSE(M) - model(M)) / (dMMSE(M) - ridge)`` on fresh tasks, per
    finite ``M``: 0 where the model does as dMMSE, 1 where it does as ridge.

    Ill-conditioned at large ``M``, where dMMSE itself approaches ridge.
    """
    _check_sweep(sweep)
    finite = np.isfinite(np.asarray(sweep.pool_sizes, dtype=float))
    model = sweep.mean("transformer", "fresh")[finite]
    bayes = sweep.mean("dMMSE", "fresh")[finite]
    return (bayes - model) / (bayes - sweep.mean("ridge", "fresh")[finite])


def transition_pool_size(sweep: PoolSweep) -> float:
    """The pool size at which the model's fresh-task error is half-way from dMMSE's to
    ridge's.

    With ``t(M)`` of :func:`crossover_position`, the first ``M`` where ``t`` reaches
    ``1/2``, interpolated linearly in ``log2 M`` between the finite pool sizes on either
    side. NaN if ``t`` never reaches ``1/2`` or starts above it.
    """
    _check_sweep(sweep)
    sizes = np.asarray(sweep.pool_sizes, dtype=float)
    finite = np.isfinite(sizes)
    t = crossover_position(sweep)
    log_m = np.log2(sizes[finite])
    above = np.nonzero(t >= 0.5)[0]
    if above.size == 0 or above[0] == 0:
        return math.nan
    i = above[0]
    frac = (0.5 - t[i - 1]) / (t[i] - t[i - 1])
    return float(2 ** (log_m[i - 1] + frac * (log_m[i] - log_m[i - 1])))
