"""In-context accuracy on latent-concept prompts: a trained model beside the Bayes
predictor and the oracle (Xie et al., ICLR 2022; chapter 4, experiment 3).

Every prompt of a :class:`~icl_lib.tasks.hmm.ConceptPromptBatch` holds ``n_max + 1``
examples; example ``i`` is the test example of ``n = i`` (its prediction is made at its
last input token and sees the ``i`` examples before it), so one forward pass of a
causal model, and one run of the forward algorithm, give every ``n`` on the same
prompts. Three predictors are scored:

* the model: its next-token distribution at the test input;
* Bayes: the pretraining distribution's ``p(y | prompt)``, exact
  (:meth:`~icl_lib.tasks.hmm.HMMConceptMixture.bayes`): what a model that fits its
  pretraining data perfectly predicts;
* the oracle: the prompt distribution's ``p(y | x_test, theta*)``, which knows the
  concept and where the example starts.

*Accuracy* is GINC's: the ``argmax`` over the whole vocabulary against the oracle's
``argmax`` (the label of GINC's test example), so the oracle scores 1 by definition.
The *token accuracy* scores the same ``argmax`` against the output token the prompt
actually holds (a draw from the oracle's distribution), and the *log-loss* is
``-log p(y)`` of that token; there the oracle is a ceiling below 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._checks import check_positive_int, check_sequence
from ..tasks.hmm import DELIMITER, ConceptPromptBatch, HMMConceptMixture

PREDICTORS = ("transformer", "Bayes", "concept known", "oracle")
MEASURES = ("accuracy", "token_accuracy", "log_loss")


def concept_curves(
    model, mixture: HMMConceptMixture, prompts: ConceptPromptBatch, ns=None
) -> dict:
    """Accuracy, token accuracy and mean log-loss against the number of examples ``n``.

    Args:
        model: a causal token model with ``next_token_probs(tokens, positions)``
            (:class:`~icl_lib.models.token_gpt.TokenTransformer`).
        mixture: the mixture the model was pretrained on and the prompts come from.
        prompts: ``B`` prompts of ``n_max + 1`` examples
            (:meth:`~icl_lib.tasks.hmm.HMMConceptMixture.sample_prompts`).
        ns: the example counts to report, each in ``[0, n_max]`` (default: all).

    Returns:
        ``{"ns": [n, ...], measure: {predictor: (len(ns),) float64 tensor},
        "posterior": (len(ns),), "total_variation": (len(ns),),
        "delimiter_answers": {predictor: (len(ns),)}, "correct": {predictor: (B,
        len(ns))}}`` with ``measure`` in
        :data:`MEASURES`, ``predictor`` in :data:`PREDICTORS` and ``posterior`` the
        Bayes posterior mass of the true concept at the test input, averaged over
        prompts; ``total_variation`` the mean total-variation distance between the
        model's and the Bayes next-token distributions; ``delimiter_answers`` the share
        of argmax answers that are the delimiter; ``correct`` the accuracy prompt by
        prompt (1.0 or 0.0), for paired standard errors.
    """
    if not isinstance(mixture, HMMConceptMixture):
        raise TypeError(
            f"mixture: expected an HMMConceptMixture, got {type(mixture).__name__}"
        )
    if not isinstance(prompts, ConceptPromptBatch):
        raise TypeError(
            f"prompts: expected a ConceptPromptBatch, got {type(prompts).__name__}"
        )
    if not hasattr(model, "next_token_probs"):
        raise TypeError(
            "model: expected a causal token model with next_token_probs, got "
            f"{type(model).__name__}"
        )
    ns = _check_ns(ns, prompts.n_examples - 1)
    at = prompts.output_positions - 1  # the last input token of every example
    probs = {
        "transformer": model.next_token_probs(prompts.tokens, at).to(torch.float64),
        "Bayes": mixture.bayes(prompts),
        "concept known": mixture.known_concept(prompts),
        "oracle": mixture.oracle(prompts),
    }
    outputs = prompts.tokens[:, prompts.output_positions]  # (B, n_max + 1)
    labels = probs["oracle"].argmax(-1)
    result = {"ns": ns, "correct": {}, **{measure: {} for measure in MEASURES}}
    for name, p in probs.items():
        guess = p[:, ns].argmax(-1)
        result["correct"][name] = (guess == labels[:, ns]).double()
        result["accuracy"][name] = result["correct"][name].mean(0)
        result["token_accuracy"][name] = (guess == outputs[:, ns]).double().mean(0)
        picked = p[:, ns].gather(2, outputs[:, ns, None]).squeeze(2)
        result["log_loss"][name] = -picked.clamp_min(1e-300).log().mean(0)
    # How far the model's whole next-token distribution is from the Bayes one, and
    # how often it answers with the delimiter, which is never a label.
    difference = probs["transformer"][:, ns] - probs["Bayes"][:, ns]
    result["total_variation"] = 0.5 * difference.abs().sum(-1).mean(0)
    result["delimiter_answers"] = {
        name: (p[:, ns].argmax(-1) == DELIMITER).double().mean(0)
        for name, p in probs.items()
    }
    posterior = mixture.concept_posterior(prompts.tokens, at[ns])  # (B, P, C)
    truth = prompts.concepts[:, None, None].expand(-1, len(ns), 1)
    result["posterior"] = posterior.gather(2, truth).squeeze(2).mean(0)
    return result


def _check_ns(ns: Sequence[int] | None, n_max: int) -> list[int]:
    if ns is None:
        return list(range(n_max + 1))
    check_sequence("ns", ns, "a sequence of example counts")
    ns = [check_positive_int("ns[i]", n, minimum=0) for n in ns]
    if not ns or max(ns) > n_max:
        raise ValueError(
            f"ns: expected example counts in [0, {n_max}] (the prompts' n_max), got "
            f"{ns}"
        )
    return ns
