"""Presets of chapter 6 (the mechanistic view): attention-only token transformers on
repeated random tokens, where induction heads form (Olsson et al. 2022).

* ``induction_attn2``: 2 attention-only layers, width 64, 4 heads, trained on documents
  of 65 random tokens (``V = 128``) whose segment of random period 8-24 repeats from a
  random start (:class:`icl_lib.training.induction.RepeatedSegmentDocuments`). Layer 0
  can grow previous-token heads and layer 1 induction heads (K-composition).
* ``induction_attn1``: the same with one layer and the same budget: it cannot compose
  heads, so it has no induction head (Olsson et al.: no phase change in 1-layer models).

Both log the ICL score and every head's prefix-matching and previous-token scores every
``LOG_EVERY`` steps into the manifest's curve (the phase change, without retraining).

Reddy (ICLR 2024)'s bursty classification, on the book's variant of his network
(:mod:`icl_lib.models.bursty_classifier`: two one-head attention layers and an MLP
classifier, with the book's LayerNorms and output maps; ``N = 8``,
``L = 32``, ``D = 63``, ``eps = 0.1``, Adam ``1e-3``, batch 128), logging in-context
and in-weights accuracy and the two attention scores of the induction-head solution.
Every preset is one training run from one seed:

* ``reddy_novel``: every sequence bursty (``B = 1``) and of novel classes (``p_C = 1``):
  only in-context learning helps; the abrupt induction-head transition.
* ``reddy_bursty`` and ``reddy_iid``: a world of ``K = 256`` classes (no novel ones),
  bursty sequences (``B = 2``) in 90 % of the sequences, or in none. With so few
  classes both learn in the weights: this world is outside the regime where Chan et
  al. (2022) and Reddy find in-context learning.
* ``reddy_bursty_k2048`` and ``reddy_iid_k2048``: the same pair on a world of
  ``K = 2048`` classes, inside that regime.
"""

from __future__ import annotations

from ..models.bursty_classifier import BurstyClassifierConfig
from ..models.token_gpt import TokenTransformerConfig
from ..training.bursty import BurstySequences
from ..training.induction import RepeatedSegmentDocuments
from ..training.preset import Preset

VOCAB = 128  # vocabulary size V
N_CTX = 64  # tokens a model reads; documents have N_CTX + 1
STEPS = 4000  # the 2-layer model's phase change comes after about 1000-3000 steps
# Chapter 6 reads *when* circuits form, in optimiser steps, and what they compute; it
# asks no optimum of these models. A schedule would change the step size along the run
# and mix the timing of a phase change with the schedule's, so they train at a constant
# rate, without the recipe's warm-up, decay or clipping.
CONSTANT_RATE = (
    "a constant learning rate: chapter 6 reads when a phase change happens in "
    "optimiser steps, which a warm-up or a decay would shift and stretch; no optimum "
    "is asked of the model"
)
LOG_EVERY = 10  # steps between logged points (loss, ICL score, head scores): fine
# enough to resolve the phase change, which spans a few hundred steps
DOCUMENTS = RepeatedSegmentDocuments(length=N_CTX + 1, vocab_size=VOCAB)


def _attention_only(name: str, n_layer: int, description: str) -> Preset:
    return Preset(
        name=name,
        chapter="06_mechanistic",
        description=description,
        model=TokenTransformerConfig(
            vocab_size=VOCAB,
            n_ctx=N_CTX,
            n_embd=64,
            n_layer=n_layer,
            n_head=4,
            mlp=False,
        ),
        task=DOCUMENTS,
        loss="next_token_ce",
        metric="query_loss",
        steps=STEPS,
        batch_size=32,
        lr=1e-3,
        seed=6,
        log_every=LOG_EVERY,
        eval_size=1024,
        off_recipe=CONSTANT_RATE,
    )


PRESETS = (
    _attention_only(
        "induction_attn2",
        2,
        "A 2-layer attention-only token transformer (width 64, 4 heads) on repeated "
        "random-token segments of random period, V = 128, 64 tokens; per-head scores "
        "logged during training (book preset, CPU).",
    ),
    _attention_only(
        "induction_attn1",
        1,
        "The 1-layer attention-only control of induction_attn2: same data and budget "
        "(book preset, CPU).",
    ),
)


REDDY_LOG_EVERY = 25  # steps between logged points of the Reddy presets
REDDY_CLASSES = 256  # world classes K of reddy_bursty and reddy_iid
REDDY_MANY_CLASSES = 2048  # world classes K of reddy_bursty_k2048 and reddy_iid_k2048


def _reddy(name: str, steps: int, task: BurstySequences, description: str) -> Preset:
    return Preset(
        name=name,
        chapter="06_mechanistic",
        description=description,
        model=BurstyClassifierConfig(),
        task=task,
        loss="query_class_ce",
        metric="query_loss",
        steps=steps,
        batch_size=128,
        lr=1e-3,
        seed=6,
        log_every=REDDY_LOG_EVERY,
        eval_size=1024,
        off_recipe=CONSTANT_RATE,
    )


PRESETS += (
    _reddy(
        "reddy_novel",
        1500,
        BurstySequences(burstiness=1, p_bursty=1.0, p_novel=1.0),
        "Reddy's two attention layers + MLP on bursty sequences of novel classes "
        "(N = 8, B = 1, p_C = 1): in-context learning only (book preset, CPU).",
    ),
    _reddy(
        "reddy_bursty",
        3000,
        BurstySequences(
            n_classes=REDDY_CLASSES, burstiness=2, p_bursty=0.9, p_novel=0.0
        ),
        "Reddy's model on a world of 256 classes, 90 % of the sequences bursty "
        "(B = 2), no novel classes (book preset, CPU).",
    ),
    _reddy(
        "reddy_iid",
        3000,
        BurstySequences(
            n_classes=REDDY_CLASSES, burstiness=2, p_bursty=0.0, p_novel=0.0
        ),
        "The control of reddy_bursty: the same world, no bursty sequence (book "
        "preset, CPU).",
    ),
)

PRESETS += (
    _reddy(
        "reddy_bursty_k2048",
        3000,
        BurstySequences(
            n_classes=REDDY_MANY_CLASSES, burstiness=2, p_bursty=0.9, p_novel=0.0
        ),
        "reddy_bursty on a world of 2048 classes: many classes, the regime where Chan "
        "et al. and Reddy find in-context learning (book preset, CPU).",
    ),
    _reddy(
        "reddy_iid_k2048",
        3000,
        BurstySequences(
            n_classes=REDDY_MANY_CLASSES, burstiness=2, p_bursty=0.0, p_novel=0.0
        ),
        "The control of reddy_bursty_k2048: the same world, no bursty sequence (book "
        "preset, CPU).",
    ),
)
