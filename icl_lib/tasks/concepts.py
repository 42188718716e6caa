"""A finite latent-concept model: Bayesian in-context learning and kernel regression,
both exact.

Han, Wang, Zhao and Ji (TMLR 2025) show that the Bayes predictive distribution of a
prompt converges to a kernel regression over its demonstrations. :class:`ConceptMixture`
is a finite model with that structure, small enough that both sides are computed
exactly. Chapter 8.
"""

from __future__ import annotations

import torch

from .._checks import (
    check_dtype,
    check_ids,
    check_positive_int,
    check_real,
    check_sequence,
)
from ..runtime import make_generator


def _counts(ns) -> list[int]:
    """``ns``: a non-empty sequence of demonstration counts, each >= 1."""
    ns = check_sequence("ns", ns, "a sequence of demonstration counts", nonempty=True)
    return [check_positive_int("ns[i]", n) for n in ns]


class ConceptMixture:
    """A finite latent-concept model where Bayesian ICL and kernel regression are both
    exact.

    The model mirrors the structure behind Han et al.'s Theorem 1 with finite sets.
    Reading an input ``x`` (one of ``n_inputs`` symbols) leaves a belief ``phi(x)`` over
    ``n_states`` hidden states (a probability vector: the analogue of the HMM belief
    state after the prefix ``x``). A concept ``theta`` (one of ``n_concepts``) emits the
    label from the hidden state: ``P(y = c | x, theta) = sum_s phi(x)_s W_theta[s, c]``.
    Pretraining inputs are uniform over the symbols; a concept's prompts draw inputs
    uniformly too, or (``shift > 0``) from a concept-specific distribution, which makes
    the demonstrations differ from pretraining.

    The kernel is ``K(x, x') = phi(x)^T Sigma^{-1} phi(x')`` with
    ``Sigma = E_pre[phi phi^T]`` (Han et al.'s letter; chapter 8 writes it Gamma), and
    kernel regression is
    ``(1/n) sum_i e(y_i) K(x_q, x_i)``. If the prompt's inputs follow the pretraining
    distribution, its expectation is exactly ``P(y | x_q, theta*)``, the limit of the
    Bayes predictive distribution; otherwise it converges to a biased limit.

    Args:
        n_inputs, n_states, n_concepts, n_classes: the sizes of the finite sets.
        sharpness: scale of the random logits of beliefs and emissions (larger: more
        peaked).
        shift: scale of the random logits of the concepts' input distributions (0:
        uniform).
        seed, dtype: as everywhere.
    """

    def __init__(
        self,
        n_inputs: int = 40,
        n_states: int = 6,
        n_concepts: int = 8,
        n_classes: int = 3,
        *,
        sharpness: float = 2.0,
        shift: float = 0.0,
        seed=0,
        dtype: torch.dtype = torch.float64,
    ):
        for name, value in (
            ("n_inputs", n_inputs),
            ("n_states", n_states),
            ("n_concepts", n_concepts),
        ):
            check_positive_int(name, value)
        check_positive_int("n_classes", n_classes, minimum=2)
        if n_inputs < n_states:
            raise ValueError(
                f"n_inputs: expected at least n_states = {n_states} (Sigma must be "
                f"invertible), got {n_inputs}"
            )
        # sharpness 0 makes every belief uniform and Sigma singular (rank 1)
        sharpness = check_real("sharpness", sharpness, minimum=0.0, strict=True)
        shift = check_real("shift", shift, minimum=0.0)
        check_dtype("dtype", dtype)
        gen = make_generator(seed)
        self.beliefs = torch.softmax(
            sharpness * torch.randn(n_inputs, n_states, generator=gen, dtype=dtype), -1
        )  # (V, S)
        self.emissions = torch.softmax(
            sharpness
            * torch.randn(n_concepts, n_states, n_classes, generator=gen, dtype=dtype),
            -1,
        )  # (M, S, C)
        self.input_probs = torch.softmax(
            shift * torch.randn(n_concepts, n_inputs, generator=gen, dtype=dtype), -1
        )  # (M, V)
        self.second_moment = (
            self.beliefs.T @ self.beliefs / n_inputs
        )  # Sigma = E_pre[phi phi^T], (S, S)
        self._features = self.beliefs @ torch.linalg.inv(
            self.second_moment
        )  # phi(x)^T Sigma^{-1}, (V, S)

    @property
    def n_inputs(self) -> int:
        return self.beliefs.shape[0]

    @property
    def n_concepts(self) -> int:
        return self.emissions.shape[0]

    @property
    def n_classes(self) -> int:
        return self.emissions.shape[2]

    def _check_prompts(self, inputs, labels, query) -> None:
        """Input symbols ``(B, n)``, their labels ``(B, n)`` and the query symbols
        ``(B,)``, each an index into its finite set."""
        check_ids("inputs", inputs, 2, self.n_inputs)
        check_ids("labels", labels, 2, self.n_classes)
        if labels.shape != inputs.shape:
            raise ValueError(
                f"labels: expected shape {tuple(inputs.shape)} to match inputs, "
                f"got {tuple(labels.shape)}"
            )
        check_ids("query", query, 1, self.n_inputs)
        if query.shape[0] != inputs.shape[0]:
            raise ValueError(
                f"query: expected {inputs.shape[0]} symbols to match inputs "
                f"(one per prompt), got {query.shape[0]}"
            )

    def label_probs(self, concepts: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """``P(y | x, theta)`` for concepts ``(B,)`` and input symbols ``(B, N)``:
        ``(B, N, C)``."""
        check_ids("concepts", concepts, 1, self.n_concepts)
        check_ids("inputs", inputs, 2, self.n_inputs)
        if inputs.shape[0] != concepts.shape[0]:
            raise ValueError(
                f"inputs: expected {concepts.shape[0]} prompts to match concepts, got "
                f"{inputs.shape[0]}"
            )
        return torch.einsum(
            "bns,bsc->bnc", self.beliefs[inputs], self.emissions[concepts]
        )

    def sample(self, batch_size: int, n_points: int, *, seed=0):
        """Prompts of one concept each:
        ``(concepts (B,), inputs (B, n), labels (B, n))`` (integer tensors)."""
        check_positive_int("batch_size", batch_size)
        check_positive_int("n_points", n_points)
        gen = make_generator(seed)
        concepts = torch.randint(self.n_concepts, (batch_size,), generator=gen)
        inputs = torch.multinomial(
            self.input_probs[concepts], n_points, replacement=True, generator=gen
        )
        probs = self.label_probs(concepts, inputs).reshape(-1, self.n_classes)
        labels = torch.multinomial(probs, 1, generator=gen).reshape(
            batch_size, n_points
        )
        return concepts, inputs, labels

    def bayes_predictive(
        self, inputs: torch.Tensor, labels: torch.Tensor, query: torch.Tensor
    ) -> torch.Tensor:
        """``P(y_q | prompt)`` with a uniform prior over concepts: ``(B, C)``.

        The posterior over concepts weighs each by
        ``prod_i p_theta(x_i) P(y_i | x_i, theta)`` (computed in log space), then
        averages ``P(y_q | x_q, theta)``.
        """
        self._check_prompts(inputs, labels, query)
        B, n = inputs.shape
        all_concepts = torch.arange(self.n_concepts)
        # log P(y_i | x_i, theta) for every concept: (B, M, n)
        probs = torch.einsum("bns,msc->bmnc", self.beliefs[inputs], self.emissions)
        log_lik = (
            probs.gather(3, labels[:, None, :, None].expand(B, self.n_concepts, n, 1))
            .squeeze(3)
            .log()
        )
        log_lik = (
            log_lik + self.input_probs[:, inputs].permute(1, 0, 2).log()
        )  # + log p_theta(x_i)
        posterior = torch.softmax(log_lik.sum(-1), dim=1)  # (B, M)
        query_probs = torch.einsum(
            "bs,msc->bmc", self.beliefs[query], self.emissions[all_concepts]
        )
        return torch.einsum("bm,bmc->bc", posterior, query_probs)

    def kernel(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``K(x, x') = phi(x)^T Sigma^{-1} phi(x')`` for symbols ``a (B, N)``,
        ``b (B, M)``: ``(B, N, M)``."""
        check_ids("a", a, 2, self.n_inputs)
        check_ids("b", b, 2, self.n_inputs)
        if b.shape[0] != a.shape[0]:
            raise ValueError(
                f"b: expected {a.shape[0]} rows to match a, got {b.shape[0]}"
            )
        return self._features[a] @ self.beliefs[b].transpose(1, 2)

    def kernel_regression(
        self, inputs: torch.Tensor, labels: torch.Tensor, query: torch.Tensor
    ) -> torch.Tensor:
        """Han et al.'s estimate ``(1/n) sum_i e(y_i) K(x_q, x_i)`` of
        ``P(y_q | prompt)``: ``(B, C)``."""
        self._check_prompts(inputs, labels, query)
        B, n = inputs.shape
        if n == 0:
            raise ValueError("inputs: expected at least one demonstration, got n = 0")
        weights = self.kernel(query.unsqueeze(1), inputs).squeeze(1)  # (B, n)
        onehot = torch.nn.functional.one_hot(labels, self.n_classes).to(
            weights.dtype
        )  # (B, n, C)
        return torch.einsum("bn,bnc->bc", weights, onehot) / n

    def kernel_gap(
        self, ns, *, batch_size: int = 2000, seed=1
    ) -> tuple[list[float], list[float]]:
        """How far kernel regression is from the Bayes predictive, per number of
        demonstrations.

        On ``batch_size`` prompts of ``max(ns) + 1`` points (the last is the query), for
        each ``n`` in ``ns``: the mean L1 distance between the two distributions over
        labels, and the fraction of prompts where their most likely labels agree.
        Returns ``(gaps, agreement)``.
        """
        ns = _counts(ns)
        concepts, inputs, labels = self.sample(batch_size, max(ns) + 1, seed=seed)
        query = inputs[:, -1]
        gaps, agreement = [], []
        for n in ns:
            bayes = self.bayes_predictive(inputs[:, :n], labels[:, :n], query)
            kernel = self.kernel_regression(inputs[:, :n], labels[:, :n], query)
            gaps.append((kernel - bayes).abs().sum(-1).mean().item())
            agreement.append(
                (kernel.argmax(-1) == bayes.argmax(-1)).double().mean().item()
            )
        return gaps, agreement

    def prior_gap(
        self, ns, *, batch_size: int = 2000, seed=1
    ) -> tuple[list[float], list[float]]:
        """The baseline for :func:`kernel_gap`: a predictor that ignores the
        demonstrations, ``sum_theta p(theta) P(y | x_q, theta)`` (uniform prior).

        Same prompts and outputs as :func:`kernel_gap`: per ``n`` in ``ns``, the mean L1
        distance to the Bayes predictive and the fraction of prompts where the most
        likely labels agree.
        """
        ns = _counts(ns)
        concepts, inputs, labels = self.sample(batch_size, max(ns) + 1, seed=seed)
        query = inputs[:, -1]
        prior = (
            torch.einsum("bs,msc->bc", self.beliefs[query], self.emissions)
            / self.n_concepts
        )  # (B, C)
        gaps, agreement = [], []
        for n in ns:
            bayes = self.bayes_predictive(inputs[:, :n], labels[:, :n], query)
            gaps.append((prior - bayes).abs().sum(-1).mean().item())
            agreement.append(
                (prior.argmax(-1) == bayes.argmax(-1)).double().mean().item()
            )
        return gaps, agreement

    def negative_weight_share(self, n: int, *, batch_size: int = 2000, seed=1) -> float:
        """Fraction of prompts of ``n`` demonstrations whose total kernel weight
        ``sum_i K(x_q, x_i)`` is negative: there the normalised estimate
        ``sum_i e(y_i) K / sum_i K`` flips the sign of every vote."""
        n = check_positive_int("n", n)
        _, inputs, _ = self.sample(batch_size, n + 1, seed=seed)
        total = self.kernel(inputs[:, -1:], inputs[:, :n]).sum((1, 2))  # (B,)
        return (total < 0).double().mean().item()

    def kernel_table(self) -> torch.Tensor:
        """``K(x, x')`` for every pair of input symbols: ``(V, V)``.

        Under the uniform pretraining inputs each row averages to exactly 1 (the second
        claim of chapter 8's unbiasedness proposition); entries can be negative, since
        ``Sigma^{-1}`` has negative entries.
        """
        symbols = torch.arange(self.n_inputs).unsqueeze(0)
        return self.kernel(symbols, symbols).squeeze(0)

    def bayes_gap(self, ns, *, batch_size: int = 2000, seed=1) -> list[float]:
        """How far the Bayes predictive is from the true concept's ``P(y | x_q,
        theta*)``: the mean L1 distance per number of demonstrations in ``ns``.

        The prompts are those of :func:`kernel_gap` with the same ``batch_size`` and
        ``seed``; the distance shrinks as the posterior concentrates on ``theta*``.
        """
        ns = _counts(ns)
        concepts, inputs, labels = self.sample(batch_size, max(ns) + 1, seed=seed)
        query = inputs[:, -1]
        truth = self.label_probs(concepts, query.unsqueeze(1)).squeeze(1)  # (B, C)
        return [
            (self.bayes_predictive(inputs[:, :n], labels[:, :n], query) - truth)
            .abs()
            .sum(-1)
            .mean()
            .item()
            for n in ns
        ]
