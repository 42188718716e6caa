"""Training documents for induction heads, and what is recorded while a model trains
on them.

:class:`RepeatedSegmentDocuments` is the sampler of chapter 6's presets
(:func:`icl_lib.tasks.induction.repeated_segment_tokens`). Besides ``sample`` and
``eval_batch`` it has :meth:`~RepeatedSegmentDocuments.monitor`, which
:func:`icl_lib.training.preset.train_preset` calls at every logged step: the ICL score
on fixed documents and every head's prefix-matching and previous-token scores on
Olsson et al.'s probe. They land in the manifest's ``curve``, so the chapter can show
the phase change (the ICL score's drop beside the induction heads' rise) without
retraining.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_module, check_positive_int, check_seed
from ..analysis.induction import head_scores, repeat_losses, token_losses
from ..tasks.induction import (
    RepeatedTokensBatch,
    repeated_random_tokens,
    repeated_segment_tokens,
)
from .samplers import StationarySampler


@dataclass(frozen=True)
class RepeatedSegmentDocuments(StationarySampler):
    """Random-token documents whose segment of random period repeats from a random
    start (Olsson et al. 2022's induction data, with the period varied per document).

    With the loss ``next_token_ce`` a model reads ``length - 1`` tokens, so ``length``
    is its ``n_ctx + 1``; the probe's ``probe_tokens * probe_repeats`` tokens must fit
    ``n_ctx`` too.
    """

    length: int  # tokens per document
    vocab_size: int = 128  # tokens V (>= 128: few ambiguous repeats)
    min_period: int = 8  # shortest repeated segment
    max_period: int = 24  # longest repeated segment (at most length / 2)
    monitor_size: int = 256  # documents on which the ICL score is logged
    probe_size: int = 64  # probe sequences for the per-head scores
    probe_tokens: int = 16  # distinct tokens per probe segment
    probe_repeats: int = 4  # copies of the probe segment
    monitor_seed: int = 6  # seed of the monitored documents and probe

    def __post_init__(self):
        for name in ("monitor_size", "probe_size", "probe_tokens", "probe_repeats"):
            check_positive_int(name, getattr(self, name))
        check_seed("monitor_seed", self.monitor_seed)
        self.draw(1, 0)  # checks the sizes
        repeated_random_tokens(
            1, self.probe_tokens, self.probe_repeats, self.vocab_size, seed=0
        )

    def draw(self, batch_size: int, seed) -> RepeatedTokensBatch:
        return repeated_segment_tokens(
            batch_size,
            self.length,
            self.vocab_size,
            min_period=self.min_period,
            max_period=self.max_period,
            seed=seed,
        )

    def probe(self) -> RepeatedTokensBatch:
        """Olsson et al.'s prefix-matching probe, fixed by ``monitor_seed``."""
        return repeated_random_tokens(
            self.probe_size,
            self.probe_tokens,
            self.probe_repeats,
            self.vocab_size,
            seed=self.monitor_seed,
        )

    def monitor_documents(self) -> RepeatedTokensBatch:
        """The documents of the logged ICL score, fixed by ``monitor_seed``."""
        return self.draw(self.monitor_size, self.monitor_seed + 1)

    def monitor(self, model: torch.nn.Module) -> dict:
        """What the training curve records at a logged step: ``icl_score``,
        ``repeated_loss`` and ``first_loss`` (nats, on :meth:`monitor_documents`;
        :func:`icl_lib.analysis.induction.repeat_losses`) and ``prefix_matching`` /
        ``previous_token`` (``[layer][head]`` lists on :meth:`probe`)."""
        check_module("model", model)
        if "_fixed" not in self.__dict__:
            object.__setattr__(self, "_fixed", (self.monitor_documents(), self.probe()))
        documents, probe = self.__dict__["_fixed"]
        device = next(model.parameters()).device
        documents, probe = documents.to(device=device), probe.to(device=device)
        parts = repeat_losses(token_losses(model, documents.tokens), documents)
        scores = head_scores(model, probe)
        out = {
            "icl_score": parts["repeated"] - parts["first"],
            "repeated_loss": parts["repeated"],
            "first_loss": parts["first"],
        }
        out = {key: round(value.item(), 5) for key, value in out.items()}
        for key, value in scores.items():
            out[key] = [[round(v, 4) for v in row] for row in value.tolist()]
        return out
