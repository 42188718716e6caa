"""How a GINC prompt differs from the pre-training text it is scored against
(Xie et al., ICLR 2022; chapter 4, Experiment 3).

A prompt of :class:`~icl_lib.tasks.hmm.HMMConceptMixture` starts every example afresh:
a uniform entity in the prompt's start property. In pre-training text the hidden state
after a delimiter continues the document: its entity follows the entity chain from the
entity before the delimiter, and its property follows the concept's chain out of the
delimiter property. Three exact measurements of that mismatch:

* :func:`entity_persistence`: the probability that the entity after a delimiter is the
  entity before it, in pre-training text (a prompt: one over the number of entities);
* :func:`start_total_variation`: the total-variation distance of Xie et al.'s
  condition on the prompt start distribution, between where a prompt's example starts
  and where pre-training text goes after a delimiter state;
* :func:`known_concept_accuracy`: the accuracy of the pre-training predictor told the
  concept, optionally with the entity redrawn at every delimiter
  (:func:`entity_reset_transition`), which removes the first mismatch alone.
"""

from __future__ import annotations

import torch

from .._checks import check_instance
from ..tasks.hmm import ConceptPromptBatch, HMMConceptMixture, forward_filter


def _mixture(mixture) -> HMMConceptMixture:
    return check_instance("mixture", mixture, HMMConceptMixture, "an HMMConceptMixture")


def _stationary(transition: torch.Tensor, steps: int = 2000) -> torch.Tensor:
    """The stationary distribution of a positive stochastic matrix (power iteration
    from the uniform distribution)."""
    pi = torch.full((transition.shape[0],), 1.0 / transition.shape[0]).to(transition)
    for _ in range(steps):
        pi = pi @ transition
    return pi / pi.sum()


def entity_persistence(mixture: HMMConceptMixture) -> float:
    """``P(entity after a delimiter = entity before it)`` in pre-training text.

    The entity chain takes two steps across a delimiter token (into the delimiter
    state and out of it), so with the chain ``A_E`` in its stationary distribution
    ``pi`` the probability is ``sum_v pi_v (A_E^2)_{vv}``. In a prompt the next
    example's entity is uniform: ``1 / E``.
    """
    A = _mixture(mixture).entity_transition
    pi = _stationary(A)
    return float((pi * (A @ A).diagonal()).sum())


def start_total_variation(mixture: HMMConceptMixture) -> torch.Tensor:
    """Xie et al.'s prompt-start mismatch: ``TV(p_prompt(h_start), p(h | h_delim,
    theta))`` for every concept ``theta``, delimiter state ``h_delim = (v, 0)`` and
    start property ``s`` of a prompt: ``(C, E, S - 1)``.

    A prompt's example starts uniform over the entities in property ``s``; pre-training
    text leaves ``(v, 0)`` for entity ``v'`` with probability ``A_E[v, v']`` and
    property ``s'`` with ``A_theta[0, s']``."""
    mixture = _mixture(mixture)
    E, S = mixture.memory.shape
    # (E, E) and (C, S, S)
    A_E, A_S = mixture.entity_transition, mixture.property_transition
    after = A_E[None, :, :, None] * A_S[:, None, None, 0, :]  # (C, v, v', s')
    start = torch.zeros(S - 1, E, S, dtype=after.dtype)
    start[torch.arange(S - 1), :, torch.arange(1, S)] = 1.0 / E  # (s, v', s')
    diff = after[:, :, None] - start[None, None]  # (C, v, s, v', s')
    return 0.5 * diff.abs().sum((-2, -1))


def entity_reset_transition(mixture: HMMConceptMixture) -> torch.Tensor:
    """The pre-training transitions ``(C, H, H)`` with the entity redrawn uniformly
    when the chain leaves a delimiter state, as a prompt's next example does; every
    other transition, and the property chain, unchanged."""
    mixture = _mixture(mixture)
    E, S = mixture.memory.shape
    C = mixture.n_concepts
    out = mixture.transition.clone().view(C, E, S, E, S)
    out[:, :, 0] = mixture.property_transition[:, None, None, 0, :] / E  # (C,1,1,S)
    return out.view(C, E * S, E * S)


def known_concept_accuracy(
    mixture: HMMConceptMixture,
    prompts: ConceptPromptBatch,
    transition: torch.Tensor | None = None,
) -> torch.Tensor:
    """Accuracy at every ``n`` (``(n + 1,)``) of the pre-training predictor told the
    prompt's concept: its argmax against the oracle's, GINC's label, as
    :func:`icl_lib.analysis.concepts.concept_curves` scores it. ``transition``
    (``(C, H, H)``, default the mixture's own) replaces the pre-training chain, e.g.
    :func:`entity_reset_transition`."""
    mixture = _mixture(mixture)
    check_instance("prompts", prompts, ConceptPromptBatch, "a ConceptPromptBatch")
    C, H = mixture.n_concepts, mixture.transition.shape[1]
    transition = mixture.transition if transition is None else transition
    check_instance("transition", transition, torch.Tensor, "a (C, H, H) tensor")
    if tuple(transition.shape) != (C, H, H):
        raise ValueError(
            f"transition: expected shape (C, H, H) = {(C, H, H)}, got "
            f"{tuple(transition.shape)}"
        )
    _, next_probs = forward_filter(
        prompts.tokens,
        prompts.output_positions - 1,
        mixture.start.expand(C, -1),
        transition,
        mixture.emission.expand(C, -1, -1),
    )
    rows = torch.arange(prompts.batch_size)
    known = next_probs[rows, prompts.concepts]  # (B, n + 1, V)
    labels = mixture.oracle(prompts).argmax(-1)
    return (known.argmax(-1) == labels).double().mean(0)
