"""The book's one training recipe for its transformers, and why.

Every preset that trains a model of the book from scratch or warm-starts one follows
:func:`recipe` unless its preset says why not (``Preset.off_recipe``, checked by
:func:`follows_recipe` in the tests): Adam with a linear warm-up over the
first 5 % of the steps, a cosine decay of the learning rate to 0, and the gradient norm
clipped at 1. The choices come from a sweep on chapter 1's base model
(``tools/recipe_sweep.py``; its table is ``data/recipe_sweep.json``):

* the decay removes the floor that a constant learning rate leaves (the first base
  model, trained at a constant 1e-3, stayed at an error / d of about 0.0075 for every
  k >= 13, where least squares is exact);
* the base model reads token types, not learned absolute positions
  (:class:`icl_lib.models.gpt.TransformerConfig`, ``positions="types"``): with 42
  independently learned position vectors, the first base model attended to no label
  token at some positions and ignored those examples (label influence near 0,
  :mod:`icl_lib.analysis.influence`);
* adding the learned positions back on top of the token types (``"learned+types"``)
  does not help: after 6000 steps it is no more precise at k = d than token types alone
  and again ignores examples at some positions (the 6000-step rows of the table);
* warm-up and clipping keep the first steps of a warm start from undoing its parent.
"""

from __future__ import annotations

from .._checks import check_positive_int, check_real
from .preset import Preset

WARMUP_FRACTION = 0.05  # of the run's steps
GRAD_CLIP = 1.0  # largest gradient norm


def recipe(steps: int, lr: float, batch_size: int) -> dict:
    """The optimiser fields of a :class:`~icl_lib.training.preset.Preset` under the
    book's recipe: ``Preset(name=..., **recipe(steps, lr, batch_size))``."""
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    lr = check_real("lr", lr, minimum=0.0, strict=True)
    return {
        "steps": steps,
        "lr": lr,
        "batch_size": batch_size,
        "warmup_steps": int(WARMUP_FRACTION * steps),
        "cosine_decay": True,
        "grad_clip": GRAD_CLIP,
    }


def follows_recipe(preset) -> bool:
    """Whether ``preset`` (a :class:`~icl_lib.training.preset.Preset`) trains under
    :func:`recipe`: the warm-up fraction, the cosine decay and the clipping.

    A book preset that does not must say why in its ``off_recipe`` field; a paper preset
    follows its paper instead.
    """
    if not isinstance(preset, Preset):
        raise TypeError(f"preset: expected a Preset, got {type(preset).__name__}")
    return (
        preset.cosine_decay
        and preset.warmup_steps == int(WARMUP_FRACTION * preset.steps)
        and preset.grad_clip == GRAD_CLIP
    )
