"""Presets of chapter 5 (algorithm selection).

Every model has chapter 1's backbone (4 layers, width 64, two heads, ``d = 5``) and
starts from ``overview_noiseless`` (a warm start: one parent for every model of the
chapter, except ``selection_noise_long``, which continues ``selection_noise``); prompts
have 11 points, so the context runs to ``k = 10 = 2d``.

* ``selection_noise``: label noise ``sigma`` drawn per prompt from ``{0.1, 1.0}``
  (Bai et al. 2023's noise-level selection, at a CPU's scale);
  ``selection_noise_long`` continues it for as many steps again;
  ``selection_noise_low_only`` and ``selection_noise_high_only`` train on one level
  each, and their ``_long`` runs continue them, with the same steps and schedules as
  the two-level runs and half the batch, so that each control sees as many prompts of
  its level in as many optimiser steps (the single-level controls);
* ``selection_families``: regression (``sigma = 0.5``) or logistic classification,
  one half each (Bai et al.'s pre-ICL testing); ``selection_regression_only`` and
  ``selection_classification_only`` train on one family with the same steps and half
  the batch, so that each sees as many prompts of its family as the mixture model in
  as many optimiser steps;
* ``selection_sparse``: 2-sparse task vectors with ``sigma = 0.1`` (Garg et al.
  2022's sparse regression, at ``d = 5``).
"""

from __future__ import annotations

from ..training.preset import Preset
from ..training.recipe import recipe
from ..training.samplers import (
    FamilyMixturePrompts,
    NoiseMixturePrompts,
    SparseRegressionPrompts,
)
from .overview import BOOK_MODEL

DIM = 5
N_POINTS = 11  # k = 0..10 = 2d
NOISE_LEVELS = (0.1, 1.0)
FAMILY_NOISE_STD = 0.5  # the regression family's label noise (chapter 1's noisy task)
SPARSITY = 2
SPARSE_NOISE_STD = 0.1
STEPS = 8000  # about 8 minutes on one CPU thread
MONITOR = (2 * DIM,)  # the training curves log the error at k = 2d on each noise level
# k = s..d, where the sparse claim is decided: its training curve logs the error there
SPARSE_MONITOR = tuple(range(SPARSITY, DIM + 1))
MODEL = BOOK_MODEL  # chapter 1's, so that every model here can start from its parent


CONTROL_BATCH = (
    32  # half the mixtures' batch: a control sees as many prompts of its kind
)


def _warm(
    name,
    description,
    task,
    steps=STEPS,
    init_from="overview_noiseless",
    batch_size=64,
):
    return Preset(
        name=name,
        chapter="05_selection",
        description=description + f" From {init_from} (book preset, CPU).",
        model=MODEL,
        task=task,
        loss="prefix_mse",
        metric="error_by_k",
        seed=5,
        init_from=init_from,
        **recipe(steps, lr=3e-4, batch_size=batch_size),
    )


PRESETS = (
    _warm(
        "selection_noise",
        "d = 5 linear regression, 11 points, noise sigma drawn per prompt from "
        "{0.1, 1.0}.",
        NoiseMixturePrompts(
            dim=DIM, n_points=N_POINTS, noise_levels=NOISE_LEVELS, monitor_ks=MONITOR
        ),
    ),
    # The same run continued: does more training close the gap on sigma = 0.1?
    _warm(
        "selection_noise_long",
        "selection_noise trained for as many steps again.",
        NoiseMixturePrompts(
            dim=DIM, n_points=N_POINTS, noise_levels=NOISE_LEVELS, monitor_ks=MONITOR
        ),
        init_from="selection_noise",
    ),
    *(
        control
        for name, level in zip(("low", "high"), NOISE_LEVELS, strict=True)
        for control in (
            _warm(
                f"selection_noise_{name}_only",
                f"d = 5 linear regression, 11 points, noise sigma = {level} only, "
                "batch 32 (the single-level control of selection_noise).",
                NoiseMixturePrompts(
                    dim=DIM,
                    n_points=N_POINTS,
                    noise_levels=(level,),
                    monitor_ks=MONITOR,
                ),
                batch_size=CONTROL_BATCH,
            ),
            _warm(
                f"selection_noise_{name}_only_long",
                f"selection_noise_{name}_only trained for as many steps again (the "
                "single-level control of selection_noise_long).",
                NoiseMixturePrompts(
                    dim=DIM,
                    n_points=N_POINTS,
                    noise_levels=(level,),
                    monitor_ks=MONITOR,
                ),
                init_from=f"selection_noise_{name}_only",
                batch_size=CONTROL_BATCH,
            ),
        )
    ),
    _warm(
        "selection_families",
        "d = 5, 11 points: regression (sigma = 0.5) or logistic classification, "
        "one half each.",
        FamilyMixturePrompts(dim=DIM, n_points=N_POINTS, noise_std=FAMILY_NOISE_STD),
    ),
    _warm(
        "selection_regression_only",
        "d = 5, 11 points, regression with sigma = 0.5 only, batch 32 (the "
        "single-family control of selection_families).",
        FamilyMixturePrompts(
            dim=DIM,
            n_points=N_POINTS,
            classification_prob=0.0,
            noise_std=FAMILY_NOISE_STD,
        ),
        batch_size=CONTROL_BATCH,
    ),
    _warm(
        "selection_classification_only",
        "d = 5, 11 points, logistic classification only, batch 32 (the "
        "single-family control of selection_families).",
        FamilyMixturePrompts(
            dim=DIM,
            n_points=N_POINTS,
            classification_prob=1.0,
            noise_std=FAMILY_NOISE_STD,
        ),
        batch_size=CONTROL_BATCH,
    ),
    _warm(
        "selection_sparse",
        "d = 5 linear regression, 11 points, 2-sparse task vectors, sigma = 0.1.",
        SparseRegressionPrompts(
            dim=DIM,
            n_points=N_POINTS,
            sparsity=SPARSITY,
            noise_std=SPARSE_NOISE_STD,
            monitor_ks=SPARSE_MONITOR,
        ),
        # three times the others' steps: its miss at the first budget (chapter 5)
        steps=3 * STEPS,
    ),
)
