"""Presets of chapter 9 (frontiers): the same backbone with attention, a diagonal
linear recurrence, a selective state-space layer or both, on in-context regression,
associative recall and sparse parity.

Every model of one task has the same width, depth and MLPs; only the mixer differs,
and the state sizes are chosen so that the mixers have about as many parameters as
attention (``diag``: ``state_dim = 2 * n_embd``; ``selective``: ``expand = 1``).
Park et al. (ICML 2024) run larger models on longer prompts; these are CPU sizes.
"""

from __future__ import annotations

import dataclasses

from .._checks import check_positive_int
from ..models.recurrent import MIXERS, SequenceModelConfig
from ..training.loop import Curriculum
from ..training.preset import Preset
from ..training.recall import RecallSequences, SparseParityPrompts
from ..training.recipe import recipe
from ..training.samplers import RegressionPrompts

WIDTH = 32  # residual width of every chapter 9 model
DEPTH = 4  # blocks of the regression and parity models
STATE = 8  # states per channel of the selective mixers
REGRESSION_DIM = 5  # d, chapter 1's dimension
REGRESSION_POINTS = 2 * REGRESSION_DIM + 1  # contexts k = 0..2d and the query
# Regression training steps: three times the first budget, under the book's recipe;
# the curve logs the error at k = d and 2d, so the chapter shows the trend.
STEPS = 24_000


def stack(kind: str, depth: int, **task) -> SequenceModelConfig:
    """``depth`` blocks of mixer ``kind`` ("hybrid": MambaFormer's order, a selective
    block first, then attention and selective blocks alternating)."""
    if kind not in (*MIXERS, "hybrid"):
        raise ValueError(f"kind: expected one of {(*MIXERS, 'hybrid')}, got {kind!r}")
    check_positive_int("depth", depth)
    if kind == "hybrid":
        layers = tuple("selective" if i % 2 == 0 else "attn" for i in range(depth))
    else:
        layers = (kind,) * depth
    return SequenceModelConfig(
        layers=layers,
        n_embd=WIDTH,
        n_head=2,
        state_dim=2 * WIDTH if kind == "diag" else STATE,
        expand=1,
        positions=kind == "attn",  # attention alone does not know the order
        **task,
    )


KINDS = ("attn", "diag", "selective", "hybrid")
NAMES = {
    "attn": "transformer",
    "diag": "diagonal recurrence",
    "selective": "selective SSM",
    "hybrid": "hybrid",
}


def _regression(kind: str) -> Preset:
    return Preset(
        name=f"frontiers_regression_{kind}",
        chapter="09_frontiers",
        description=f"d = 5 noiseless regression, 11 points, {NAMES[kind]} (book "
        "preset, CPU).",
        model=stack(kind, DEPTH, n_dims=REGRESSION_DIM, n_positions=REGRESSION_POINTS),
        # Garg et al.'s curriculum, shortened: d from 2 to 5 and 5 to 11 points
        task=RegressionPrompts(
            dims=Curriculum(2, REGRESSION_DIM, increment=1, interval=STEPS // 10),
            points=Curriculum(5, REGRESSION_POINTS, increment=2, interval=STEPS // 10),
            monitor_ks=(REGRESSION_DIM, 2 * REGRESSION_DIM),
        ),
        loss="prefix_mse",
        metric="error_by_k",
        log_every=200,
        **recipe(STEPS, lr=1e-3, batch_size=64),
    )


RECALL = RecallSequences(max_pairs=16, n_queries=4, n_keys=32, n_values=32)
RECALL_DEPTH = 2  # two blocks: the least depth of an induction-head solution
RECALL_STEPS = 4000
# numbers a selective block carries: E N states plus the convolution's last 3 inputs
SELECTIVE_STATE_NUMBERS = WIDTH * STATE + WIDTH * 3


def _recall(
    kind: str, steps: int = RECALL_STEPS, suffix: str = "", state_dim: int | None = None
) -> Preset:
    model = stack(
        kind,
        RECALL_DEPTH,
        vocab_size=RECALL.vocab_size,
        n_positions=(RECALL.n_tokens + 1) // 2,
    )
    if state_dim is not None:
        model = dataclasses.replace(model, state_dim=state_dim)
    return Preset(
        name=f"frontiers_recall_{kind}{suffix}",
        chapter="09_frontiers",
        description="associative recall, 1 to 16 key-value pairs and 4 queries, "
        f"{NAMES[kind]}"
        + (f", {steps} steps" if steps != RECALL_STEPS else "")
        + (f", state size {state_dim} per block" if state_dim is not None else "")
        + " (book preset, CPU).",
        model=model,
        task=RECALL,
        loss="recall_ce",
        metric="query_loss",
        **recipe(steps, lr=1e-3, batch_size=64),
    )


PARITY = SparseParityPrompts(dim=5, n_points=16, k=2)
PARITY_STEPS = 3000


def _parity(kind: str) -> Preset:
    return Preset(
        name=f"frontiers_parity_{kind}",
        chapter="09_frontiers",
        description="sparse parity, d = 5, k = 2, 16 points, "
        f"{NAMES[kind]} (book preset, CPU).",
        model=stack(kind, DEPTH, n_dims=PARITY.dim, n_positions=PARITY.n_points),
        task=PARITY,
        loss="prefix_logistic",
        metric="accuracy_by_k",
        **recipe(PARITY_STEPS, lr=1e-3, batch_size=64),
    )


PRESETS = (
    *(_regression(kind) for kind in ("attn", "diag", "selective")),
    *(_recall(kind) for kind in KINDS),
    # the selective model at four times the steps: does it leave the plateau?
    _recall("selective", steps=4 * RECALL_STEPS, suffix="_long"),
    # the diagonal recurrence with the selective model's state: is state size the gap?
    _recall("diag", suffix="_state_matched", state_dim=SELECTIVE_STATE_NUMBERS),
    # the selective model with four times the key dimension N per channel
    _recall("selective", suffix="_wide_state", state_dim=4 * STATE),
    *(_parity(kind) for kind in ("attn", "selective", "hybrid")),
)
