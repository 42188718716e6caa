"""Prompt samplers for the kernel view of in-context learning (chapter 8).

* :func:`sphere_inputs`: inputs uniform on the unit sphere of ``R^d``.
* :func:`gp_regression`: labels from a Gaussian process with a dot-product kernel on the sphere,
  the setting of Cheng, Chen and Sra (ICML 2024; ``d = 5``, kernels linear, ReLU, exp). The
  batch knows the covariance it was drawn from, so :meth:`KernelBatch.bayes_prediction` is the
  exact Bayes-optimal (posterior mean) prediction.
* :func:`sphere_classification`: labels ``sign(f(x))`` with ``f`` such a Gaussian process, the
  in-context classification task of the trained transformer in chapter 8.
* :func:`nearest_demonstrations`: demonstration retrieval, the ``k`` pool examples most similar
  to the query.
* :class:`ConceptMixture`: a finite latent-concept model in which Bayesian inference on a prompt
  and the kernel regression of Han, Wang, Zhao and Ji (TMLR 2025) can both be computed exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import check_dtype, check_positive_int, check_real, check_tensor
from .kernels import KERNELS, kernel_matrix
from .tasks import make_generator, split_prompt


def _check_sizes(batch_size, n_points, dim):
    check_positive_int("batch_size", batch_size)
    check_positive_int("n_points", n_points)
    check_positive_int("dim", dim)


def sphere_inputs(batch_size: int, n_points: int, dim: int, *, seed=0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Points uniform on the unit sphere of ``R^dim``: shape ``(batch_size, n_points, dim)``."""
    _check_sizes(batch_size, n_points, dim)
    check_dtype("dtype", dtype)
    z = torch.randn(batch_size, n_points, dim, generator=make_generator(seed), dtype=dtype)
    return z / z.norm(dim=-1, keepdim=True)


def psd_projection(cov: torch.Tensor) -> torch.Tensor:
    """The nearest positive semi-definite matrix (Frobenius norm) to each symmetric ``cov (B, n, n)``.

    Negative eigenvalues are set to 0. Needed for ``max(<u, v>, 0)``, which is not a positive
    definite kernel on the sphere: its Gram matrices have negative eigenvalues.
    """
    check_tensor("cov", cov, 3)
    evals, evecs = torch.linalg.eigh(cov)
    return (evecs * evals.clamp(min=0).unsqueeze(-2)) @ evecs.transpose(-1, -2)


@dataclass(frozen=True)
class KernelBatch:
    """``B`` prompts whose labels are a Gaussian-process draw plus noise.

    Attributes:
        xs: inputs ``(B, n, d)`` on the unit sphere.
        ys: labels ``(B, n)``: ``f(x_i) + sigma eps_i``.
        cov: the covariance ``(B, n, n)`` that ``f(x_1..x_n)`` was drawn from.
        noise_std: ``sigma``.
        kernel: the name of the generating kernel.
    """

    xs: torch.Tensor
    ys: torch.Tensor
    cov: torch.Tensor
    noise_std: float
    kernel: str

    @property
    def n_points(self) -> int:
        return self.xs.shape[1]

    @property
    def dim(self) -> int:
        return self.xs.shape[2]

    def prompt(self, k: int):
        """``(xs (B, k, d), ys (B, k), x_query (B, d), y_query (B,))``: ``k`` examples and the next point."""
        return split_prompt(self.xs, self.ys, k)

    def bayes_prediction(self, k: int) -> torch.Tensor:
        """The posterior mean of ``y_k`` given the first ``k`` labels: ``(B,)``.

        ``E[f(x_q) | y] = C_{qX} (C_{XX} + sigma^2 I)^{-1} y`` with ``C`` the generating covariance
        (a pseudo-inverse when ``sigma = 0`` and ``C_{XX}`` is singular). It is the Bayes-optimal
        prediction under squared loss, and equals :func:`icl_lib.kernels.kernel_ridge` with
        ``lam = sigma^2`` when ``C`` is the kernel's own Gram matrix.
        """
        xs, ys, _, _ = self.prompt(k)
        if k == 0:
            return ys.new_zeros(ys.shape[0])
        c_xx = self.cov[:, :k, :k] + self.noise_std**2 * torch.eye(k, dtype=ys.dtype, device=ys.device)
        c_qx = self.cov[:, k, :k]  # (B, k)
        if self.noise_std > 0:
            alpha = torch.linalg.solve(c_xx, ys.unsqueeze(-1)).squeeze(-1)
        else:
            alpha = (torch.linalg.pinv(c_xx, hermitian=True) @ ys.unsqueeze(-1)).squeeze(-1)
        return (c_qx * alpha).sum(-1)


def _gp_draw(xs, kernel, gen, **params):
    cov = psd_projection(kernel_matrix(xs, xs, kernel, **params))
    evals, evecs = torch.linalg.eigh(cov)
    z = torch.randn(xs.shape[0], xs.shape[1], 1, generator=gen, dtype=xs.dtype)
    f = (evecs @ (evals.clamp(min=0).sqrt().unsqueeze(-1) * z)).squeeze(-1)  # cov^{1/2} z
    return f, cov


def gp_regression(batch_size: int, n_points: int, dim: int = 5, kernel: str = "exp", *,
                  noise_std: float = 0.1, seed=0, dtype: torch.dtype = torch.float32, **params) -> KernelBatch:
    """Gaussian-process regression prompts on the unit sphere (Cheng, Chen and Sra 2024).

    ``x_i`` uniform on the sphere of ``R^dim``; ``(f(x_1), ..., f(x_n)) ~ N(0, C)`` with ``C`` the
    kernel's Gram matrix, projected onto the positive semi-definite cone (only ``relu`` needs it);
    ``y_i = f(x_i) + noise_std * eps_i``. ``params`` go to :func:`icl_lib.kernels.kernel_matrix`.
    """
    _check_sizes(batch_size, n_points, dim)
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {KERNELS}, got {kernel!r}")
    noise_std = check_real("noise_std", noise_std, minimum=0.0)
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    xs = sphere_inputs(batch_size, n_points, dim, seed=gen, dtype=dtype)
    f, cov = _gp_draw(xs, kernel, gen, **params)
    ys = f + noise_std * torch.randn(f.shape, generator=gen, dtype=dtype) if noise_std > 0 else f
    return KernelBatch(xs, ys, cov, noise_std, kernel)


@dataclass(frozen=True)
class ClassificationBatch:
    """``B`` prompts of binary labels ``y_i = sign(f(x_i)) in {-1, +1}``; ``latent`` holds ``f(x_i)``."""

    xs: torch.Tensor  # (B, n, d)
    ys: torch.Tensor  # (B, n), entries -1.0 or +1.0
    latent: torch.Tensor  # (B, n), the Gaussian-process values whose sign is the label

    @property
    def n_points(self) -> int:
        return self.xs.shape[1]

    def prompt(self, k: int):
        """``(xs (B, k, d), ys (B, k), x_query (B, d), y_query (B,))``."""
        return split_prompt(self.xs, self.ys, k)


def sphere_classification(batch_size: int, n_points: int, dim: int = 5, kernel: str = "exp", *,
                          seed=0, dtype: torch.dtype = torch.float32, **params) -> ClassificationBatch:
    """In-context binary classification: ``y = sign(f(x))``, ``f`` a Gaussian process on the sphere.

    Each prompt has its own ``f`` (its own decision boundary), so the labels of the context are
    the only way to learn it; nearby inputs tend to share a label. Chapter 8.
    """
    _check_sizes(batch_size, n_points, dim)
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {KERNELS}, got {kernel!r}")
    check_dtype("dtype", dtype)
    gen = make_generator(seed)
    xs = sphere_inputs(batch_size, n_points, dim, seed=gen, dtype=dtype)
    f, _ = _gp_draw(xs, kernel, gen, **params)
    ys = torch.where(f >= 0, 1.0, -1.0).to(dtype)
    return ClassificationBatch(xs, ys, f)


def nearest_demonstrations(pool_xs, pool_ys, x_query, k: int):
    """Retrieval: the ``k`` pool examples with the largest ``<x_i, x_q>`` (cosine on the sphere).

    Args:
        pool_xs: candidate inputs ``(B, P, d)``; pool_ys: their labels ``(B, P)``; x_query ``(B, d)``.
        k: how many to keep, ``1 <= k <= P``.

    Returns ``(xs (B, k, d), ys (B, k))`` ordered from the least to the most similar, so the most
    similar demonstration stands right before the query (as in retrieval-augmented prompting).
    """
    check_tensor("pool_xs", pool_xs, 3)
    check_tensor("pool_ys", pool_ys, 2)
    check_tensor("x_query", x_query, 2)
    B, P, d = pool_xs.shape
    if tuple(pool_ys.shape) != (B, P) or tuple(x_query.shape) != (B, d):
        raise ValueError(f"pool_ys, x_query: expected shapes {(B, P)} and {(B, d)}, got "
                         f"{tuple(pool_ys.shape)} and {tuple(x_query.shape)}")
    check_positive_int("k", k)
    if k > P:
        raise ValueError(f"k: expected at most the pool size P = {P}, got {k}")
    sim = (pool_xs * x_query.unsqueeze(1)).sum(-1)  # (B, P)
    idx = sim.topk(k, dim=1).indices.flip(1)  # least similar first
    return pool_xs.gather(1, idx.unsqueeze(-1).expand(B, k, d)), pool_ys.gather(1, idx)


class ConceptMixture:
    """A finite latent-concept model where Bayesian ICL and kernel regression are both exact.

    The model mirrors the structure behind Han et al.'s Theorem 1 with finite sets. Reading an
    input ``x`` (one of ``n_inputs`` symbols) leaves a belief ``phi(x)`` over ``n_states`` hidden
    states (a probability vector: the analogue of the HMM belief state after the prefix ``x``).
    A concept ``theta`` (one of ``n_concepts``) emits the label from the hidden state:
    ``P(y = c | x, theta) = sum_s phi(x)_s W_theta[s, c]``. Pretraining inputs are uniform over the
    symbols; a concept's prompts draw inputs uniformly too, or (``shift > 0``) from a
    concept-specific distribution, which makes the demonstrations differ from pretraining.

    The kernel is ``K(x, x') = phi(x)^T Sigma^{-1} phi(x')`` with ``Sigma = E_pre[phi phi^T]``, and
    kernel regression is ``(1/n) sum_i e(y_i) K(x_q, x_i)``. If the prompt's inputs follow the
    pretraining distribution, its expectation is exactly ``P(y | x_q, theta*)``, the limit of the
    Bayes predictive distribution; otherwise it converges to a biased limit.

    Args:
        n_inputs, n_states, n_concepts, n_classes: the sizes of the finite sets.
        sharpness: scale of the random logits of beliefs and emissions (larger: more peaked).
        shift: scale of the random logits of the concepts' input distributions (0: uniform).
        seed, dtype: as everywhere.
    """

    def __init__(self, n_inputs: int = 40, n_states: int = 6, n_concepts: int = 8, n_classes: int = 3, *,
                 sharpness: float = 2.0, shift: float = 0.0, seed=0, dtype: torch.dtype = torch.float64):
        for name, value in (("n_inputs", n_inputs), ("n_states", n_states), ("n_concepts", n_concepts)):
            check_positive_int(name, value)
        check_positive_int("n_classes", n_classes, minimum=2)
        if n_inputs < n_states:
            raise ValueError(f"n_inputs: expected at least n_states = {n_states} (Sigma must be invertible), got {n_inputs}")
        sharpness = check_real("sharpness", sharpness, minimum=0.0)
        shift = check_real("shift", shift, minimum=0.0)
        check_dtype("dtype", dtype)
        gen = make_generator(seed)
        self.beliefs = torch.softmax(sharpness * torch.randn(n_inputs, n_states, generator=gen, dtype=dtype), -1)  # (V, S)
        self.emissions = torch.softmax(
            sharpness * torch.randn(n_concepts, n_states, n_classes, generator=gen, dtype=dtype), -1)  # (M, S, C)
        self.input_probs = torch.softmax(shift * torch.randn(n_concepts, n_inputs, generator=gen, dtype=dtype), -1)  # (M, V)
        self.second_moment = self.beliefs.T @ self.beliefs / n_inputs  # Sigma = E_pre[phi phi^T], (S, S)
        self._features = self.beliefs @ torch.linalg.inv(self.second_moment)  # phi(x)^T Sigma^{-1}, (V, S)

    @property
    def n_inputs(self) -> int:
        return self.beliefs.shape[0]

    @property
    def n_concepts(self) -> int:
        return self.emissions.shape[0]

    @property
    def n_classes(self) -> int:
        return self.emissions.shape[2]

    def label_probs(self, concepts: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """``P(y | x, theta)`` for concepts ``(B,)`` and input symbols ``(B, N)``: ``(B, N, C)``."""
        return torch.einsum("bns,bsc->bnc", self.beliefs[inputs], self.emissions[concepts])

    def sample(self, batch_size: int, n_points: int, *, seed=0):
        """Prompts of one concept each: ``(concepts (B,), inputs (B, n), labels (B, n))`` (integer tensors)."""
        check_positive_int("batch_size", batch_size)
        check_positive_int("n_points", n_points)
        gen = make_generator(seed)
        concepts = torch.randint(self.n_concepts, (batch_size,), generator=gen)
        inputs = torch.multinomial(self.input_probs[concepts], n_points, replacement=True, generator=gen)
        probs = self.label_probs(concepts, inputs).reshape(-1, self.n_classes)
        labels = torch.multinomial(probs, 1, generator=gen).reshape(batch_size, n_points)
        return concepts, inputs, labels

    def bayes_predictive(self, inputs: torch.Tensor, labels: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """``P(y_q | prompt)`` with a uniform prior over concepts: ``(B, C)``.

        The posterior over concepts weighs each by ``prod_i p_theta(x_i) P(y_i | x_i, theta)``
        (computed in log space), then averages ``P(y_q | x_q, theta)``.
        """
        B, n = inputs.shape
        all_concepts = torch.arange(self.n_concepts)
        # log P(y_i | x_i, theta) for every concept: (B, M, n)
        probs = torch.einsum("bns,msc->bmnc", self.beliefs[inputs], self.emissions)
        log_lik = probs.gather(3, labels[:, None, :, None].expand(B, self.n_concepts, n, 1)).squeeze(3).log()
        log_lik = log_lik + self.input_probs[:, inputs].permute(1, 0, 2).log()  # + log p_theta(x_i)
        posterior = torch.softmax(log_lik.sum(-1), dim=1)  # (B, M)
        query_probs = torch.einsum("bs,msc->bmc", self.beliefs[query], self.emissions[all_concepts])
        return torch.einsum("bm,bmc->bc", posterior, query_probs)

    def kernel(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``K(x, x') = phi(x)^T Sigma^{-1} phi(x')`` for symbols ``a (B, N)``, ``b (B, M)``: ``(B, N, M)``."""
        return self._features[a] @ self.beliefs[b].transpose(1, 2)

    def kernel_regression(self, inputs: torch.Tensor, labels: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """Han et al.'s estimate ``(1/n) sum_i e(y_i) K(x_q, x_i)`` of ``P(y_q | prompt)``: ``(B, C)``."""
        B, n = inputs.shape
        if n == 0:
            raise ValueError("inputs: expected at least one demonstration, got n = 0")
        weights = self.kernel(query.unsqueeze(1), inputs).squeeze(1)  # (B, n)
        onehot = torch.nn.functional.one_hot(labels, self.n_classes).to(weights.dtype)  # (B, n, C)
        return torch.einsum("bn,bnc->bc", weights, onehot) / n
