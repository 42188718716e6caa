"""Training sequences of Reddy (ICLR 2024)'s bursty classification task, and what is
recorded while a model trains on them.

:class:`BurstySequences` is the sampler of chapter 6's ``reddy_*`` presets
(:func:`icl_lib.tasks.bursty.bursty_sequences`). Its :meth:`~BurstySequences.monitor`,
called by :func:`icl_lib.training.preset.train_preset` at every logged step, measures
on two fixed test sets (Reddy's and Chan et al.'s two tests):

* in-context accuracy: sequences of *novel* classes (fresh means and labels), bursty
  with the sampler's burstiness, so the query's label is in the context and nowhere
  else;
* in-weights accuracy: i.i.d. sequences of the world's classes, whose context holds
  the query's class only by chance, so the label must come from the weights;

and the two attention scores of the induction-head solution on the in-context set
(:func:`icl_lib.analysis.bursty.bursty_attention_scores`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_module, check_positive_int, check_seed
from ..analysis.bursty import bursty_attention_scores, query_accuracy, query_loss
from ..tasks.bursty import BurstyBatch, bursty_sequences
from .samplers import StationarySampler


@dataclass(frozen=True)
class BurstySequences(StationarySampler):
    """Reddy's sequences with fixed task parameters (the fields of
    :func:`icl_lib.tasks.bursty.bursty_sequences`)."""

    n_context: int = 8  # item-label pairs N before the query
    dim: int = 63  # item dimension D
    n_labels: int = 32  # labels L
    n_classes: int = 128  # classes K of the world (in-weights learning memorises them)
    burstiness: int = 1  # copies B of each class in a bursty context
    p_bursty: float = 1.0  # share of bursty sequences
    p_novel: float = 1.0  # share of sequences of novel classes (Reddy's p_C)
    zipf_alpha: float = 0.0  # class frequencies ~ k^(-zipf_alpha)
    eps: float = 0.1  # within-class spread
    class_seed: int = 0  # fixes the world's classes
    monitor_size: int = 1024  # sequences of each monitored test set
    monitor_seed: int = 6  # seed of the monitored test sets

    def __post_init__(self):
        check_positive_int("monitor_size", self.monitor_size)
        check_seed("monitor_seed", self.monitor_seed)
        self.draw(1, 0)  # checks the task parameters

    def _sequences(self, batch_size, seed, **override) -> BurstyBatch:
        fields = {
            "n_context": self.n_context,
            "dim": self.dim,
            "n_labels": self.n_labels,
            "n_classes": self.n_classes,
            "burstiness": self.burstiness,
            "p_bursty": self.p_bursty,
            "p_novel": self.p_novel,
            "zipf_alpha": self.zipf_alpha,
            "eps": self.eps,
            "class_seed": self.class_seed,
        }
        return bursty_sequences(batch_size, **{**fields, **override}, seed=seed)

    def draw(self, batch_size: int, seed) -> BurstyBatch:
        return self._sequences(batch_size, seed)

    def in_context_test(self, size: int | None = None, seed=None) -> BurstyBatch:
        """Novel classes, all bursty: only the context can give the label."""
        size = self.monitor_size if size is None else check_positive_int("size", size)
        seed = self.monitor_seed if seed is None else seed
        return self._sequences(size, seed, p_bursty=1.0, p_novel=1.0)

    def in_weights_test(self, size: int | None = None, seed=None) -> BurstyBatch:
        """The world's classes, i.i.d. (never bursty): only the weights can give the
        label (up to the chance that the context holds the query's class)."""
        size = self.monitor_size if size is None else check_positive_int("size", size)
        seed = self.monitor_seed + 1 if seed is None else seed
        return self._sequences(size, seed, p_bursty=0.0, p_novel=0.0)

    def monitor(self, model: torch.nn.Module) -> dict:
        """What the training curve records at a logged step: ``icl_accuracy`` and
        ``icl_loss`` on :meth:`in_context_test`, ``iwl_accuracy`` and ``iwl_loss`` on
        :meth:`in_weights_test`, ``previous_item`` and ``induction`` attention on the
        in-context test."""
        check_module("model", model)
        if "_fixed" not in self.__dict__:
            fixed = (self.in_context_test(), self.in_weights_test())
            object.__setattr__(self, "_fixed", fixed)
        icl, iwl = self.__dict__["_fixed"]
        device = next(model.parameters()).device
        icl, iwl = icl.to(device=device), iwl.to(device=device)
        was_training = model.training
        out = {
            "icl_accuracy": query_accuracy(model, icl),
            "icl_loss": query_loss(model, icl),
            "iwl_accuracy": query_accuracy(model, iwl),
            "iwl_loss": query_loss(model, iwl),
            **bursty_attention_scores(model, icl),
        }
        model.train(was_training)
        return {key: round(value, 5) for key, value in out.items()}
