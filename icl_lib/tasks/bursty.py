"""Reddy (ICLR 2024)'s bursty in-context classification task, after Chan et al.
(NeurIPS 2022).

A *world* of ``K`` classes, fixed by ``class_seed``: class ``k`` has a mean
``mu_k ~ N(0, I_D / D)`` and one of ``L`` labels (``K -> L``, uniform). An item of
class ``k`` is ``x = (mu_k + eps * eta) / sqrt(1 + eps^2)`` with ``eta ~ N(0, I_D / D)``
(within-class spread ``eps``; ``|x|^2`` is about 1). A sequence is ``N`` item-label
pairs and a query item ``x_1 l_1 ... x_N l_N x_q``; the target is the query's label.

* Burstiness ``B`` (with probability ``p_bursty``): the context holds ``N / B``
  classes, each ``B`` times, in random order, and the query's class is one of them, so
  its label can be read off the context (in-context learning). The classes are drawn
  without replacement from the rank-frequency law ``p_k ~ k^(-zipf_alpha)``.
* Otherwise the ``N`` context classes and the query's class are i.i.d. from that law:
  only a memorised class-label map (in-weights learning) predicts the query.
* With probability ``p_novel`` the sequence's classes are *novel*: fresh means and
  fresh labels drawn for that sequence alone, which no weight can memorise (Reddy's
  ``p_C``; with ``p_novel = 1`` only in-context learning helps).

The book's CPU setting, with Reddy's sizes: ``N = 8``, ``L = 32``,
``D = 63``, ``eps = 0.1``, ``B = 1``, ``p_novel = 1``: chance is ``1 / 32``
(3.47 nats), picking a label of the context ``1 / 8`` (2.08 nats). Chapter 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from .._checks import (
    check_batch,
    check_positive_int,
    check_real,
    check_tensor,
    check_tensor_fields,
)
from ..prompts import PromptBatch
from ..runtime import make_generator


@dataclass(frozen=True)
class BurstyBatch(PromptBatch):
    """``B`` sequences of ``N`` item-label pairs and a query: ``xs (B, N + 1, D)``, the
    label indices as floats in ``ys (B, N + 1)`` (the query's last), and what the
    sampler knows. Integer fields stay on the CPU under :meth:`to`.

    Attributes:
        labels: ``(B, N + 1)`` int64, the label of every item (the query's last).
        classes: ``(B, N + 1)`` int64, the world's class of every item, ``-1`` for a
            novel class.
        bursty: ``(B,)`` bool, sequences drawn bursty (their query's class is in
            the context; an i.i.d. sequence may hold it by chance).
        novel: ``(B,)`` bool, sequences of novel classes.
    """

    labels: torch.Tensor
    classes: torch.Tensor
    bursty: torch.Tensor
    novel: torch.Tensor

    SIGNED_FIELDS: ClassVar[tuple[str, ...]] = ("classes",)  # -1: a novel class

    def __post_init__(self):
        super().__post_init__()
        shape = tuple(self.ys.shape)
        for name in ("labels", "classes"):
            check_tensor(name, getattr(self, name), 2, floating=False)
            if tuple(getattr(self, name).shape) != shape:
                raise ValueError(
                    f"{name}: expected shape (B, N + 1) = {shape}, got "
                    f"{tuple(getattr(self, name).shape)}"
                )
        if self.classes.numel() and self.classes.min().item() < -1:
            raise ValueError(
                "classes: expected class ids >= 0 or -1 (novel), got "
                f"{self.classes.min().item()}"
            )
        for name in ("bursty", "novel"):
            check_tensor(name, getattr(self, name), 1, floating=False)
            if getattr(self, name).shape[0] != shape[0]:
                raise ValueError(
                    f"{name}: expected shape (B,) = ({shape[0]},), got "
                    f"{tuple(getattr(self, name).shape)}"
                )

    @property
    def query_labels(self) -> torch.Tensor:
        """``(B,)`` the target: the query's label."""
        return self.labels[:, -1]

    def context_has_query_label(self) -> torch.Tensor:
        """``(B,)`` bool: the query's label occurs among the context labels."""
        return (self.labels[:, :-1] == self.labels[:, -1:]).any(-1)


@dataclass(frozen=True)
class ClassWorld:
    """The fixed classes of the task: ``means (K, D)`` and ``labels (K,)``, from
    ``class_seed``."""

    means: torch.Tensor  # (K, D), mu_k ~ N(0, I_D / D)
    labels: torch.Tensor  # (K,), the label of each class

    def __post_init__(self):
        check_batch("means", check_tensor("means", self.means, 2))  # one class or more
        check_tensor("labels", self.labels, 1, floating=False)
        if self.labels.shape[0] != self.means.shape[0]:
            raise ValueError(
                f"labels: expected one label per class (K = {self.means.shape[0]}), "
                f"got {self.labels.shape[0]}"
            )
        check_tensor_fields(self)

    @classmethod
    def draw(cls, n_classes: int, dim: int, n_labels: int, class_seed: int):
        check_positive_int("n_classes", n_classes)
        check_positive_int("dim", dim)
        check_positive_int("n_labels", n_labels, minimum=2)
        gen = make_generator(class_seed, "class_seed")
        means = torch.randn(n_classes, dim, generator=gen) / math.sqrt(dim)
        return cls(means, torch.randint(0, n_labels, (n_classes,), generator=gen))


def _check_probability(name: str, value) -> float:
    value = check_real(name, value, minimum=0.0)
    if value > 1:
        raise ValueError(f"{name}: expected a probability in [0, 1], got {value}")
    return value


def bursty_sequences(
    batch_size: int,
    *,
    n_context: int = 8,
    dim: int = 63,
    n_labels: int = 32,
    n_classes: int = 128,
    burstiness: int = 1,
    p_bursty: float = 1.0,
    p_novel: float = 1.0,
    zipf_alpha: float = 0.0,
    eps: float = 0.1,
    class_seed: int = 0,
    seed=0,
) -> BurstyBatch:
    """``batch_size`` sequences of Reddy's task (the module doc): ``n_context`` pairs
    and a query, items in ``R^dim``, ``n_labels`` labels, a world of ``n_classes``
    classes (from ``class_seed``), burstiness ``burstiness`` (a divisor of
    ``n_context``) in a share ``p_bursty`` of the sequences, novel classes in a share
    ``p_novel``, class frequencies ``~ k^(-zipf_alpha)``, within-class noise ``eps``.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("n_context", n_context)
    check_positive_int("burstiness", burstiness)
    if n_context % burstiness:
        raise ValueError(
            f"burstiness: expected a divisor of n_context = {n_context}, got "
            f"{burstiness}"
        )
    p_bursty = _check_probability("p_bursty", p_bursty)
    p_novel = _check_probability("p_novel", p_novel)
    zipf_alpha = check_real("zipf_alpha", zipf_alpha, minimum=0.0)
    eps = check_real("eps", eps, minimum=0.0)
    world = ClassWorld.draw(n_classes, dim, n_labels, class_seed)
    n_distinct = n_context // burstiness
    if n_distinct > n_classes:
        raise ValueError(
            f"n_classes: expected at least n_context / burstiness = {n_distinct}, got "
            f"{n_classes}"
        )
    gen = make_generator(seed)
    weights = torch.arange(1, n_classes + 1, dtype=torch.float64) ** -zipf_alpha
    bursty = torch.rand(batch_size, generator=gen) < p_bursty
    novel = torch.rand(batch_size, generator=gen) < p_novel
    n = n_context + 1
    local = torch.empty(batch_size, n, dtype=torch.long)  # slot -> class of the row
    known = torch.full((batch_size, n), -1, dtype=torch.long)  # row class -> world
    for b in range(batch_size):
        if bursty[b]:
            order = torch.randperm(n_context, generator=gen)
            local[b, :-1] = torch.arange(n_distinct).repeat_interleave(burstiness)[
                order
            ]
            local[b, -1] = torch.randint(0, n_distinct, (1,), generator=gen)
            if not novel[b]:
                known[b, :n_distinct] = torch.multinomial(
                    weights, n_distinct, replacement=False, generator=gen
                )
        else:
            local[b] = torch.arange(n)  # every slot its own class
            if not novel[b]:
                known[b] = torch.multinomial(
                    weights, n, replacement=True, generator=gen
                )
    # Class means and labels of each row's classes: the world's, or fresh (novel).
    fresh_means = torch.randn(batch_size, n, dim, generator=gen) / math.sqrt(dim)
    fresh_labels = torch.randint(0, n_labels, (batch_size, n), generator=gen)
    is_known = known >= 0
    means = torch.where(
        is_known[..., None], world.means[known.clamp_min(0)], fresh_means
    )
    labels = torch.where(is_known, world.labels[known.clamp_min(0)], fresh_labels)
    mu = means.gather(1, local[..., None].expand(-1, -1, dim))  # (B, n, D)
    noise = torch.randn(batch_size, n, dim, generator=gen) / math.sqrt(dim)
    xs = (mu + eps * noise) / math.sqrt(1 + eps**2)
    item_labels = labels.gather(1, local)
    return BurstyBatch(
        xs=xs,
        ys=item_labels.float(),
        labels=item_labels,
        classes=known.gather(1, local),
        bursty=bursty,
        novel=novel,
    )
