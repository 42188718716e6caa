"""What a preset trains on: prompt distributions that may change with the training step.

Each sampler is a frozen dataclass (stored in a checkpoint's manifest) with
``sample(batch_size, step, generator) -> PromptBatch`` for training and
``eval_batch(size, seed) -> PromptBatch`` at the final sizes for the manifest's metrics.
``state(step)`` gives the columns it adds to the training curve (the curriculum's
values). :class:`Sampler` holds what they share; a :class:`StationarySampler` draws
training and evaluation prompts from one ``draw``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from .._checks import (
    check_instance,
    check_model,
    check_positive_int,
    check_real,
    check_seed,
)
from ..analysis.curves import error_curve
from ..kernels import KERNELS
from ..prompts import PromptBatch
from ..runtime import make_generator
from ..tasks import (
    HMMConceptMixture,
    TaskPool,
    TokenBatch,
    family_mixture,
    gp_regression,
    linear_regression,
    mixture_linear_regression,
    mixture_prior,
    noise_mixture_regression,
    sparse_linear_regression,
    sphere_classification,
    uniform_linear_regression,
)
from .loop import Curriculum

INPUTS = ("gaussian", "uniform")
MONITOR_PROMPTS = 1024  # prompts of a monitored error (RegressionPrompts.monitor)
MONITOR_SEED = 7919  # their seed, apart from training (0, 1, ...) and evaluation


def _check_monitor_ks(ks, n_points: int) -> None:
    """``monitor_ks``: a tuple of context sizes, each below ``n_points``."""
    if not isinstance(ks, tuple):
        raise TypeError(
            f"monitor_ks: expected a tuple of context sizes, got {type(ks).__name__}"
        )
    for k in ks:
        check_positive_int("monitor_ks", k, minimum=0)
        if k >= n_points:
            raise ValueError(
                f"monitor_ks: expected context sizes below {n_points} points, got {k}"
            )


def _monitored_errors(model, batch: PromptBatch, ks, suffix: str = "") -> dict:
    """``error_at_k{k}{suffix}``: the model's error / d at each of ``ks`` on
    ``batch``, moved to the model's device and dtype."""
    param = next(model.parameters())
    batch = batch.to(device=param.device, dtype=param.dtype)
    errors = error_curve(model, batch, ks)
    return {
        f"error_at_k{k}{suffix}": round(e, 6)
        for k, e in zip(ks, errors.tolist(), strict=True)
    }


def check_sample_args(batch_size, step, gen) -> None:
    """The arguments of every sampler's ``sample``: ``batch_size`` prompts at training
    step ``step`` (an int >= 0), drawn from the generator ``gen``."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("step", step, minimum=0)
    check_instance("gen", gen, torch.Generator, "a torch.Generator")


def check_eval_args(size, seed) -> None:
    """The arguments of every sampler's ``eval_batch``: ``size`` prompts from the
    seed ``seed`` (an int >= 0 or a generator, as everywhere)."""
    check_positive_int("size", size)
    make_generator(seed)


@dataclass(frozen=True)
class Sampler:
    """What every sampler shares: no curriculum columns by default, and the manifest
    entry ``{"type": class name, **fields}``."""

    def state(self, step: int) -> dict:
        """The curriculum's values at training step ``step`` (none here)."""
        check_positive_int("step", step, minimum=0)
        return {}

    def to_dict(self) -> dict:
        return {"type": type(self).__name__, **asdict(self)}


@dataclass(frozen=True)
class StationarySampler(Sampler):
    """A sampler whose prompt distribution does not change with the training step:
    training and evaluation both call :meth:`draw` (a subclass defines it)."""

    def draw(self, batch_size: int, seed) -> PromptBatch:
        raise NotImplementedError(f"{type(self).__name__} must define draw")

    def sample(self, batch_size: int, step: int, gen: torch.Generator) -> PromptBatch:
        check_sample_args(batch_size, step, gen)
        return self.draw(batch_size, gen)

    def eval_batch(self, size: int, seed: int) -> PromptBatch:
        check_eval_args(size, seed)
        return self.draw(size, seed)


@dataclass(frozen=True)
class MonitoredSampler(StationarySampler):
    """A stationary sampler whose training curve logs the model's error / d at the
    context sizes of its field ``monitor_ks`` (each subclass declares it; ``()`` for
    none), on fixed prompts: how a result moves with training."""

    def monitor_batch(self) -> PromptBatch:
        """The ``MONITOR_PROMPTS`` fixed prompts (seed ``MONITOR_SEED``) on which
        :meth:`monitor` measures the model, to measure other learners on them too."""
        return self.draw(MONITOR_PROMPTS, MONITOR_SEED)

    def monitor(self, model: torch.nn.Module) -> dict:
        """What the training curve records at a logged step: ``error_at_k{k}``, the
        model's error / d at each context size of ``monitor_ks`` on
        :meth:`monitor_batch`."""
        check_model("model", model, "parameters", "predict")
        if not self.monitor_ks:
            return {}
        if "_fixed" not in self.__dict__:  # drawn once, not at every logged step
            object.__setattr__(self, "_fixed", self.monitor_batch())
        return _monitored_errors(model, self.__dict__["_fixed"], self.monitor_ks)


@dataclass(frozen=True)
class RegressionPrompts(Sampler):
    """Linear regression prompts whose dimension and length follow a curriculum (Garg et
    al.).

    ``gaussian`` inputs: ``x ~ N(0, I)`` with label noise ``noise_std``
    (:func:`icl_lib.tasks.linear_regression`); ``uniform``: von Oswald et al.'s
    ``x ~ U(-1/2, 1/2)^d``, noiseless (:func:`icl_lib.tasks.uniform_linear_regression`).
    Inputs beyond the current dimension are zero-padded by the model.
    """

    dims: Curriculum  # active input dimension over training
    points: Curriculum  # (x, y) pairs per prompt over training (context plus query)
    noise_std: float = 0.0  # label noise sigma
    inputs: str = "gaussian"  # input distribution, one of INPUTS
    # Context sizes whose error / d the training curve logs (see monitor); () for none.
    monitor_ks: tuple[int, ...] = ()

    def __post_init__(self):
        for name in ("dims", "points"):
            if not isinstance(getattr(self, name), Curriculum):
                raise TypeError(
                    f"{name}: expected a Curriculum, got "
                    f"{type(getattr(self, name)).__name__}"
                )
        check_real("noise_std", self.noise_std, minimum=0.0)
        if self.inputs not in INPUTS:
            raise ValueError(f"inputs: expected one of {INPUTS}, got {self.inputs!r}")
        if self.inputs == "uniform" and self.noise_std:
            raise ValueError(
                f"noise_std: expected 0 for uniform inputs, got {self.noise_std}"
            )
        _check_monitor_ks(self.monitor_ks, self.points.end)

    def _draw(self, batch_size, n_points, dim, seed) -> PromptBatch:
        if self.inputs == "uniform":
            return uniform_linear_regression(batch_size, n_points, dim, seed=seed)
        return linear_regression(
            batch_size, n_points, dim, noise_std=self.noise_std, seed=seed
        )

    def sample(self, batch_size: int, step: int, gen: torch.Generator) -> PromptBatch:
        check_sample_args(batch_size, step, gen)
        return self._draw(
            batch_size, self.points.value(step), self.dims.value(step), gen
        )

    def eval_batch(self, size: int, seed: int) -> PromptBatch:
        check_eval_args(size, seed)
        return self._draw(size, self.points.end, self.dims.end, seed)

    def state(self, step: int) -> dict:
        return {"dims": self.dims.value(step), "points": self.points.value(step)}

    def monitor(self, model: torch.nn.Module) -> dict:
        """What the training curve records at a logged step: ``error_at_k{k}``, the
        model's error / d at each context size of ``monitor_ks`` on
        ``MONITOR_PROMPTS`` fixed prompts of the final size (seed ``MONITOR_SEED``)."""
        check_model("model", model, "parameters", "predict")
        if not self.monitor_ks:
            return {}
        if "_fixed" not in self.__dict__:  # drawn once, not at every logged step
            batch = self._draw(
                MONITOR_PROMPTS, self.points.end, self.dims.end, MONITOR_SEED
            )
            object.__setattr__(self, "_fixed", batch)
        return _monitored_errors(model, self.__dict__["_fixed"], self.monitor_ks)


@dataclass(frozen=True)
class RandomLengthRegression(Sampler):
    """Noiseless Gaussian regression prompts of a random length:
    ``k ~ U{0..max_context}`` examples and a query, one ``k`` per step, so a model
    learns every context size it will see (chapter 7's block)."""

    dim: int  # input dimension d
    max_context: int  # largest context size k

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("max_context", self.max_context)

    def sample(self, batch_size: int, step: int, gen: torch.Generator) -> PromptBatch:
        check_sample_args(batch_size, step, gen)
        k = int(torch.randint(0, self.max_context + 1, (1,), generator=gen))
        return linear_regression(batch_size, k + 1, self.dim, seed=gen)

    def eval_batch(self, size: int, seed: int) -> PromptBatch:
        check_eval_args(size, seed)
        return linear_regression(size, self.max_context + 1, self.dim, seed=seed)


@dataclass(frozen=True)
class SphereClassificationPrompts(StationarySampler):
    """In-context classification prompts ``y = sign(f(x))``, ``f ~ GP(kernel)`` on the
    sphere (:func:`icl_lib.tasks.sphere_classification`; chapter 8)."""

    dim: int  # input dimension d
    n_points: int  # points per prompt
    kernel: str = "exp"  # kernel of the Gaussian process

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_points", self.n_points, minimum=2)
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel: expected one of {KERNELS}, got {self.kernel!r}")

    def draw(self, batch_size: int, seed) -> PromptBatch:
        return sphere_classification(
            batch_size, self.n_points, self.dim, self.kernel, seed=seed
        )


@dataclass(frozen=True)
class GPRegressionPrompts(Sampler):
    """A fixed training set of Gaussian-process regression prompts on the sphere
    (:func:`icl_lib.tasks.gp_regression`, seed ``train_seed``), drawn from with
    replacement at every step; evaluation on fresh prompts (chapter 8's grid of kernel
    attentions, after Cheng, Chen and Sra 2024)."""

    dim: int  # input dimension d
    n_points: int  # examples and the query
    kernel: str  # kernel of the Gaussian process
    noise_std: float  # label noise sigma
    train_size: int  # prompts of the training set
    train_seed: int  # the seed that draws it

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_points", self.n_points, minimum=2)
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel: expected one of {KERNELS}, got {self.kernel!r}")
        check_real("noise_std", self.noise_std, minimum=0.0)
        check_positive_int("train_size", self.train_size)
        check_seed("train_seed", self.train_seed)

    def _draw(self, size: int, seed) -> PromptBatch:
        return gp_regression(
            size,
            self.n_points,
            self.dim,
            self.kernel,
            noise_std=self.noise_std,
            seed=seed,
        )

    def training_set(self) -> PromptBatch:
        """The ``train_size`` training prompts (drawn once per sampler)."""
        if "_train" not in self.__dict__:
            object.__setattr__(
                self, "_train", self._draw(self.train_size, self.train_seed)
            )
        return self.__dict__["_train"]

    def sample(self, batch_size: int, step: int, gen: torch.Generator) -> PromptBatch:
        check_sample_args(batch_size, step, gen)
        train = self.training_set()
        return train.select(
            torch.randint(train.batch_size, (batch_size,), generator=gen)
        )

    def eval_batch(self, size: int, seed: int) -> PromptBatch:
        check_eval_args(size, seed)
        return self._draw(size, seed)


@dataclass(frozen=True)
class MixturePriorPrompts(MonitoredSampler):
    """Linear regression prompts under Panwar et al. (2024)'s two-component prior
    ``w = (+-offset, v)``, ``v ~ N(0, I_{d-1})`` (:func:`icl_lib.tasks.mixture_prior`;
    chapter 4)."""

    dim: int  # input dimension d
    n_points: int  # points per prompt (the model predicts every one of them)
    offset: float = 3.0  # the first coordinate of w is +offset or -offset
    noise_std: float = 0.0  # label noise sigma
    # Context sizes whose error / d the training curve logs (monitor); () for none.
    monitor_ks: tuple[int, ...] = ()

    def __post_init__(self):
        check_positive_int("dim", self.dim, minimum=2)
        check_positive_int("n_points", self.n_points)
        check_real("offset", self.offset, minimum=0.0, strict=True)
        check_real("noise_std", self.noise_std, minimum=0.0)
        _check_monitor_ks(self.monitor_ks, self.n_points)

    def prior(self):
        """``(means, covs, weights)`` of the prior (float64)."""
        return mixture_prior(self.dim, self.offset)

    def draw(self, batch_size: int, seed) -> PromptBatch:
        means, covs, weights = self.prior()
        return mixture_linear_regression(
            batch_size,
            self.n_points,
            means=means,
            covs=covs,
            weights=weights,
            noise_std=self.noise_std,
            seed=seed,
        )


@dataclass(frozen=True)
class TaskPoolPrompts(Sampler):
    """Noisy linear regression prompts whose task is drawn from a fixed pool of
    ``n_tasks`` vectors ``w ~ N(0, I_d)`` (Raventos et al. 2023); ``n_tasks = None``
    draws a fresh ``w`` for every prompt (an infinite pool).

    The pool is fixed by ``pool_seed`` (:meth:`pool`), so a checkpoint's manifest
    names it exactly. :meth:`monitor_batches` gives the prompts whose error the
    training curve tracks: tasks from the pool and fresh tasks (chapter 3).
    """

    dim: int  # input dimension d
    n_points: int  # examples per prompt (the model predicts every one of them)
    noise_std: float  # label noise sigma
    n_tasks: int | None  # pool size M (None: an infinite pool)
    pool_seed: int = 0  # the seed that draws the pool

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_points", self.n_points)
        check_real("noise_std", self.noise_std, minimum=0.0)
        if self.n_tasks is not None:
            check_positive_int("n_tasks", self.n_tasks)
        check_seed("pool_seed", self.pool_seed)

    def pool(self) -> TaskPool | None:
        """The pool of task vectors (``None`` for an infinite pool)."""
        if self.n_tasks is None:
            return None
        return TaskPool(self.n_tasks, self.dim, seed=self.pool_seed)

    def _draw(self, pool, batch_size, seed) -> PromptBatch:
        if pool is None:
            return linear_regression(
                batch_size, self.n_points, self.dim, noise_std=self.noise_std, seed=seed
            )
        return pool.sample(
            batch_size, self.n_points, noise_std=self.noise_std, seed=seed
        )

    def sample(self, batch_size: int, step: int, gen: torch.Generator) -> PromptBatch:
        check_sample_args(batch_size, step, gen)
        return self._draw(self._cached_pool(), batch_size, gen)

    def eval_batch(self, size: int, seed: int) -> PromptBatch:
        """Prompts on tasks from the pool (fresh tasks for an infinite pool)."""
        check_eval_args(size, seed)
        return self._draw(self.pool(), size, seed)

    def monitor_batches(self, size: int, seed: int) -> dict[str, PromptBatch]:
        """``{"pool": prompts on pool tasks, "fresh": prompts on new tasks}``."""
        check_eval_args(size, seed)
        return {
            "pool": self._draw(self.pool(), size, seed),
            "fresh": self._draw(None, size, seed),
        }

    def _cached_pool(self):
        # Drawn once per sampler: ``sample`` runs at every training step.
        if "_pool" not in self.__dict__:
            object.__setattr__(self, "_pool", self.pool())
        return self.__dict__["_pool"]


@dataclass(frozen=True)
class HMMDocuments(StationarySampler):
    """Pretraining documents of a GINC-like mixture of HMMs (Xie et al. 2022; chapter
    4): batches (:class:`~icl_lib.tasks.TokenBatch`) of ``length`` tokens, one concept
    per document.

    Every document is a fresh draw from the start distribution (an endless stream, not
    GINC's fixed 1000 documents). The mixture (:meth:`mixture`,
    :class:`~icl_lib.tasks.HMMConceptMixture`) is fixed by the fields below and
    ``mixture_seed``, so a checkpoint's manifest names it exactly. With the loss
    ``next_token_ce`` a model reads ``length - 1`` tokens, so ``length`` is its
    ``n_ctx + 1``.
    """

    length: int  # tokens per document
    n_concepts: int = 5  # concepts (HMMs) in the mixture
    n_entities: int = 5  # entities E
    n_properties: int = 5  # properties S, the delimiter's included
    vocab_size: int = 16  # tokens V, the delimiter's included
    transition_temp: float = 0.1  # temperature of the permutation mixtures
    start_temp: float = 10.0  # temperature of the start distribution's logits
    entity_stay: float = 0.9  # weight of the identity in the entity chain
    smoothing: float = 0.02  # weight of the uniform matrix mixed into both chains
    delimiter_prob: float = 0.25  # p(delimiter next | a non-delimiter property)
    mixture_seed: int = 0  # the seed that draws the mixture's parameters

    def __post_init__(self):
        check_positive_int("length", self.length, minimum=2)
        make_generator(self.mixture_seed, "mixture_seed")
        self.mixture()  # checks the mixture's other arguments

    def mixture(self) -> HMMConceptMixture:
        """The mixture of HMMs (built once per sampler)."""
        if "_mixture" not in self.__dict__:
            fields = {k: v for k, v in asdict(self).items() if k != "length"}
            fields["seed"] = fields.pop("mixture_seed")
            object.__setattr__(self, "_mixture", HMMConceptMixture(**fields))
        return self.__dict__["_mixture"]

    def draw(self, batch_size: int, seed) -> TokenBatch:
        return self.mixture().sample_documents(batch_size, self.length, seed=seed)


@dataclass(frozen=True)
class NoiseMixturePrompts(StationarySampler):
    """Linear regression prompts whose noise level is drawn per prompt from
    ``noise_levels`` (:func:`icl_lib.tasks.noise_mixture_regression`; Bai et al. 2023,
    chapter 5)."""

    dim: int  # input dimension d
    n_points: int  # points per prompt (the model predicts every one of them)
    noise_levels: tuple = (0.1, 1.0)  # the possible label noise levels sigma
    # Context sizes whose error / d on each level the training curve logs (monitor).
    monitor_ks: tuple[int, ...] = ()

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_points", self.n_points)
        noise_mixture_regression(1, 1, 1, self.noise_levels)  # checks the levels
        _check_monitor_ks(self.monitor_ks, self.n_points)

    def draw(self, batch_size: int, seed) -> PromptBatch:
        return noise_mixture_regression(
            batch_size, self.n_points, self.dim, self.noise_levels, seed=seed
        )

    def monitor_batch(self, level: float) -> PromptBatch:
        """The ``MONITOR_PROMPTS`` fixed prompts of noise level ``level`` on which
        :meth:`monitor` measures the model (seed ``MONITOR_SEED``)."""
        level = check_real("level", level)
        if level not in self.noise_levels:
            raise ValueError(
                f"level: expected one of {self.noise_levels}, got {level!r}"
            )
        return noise_mixture_regression(
            MONITOR_PROMPTS, self.n_points, self.dim, (level,), seed=MONITOR_SEED
        )

    def monitor(self, model: torch.nn.Module) -> dict:
        """What the training curve records at a logged step: ``error_at_k{k}_sigma{s}``,
        the model's error / d at each context size of ``monitor_ks`` on the fixed
        prompts of each noise level ``s`` (:meth:`monitor_batch`)."""
        check_model("model", model, "parameters", "predict")
        if not self.monitor_ks:
            return {}
        if "_fixed" not in self.__dict__:  # drawn once, not at every logged step
            batches = {level: self.monitor_batch(level) for level in self.noise_levels}
            object.__setattr__(self, "_fixed", batches)
        out = {}
        for level, batch in self.__dict__["_fixed"].items():
            out |= _monitored_errors(model, batch, self.monitor_ks, f"_sigma{level}")
        return out

    def to_dict(self) -> dict:
        out = {"type": type(self).__name__, **asdict(self)}
        return {**out, "noise_levels": list(self.noise_levels)}


@dataclass(frozen=True)
class FamilyMixturePrompts(StationarySampler):
    """Regression or logistic-classification prompts, the family drawn per prompt
    (:func:`icl_lib.tasks.family_mixture`; Bai et al. 2023's pre-ICL testing, chapter
    5). ``classification_prob`` 0 or 1 trains a one-family model."""

    dim: int  # input dimension d
    n_points: int  # points per prompt (the model predicts every one of them)
    classification_prob: float = 0.5  # probability that a prompt is classification
    noise_std: float = 0.5  # label noise sigma of the regression prompts

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_points", self.n_points)
        family_mixture(1, 1, 1, classification_prob=self.classification_prob)
        check_real("noise_std", self.noise_std, minimum=0.0)

    def draw(self, batch_size: int, seed) -> PromptBatch:
        return family_mixture(
            batch_size,
            self.n_points,
            self.dim,
            classification_prob=self.classification_prob,
            noise_std=self.noise_std,
            seed=seed,
        )


@dataclass(frozen=True)
class SparseRegressionPrompts(MonitoredSampler):
    """Linear regression with ``sparsity``-sparse task vectors
    (:func:`icl_lib.tasks.sparse_linear_regression`; Garg et al. 2022, chapter 5)."""

    dim: int  # input dimension d
    n_points: int  # points per prompt (the model predicts every one of them)
    sparsity: int  # non-zero coordinates of w
    noise_std: float = 0.0  # label noise sigma
    # Context sizes whose error / d the training curve logs (monitor); () for none.
    monitor_ks: tuple[int, ...] = ()

    def __post_init__(self):
        check_positive_int("dim", self.dim)
        check_positive_int("n_points", self.n_points)
        check_positive_int("sparsity", self.sparsity)
        check_real("noise_std", self.noise_std, minimum=0.0)
        _check_monitor_ks(self.monitor_ks, self.n_points)

    def draw(self, batch_size: int, seed) -> PromptBatch:
        return sparse_linear_regression(
            batch_size,
            self.n_points,
            self.dim,
            self.sparsity,
            noise_std=self.noise_std,
            seed=seed,
        )
