"""Preset of chapter 7 (implicit dynamics): Dherin et al. (2025)'s regression block."""

from __future__ import annotations

from ..models.contextual import RegressionBlockConfig
from ..training.preset import Preset
from ..training.recipe import recipe
from ..training.samplers import RandomLengthRegression

PRESETS = (
    Preset(
        name="implicit_block",
        chapter="07_implicit_dynamics",
        description="Softmax-attention block on d = 5 regression, context sizes 0..20 "
        "(book preset, CPU).",
        model=RegressionBlockConfig(d=5, width=32, hidden=64, n_head=2),
        task=RandomLengthRegression(dim=5, max_context=20),
        loss="query_mse",
        metric="query_loss",
        # The recipe at four times the first budget (5000 steps at a constant rate left
        # the loss falling by 5 % over the last fifth of the run).
        **recipe(20_000, lr=2e-3, batch_size=128),
    ),
)
