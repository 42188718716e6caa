"""The prompt-start mismatch of chapter 4's HMM prompts, against direct computation."""

import pytest
import torch

from icl_lib.analysis.concepts import concept_curves
from icl_lib.analysis.prompt_mismatch import (
    entity_persistence,
    entity_reset_transition,
    known_concept_accuracy,
    start_total_variation,
)
from icl_lib.tasks import HMMConceptMixture


@pytest.fixture(scope="module")
def mixture():
    return HMMConceptMixture(3, 3, 4, 8, seed=5)


def test_entity_persistence_by_simulation(mixture):
    """Two steps of the entity chain from its stationary law, sampled."""
    A = mixture.entity_transition
    gen = torch.Generator().manual_seed(0)
    pi = torch.linalg.matrix_power(A, 500)[0]
    v = torch.multinomial(pi, 200_000, True, generator=gen)
    mid = torch.multinomial(A[v], 1, generator=gen).squeeze(1)
    after = torch.multinomial(A[mid], 1, generator=gen).squeeze(1)
    sampled = (after == v).double().mean().item()
    assert abs(entity_persistence(mixture) - sampled) < 0.005


def test_entity_persistence_limits():
    stay = HMMConceptMixture(2, 4, 3, 6, entity_stay=1.0, smoothing=0.0, seed=1)
    assert entity_persistence(stay) == pytest.approx(1.0)
    mixed = HMMConceptMixture(2, 4, 3, 6, entity_stay=0.0, smoothing=1.0, seed=1)
    assert entity_persistence(mixed) == pytest.approx(0.25)


def test_start_total_variation_by_enumeration(mixture):
    E, S = mixture.memory.shape
    tv = start_total_variation(mixture)
    assert tv.shape == (mixture.n_concepts, E, S - 1)
    for c in range(mixture.n_concepts):
        for v in range(E):
            after = mixture.transition[c, v * S].view(E, S)  # leaving (v, 0)
            for s in range(1, S):
                start = torch.zeros(E, S, dtype=after.dtype)
                start[:, s] = 1.0 / E
                expected = 0.5 * (after - start).abs().sum()
                assert tv[c, v, s - 1].item() == pytest.approx(expected.item())


def test_entity_reset_transition(mixture):
    E, S = mixture.memory.shape
    reset = entity_reset_transition(mixture)
    torch.testing.assert_close(reset.sum(-1), torch.ones_like(reset.sum(-1)))
    delimiter_rows = torch.arange(E) * S
    others = torch.tensor([h for h in range(E * S) if h % S])
    torch.testing.assert_close(reset[:, others], mixture.transition[:, others])
    for c in range(mixture.n_concepts):
        rows = reset[c, delimiter_rows].view(E, E, S)
        expected = mixture.property_transition[c, 0] / E
        torch.testing.assert_close(rows, expected.expand(E, E, S))


def test_known_concept_accuracy_matches_concept_curves(mixture):
    prompts = mixture.sample_prompts(64, 4, example_length=3, seed=2)

    class Uniform:  # any causal token model: concept_curves needs one
        def next_token_probs(self, tokens, positions):
            V = mixture.vocab_size
            return torch.full((tokens.shape[0], len(positions), V), 1.0 / V)

    curves = concept_curves(Uniform(), mixture, prompts)
    torch.testing.assert_close(
        known_concept_accuracy(mixture, prompts), curves["accuracy"]["concept known"]
    )
    reset = known_concept_accuracy(mixture, prompts, entity_reset_transition(mixture))
    assert reset.shape == (prompts.n_examples,)
    assert reset[0].item() == pytest.approx(curves["accuracy"]["concept known"][0])


def test_bad_inputs(mixture):
    prompts = mixture.sample_prompts(4, 2, seed=3)
    with pytest.raises(TypeError, match="mixture"):
        entity_persistence("mixture")
    with pytest.raises(TypeError, match="prompts"):
        known_concept_accuracy(mixture, prompts.tokens)
    with pytest.raises(ValueError, match="transition"):
        known_concept_accuracy(mixture, prompts, mixture.transition[:1])
