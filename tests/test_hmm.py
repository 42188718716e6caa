"""The GINC-like mixture of HMMs (chapter 4): the forward algorithm, the Bayes
predictor, the concept posterior and the oracle against brute-force enumeration over
hidden paths, in float64; the samplers against the exact probabilities."""

import dataclasses
import itertools
import math

import pytest
import torch

from icl_lib.analysis.concepts import concept_curves
from icl_lib.models import TokenTransformerConfig
from icl_lib.tasks import (
    ConceptPromptBatch,
    HMMConceptMixture,
    TokenBatch,
    forward_filter,
)
from icl_lib.tasks.hmm import DELIMITER
from icl_lib.training.samplers import HMMDocuments

DT = torch.float64


def random_hmms(C, H, V, seed):
    gen = torch.Generator().manual_seed(seed)

    def stochastic(*shape):
        return torch.softmax(2 * torch.randn(*shape, generator=gen, dtype=DT), -1)

    return stochastic(C, H), stochastic(C, H, H), stochastic(C, H, V)


def path_probs(tokens, start, transition, emission):
    """``p_c(x_0..x_{T-1})`` for one sequence by summing over every hidden path:
    ``(C,)``."""
    H = emission.shape[1]
    paths = torch.tensor(list(itertools.product(range(H), repeat=len(tokens))))
    p = start[:, paths[:, 0]] * emission[:, paths[:, 0], tokens[0]]  # (C, paths)
    for t in range(1, len(tokens)):
        p = p * transition[:, paths[:, t - 1], paths[:, t]]
        p = p * emission[:, paths[:, t], tokens[t]]
    return p.sum(1)


def brute_predictive(tokens, t, start, transition, emission):
    """``p_c(x_{t+1} = v | x_0..x_t)`` and ``p_c(x_0..x_t)`` by enumeration."""
    V = emission.shape[2]
    prefix = path_probs(tokens[: t + 1], start, transition, emission)
    joint = torch.stack(
        [
            path_probs(tokens[: t + 1] + [v], start, transition, emission)
            for v in range(V)
        ],
        -1,
    )
    return joint / prefix[:, None], prefix


def test_forward_filter_equals_enumeration_over_hidden_paths():
    start, transition, emission = random_hmms(C=2, H=3, V=3, seed=0)
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 3, (2, 5), generator=gen)
    positions = torch.tensor([0, 2, 4])
    log_ev, nxt = forward_filter(tokens, positions, start, transition, emission)
    assert log_ev.shape == (2, 2, 3) and nxt.shape == (2, 2, 3, 3)
    for b in range(2):
        for j, t in enumerate(positions.tolist()):
            probs, prefix = brute_predictive(
                tokens[b].tolist(), t, start, transition, emission
            )
            torch.testing.assert_close(nxt[b, :, j], probs, rtol=1e-12, atol=1e-14)
            torch.testing.assert_close(
                log_ev[b, :, j], prefix.log(), rtol=1e-12, atol=1e-12
            )


def test_forward_filter_takes_a_start_per_sequence():
    start, transition, emission = random_hmms(C=2, H=3, V=3, seed=2)
    tokens = torch.tensor([[0, 1, 2], [2, 2, 0]])
    starts = torch.stack([start, start.flip(-1)])  # (B, C, H)
    _, nxt = forward_filter(tokens, torch.tensor([2]), starts, transition, emission)
    probs, _ = brute_predictive([2, 2, 0], 2, start.flip(-1), transition, emission)
    torch.testing.assert_close(nxt[1, :, 0], probs, rtol=1e-12, atol=1e-14)


def tiny_mixture(**kw):
    args = dict(n_concepts=3, n_entities=2, n_properties=3, vocab_size=4, seed=0)
    return HMMConceptMixture(**{**args, **kw})


def test_bayes_predictive_and_posterior_equal_enumeration():
    mix = tiny_mixture(smoothing=0.1)
    C = mix.n_concepts
    emission = mix.emission.expand(C, -1, -1)
    start = mix.start.expand(C, -1)
    tokens = mix.sample_documents(3, 5, seed=3).tokens
    positions = torch.tensor([0, 1, 3])
    posterior = mix.concept_posterior(tokens, positions)
    predictive = mix.predictive(tokens, positions)
    torch.testing.assert_close(posterior.sum(-1), torch.ones(3, 3, dtype=DT))
    torch.testing.assert_close(predictive.sum(-1), torch.ones(3, 3, dtype=DT))
    for b in range(3):
        for j, t in enumerate(positions.tolist()):
            probs, prefix = brute_predictive(
                tokens[b].tolist(), t, start, mix.transition, emission
            )
            weights = mix.prior * prefix / (mix.prior * prefix).sum()
            torch.testing.assert_close(posterior[b, j], weights, rtol=1e-12, atol=0)
            torch.testing.assert_close(
                predictive[b, j], weights @ probs, rtol=1e-12, atol=1e-15
            )


def test_oracle_equals_enumeration_with_the_prompt_start():
    mix = tiny_mixture()
    prompts = mix.sample_prompts(4, 2, example_length=3, seed=4)
    oracle = mix.oracle(prompts)  # (B, 3, V)
    C, S = mix.n_concepts, mix.n_properties
    for b in range(4):
        start = mix.prompt_start(prompts.start_properties[b : b + 1]).expand(C, -1)
        c = prompts.concepts[b].item()
        for i, pos in enumerate(prompts.output_positions.tolist()):
            x = prompts.tokens[b, pos - 2 : pos].tolist()
            probs, _ = brute_predictive(
                x, 1, start, mix.example_transition, mix.emission.expand(C, -1, -1)
            )
            torch.testing.assert_close(oracle[b, i], probs[c], rtol=1e-12, atol=1e-15)
    starts = prompts.start_properties
    assert (starts >= 1).all() and (starts < S).all()


def test_parameters_have_the_ginc_structure():
    mix = HMMConceptMixture(seed=5)
    C, E, S = mix.n_concepts, *mix.memory.shape
    H = E * S
    assert mix.transition.dtype == DT and mix.transition.shape == (C, H, H)
    torch.testing.assert_close(mix.transition.sum(-1), torch.ones(C, H, dtype=DT))
    assert (mix.transition > 0).all()  # every transition positive (Xie et al.)
    assert (mix.memory[:, 0] == DELIMITER).all() and (mix.memory[:, 1:] > 0).all()
    # the product structure: entity chain times the concept's property chain
    v, s, v2, s2 = 1, 2, 3, 4
    expected = mix.entity_transition[v, v2] * mix.property_transition[:, s, s2]
    torch.testing.assert_close(mix.transition[:, v * S + s, v2 * S + s2], expected)
    # delimiter transitions do not depend on the concept
    delim = mix.property_transition[:, :, 0]
    torch.testing.assert_close(delim, delim[:1].expand(C, -1))
    # inside an example the chain never reaches a delimiter state
    assert (mix.example_transition[:, :, ::S] == 0).all()


def frequencies(rows, V, width):
    codes = sum(rows[:, i] * V ** (width - 1 - i) for i in range(width))
    return torch.bincount(codes, minlength=V**width).to(DT) / len(rows)


def assert_frequencies_match(freq, exact, n):
    # Each cell is a binomial proportion: 5 standard errors (plus a 1/n floor for
    # cells of tiny probability) miss with probability below 1e-6 per cell, so never
    # across these few hundred cells; the samples are seeded anyway.
    assert math.isclose(exact.sum().item(), 1.0, rel_tol=1e-12)
    bound = 5 * (exact * (1 - exact) / n).sqrt() + 1 / n
    assert ((freq - exact).abs() <= bound).all(), (freq - exact).abs().max()


def test_document_frequencies_match_the_mixture():
    mix = tiny_mixture(smoothing=0.1)
    n, V = 200_000, mix.vocab_size
    docs = mix.sample_documents(n, 3, seed=6)
    assert docs.tokens.shape == (n, 3) and docs.tokens.dtype == torch.int64
    every = torch.tensor(list(itertools.product(range(V), repeat=3)))
    C = mix.n_concepts
    log_ev, _ = forward_filter(
        every,
        torch.tensor([2]),
        mix.start.expand(C, -1),
        mix.transition,
        mix.emission.expand(C, -1, -1),
    )
    exact = (mix.prior * log_ev[:, :, 0].exp()).sum(1)  # p(x_0, x_1, x_2)
    assert_frequencies_match(frequencies(docs.tokens, V, 3), exact, n)
    counts = torch.bincount(docs.concepts, minlength=mix.n_concepts).to(DT) / n
    assert_frequencies_match(counts, mix.prior, n)


def test_prompt_frequencies_and_layout_match_the_prompt_distribution():
    mix = tiny_mixture()
    n, V, k = 100_000, mix.vocab_size, 3
    prompts = mix.sample_prompts(n, 1, example_length=k, seed=7)
    assert isinstance(prompts, ConceptPromptBatch)
    assert prompts.tokens.shape == (n, 2 * (k + 1) - 1)
    assert prompts.output_positions.tolist() == [2, 6]
    assert prompts.n_examples == 2 and prompts.example_length == k
    assert (prompts.tokens[:, 3] == DELIMITER).all()
    assert (prompts.tokens[:, [0, 1, 2, 4, 5, 6]] != DELIMITER).all()
    # the first example's tokens against sum over concepts and start properties
    every = torch.tensor(list(itertools.product(range(V), repeat=k)))
    C, S = mix.n_concepts, mix.n_properties
    exact = torch.zeros(len(every), dtype=DT)
    for s in range(1, S):
        start = mix.prompt_start(torch.tensor([s])).expand(C, -1)
        emission = mix.emission.expand(C, -1, -1)
        log_ev, _ = forward_filter(
            every, torch.tensor([k - 1]), start, mix.example_transition, emission
        )
        exact += (mix.prior * log_ev[:, :, 0].exp()).sum(1) / (S - 1)
    assert_frequencies_match(frequencies(prompts.tokens[:, :k], V, k), exact, n)


def test_seeded_and_batches_move_without_changing_integer_dtypes():
    mix = tiny_mixture()
    a = mix.sample_prompts(5, 3, seed=8)
    b = mix.sample_prompts(5, 3, seed=8)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.concepts, b.concepts)
    moved = a.to(device="cpu", dtype=torch.float32)
    assert moved.tokens.dtype == torch.int64 and isinstance(moved, ConceptPromptBatch)
    assert HMMConceptMixture(seed=1).memory.tolist() == (
        HMMConceptMixture(seed=1).memory.tolist()
    )
    assert mix.sample_documents(2, 4, seed=0).n_points == 4


def test_bad_input_is_refused():
    mix = tiny_mixture()
    tokens = torch.zeros(2, 4, dtype=torch.int64)
    with pytest.raises(TypeError, match="tokens: expected dtype torch.int64, got"):
        mix.predictive(tokens.int(), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"tokens: expected values in \[0, 4\), got"):
        mix.predictive(tokens + 7, torch.tensor([0]))
    with pytest.raises(ValueError, match=r"positions: expected values in \[0, 4\)"):
        mix.predictive(tokens, torch.tensor([4]))
    with pytest.raises(ValueError, match="n_properties: expected an int >= 2, got 1"):
        HMMConceptMixture(n_properties=1)
    with pytest.raises(ValueError, match=r"smoothing: expected a number in \[0, 1\]"):
        HMMConceptMixture(smoothing=1.5)
    with pytest.raises(TypeError, match="dtype: expected torch.float32 or"):
        HMMConceptMixture(dtype=torch.int64)
    with pytest.raises(ValueError, match="example_length: expected an int >= 2, got"):
        mix.sample_prompts(2, 3, example_length=1)
    with pytest.raises(TypeError, match="prompts: expected a ConceptPromptBatch"):
        mix.bayes(TokenBatch(tokens, torch.zeros(2, dtype=torch.int64)))
    with pytest.raises(ValueError, match=r"concepts: expected shape \(B,\) = \(2,\)"):
        TokenBatch(tokens, torch.zeros(3, dtype=torch.int64))
    start, transition, emission = random_hmms(C=2, H=3, V=3, seed=0)
    with pytest.raises(ValueError, match=r"transition: expected shape \(C, H, H\)"):
        forward_filter(tokens, torch.tensor([0]), start, transition[:1], emission)
    with pytest.raises(ValueError, match=r"start: expected shape \(C, H\) or"):
        forward_filter(tokens, torch.tensor([0]), start[:, :2], transition, emission)
    with pytest.raises(ValueError, match="length: expected an int >= 2, got 1"):
        HMMDocuments(length=1)
    with pytest.raises(ValueError, match=r"delimiter_prob: expected a number in"):
        HMMDocuments(length=5, delimiter_prob=1.0)
    wide = tiny_mixture(vocab_size=10)  # 4 memory entries: some tokens never occur
    unused = sorted(set(range(1, 10)) - set(wide.memory.reshape(-1).tolist()))[0]
    with pytest.raises(ValueError, match="tokens: expected sequences of positive"):
        wide.predictive(tokens + unused, torch.tensor([0]))


class BayesAsModel:
    """The Bayes predictor behind a model's interface: its curves must be Bayes's."""

    def __init__(self, mixture):
        self.mixture = mixture

    def next_token_probs(self, tokens, positions):
        return self.mixture.predictive(tokens, positions)


def test_known_concept_is_the_bayes_predictor_of_a_one_concept_mixture():
    """Told the concept, the pretraining predictor is what Bayes is when the prior has
    one concept; with several, Bayes mixes the concepts' predictors."""
    one = HMMConceptMixture(n_concepts=1, seed=2)
    prompts = one.sample_prompts(20, 3, seed=5)
    torch.testing.assert_close(
        one.known_concept(prompts), one.bayes(prompts), rtol=1e-12, atol=1e-15
    )
    mix = HMMConceptMixture(seed=0)
    prompts = mix.sample_prompts(20, 3, seed=5)
    known = mix.known_concept(prompts)
    torch.testing.assert_close(known.sum(-1), torch.ones(20, 4, dtype=DT))
    assert not torch.allclose(known, mix.bayes(prompts))


def test_concept_curves_score_every_predictor_on_the_same_prompts():
    mix = HMMConceptMixture(seed=0)
    prompts = mix.sample_prompts(300, 6, seed=9)
    curves = concept_curves(BayesAsModel(mix), mix, prompts, ns=[0, 2, 6])
    assert curves["ns"] == [0, 2, 6]
    for measure in ("accuracy", "token_accuracy", "log_loss"):
        assert set(curves[measure]) == {
            "transformer",
            "Bayes",
            "concept known",
            "oracle",
        }
        assert all(v.shape == (3,) for v in curves[measure].values())
        torch.testing.assert_close(
            curves[measure]["transformer"], curves[measure]["Bayes"]
        )
    assert float(curves["total_variation"].abs().max()) < 1e-12
    torch.testing.assert_close(
        curves["delimiter_answers"]["transformer"], curves["delimiter_answers"]["Bayes"]
    )
    assert (curves["accuracy"]["oracle"] == 1).all()  # GINC's label is its argmax
    assert (curves["posterior"] > 0).all() and (curves["posterior"] <= 1).all()
    # the oracle knows the concept: lower log-loss than Bayes on average
    assert curves["log_loss"]["oracle"].mean() < curves["log_loss"]["Bayes"].mean()
    model = TokenTransformerConfig(vocab_size=16, n_ctx=27, n_embd=8, n_head=2).build()
    untrained = concept_curves(model, mix, prompts)
    assert untrained["ns"] == list(range(7))
    assert untrained["accuracy"]["transformer"].dtype == DT
    with pytest.raises(ValueError, match=r"ns: expected example counts in \[0, 6\]"):
        concept_curves(model, mix, prompts, ns=[7])
    with pytest.raises(TypeError, match="model: expected a causal token model"):
        concept_curves(object(), mix, prompts)
    with pytest.raises(TypeError, match="prompts: expected a ConceptPromptBatch"):
        concept_curves(model, mix, TokenBatch(prompts.tokens, prompts.concepts))


def test_no_hmm_no_output_and_no_demonstration_count_are_refused_by_name():
    """Issue 42: an empty emission was blamed on transition, an empty
    output_positions passed, and ConceptMixture's ns=None gave "not iterable"."""
    from icl_lib.tasks.concepts import ConceptMixture

    mixture = HMMConceptMixture(vocab_size=16, seed=0)
    prompts = mixture.sample_prompts(4, 2, seed=0)
    start = torch.softmax(torch.randn(2, 3), -1).double()
    transition = torch.softmax(torch.randn(2, 3, 3), -1).double()
    with pytest.raises(ValueError, match="^emission: expected at least one"):
        forward_filter(
            prompts.tokens, torch.tensor([0]), start, transition, torch.empty(0, 3, 16)
        )
    with pytest.raises(ValueError, match="^output_positions: expected at least one"):
        dataclasses.replace(prompts, output_positions=prompts.output_positions[:0])
    concepts = ConceptMixture()
    for ns in (None, 2.5, []):
        for gap in (concepts.kernel_gap, concepts.prior_gap, concepts.bayes_gap):
            with pytest.raises((TypeError, ValueError), match="^ns: expected"):
                gap(ns, batch_size=10)
    _, inputs, labels = concepts.sample(4, 3, seed=0)
    with pytest.raises(TypeError, match="^labels: expected a torch.Tensor"):
        concepts.bayes_predictive(inputs, None, inputs[:, -1])
    with pytest.raises(TypeError, match="^query: expected a torch.Tensor"):
        concepts.kernel_regression(inputs, labels, None)
