"""A GINC-like mixture of HMMs: Xie et al.'s latent concepts, small enough for a CPU.

Xie, Raghunathan, Liang and Ma (ICLR 2022) generate pretraining documents from a
mixture of HMMs (their GINC data set, Appendix F): a hidden state is a pair (entity
``v``, property ``s``), the token is a fixed memory entry ``memory[v, s]``, entities and
properties move by independent Markov chains, and the *concept* ``theta`` is the
property transition matrix. Property 0 is the delimiter: its states emit the delimiter
token whatever the entity. A prompt is ``n`` independent examples of ``k`` tokens
(``k - 1`` input tokens and one output token) separated by delimiters, each example
started afresh at a uniform entity and the prompt's start property, so prompts are
*not* pretraining documents: that mismatch is what their theory is about. The
in-context predictor is the pretraining distribution's ``argmax_y p(y | prompt)``.

:class:`HMMConceptMixture` builds such a mixture and computes, exactly and batched, the
pretraining distribution's next-token probabilities on any token sequence (the forward
algorithm of every concept's HMM, mixed with the concept posterior: the *Bayes*
predictor) and the *oracle* ``p(y | x_test, theta*)`` of the prompt distribution, which
knows the concept and the example's start. Chapter 4.

How this data differs from GINC (checked against the paper's Section 2 and Appendix F,
and against ``generate_data.py`` and ``scripts/runner.sh`` of
github.com/p-lambda/incontext-learning):

* sizes: GINC has 10 entities x 10 properties (100 hidden states), 50 tokens and 5
  pretraining concepts (plus 5 unseen ones); the defaults here are 5 entities x 5
  properties (25 states), 16 tokens and 5 concepts, all seen in pretraining. As in
  GINC the memory is drawn with replacement, so tokens collide (20 entries, 15
  non-delimiter tokens; GINC: 90 entries, 49 tokens);
* chains: as in GINC, each concept's property chain and the shared entity chain are
  mixtures of random permutation matrices with weights ``softmax((u - 1/2) / 0.1)``,
  ``u ~ U(0, 1)``, the entity chain ``0.9 I`` plus such a mixture, and the start
  distribution ``softmax((u - 1/2) / 10)``. Two changes: (i) in GINC the delimiter
  is one property of each concept's permutations, so how often and after which
  property a delimiter comes depends on the concept; here every non-delimiter
  property reaches the delimiter with the same probability (``delimiter_prob``) and
  leaves it for a uniform property, the same for every concept, and the concept's
  permutation mixture acts on the other properties. A prompt's delimiters are then
  no evidence for a wrong concept (Xie et al.'s delimiter error term stays small;
  with GINC's structure on a 5-property chain the Bayes posterior stalled near 0.5
  on the true concept). (ii) Both chains are mixed with the uniform matrix
  (``smoothing``, 0.02), so every transition is positive (Xie et al.'s assumption)
  and every prompt has a positive pretraining probability: the Bayes predictor is
  defined on every prompt. GINC's matrices have zeros;
* pretraining: GINC has 1000 documents of 10240 tokens, read by GPT-2 in windows of
  1024; here every training sequence is a fresh document from the start
  distribution (an endless stream), so the model's training distribution is exactly
  the one whose conditionals the Bayes predictor computes;
* prompts follow GINC's ``ID_sample`` prompts (one concept and one start property
  per prompt, a uniform entity per example, ``k - 1`` transitions, the delimiter
  between examples), except that an example never passes through the delimiter
  property (GINC's may); they keep every example's output token, so one forward pass
  scores the test example for every ``n`` (example ``i`` is the test example of
  ``n = i``). GINC labels the test example with the oracle's ``argmax``, as
  :func:`icl_lib.analysis.concepts.concept_curves` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import (
    check_batch,
    check_dtype,
    check_finite,
    check_ids,
    check_positive_int,
    check_real,
    check_tensor,
)
from ..runtime import make_generator
from .tokens import TokenBatch, check_tokens

DELIMITER = 0  # the delimiter token, emitted by every state of property 0


@dataclass(frozen=True)
class ConceptPromptBatch(TokenBatch):
    """``B`` in-context prompts of ``n + 1`` examples (GINC's prompt format).

    Example ``i`` fills tokens ``i (k + 1) .. i (k + 1) + k - 1``: ``k - 1`` input
    tokens and the output token at ``output_positions[i]``; a delimiter follows every
    example but the last. The prediction of output ``i`` is made at
    ``output_positions[i] - 1`` and sees ``i`` examples before the test input.

    Attributes:
        output_positions: ``(n + 1,)`` int64, the position of each output token.
        start_properties: ``(B,)`` int64, the property every example starts in.
    """

    output_positions: torch.Tensor
    start_properties: torch.Tensor

    def __post_init__(self):
        super().__post_init__()
        _check_positions(
            self.output_positions, self.tokens.shape[1], "output_positions"
        )
        check_batch("output_positions", self.output_positions)  # the test example
        check_tensor("start_properties", self.start_properties, 1, floating=False)
        if self.start_properties.shape[0] != self.tokens.shape[0]:
            raise ValueError(
                f"start_properties: expected one per prompt (B = "
                f"{self.tokens.shape[0]}), got {self.start_properties.shape[0]}"
            )

    @property
    def n_examples(self) -> int:
        """Examples per prompt, ``n + 1`` (the last one is the test of ``n``)."""
        return self.output_positions.shape[0]

    @property
    def example_length(self) -> int:
        """Tokens per example ``k``."""
        return (self.tokens.shape[1] + 1) // self.n_examples - 1


def _check_positions(positions, length: int, name: str = "positions") -> torch.Tensor:
    check_tensor(name, positions, 1, floating=False)
    if positions.numel() and (positions.min() < 0 or positions.max() >= length):
        raise ValueError(
            f"{name}: expected values in [0, {length}) (the sequence length), got "
            f"[{positions.min().item()}, {positions.max().item()}]"
        )
    return positions


def forward_filter(
    tokens: torch.Tensor,
    positions: torch.Tensor,
    start: torch.Tensor,
    transition: torch.Tensor,
    emission: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward algorithm of ``C`` HMMs on ``B`` token sequences, read at
    ``positions``.

    For each HMM ``c`` and position ``t`` in ``positions``: ``log p_c(x_0..x_t)`` and
    ``p_c(x_{t+1} = v | x_0..x_t)``. Scaled forward recursion (the normalised filter
    ``p_c(h_t | x_0..x_t)`` and the log of each normaliser), so long sequences neither
    underflow nor overflow. A sequence impossible under ``c`` gets ``-inf``.

    Args:
        tokens: ``(B, T)`` int64 in ``[0, V)``.
        positions: ``(P,)`` int64 in ``[0, T)``.
        start: ``(C, H)`` or ``(B, C, H)`` start distributions ``p_c(h_0)``.
        transition: ``(C, H, H)`` with ``transition[c, i, j] = p_c(h_{t+1}=j | h_t=i)``.
        emission: ``(C, H, V)`` with ``emission[c, h, v] = p_c(x_t = v | h_t = h)``.

    Returns:
        ``(log_evidence (B, C, P), next_probs (B, C, P, V))``.
    """
    check_finite("transition", check_tensor("transition", transition, 3))
    emission = check_batch("emission", check_tensor("emission", emission, 3))
    check_finite("emission", emission)
    C, H, V = emission.shape
    if tuple(transition.shape) != (C, H, H):
        raise ValueError(
            f"transition: expected shape (C, H, H) = {(C, H, H)} to match emission, "
            f"got {tuple(transition.shape)}"
        )
    check_tokens(tokens, V)
    B, T = tokens.shape
    _check_positions(positions, T)
    if not isinstance(start, torch.Tensor) or start.ndim != 2:
        check_tensor("start", start, 3)
    check_finite("start", check_tensor("start", start, start.ndim))
    if tuple(start.shape) not in ((C, H), (B, C, H)):
        raise ValueError(
            f"start: expected shape (C, H) or (B, C, H) = {(B, C, H)}, got "
            f"{tuple(start.shape)}"
        )
    start = start.expand(B, C, H)
    by_token = emission.permute(2, 0, 1)  # (V, C, H)
    slot = torch.full((T,), -1, dtype=torch.long)
    slot[positions.cpu()] = torch.arange(len(positions))
    last = int(positions.max()) if len(positions) else -1
    kept = emission.new_zeros(B, C, len(positions), H)
    log_evidence = emission.new_zeros(B, C, len(positions))
    log_total = emission.new_zeros(B, C)
    alpha = start
    for t in range(last + 1):
        if t:
            alpha = torch.einsum("bci,cij->bcj", alpha, transition)
        alpha = alpha * by_token[tokens[:, t]]  # (B, C, H)
        norm = alpha.sum(-1, keepdim=True)
        log_total = log_total + norm.squeeze(-1).log()
        alpha = alpha / norm.clamp_min(torch.finfo(alpha.dtype).tiny)
        if slot[t] >= 0:
            kept[:, :, slot[t]] = alpha
            log_evidence[:, :, slot[t]] = log_total
    next_probs = torch.einsum("bcph,chj,cjv->bcpv", kept, transition, emission)
    return log_evidence, next_probs


def _permutation_mixture(size, temp, gen, dtype) -> torch.Tensor:
    # GINC's random transition block: sum_j w_j P_j over `size` random permutation
    # matrices, with w = softmax((u - 1/2) / temp), u ~ U(0, 1).
    weights = torch.softmax(
        (torch.rand(size, generator=gen, dtype=dtype) - 0.5) / temp, 0
    )
    eye = torch.eye(size, dtype=dtype)
    perms = torch.stack([eye[torch.randperm(size, generator=gen)] for _ in range(size)])
    return torch.einsum("j,jab->ab", weights, perms)


class HMMConceptMixture:
    """A GINC-like mixture of ``C`` HMMs (the concepts), with a uniform prior.

    Hidden state ``h = v * S + s`` pairs entity ``v < E`` with property ``s < S``;
    ``p_theta(h' | h) = A_E[v, v'] * A_theta[s, s']`` and ``h`` emits
    ``memory[v, s]`` (``memory[:, 0]`` is the delimiter). Every parameter is float64
    (or ``dtype``) and drawn from ``seed``. Xie et al. (ICLR 2022); chapter 4.

    Args:
        n_concepts: concepts ``C`` (property transition matrices).
        n_entities: entities ``E``.
        n_properties: properties ``S``, the delimiter's included.
        vocab_size: tokens ``V``, the delimiter (token 0) included.
        transition_temp: temperature of the permutation mixtures (GINC: 0.1).
        start_temp: temperature of the start distribution's random logits (GINC: 10).
        entity_stay: weight of the identity in the entity chain (GINC: 0.9).
        smoothing: weight of the uniform matrix mixed into both chains (GINC: 0).
        delimiter_prob: probability that a delimiter follows a non-delimiter property,
            the same for every concept (GINC: set by each concept's permutations).
        seed, dtype: as everywhere.
    """

    def __init__(
        self,
        n_concepts: int = 5,
        n_entities: int = 5,
        n_properties: int = 5,
        vocab_size: int = 16,
        *,
        transition_temp: float = 0.1,
        start_temp: float = 10.0,
        entity_stay: float = 0.9,
        smoothing: float = 0.02,
        delimiter_prob: float = 0.25,
        seed=0,
        dtype: torch.dtype = torch.float64,
    ):
        check_positive_int("n_concepts", n_concepts)
        check_positive_int("n_entities", n_entities)
        check_positive_int("n_properties", n_properties, minimum=2)
        check_positive_int("vocab_size", vocab_size, minimum=2)
        check_real("transition_temp", transition_temp, minimum=0.0, strict=True)
        check_real("start_temp", start_temp, minimum=0.0, strict=True)
        for name, value in (("entity_stay", entity_stay), ("smoothing", smoothing)):
            if not 0.0 <= check_real(name, value) <= 1.0:
                raise ValueError(f"{name}: expected a number in [0, 1], got {value}")
        if not 0.0 <= check_real("delimiter_prob", delimiter_prob) < 1.0:
            raise ValueError(
                f"delimiter_prob: expected a number in [0, 1), got {delimiter_prob}"
            )
        check_dtype("dtype", dtype)
        gen = make_generator(seed)
        E, S, V = n_entities, n_properties, vocab_size
        self.memory = torch.randint(1, V, (E, S), generator=gen)  # (E, S)
        self.memory[:, 0] = DELIMITER
        entity = entity_stay * torch.eye(E, dtype=dtype) + (
            1 - entity_stay
        ) * _permutation_mixture(E, transition_temp, gen, dtype)
        # A concept moves between the non-delimiter properties by a permutation
        # mixture and reaches the delimiter with probability `delimiter_prob` from each
        # of them; after a delimiter every non-delimiter property is equally likely.
        properties = torch.zeros(n_concepts, S, S, dtype=dtype)
        properties[:, 0, 1:] = 1.0 / (S - 1)
        properties[:, 1:, 0] = delimiter_prob
        for c in range(n_concepts):
            mixture = _permutation_mixture(S - 1, transition_temp, gen, dtype)
            properties[c, 1:, 1:] = (1 - delimiter_prob) * mixture
        self.entity_transition = (1 - smoothing) * entity + smoothing / E  # (E, E)
        self.property_transition = (1 - smoothing) * properties + smoothing / S
        u = torch.rand(E * S, generator=gen, dtype=dtype)
        self.start = torch.softmax((u - 0.5) / start_temp, 0)  # (H,)
        self.transition = torch.stack(
            [torch.kron(self.entity_transition, p) for p in self.property_transition]
        )  # (C, H, H)
        # Inside a prompt's example the chain never reaches the delimiter: the
        # transitions into property 0 are removed and each row renormalised.
        allowed = (torch.arange(E * S) % S != 0).to(dtype)
        inside = self.transition * allowed
        self.example_transition = inside / inside.sum(-1, keepdim=True)  # (C, H, H)
        self.emission = torch.nn.functional.one_hot(self.memory.reshape(-1), V).to(
            dtype
        )  # (H, V)
        self.prior = torch.full((n_concepts,), 1.0 / n_concepts, dtype=dtype)

    @property
    def n_concepts(self) -> int:
        return self.transition.shape[0]

    @property
    def n_properties(self) -> int:
        return self.memory.shape[1]

    @property
    def vocab_size(self) -> int:
        return self.emission.shape[1]

    def _emit(self, states, gen) -> torch.Tensor:
        flat = states.reshape(-1)
        return torch.multinomial(self.emission[flat], 1, generator=gen).view_as(states)

    def _walk(self, transition, concepts, first, steps, gen) -> torch.Tensor:
        # Hidden states (N, steps + 1) of each concept's chain from the states `first`.
        states = [first]
        for _ in range(steps):
            probs = transition[concepts, states[-1]]
            states.append(torch.multinomial(probs, 1, generator=gen).squeeze(1))
        return torch.stack(states, 1)

    def sample_documents(self, batch_size: int, length: int, *, seed=0) -> TokenBatch:
        """Pretraining documents: a concept from the prior, then ``length`` tokens of
        its HMM from the start distribution. Returns tokens ``(B, length)``."""
        check_positive_int("batch_size", batch_size)
        check_positive_int("length", length)
        gen = make_generator(seed)
        concepts = torch.multinomial(self.prior, batch_size, True, generator=gen)
        first = torch.multinomial(self.start, batch_size, True, generator=gen)
        states = self._walk(self.transition, concepts, first, length - 1, gen)
        return TokenBatch(self._emit(states, gen), concepts)

    def prompt_start(self, start_properties: torch.Tensor) -> torch.Tensor:
        """Where a prompt's examples start: uniform over the entities, in property
        ``start_properties (B,)``. Returns ``(B, H)``."""
        E, S = self.memory.shape
        check_batch(
            "start_properties", check_ids("start_properties", start_properties, 1, S)
        )
        start = self.start.new_zeros(len(start_properties), E, S)
        start[torch.arange(len(start_properties)), :, start_properties] = 1.0 / E
        return start.reshape(len(start_properties), E * S)

    def sample_prompts(
        self, batch_size: int, n_examples: int, *, example_length: int = 3, seed=0
    ) -> ConceptPromptBatch:
        """GINC prompts of ``n_examples + 1`` examples of ``example_length`` tokens.

        Per prompt: a concept from the prior and a start property uniform over the
        non-delimiter ones; per example: an entity uniformly, then
        ``example_length - 1`` transitions of the concept's HMM that avoid the delimiter
        property (:attr:`example_transition`); examples joined by the delimiter.
        Tokens ``(B, (n_examples + 1) (example_length + 1) - 1)``.
        """
        check_positive_int("batch_size", batch_size)
        check_positive_int("n_examples", n_examples, minimum=0)
        k = check_positive_int("example_length", example_length, minimum=2)
        gen = make_generator(seed)
        B, m, S = batch_size, n_examples + 1, self.n_properties
        concepts = torch.multinomial(self.prior, B, True, generator=gen)
        props = torch.randint(1, S, (B,), generator=gen)
        entities = torch.randint(0, self.memory.shape[0], (B, m), generator=gen)
        first = (entities * S + props[:, None]).reshape(-1)
        repeated = concepts.repeat_interleave(m)
        states = self._walk(self.example_transition, repeated, first, k - 1, gen)
        examples = self._emit(states, gen).view(B, m, k)
        delimiters = examples.new_full((B, m, 1), DELIMITER)
        tokens = torch.cat((examples, delimiters), 2).reshape(B, m * (k + 1))[:, :-1]
        positions = torch.arange(m) * (k + 1) + k - 1
        return ConceptPromptBatch(tokens.contiguous(), concepts, positions, props)

    def _filter(self, tokens, positions, start=None, transition=None):
        C = self.n_concepts
        start = self.start.expand(C, -1) if start is None else start
        transition = self.transition if transition is None else transition
        emission = self.emission.expand(C, -1, -1)
        return forward_filter(tokens, positions, start, transition, emission)

    def concept_posterior(
        self, tokens: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """``p(theta | x_0..x_t)`` under the pretraining distribution, for each ``t`` in
        ``positions (P,)``: ``(B, P, C)`` from ``tokens (B, T)``."""
        log_evidence, _ = self._filter(tokens, positions)
        return self._posterior(log_evidence)

    def _posterior(self, log_evidence) -> torch.Tensor:
        log_joint = log_evidence + self.prior.log()[None, :, None]  # (B, C, P)
        if torch.isinf(log_joint).all(1).any():
            raise ValueError(
                "tokens: expected sequences of positive probability under some "
                "concept, got an impossible one"
            )
        return torch.softmax(log_joint, 1).transpose(1, 2)

    def predictive(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """The Bayes predictor: the pretraining distribution's
        ``p(x_{t+1} | x_0..x_t) = sum_theta p(theta | x_0..x_t) p_theta(x_{t+1} | ...)``
        for each ``t`` in ``positions (P,)``: ``(B, P, V)`` from ``tokens (B, T)``."""
        log_evidence, next_probs = self._filter(tokens, positions)
        posterior = self._posterior(log_evidence)  # (B, P, C)
        return torch.einsum("bpc,bcpv->bpv", posterior, next_probs)

    def known_concept(self, prompts: ConceptPromptBatch) -> torch.Tensor:
        """The pretraining predictor told the prompt's concept: ``p_theta*(y | prompt
        tokens)`` at every output, ``(B, n + 1, V)``. The Bayes predictor tends to it
        as its posterior concentrates; it is not the oracle, which also knows how a
        prompt's examples start."""
        _check_prompts(prompts)
        _, next_probs = self._filter(prompts.tokens, prompts.output_positions - 1)
        index = prompts.concepts[:, None, None, None].expand(
            -1, 1, *next_probs.shape[2:]
        )
        return next_probs.gather(1, index).squeeze(1)

    def bayes(self, prompts: ConceptPromptBatch) -> torch.Tensor:
        """The Bayes predictor at every output of ``prompts``: ``(B, n + 1, V)``, row
        ``i`` predicting output ``i`` from everything before it."""
        _check_prompts(prompts)
        return self.predictive(prompts.tokens, prompts.output_positions - 1)

    def oracle(self, prompts: ConceptPromptBatch) -> torch.Tensor:
        """The prompt distribution's ``p(y_i | x_i, theta*)`` for every example ``i``,
        knowing the prompt's concept and start property (GINC's label is its argmax):
        ``(B, n + 1, V)``."""
        _check_prompts(prompts)
        B, m, k = prompts.batch_size, prompts.n_examples, prompts.example_length
        offsets = torch.arange(-(k - 1), 0)
        inputs = prompts.tokens[:, prompts.output_positions[:, None] + offsets]
        start = self.prompt_start(prompts.start_properties).repeat_interleave(m, 0)
        start = start[:, None].expand(-1, self.n_concepts, -1)  # (B m, C, H)
        last = torch.tensor([k - 2])
        _, next_probs = self._filter(
            inputs.reshape(B * m, k - 1), last, start, self.example_transition
        )
        rows = torch.arange(B * m)
        return next_probs[rows, prompts.concepts.repeat_interleave(m), 0].view(B, m, -1)


def _check_prompts(prompts) -> None:
    if not isinstance(prompts, ConceptPromptBatch):
        raise TypeError(
            f"prompts: expected a ConceptPromptBatch, got {type(prompts).__name__}"
        )
