"""Presets of chapter 8 (kernel regression): the GPT-style model as an in-context
classifier.

Labels ``sign(f)`` with ``f`` a Gaussian process (``exp`` kernel) on the sphere of
``R^5``; the logistic loss over every prefix. Chapter 8 reads its attention the way Han
et al. (TMLR 2025) read GPT-J's.
"""

from __future__ import annotations

from ..models.gpt import TransformerConfig
from ..training.preset import Preset
from ..training.samplers import SphereClassificationPrompts

PRESETS = (
    Preset(
        name="kernel_classifier",
        chapter="08_kernel_regression",
        description="In-context classification y = sign(f), f ~ GP(exp kernel) on the "
        "sphere of R^5, 16 points (book preset, CPU).",
        model=TransformerConfig(
            n_dims=5, n_positions=16, n_embd=64, n_layer=4, n_head=4
        ),
        task=SphereClassificationPrompts(dim=5, n_points=16),
        loss="prefix_logistic",
        metric="accuracy_by_k",
        steps=6000,
        batch_size=64,
        lr=1e-3,
    ),
    Preset(
        name="kernel_classifier_paper",
        chapter="08_kernel_regression",
        description="The classifier at GPT-2 scale, 64 points (paper-scale preset: "
        "a GPU for hours).",
        model=TransformerConfig(
            n_dims=5, n_positions=64, n_embd=256, n_layer=12, n_head=8
        ),
        task=SphereClassificationPrompts(dim=5, n_points=64),
        loss="prefix_logistic",
        metric="accuracy_by_k",
        steps=200_000,
        batch_size=64,
        lr=1e-4,
        paper=True,
    ),
)
