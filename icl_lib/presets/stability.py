"""Presets of chapter 3 (stability and generalisation): Raventos et al. (2023)'s
task-diversity sweep, scaled to a CPU.

One model per pool size ``M``: noisy linear regression with ``D = 5`` inputs, ``K = 10``
examples per prompt (the loss averages the prediction of every one of them), label
noise ``sigma^2 = 0.25``, tasks drawn from a fixed pool of ``M`` vectors ``w ~ N(0, I)``
or, for ``pool_inf``, fresh for every prompt. The model is their small one (4 layers,
width 64, 2 heads); every preset shares the initialisation and the training prompts'
seed, so the pool size is the only difference.
"""

from __future__ import annotations

import dataclasses
import functools

from .._checks import check_positive_int, check_sequence
from ..analysis.curves import excess_error_curve
from ..learners import ridge
from ..models.gpt import TransformerConfig
from ..training.checkpoints import load_weights
from ..training.preset import MONITOR_PROMPTS, Preset
from ..training.recipe import recipe
from ..training.samplers import TaskPoolPrompts

DIM = 5
N_POINTS = 10
NOISE_STD = 0.5
STEPS = 15_000
BATCH_SIZE = 256  # Raventos et al.'s batch size
POOL_SIZES = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
MODEL = TransformerConfig(
    n_dims=DIM, n_positions=N_POINTS, n_embd=64, n_layer=4, n_head=2
)


def pool_preset_name(n_tasks: int | None) -> str:
    """``stability_pool_<M>``, or ``stability_pool_inf`` for ``n_tasks = None``."""
    if n_tasks is not None:
        check_positive_int("n_tasks", n_tasks)
    return f"stability_pool_{'inf' if n_tasks is None else n_tasks}"


def _pool(n_tasks: int | None) -> Preset:
    size = "an infinite pool" if n_tasks is None else f"a pool of M = {n_tasks} tasks"
    return Preset(
        name=pool_preset_name(n_tasks),
        chapter="03_stability",
        description=f"D = 5, K = 10, sigma^2 = 0.25, {size} (book preset: about 8 "
        "minutes on a GPU, 8 hours on one CPU core).",
        model=MODEL,
        task=TaskPoolPrompts(
            dim=DIM, n_points=N_POINTS, noise_std=NOISE_STD, n_tasks=n_tasks
        ),
        loss="prefix_mse",
        metric="error_by_k",
        steps=STEPS,
        batch_size=BATCH_SIZE,
        lr=1e-3,
        grad_clip=1.0,
        cosine_decay=True,
        log_every=250,
        off_recipe="trained on a lent GPU before the recipe (cosine decay and "
        "clipping, no warm-up); the twelve runs of the sweep take about 8 hours of one "
        "CPU core "
        "each, so they are retrained under the recipe only where a GPU is lent",
    )


SWEEP = tuple(_pool(m) for m in (*POOL_SIZES, None))


def _recipe_check(n_tasks: int | None) -> Preset:
    # The sweep's run at this pool size again, under the book's recipe and with
    # chapter 1's token types instead of learned positions: do the runs that miss
    # ridge miss it for their positions?
    base = _pool(n_tasks)
    return Preset(
        name=base.name + "_recipe",
        chapter="03_stability",
        description=f"{base.name} under the book's training recipe, with token types "
        "instead of learned absolute positions (book preset, CPU: about 40 minutes "
        "of one thread).",
        model=dataclasses.replace(MODEL, positions="types"),
        task=base.task,
        loss=base.loss,
        metric=base.metric,
        log_every=base.log_every,
        **recipe(STEPS, lr=base.lr, batch_size=BATCH_SIZE),
    )


RECIPE_CHECKS = (_recipe_check(None), _recipe_check(1024))
PRESETS = (*SWEEP, *RECIPE_CHECKS)


def pool_models(data_dir=None, *, recipe_checks: bool = False) -> list[tuple]:
    """``(pool, model)`` for every preset of the sweep, smallest pool first, the
    infinite pool last (its pool is ``None``): what
    :func:`icl_lib.analysis.diversity.pool_size_sweep` takes. With
    ``recipe_checks``, the runs of ``RECIPE_CHECKS`` instead (the infinite pool and
    ``M = 1024`` under the book's recipe)."""
    if not isinstance(recipe_checks, bool):
        raise TypeError(
            f"recipe_checks: expected True or False, got {type(recipe_checks).__name__}"
        )
    presets = RECIPE_CHECKS if recipe_checks else SWEEP
    return [(preset.task.pool(), _load(preset, data_dir)[0]) for preset in presets]


def transfer_gap_curves(pool_sizes=POOL_SIZES, data_dir=None) -> dict[str, dict]:
    """The fresh-task minus pool-task error / d during training of the runs with these
    (finite) pool sizes, against the number of training prompts:
    ``"M = ..." -> {"step": prompts, "loss": gap}`` (the layout of
    :func:`icl_lib.plotting.training_curves`)."""
    pool_sizes = check_sequence(
        "pool_sizes", pool_sizes, "a sequence of pool sizes", nonempty=True
    )
    unknown = sorted(set(pool_sizes) - set(POOL_SIZES))
    if unknown:
        raise ValueError(f"pool_sizes: expected sizes from {POOL_SIZES}, got {unknown}")
    curves = {}
    for preset in SWEEP:
        if preset.task.n_tasks not in pool_sizes:
            continue
        curve = _load(preset, data_dir)[1]["curve"]
        curves[f"M = {preset.task.n_tasks}"] = {
            "step": [s * preset.batch_size for s in curve["step"]],
            "loss": [
                f - p
                for f, p in zip(curve["fresh_error"], curve["pool_error"], strict=True)
            ],
        }
    return curves


def ridge_ratio_curve(name: str, data_dir=None) -> dict:
    """The fresh-task excess error / d of the run ``name`` (a preset of this module)
    over ridge's (``lambda = sigma^2``) on the same monitored fresh prompts, during
    training: ``{"step": optimiser steps, "ratio": ratios}`` (the layout of
    :func:`icl_lib.analysis.curves.training_budget`)."""
    names = [preset.name for preset in PRESETS]
    if name not in names:
        raise ValueError(f"name: expected one of {names}, got {name!r}")
    preset = PRESETS[names.index(name)]
    fresh = preset.task.monitor_batches(MONITOR_PROMPTS, preset.seed + 2)["fresh"]
    ridge_fn = functools.partial(ridge, lam=NOISE_STD**2)
    ridge_error = excess_error_curve(ridge_fn, fresh, range(N_POINTS)).mean().item()
    curve = _load(preset, data_dir)[1]["curve"]
    return {
        "step": list(curve["step"]),
        "ratio": [error / ridge_error for error in curve["fresh_error"]],
    }


def _load(preset: Preset, data_dir) -> tuple:
    # What the registry's load_checkpoint does; the registry imports this module.
    model = preset.build()
    manifest = load_weights(model, preset.name, preset.to_dict(), data_dir)
    return model.eval(), manifest
