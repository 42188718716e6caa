"""The machinery of the fuzz suite of ``icl_lib``'s public API (issue 24).

Every public callable (a function or class defined in a public module of ``icl_lib``,
its name not starting with ``_``, and every public method such a class defines, with
``self`` from the class's own baseline) is called once with a valid *baseline*: each
parameter's value comes from, in this order, a per-callable override (``OVERRIDES``), a
fixture for the name within its module (``CONTEXT_FIXTURES``), a fixture for the
parameter's annotated class (``TYPE_FIXTURES``) or one for its name
(``NAME_FIXTURES``). A new function whose parameters carry the book's usual names is
therefore fuzzed as soon as it is added; one that is not fails
``tests/test_api_fuzz.py`` until it has fixtures or an entry in ``EXEMPT`` with the
reason. ``api_fuzz_backlog.txt`` lists the callables still without fixtures; it only
shrinks.

Each argument of the baseline, optional ones included, is then replaced, one at a time,
by a value that no caller could mean (``mutation_kinds``): NaN and infinity in a data
tensor, a tensor with an extra axis, an empty batch or an empty tensor, a batch of one
where the other tensors hold four prompts, one more entry along a last axis that
another tensor pins (``means (C, d + 1)`` beside ``xs (B, n, d)``) or of a square
matrix, a negative size, zero for a size that must be positive (``POSITIVE``), a huge
one (``10**12``, refused by name before allocating), a fractional count, a bool for a
count, a non-finite element in a list of numbers, a negative element in a list of
counts, None, a number or an empty list where a sequence was expected, an empty dict,
None or a string where a number, tensor, flag, mapping or model was expected, a layer
(``nn.Linear``) where a model with its methods was, an unknown option. An edge of the
valid domain (``edge_values``: a small positive scale, 0.01) must give a result or be
refused by name, never an error of the function's own (a float32 underflow that names
an inner tensor). Where a model takes part, every value meets it in training mode and
in eval mode (what ``load_checkpoint`` returns). The call is classified:

- ``clear``: a ``ValueError``, ``TypeError``, ``KeyError`` or ``FileNotFoundError``
  whose message names the argument (what numpy and scikit-learn would give), or, for
  an empty input, an empty result (``np.sign([])``);
- ``raw``: any other exception, or one that does not name the argument (such as one
  that names another function's parameter);
- ``silent``: a result came back;
- ``hang``: the call ran past ``TIMEOUT_S``.

What it does not do: hypothesis draws from small fixed lists (``EXAMPLES`` = 2,
derandomised) and a fixed bad value is tried once in each mode, so the suite is close
to a fixed table of bad calls, cheap enough for ``make test``; value domains
(probabilities, +-1 labels, PIT values), dtypes other than float32/64 and
disagreements between two tensors along an axis that no other argument shares are
tested by hand (``tests/test_silent_inputs.py``), not generated; and the alarm that
catches a hang cannot interrupt one long call inside torch's C code (a huge allocation
is refused before it starts, ``_checks.check_positive_int``).
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
import signal
import sys
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch
from hypothesis import strategies as st

import icl_lib

B, N, D = 4, 6, 3  # prompts, points per prompt, input dimension of every fixture
VOCAB, CTX = 16, 12  # token fixtures: vocabulary and sequence length
TIMEOUT_S = 10
EXAMPLES = 2  # hypothesis examples per callable: each draws every (argument, kind)


# --- which callables are public ------------------------------------------------------


@cache
def public_callables() -> dict[str, object]:
    """``{qualified name: object}`` of every public function and class, and of every
    public method a public class defines (``module.Class.method``: the plain function,
    called with ``self`` from the class's own baseline; see :func:`method_owner`)."""
    found = {}
    modules = [icl_lib] + [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(icl_lib.__path__, "icl_lib.")
        if not m.name.endswith("__main__")
        and not any(part.startswith("_") for part in m.name.split("."))
    ]
    for module in modules:
        for name, obj in vars(module).items():
            if name.startswith("_") or not (
                inspect.isfunction(obj) or inspect.isclass(obj)
            ):
                continue
            if getattr(obj, "__module__", None) == module.__name__:
                found[f"{module.__name__}.{name}"] = obj
                if inspect.isclass(obj):
                    found.update(_public_methods(f"{module.__name__}.{name}", obj))
    return found


def _public_methods(qualified: str, cls) -> dict[str, object]:
    """The public methods ``cls`` itself defines (inherited ones are fuzzed on the
    class that defines them): instance methods as plain functions, static and class
    methods bound."""
    methods = {}
    for name, attr in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            methods[f"{qualified}.{name}"] = getattr(cls, name)
        elif inspect.isfunction(attr):
            methods[f"{qualified}.{name}"] = attr
    return methods


def method_owner(name: str) -> str | None:
    """The qualified name of the class whose instance method ``name`` is, or None."""
    owner = name.rsplit(".", 1)[0]
    callables = public_callables()
    if inspect.isclass(callables.get(owner)) and inspect.isfunction(callables[name]):
        return owner
    return None


# --- fixtures: valid values ----------------------------------------------------------


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=_gen(seed))


def _regression_batch():
    from icl_lib.tasks.regression import linear_regression

    return linear_regression(B, N, D, seed=0)


def _token_model():
    from icl_lib.models.token_gpt import TokenTransformer, TokenTransformerConfig

    torch.manual_seed(0)
    return TokenTransformer(
        TokenTransformerConfig(
            vocab_size=VOCAB, n_ctx=CTX, n_embd=8, n_layer=2, n_head=2
        )
    )


def _prompt_model():
    from icl_lib.models.gpt import ICLTransformer, TransformerConfig

    torch.manual_seed(0)
    return ICLTransformer(
        TransformerConfig(n_dims=D, n_positions=N + 1, n_embd=8, n_layer=1, n_head=2)
    )


def _lsa_model():
    from icl_lib.models.lsa import LinearSelfAttention

    return LinearSelfAttention(D, seed=0)


def _bursty_config():
    from icl_lib.models.bursty_classifier import BurstyClassifierConfig

    return BurstyClassifierConfig(
        dim=5, n_labels=4, n_context=3, n_layer=1, mlp_width=8, n_positions=7
    )


def _bursty_model():
    from icl_lib.models.bursty_classifier import BurstyClassifier

    torch.manual_seed(0)
    return BurstyClassifier(_bursty_config())


def _bursty_batch():
    from icl_lib.tasks.bursty import bursty_sequences

    return bursty_sequences(B, n_context=3, dim=5, n_labels=4, n_classes=8, seed=0)


def _token_batch():
    from icl_lib.tasks.induction import repeated_segment_tokens

    return repeated_segment_tokens(B, CTX, VOCAB, min_period=2, max_period=6, seed=0)


def _recall_batch():
    from icl_lib.tasks.recall import associative_recall

    return associative_recall(B, 2, n_queries=2, n_keys=4, n_values=4, seed=0)


def _block():
    from icl_lib.models.contextual import make_block

    torch.manual_seed(0)
    return make_block("softmax", D + 1, width=4, hidden=4, out_dim=1).double()


def _tokens():
    return torch.randint(0, VOCAB, (B, CTX), generator=_gen())


def _config(kind):
    from icl_lib.models import gpt, pfn, posterior_net, recurrent, token_gpt

    small = dict(n_dims=D, n_positions=N + 1, n_embd=8, n_layer=1, n_head=2)
    return {
        "TransformerConfig": lambda: gpt.TransformerConfig(**small),
        "PredictiveConfig": lambda: pfn.PredictiveConfig(**small),
        "PosteriorConfig": lambda: posterior_net.PosteriorConfig(**small),
        "TokenTransformerConfig": lambda: token_gpt.TokenTransformerConfig(
            vocab_size=VOCAB, n_ctx=CTX, n_embd=8, n_layer=1, n_head=2
        ),
        "SequenceModelConfig": lambda: recurrent.SequenceModelConfig(
            layers=("selective", "attn"),
            n_embd=8,
            state_dim=4,
            positions=True,
            n_dims=D,
            n_positions=N + 1,
        ),  # fmt: skip
    }[kind]()


TYPE_FIXTURES = {
    **{
        kind: (lambda kind=kind: _config(kind))
        for kind in (
            "TransformerConfig",
            "PredictiveConfig",
            "PosteriorConfig",
            "TokenTransformerConfig",
            "SequenceModelConfig",
        )  # fmt: skip
    },
    "PromptBatch": _regression_batch,
    "RegressionBatch": _regression_batch,
    "TokenTransformer": _token_model,
    "ICLTransformer": _prompt_model,
    "LinearSelfAttention": _lsa_model,
    "BurstyClassifier": _bursty_model,
    "BurstyClassifierConfig": _bursty_config,
    "BurstyBatch": _bursty_batch,
    "RepeatedTokensBatch": _token_batch,
    "RecallBatch": _recall_batch,
    "ContextualBlock": _block,
}


def _ols():
    from icl_lib.learners.linear import ols

    return ols


NAME_FIXTURES = {
    # prompts (B, N, D) and their parts
    "xs": lambda: _randn(B, N, D),
    "ys": lambda: _randn(B, N, seed=1),
    "x_query": lambda: _randn(B, D, seed=2),
    "y_query": lambda: _randn(B, seed=3),
    "batch": _regression_batch,
    "predictor": _ols,
    "tokens": _tokens,
    # sizes
    "dim": lambda: D,
    "d": lambda: D,
    "in_dim": lambda: D,
    "n_points": lambda: N,
    "batch_size": lambda: B,
    "k": lambda: 2,
    "ks": lambda: [1, 2, 3],
    "steps": lambda: 3,
    "n_pairs": lambda: 2,
    # scalars
    "noise_std": lambda: 0.5,
    "lr": lambda: 0.1,
    "lam": lambda: 0.1,
    "seed": lambda: 0,
}


def _patterns():
    from icl_lib.analysis.induction import attention_patterns

    return attention_patterns(_token_model(), _tokens())


def _token_losses():
    from icl_lib.analysis.induction import token_losses

    return token_losses(_token_model(), _tokens())


def _spd(dim=D, seed=0):
    a = _randn(dim, dim, seed=seed).double()
    return a @ a.T / dim + torch.eye(dim, dtype=torch.float64)


def _signs(*shape, seed=0):
    return torch.where(_randn(*shape, seed=seed) >= 0, 1.0, -1.0)


def _curve():
    return {"step": [0, 100, 200, 300, 400], "loss": [3.0, 2.0, 1.5, 1.2, 1.1]}


def _context():
    return _randn(B, 4, D + 1, seed=4).double()


def _x():
    return _randn(B, D + 1, seed=5).double()


def _query_row():  # one query's attention over a 2-shot prompt: (B, 2k + 1)
    return torch.softmax(_randn(B, 5, seed=6), -1)


def _concept_mixture():
    from icl_lib.tasks.hmm import HMMConceptMixture

    return HMMConceptMixture(vocab_size=VOCAB, seed=0)


def _concept_prompts():  # 3 examples of 3 tokens: 11 tokens, within the model's 12
    return _concept_mixture().sample_prompts(B, 2, seed=0)


def _task(name, *args, **kwargs):
    """A batch from the sampler ``icl_lib.tasks.<name>``, seed 0."""
    return getattr(__import__("icl_lib").tasks, name)(*args, seed=0, **kwargs)


def _fields_of(factory) -> dict:
    """Fixtures for a batch class's constructor: the fields of a sampled batch."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(factory())]
    return {name: (lambda name=name: getattr(factory(), name)) for name in names}


# Fixtures for a parameter name within one module or callable (the longest prefix of
# the callable's qualified name wins): the same name means different things there.
def _axes_with_two_series():
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], color="k", label="transformer")
    ax.plot([1, 2], [2, 1], color="k", ls="--", label="transformer, no noise")
    ax.set_yscale("log")
    return ax


CONTEXT_FIXTURES: dict[str, dict[str, typing.Callable[[], object]]] = {
    "icl_lib.analysis.ablation": {
        "heads": lambda: [(0, 0)],
        "groups": lambda: {"a head": [(0, 1)]},
        "full_score": lambda: -1.0,
        "ablated_score": lambda: -0.5,
    },
    "icl_lib.analysis.alignment": {
        "pred": lambda: _randn(B, seed=7),
        "target": lambda: _randn(B, seed=8),
        "f": _ols,
        "g": _ols,
        "predict": _ols,
        "lo": lambda: 0.0,
        "hi": lambda: 1.0,
    },
    "icl_lib.analysis.alignment.golden_section": {
        "f": lambda: lambda t: (t - 0.3) ** 2
    },
    "icl_lib.analysis.attention": {
        "features": lambda: _randn(8, 5, seed=9),
        "targets": lambda: _randn(8, 2, seed=10),
        "row": _query_row,
        "weights": lambda: torch.rand(B, 2, generator=_gen()),
        "labels": lambda: _signs(B, 2),
        "similarity": lambda: _randn(B, 2, seed=11),
        "scores": lambda: _randn(B, seed=12),
        "model_prediction": lambda: _signs(B, seed=13),
        "y_query": lambda: _signs(B, seed=14),
    },
    "icl_lib.analysis.attention.similarity_correlation": {
        "weights": lambda: torch.rand(B, 1, 2, 2, generator=_gen()),
    },
    "icl_lib.analysis.calibration": {
        "u": lambda: torch.rand(B, N, generator=_gen()),
        "levels": lambda: [0.1, 0.5, 0.9],
        "mean": lambda: _randn(B, seed=15),
        "var": lambda: torch.rand(B, generator=_gen()) + 0.5,
        "y": lambda: _randn(B, seed=16),
    },
    "icl_lib.analysis.circuits": {
        "layer": lambda: 0,
        "head": lambda: 0,
        "ov": lambda: _randn(VOCAB, VOCAB, seed=17),
        "matrix": lambda: _randn(VOCAB, VOCAB, seed=18),
        "vocab_size": lambda: VOCAB,
        "sample_size": lambda: 4,
        "tokens": lambda: torch.stack(
            [torch.randperm(VOCAB, generator=_gen(i))[:CTX] for i in range(B)]
        ),
    },
    "icl_lib.analysis.circuits.direct_logit_attribution": {
        "tokens": lambda: torch.stack(
            [torch.randperm(VOCAB, generator=_gen(i))[:6] for i in range(B)]
        ).repeat(1, 2),
    },
    "icl_lib.analysis.curves": {
        "curve": _curve,
        "level": lambda: 1.3,
        "start": lambda: 100,
        "values": lambda: _randn(B, seed=19),
        "scores": lambda: _randn(B, seed=20),
        "labels": lambda: _signs(B, seed=21),
        "errors": lambda: torch.rand(8, N, generator=_gen()),
    },
    "icl_lib.analysis.induction": {
        "patterns": _patterns,
        "losses": _token_losses,
        "mask": lambda: torch.rand(B, CTX - 1, generator=_gen()) > 0.5,
        "early": lambda: 1,
        "late": lambda: 8,
        "probe": _token_batch,
        "steps": lambda: [0, 100, 200, 300],
        "values": lambda: [3.0, 2.5, 1.0, 0.9],
    },
    "icl_lib.analysis.selection": {
        "numerator": lambda: torch.rand(8, generator=_gen()) + 0.1,
        "denominator": lambda: torch.rand(8, generator=_gen()) + 0.2,
        "features": lambda: _randn(8, 5, seed=22),
        "labels": lambda: (_signs(8, seed=23) > 0).float(),
        "posterior": lambda: torch.softmax(_randn(B, 3, seed=24), -1),
        "predictors": lambda: {"ols": _ols()},
        "noise_levels": lambda: [0.1, 0.5],
        "learner": lambda: __import__("icl_lib").learners.linear.ridge,
        "tune_batch": _regression_batch,
        "grid": lambda: [0.01, 0.1, 1.0],
        "choices": lambda: {1: 0.1, 2: 0.1, 3: 0.1},
    },
    "icl_lib.analysis.selection.bayes_label_accuracy": {
        "labels": lambda: torch.tensor([0, 1, 2, 0]),
    },
    # chapter 5's selection frontier: two one-penalty learners on two kinds of prompt
    "icl_lib.analysis.frontier": {
        "path_errors": lambda: torch.tensor(
            [[1.0, 2.0, 1.5, 2.5], [2.0, 1.0, 2.5, 1.5]]
        ),
        "groups": lambda: torch.tensor([0, 1, 0, 1]),
        "reference": lambda: torch.tensor([1.0, 1.5]),
        "learner_errors": lambda: torch.tensor([1.2, 1.1, 1.3, 1.0]),
        "lams": lambda: [0.01, 0.1],
        "scales": lambda: [0.5, 1.0],
    },
    "icl_lib.plotting.selection_figures": {
        "frontier_x": lambda: [1.3, 1.1, 1.0],
        "frontier_y": lambda: [1.0, 2.0, 5.0],
        "points": lambda: {"transformer": (1.05, 3.0)},
        "xs": lambda: [1.0, 1.2],
        "xlabel": lambda: "x",
        "ylabel": lambda: "y",
    },
    "icl_lib.analysis.reading": {"relative": lambda: [1.0, 0.9, 0.2, 1.1]},
    "icl_lib.plotting.kernel_figures": {  # chapter 8's figures
        "scaled_eigenvalues": lambda: [0.01, 0.1, 1.0],
        "factors": lambda: {4: ([0.04, 0.34, 1.0], [0.04, 0.29, 0.8])},
        "temperatures": lambda: [0.1, 0.2, 0.4],
        "agreement": lambda: {"smoother": [0.8, 0.9, 0.85]},
        "levels": lambda: {"best head": 0.88},
        "chosen": lambda: 0.2,
        "ks": lambda: [1, 2, 4],
        "in_distribution": lambda: {"kernel sum": [1.0, 0.7, 0.5]},
        "shifted": lambda: {"kernel sum": [1.0, 0.8, 0.6]},
        "limit": lambda: 0.4,
    },
    "icl_lib.plotting.task_pool_diagram": {
        "panels": lambda: [
            {"pool": [[0.0, 1.0], [1.0, 0.0]], "weights": [0.25, 0.75], "title": "M"}
        ],
        "ridge_mean": lambda: [0.1, 0.2],
        "ridge_cov": lambda: [[0.2, 0.05], [0.05, 0.1]],
    },
    "icl_lib.live_figures": {  # an explorer of one slider with three stops
        "plot": lambda: _small_plot,
        "controls": lambda: {"k": (0, 2)},
        "values": lambda: {"k": 1},
    },
    "icl_lib.plotting.implicit_figures": {  # chapter 7's figures
        "labels": lambda: ["softmax, plain", "ssm, skip"],
        "errors": lambda: [1e-16, 0.0],
        "controls": lambda: [0.01, 0.4],
        "ks": lambda: [0, 1, 2, 3],
        "implicit": lambda: [1.0, 0.7, 0.5, 0.4],
        "budgets": lambda: {"1 pass": [1.0, 0.8, 0.7, 0.6]},
        "curves": lambda: {
            "trained block": [1.0, 0.6, 0.4, 0.3],
            "trained block, shuffled labels": [1.0, 0.6, 0.4, 0.3],
        },
        "first_steps": lambda: {"trained block": 2.5},
        "reference": lambda: [1.0, 0.58, 0.41, 0.32],
        "reference_label": lambda: "uniform average",
        "band": lambda: 1.2,
        "converged_label": lambda: "SGD run to interpolation",
        "converged_ks": lambda: [2, 3],
        "converged": lambda: [0.6, 0.3],
        "passes": lambda: [1, 10, 100],
        "test_error": lambda: [0.5, 0.35, 0.3],
        "train_error": lambda: [0.4, 1e-3, 1e-9],
    },
    "icl_lib.analysis.stability": {
        "position": lambda: 1,
        "ms": lambda: [2, 4],
        "m": lambda: 3,
        "values": lambda: [1.0, 0.5],
    },
    "icl_lib.analysis.stability.loglog_slope": {"ms": lambda: [2.0, 4.0]},
    "icl_lib.learners.bayes": {
        "prior_mean": lambda: torch.zeros(D),
        "prior_cov": lambda: torch.eye(D),
        "means": lambda: _randn(2, D, seed=25),
        "covs": lambda: torch.eye(D).repeat(2, 1, 1),
        "weights": lambda: torch.tensor([0.3, 0.7]),
        "mean_p": lambda: _randn(B, D, seed=26).double(),
        "cov_p": lambda: _spd().expand(B, D, D).clone(),
        "mean_q": lambda: _randn(B, D, seed=27).double(),
        "cov_q": lambda: _spd(seed=1).expand(B, D, D).clone(),
    },
    "icl_lib.learners.kernel": {
        "grid": lambda: torch.linspace(-1, 1, 5),
        "temperature": lambda: 1.0,
        "temperatures": lambda: [0.5, 1.0],
        "bandwidths": lambda: [0.5, 1.0],
        "target": lambda: _signs(B, seed=28),
    },
    "icl_lib.learners.kernel.attention_regression_curve": {
        "xs": lambda: _randn(N),
        "ys": lambda: _randn(N, seed=1),
    },
    "icl_lib.learners.linear": {
        "gamma": lambda: 0.1,
        "precond": lambda: torch.eye(D),
    },
    "icl_lib.learners.pool": {"pool": lambda: _randn(5, D, seed=29)},
    "icl_lib.learners.risk": {
        "errors": lambda: torch.rand(N, generator=_gen()) + 1.0,
        "reference": lambda: torch.rand(N, generator=_gen()) + 1.0,
        "step": lambda: 0.5,
    },
    "icl_lib.learners.selection": {
        "z": lambda: _randn(B, D),
        "threshold": lambda: 0.1,
        "lams": lambda: [0.01, 0.1],
        "candidates": lambda: __import__("icl_lib").learners.selection.ridge_candidates(
            [0.01, 0.1]
        ),
        "noise_levels": lambda: [0.1, 0.5],
    },
    "icl_lib.learners.selection.logistic_weights": {"ys": lambda: _signs(B, N)},
    "icl_lib.learners.selection.logistic_regression": {"ys": lambda: _signs(B, N)},
    "icl_lib.learners.selection.logistic_posterior_mean": {
        "ys": lambda: _signs(B, N),
        "n_samples": lambda: 64,
    },
    "icl_lib.learners.selection.binary_label_statistic": {"ys": lambda: _signs(B, N)},
    "icl_lib.learners.selection.pre_icl_test": {"ys": lambda: _signs(B, N)},
    "icl_lib.analysis.alignment.bootstrap_gd_plus_plus": {
        "n_boot": lambda: 2,
        "max_iter": lambda: 3,
    },
    "icl_lib.analysis.alignment.tune_gd_plus_plus": {"max_iter": lambda: 3},
    "icl_lib.theory.gd_construction": {
        "n_context": lambda: N,
        "gamma": lambda: 0.1,
        "cov": _spd,
        "precond": lambda: torch.eye(D, dtype=torch.float64),
        "direction": lambda: torch.eye(D, dtype=torch.float64),
        "gram": lambda: _spd().expand(B, D, D).clone(),
        "mu": lambda: torch.rand(5, generator=_gen()),
        "mu_min": lambda: 0.5,
        "mu_max": lambda: 2.0,
        "model": _lsa_model,
    },
    "icl_lib.theory.implicit": {
        "context": _context,
        "x": _x,
        "n": lambda: 4,
        "absorbed": lambda: [0, 2],
        "n_context": lambda: 4,
        "size": lambda: 2,
        "M": lambda: _randn(B, 3, 4).double(),
        "Delta": lambda: _randn(B, 4, 3).double(),
        "W": lambda: _randn(B, 4, 3, seed=1).double(),
    },
    "icl_lib.theory.implicit.rank_one": {
        "W": lambda: _randn(5, 3).double(),  # (h, m), h not the batch size
        "delta": lambda: _randn(B, 3, seed=1).double(),
        "anchor": lambda: _randn(B, 3, seed=2).double(),
    },
    "icl_lib.theory.implicit.implicit_error_curve": {"batch": lambda: _block_batch()},
    "icl_lib.theory.implicit.in_context_task_errors": {"batch": lambda: _block_batch()},
    "icl_lib.theory.finetuning": {
        "batch": lambda: _block_batch(),
        "n_context": lambda: 4,
        "xs": lambda: _randn(B, 4, D).double(),
        "ys": lambda: _randn(B, 4, seed=3).double(),
        "x_test": lambda: _randn(B, 2, D, seed=5).double(),
        "lrs": lambda: [0.01, 0.1],
        "epochs": lambda: [1, 2],
        "first": lambda: torch.tensor([1.0, 2.0, 3.0]),
        "second": lambda: torch.tensor([2.0, 1.0, 1.0]),
        "grid": lambda: {(0.01, 1): 1.0, (0.1, 1): 0.5, (0.01, 2): 0.7, (0.1, 2): 0.6},
    },
    "icl_lib.theory.stability": {
        "position": lambda: 1,
        "x_new": lambda: _randn(B, D, seed=30),
        "y_new": lambda: _randn(B, seed=31),
        "m": lambda: 5,
        "lam_1": lambda: 0.5,
        "radius": lambda: 1.0,
        "label_bound": lambda: 1.0,
    },
    "icl_lib.kernels": {
        "a": lambda: _randn(B, N, D),
        "b": lambda: _randn(B, 2, D, seed=1),
    },
    "icl_lib.models.recurrent": {
        "q": lambda: _randn(B, N, D),
        "k": lambda: _randn(B, N, D, seed=1),
        "v": lambda: _randn(B, N, 2, seed=2),
        "u": lambda: _randn(B, N, 8),
        "n_embd": lambda: 8,
        "state_dim": lambda: 4,
        "kind": lambda: "attention",
        "n_tokens": lambda: 10,
    },
    "icl_lib.models.gpt.prompt_tokens": {"n_dims": lambda: D, "n_positions": lambda: N},
    "icl_lib.models.lsa.lsa_layer": {
        "Z": lambda: _randn(B, N + 1, D + 1),
        "kq": lambda: _randn(1, D + 1, D + 1, seed=1),
        "pv": lambda: _randn(1, D + 1, D + 1, seed=2),
    },
    "icl_lib.models.pfn": {
        "samples": lambda: _randn(100),
        "n_buckets": lambda: 4,
        "borders": lambda: (-2.0, -0.5, 0.0, 0.5, 2.0),
    },
    "icl_lib.models.contextual": {
        "in_dim": lambda: D + 1,
        "hidden": lambda: 4,
        "out_dim": lambda: 1,
        "kind": lambda: "softmax",
        "context": _context,
        "x": _x,
    },
    "icl_lib.models.associative_memory": {
        "n_pairs": lambda: 3,
        "generator": _gen,
        "sizes": lambda: [(4, 2)],
        "keys": lambda: _randn(4, 2).double(),
        "queries": lambda: _randn(4, 2, seed=1).double(),
    },
    "icl_lib.models.frame_memory": {  # chapter 9's tight-frame memory
        "state_dim": lambda: 4,
        "n_pairs": lambda: 6,
    },
    "icl_lib.models.associative_memory.train_associative_memories": {
        "steps": lambda: 3,
        "batch_size": lambda: 8,
    },
    "icl_lib.analysis.recall": {
        "crosstalk": lambda: _randn(3, 3).double(),
        "pairs": lambda: [1, 2],
        "size": lambda: 8,
        "memory": lambda: _memory(),
        "n_prompts": lambda: 16,
    },
    "icl_lib.analysis.recall.recall_curve": {
        "model": lambda: _recall_model(),
        "n_keys": lambda: 4,
        "n_values": lambda: 4,
        "n_queries": lambda: 2,
    },
    "icl_lib.analysis.recall.recall_accuracy": {"model": lambda: _recall_model()},
    "icl_lib.analysis.recall.recall_answers": {"model": lambda: _recall_model()},
    "icl_lib.analysis.posterior": {"model": lambda: _posterior_model()},
    "icl_lib.analysis.calibration.nll_curve": {"model": lambda: _pfn_model()},
    "icl_lib.analysis.calibration.label_nll": {"model": lambda: _pfn_model()},
    "icl_lib.analysis.calibration.pit": {"model": lambda: _pfn_model()},
    "icl_lib.analysis.calibration.predictive_band": {
        "model": lambda: _pfn_model(head="gaussian"),
        "xs": lambda: _randn(1, N - 1, D),
        "ys": lambda: _randn(1, N - 1, seed=1),
        "direction": lambda: torch.tensor([1.0, 0.0, 0.0]),
        "ts": lambda: torch.linspace(-1, 1, 5),
    },
    "icl_lib.analysis.calibration.gaussian_head_predictive": {
        "model": lambda: _pfn_model(head="gaussian")
    },
    "icl_lib.analysis.calibration.blind_variance": {
        "var": lambda: torch.rand(B, N, generator=_gen()) + 0.5
    },
    "icl_lib.analysis.calibration.conditional_coverage": {
        "score": lambda: torch.rand(B, N, generator=_gen(3)) + 0.5
    },
    "icl_lib.analysis.curves.ratio_of_means": {
        "numerator": lambda: torch.rand(8, generator=_gen()) + 0.1,
        "denominator": lambda: torch.rand(8, generator=_gen(1)) + 0.1,
    },
    "icl_lib.analysis.posterior.posterior_mean_vectors": {
        "batch": lambda: _task(
            "mixture_linear_regression", B, N, **_opposite_mixture()
        ),
        "ks": lambda: [1, 2],
        **{
            k: (lambda k=k: _opposite_mixture()[k])
            for k in ("means", "covs", "weights")
        },
    },
    "icl_lib.analysis.posterior.component_weights_from_vectors": {
        "vectors": lambda: _randn(B, 2, D, seed=5),
        "batch": lambda: _task(
            "mixture_linear_regression", B, N, **_opposite_mixture()
        ),
        "ks": lambda: [1, 2],
        **{
            k: (lambda k=k: _opposite_mixture()[k])
            for k in ("means", "covs", "weights")
        },
    },
    "icl_lib.analysis.calibration.bucket_cost": {
        "bars": lambda: __import__("icl_lib").models.pfn.BarDistribution(
            (-3.0, -1.0, 0.0, 1.0, 3.0)
        )
    },
    "icl_lib.analysis.influence": {"reference": _ols},
    "icl_lib.presets": {"name": lambda: "overview_noiseless"},
    "icl_lib.training.checkpoints": {"name": lambda: "overview_noiseless"},
    "icl_lib.presets.kernel": {"activation": lambda: "exp", "data": lambda: "exp"},
    "icl_lib.presets.frontiers": {"kind": lambda: "attn", "depth": lambda: 2},
    "icl_lib.presets.stability": {
        "n_tasks": lambda: 4,
        "name": lambda: "stability_pool_inf",
    },
    "icl_lib.tasks.regression": {
        "sparsity": lambda: 2,
        "means": lambda: _randn(2, D),
        "covs": lambda: torch.eye(D).repeat(2, 1, 1),
        "weights": lambda: torch.tensor([0.3, 0.7]),
        "n_tasks": lambda: 4,
    },
    "icl_lib.tasks.families": {"noise_levels": lambda: [0.1, 0.5]},
    "icl_lib.tasks.induction": {"length": lambda: CTX, "vocab_size": lambda: VOCAB},
    "icl_lib.tasks.induction.repeated_segment_tokens": {
        "min_period": lambda: 2,
        "max_period": lambda: 5,
    },
    "icl_lib.tasks.sphere": {
        "cov": lambda: _spd().expand(B, D, D).clone(),
        "pool_xs": lambda: _randn(B, N, D),
        "pool_ys": lambda: _randn(B, N, seed=1),
    },
    "icl_lib.tasks.tokens.check_tokens": {"vocab_size": lambda: VOCAB},
    "icl_lib.training.loop": {"start": lambda: 1, "end": lambda: 5, "step": lambda: 3},
    "icl_lib.training.loop.learning_rate_factor": {"steps": lambda: 10},
    "icl_lib.training.preset.loss_change_last_fifth": {
        "curve": lambda: {"step": list(range(0, 1000, 100)), "loss": [1.0] * 10}
    },
    "icl_lib.training.recall": {"max_pairs": lambda: 3},
    "icl_lib.training.recipe.follows_recipe": {
        "preset": lambda: __import__("icl_lib").presets.PRESETS["gd_looped2"]
    },
    "icl_lib.training.samplers": {
        "max_context": lambda: N,
        "n_tasks": lambda: 4,
        "sparsity": lambda: 2,
    },
    "icl_lib.training.induction": {
        "length": lambda: CTX,
        "min_period": lambda: 2,
        "max_period": lambda: 5,
    },
    "icl_lib.models.pfn.PredictiveConfig": {"head": lambda: "riemann"},
    "icl_lib.training.bursty": {},
    "icl_lib.claims.load_claims": {"directory": lambda: _claims_dir()},
    "icl_lib.exercises": {
        "exercise": lambda: "ex-gd-code-step",
        "answer": lambda: None,
        "show": lambda: False,
    },
    "icl_lib.notebook.number_table": {
        "columns": lambda: ["", "a"],
        "rows": lambda: {"x": [1.0]},
    },
    "icl_lib.notebook.multiple_text": {"factor": lambda: 2.5},
    "icl_lib.notebook.scientific_text": {"x": lambda: 3.6e-15},
    "icl_lib.notebook.trend_summary": {
        "budgets": lambda: {
            "the ratio": {"end": 1.0, "reached": None, "slope": -0.5, "factor": 4.0}
        }
    },
    "icl_lib.training.losses": {"model": lambda: _prompt_model()},
    "icl_lib.training.losses.prefix_nll": {
        "model": lambda: _pfn_model(head="gaussian")
    },
    "icl_lib.training.losses.posterior_nll": {"model": lambda: _posterior_model()},
    "icl_lib.training.losses.posterior_mean_mse": {"model": lambda: _posterior_model()},
    "icl_lib.training.losses.next_token_ce": {
        "model": lambda: _token_model(),
        "batch": lambda: _token_batch(),
    },
    "icl_lib.training.losses.recall_ce": {
        "model": lambda: _recall_model(),
        "batch": lambda: _recall_batch(),
    },
    "icl_lib.training.losses.query_class_ce": {
        "model": lambda: _bursty_model(),
        "batch": lambda: _bursty_batch(),
    },
    "icl_lib.training.losses.prefix_logistic": {
        "batch": lambda: __import__("icl_lib").tasks.families.linear_classification(
            B, N, D, seed=0
        )
    },
    "icl_lib.models.recurrent.make_mixer": {"kind": lambda: "selective"},
    **{
        f"icl_lib.tasks.{name}": _fields_of(factory)
        for name, factory in (
            ("regression.RegressionBatch", lambda: _regression_batch()),
            (
                "regression.MixtureRegressionBatch",
                lambda: _task(
                    "mixture_linear_regression",
                    B,
                    N,
                    means=_randn(2, D),
                    covs=torch.eye(D).repeat(2, 1, 1),
                    weights=torch.tensor([0.3, 0.7]),
                ),
            ),
            (
                "families.NoiseMixtureBatch",
                lambda: _task("noise_mixture_regression", B, N, D, [0.1, 0.5]),
            ),
            ("families.FamilyBatch", lambda: _task("family_mixture", B, N, D)),
            ("sphere.KernelBatch", lambda: _task("gp_regression", B, N, dim=D)),
            (
                "sphere.ClassificationBatch",
                lambda: _task("sphere_classification", B, N, dim=D),
            ),
            ("tokens.TokenBatch", lambda: _token_batch()),
            ("induction.RepeatedTokensBatch", lambda: _token_batch()),
            ("recall.RecallBatch", lambda: _recall_batch()),
            ("bursty.BurstyBatch", lambda: _bursty_batch()),
            ("recall.ParityBatch", lambda: _task("sparse_parity", B, N, D)),
        )
    },  # fmt: skip
    "icl_lib.plotting": {
        "ks": lambda: [1, 2, 3],
        "curves": lambda: {"ridge": [1.0, 0.5, 0.25], "transformer": [1.1, 0.6, 0.3]},
        "ns": lambda: [1, 2, 4],
        "xlabel": lambda: "n",
        "ylabel": lambda: "error",
        "prompts": lambda: [1000, 2000, 4000],
        "groups": lambda: ["a", "b"],
        "series": lambda: {"ridge": [1.0, 2.0], "transformer": [1.5, 2.5]},
        "pool_sizes": lambda: [1, 4, 16],
        "levels": lambda: [0.1, 0.5, 0.9],
        "observed": lambda: {"model": [0.12, 0.48, 0.91]},
        "ts": lambda: [-1.0, 0.0, 1.0],
        "values": lambda: [[0.1, 0.2], [0.3, 0.4]],
        "row_labels": lambda: ["r1", "r2"],
        "col_labels": lambda: ["c1", "c2"],
        "matrices": lambda: {
            "A": [[0.1, 0.2], [0.3, 0.4]],
            "B": [[1.0, 0.0], [0.0, 1.0]],
        },
        "patterns": lambda: {"head": [[1.0, 0.0], [0.5, 0.5]]},
        "plot": lambda: __import__("icl_lib").plotting.curves.error_curves,
        "panels": lambda: [{"ks": [1, 2], "curves": {"ridge": [1.0, 0.5]}}],
        "delta_W": lambda: _randn(3, 4).double(),
        "outputs": lambda: {"T_W(C, x)": 0.5, "T_W+dW(C minus Y, x)": 0.5},
        "ratios": lambda: {4: [0.5, 1.0, 2.0]},
        "guaranteed": lambda: {4: [1.0, 1.0, 0.2]},
        "accuracy": lambda: {4: [1.0, 0.9, 0.6]},
    },
    "icl_lib.plotting.curves.training_curves": {
        "curves": lambda: {"run": {"step": [0, 100, 200], "loss": [1.0, 0.5, 0.4]}},
    },
    "icl_lib.plotting.curves.prediction_scatter": {
        "truth": lambda: [0.1, -0.3, 0.7],
        "predictions": lambda: {"ridge": [0.0, -0.2, 0.6]},
    },
    "icl_lib.plotting.curves.smoother_fit": {
        "xs": lambda: [-1.0, 0.0, 1.0],
        "ys": lambda: [0.5, 0.0, 0.5],
        "grid": lambda: [-1.0, -0.5, 0.0, 0.5, 1.0],
        "fit": lambda: [0.5, 0.3, 0.1, 0.3, 0.5],
    },
    "icl_lib.plotting.distributions.predictive_band": {
        "band": lambda: {
            name: [0.0, 0.1, 0.2]
            for name in (
                "model_mean",
                "model_lo",
                "model_hi",
                "exact_mean",
                "exact_lo",
                "exact_hi",
            )
        },  # fmt: skip
    },
    "icl_lib.plotting.heatmaps.attention_map": {
        "rows": lambda: [[0.2, 0.2, 0.2, 0.2, 0.2]],
        "row_labels": lambda: ["L0 H0"],
        "k": lambda: 2,
    },
    # writing and training, into a temporary folder and for two steps
    "icl_lib.training.checkpoints.save_checkpoint": {
        "model": lambda: _lsa_model(),
        "manifest": lambda: _scratch_manifest(),
        "data_dir": lambda: _scratch_dir(),
    },
    "icl_lib.training.checkpoints.write_manifest": {
        "manifest": lambda: _scratch_manifest(),
        "data_dir": lambda: _scratch_dir(),
    },
    "icl_lib.training.loop.fit": {
        "model": lambda: _lsa_model(),
        "loss_fn": lambda: _step_loss(),
        "steps": lambda: 2,
        "lr": lambda: 0.01,
        "log_every": lambda: 1,
        "progress": lambda: False,
    },
    "icl_lib.training.loop.fit_on_prompts": {
        "model": lambda: _lsa_model(),
        "sampler": lambda: (
            lambda batch_size, gen: __import__(
                "icl_lib"
            ).tasks.regression.linear_regression(batch_size, N, D, seed=gen)
        ),
        "loss": lambda: __import__("icl_lib").training.losses.query_half_mse,
        "steps": lambda: 2,
        "batch_size": lambda: 4,
        "lr": lambda: 0.01,
    },
    "icl_lib.tasks.hmm.ConceptPromptBatch": _fields_of(lambda: _concept_prompts()),
    "icl_lib.tasks.hmm.forward_filter": {
        "positions": lambda: torch.tensor([0, 5, CTX - 1]),
        "start": lambda: torch.softmax(_randn(2, 3).double(), -1),
        "transition": lambda: torch.softmax(_randn(2, 3, 3, seed=1).double(), -1),
        "emission": lambda: torch.softmax(_randn(2, 3, VOCAB, seed=2).double(), -1),
    },
    "icl_lib.analysis.prompt_mismatch": {  # chapter 4's prompt-start mismatch
        "mixture": lambda: _concept_mixture(),
        "prompts": lambda: _concept_prompts(),
    },
    "icl_lib.analysis.concepts": {
        "model": lambda: _token_model(),
        "mixture": lambda: _concept_mixture(),
        "prompts": lambda: _concept_prompts(),
        "curves": lambda: __import__("icl_lib").analysis.concepts.concept_curves(
            _token_model(), _concept_mixture(), _concept_prompts()
        ),
    },
    "icl_lib.tasks.bursty.ClassWorld": _fields_of(
        lambda: __import__("icl_lib").tasks.bursty.ClassWorld.draw(8, 5, 4, 0)
    ),
    "icl_lib.analysis.alignment.tuned_functional_gd": {
        "train": lambda: (
            _randn(B, N, D),
            _randn(B, N, seed=1),
            _randn(B, D, seed=2),
            _randn(B, seed=3),
        ),
        "test": lambda: (
            _randn(B, N, D, seed=4),
            _randn(B, N, seed=5),
            _randn(B, D, seed=6),
            _randn(B, seed=7),
        ),
        "kernel": lambda: "exp",
        "max_steps": lambda: 2,
        "grid": lambda: [0.5, 1.0],
    },
    "icl_lib.analysis.diversity": {
        "pool_sizes": lambda: (1, 4),
        "entries": lambda: [(_task_pool(), _prompt_model()), (None, _prompt_model())],
        "n_prompts": lambda: 16,
        "sweep": lambda: _pool_sweep(),
    },
    "icl_lib.analysis.posterior.component_weight_curves": {
        "model": lambda: _prompt_model(),
        "batch": lambda: _task(
            "mixture_linear_regression", B, N, **_opposite_mixture()
        ),
        "ks": lambda: [1, 2],
        **{
            k: (lambda k=k: _opposite_mixture()[k])
            for k in ("means", "covs", "weights")
        },
    },
    "icl_lib.analysis.attention.query_attention": {
        "patterns": lambda: __import__("icl_lib").analysis.attention.attention_patterns(
            _prompt_model(), _randn(B, N, D), _randn(B, N, seed=1)
        )
    },
    "icl_lib.analysis.selection.group_means": {"errors": lambda: _grouped_errors()},
    "icl_lib.analysis.selection.grouped_error_ratio": {
        "errors": lambda: _grouped_errors(),
        "numerator": lambda: "a",
        "denominator": lambda: "b",
    },
    "icl_lib.analysis.selection.grouped_squared_errors": {
        "groups": lambda: torch.tensor([0, 1, 0, 1]),
    },
    "icl_lib.analysis.selection.probe_by_layer": {
        "model": lambda: _prompt_model(),
        "labels": lambda: torch.tensor([0.0, 1.0, 0.0, 1.0]).repeat(2),
        "batch": lambda: __import__("icl_lib").tasks.regression.linear_regression(
            2 * B, N, D, seed=0
        ),
    },
    "icl_lib.analysis.selection.residual_features": {"model": lambda: _prompt_model()},
    "icl_lib.analysis.selection.ridge_path_errors": {
        "batch": _regression_batch,
        "ks": lambda: [2, 4],
        "lams": lambda: [0.0, 0.1, 1.0],
    },
    "icl_lib.analysis.selection.minimax_ratio": {
        "errors": lambda: torch.rand(3, 2, generator=_gen()) + 0.5,  # (members, kinds)
        "reference": lambda: torch.rand(2, generator=_gen()) + 0.2,
    },
    "icl_lib.analysis.selection.refined_minimax_ridge": {
        "batch": lambda: _task("noise_mixture_regression", 16, 6, 3, (0.1, 1.0)),
        "groups": lambda: torch.arange(16) % 2,
        "k": lambda: 3,
        "reference": lambda: torch.tensor([0.2, 0.5]),
        "lams": lambda: [0.0, 0.1, 1.0],
    },
    "icl_lib.analysis.selection.decisive_group": {
        "ratio": lambda: torch.tensor([1.2, 0.9]),
        "se": lambda: torch.tensor([0.05, 0.1]),
        "mark": lambda: 1.1,
    },
    "icl_lib.analysis.selection.geometric_mean_ratio": {
        "numerator": lambda: torch.rand(8, 3, generator=_gen()) + 0.1,
        "denominator": lambda: torch.rand(8, 3, generator=_gen()) + 0.2,
    },
    "icl_lib.analysis.stability.dilution_ratio": {
        "curve": lambda: __import__("icl_lib").analysis.stability.replacement_stability(
            _ols(), _regression_batch(), [2, 4]
        ),
        "start": lambda: 2,
        "stop": lambda: 4,
    },
    "icl_lib.analysis.bootstrap.bootstrap_se": {
        "statistic": lambda: lambda rows: rows.double().mean(),
        "n": lambda: 10,
        "resamples": lambda: 20,
        "seed": lambda: 0,
    },
    "icl_lib.analysis.bootstrap.bootstrap_se_of_means": {
        "statistic": lambda: lambda a, b: a / b,
        "columns": lambda: [
            torch.rand(10, generator=_gen()) + 1,
            torch.rand(10, generator=_gen()) + 1,
        ],
        "resamples": lambda: 20,
        "seed": lambda: 0,
    },
    "icl_lib.claims": {
        "id": lambda: "demo.a",
        "chapter": lambda: "demo",
        "kind": lambda: "goal",
        "description": lambda: "a demonstration",
        "paper": lambda: None,
        "book": lambda: 0.5,
        "tolerance": lambda: "<= 1",
        "verdict": lambda: "pass",
        "high": lambda: 1.0,
        "alternative": lambda: "a learner that ignores the prompt",
        "alternative_value": lambda: 2.0,
        "mark_reason": lambda: "from the alternative",
        "se_note": lambda: "computed exactly",
        "claims": lambda: [_claim()],
    },
    "icl_lib.kernels.log_kernel": {
        "inner": lambda: _randn(B, N, D) @ _randn(B, 2, D, seed=1).transpose(1, 2),
        "kernel": lambda: "exp",
        "temperature": lambda: 1.0,
        "bandwidth": lambda: 1.0,
    },
    "icl_lib.models.bursty_classifier.Attention": {"width": lambda: 8},
    "icl_lib.models.contextual.ContextualBlock": {
        "layer": lambda: _block().layer,
        "mlp": lambda: _block().mlp,
    },
    "icl_lib.models.contextual.RegressionBlock": {
        "layer": lambda: _block().layer,
        "mlp": lambda: _block().mlp,
    },
    "icl_lib.models.contextual.check_block": {"block": lambda: _block()},
    "icl_lib.notebook.glue": {
        "name": lambda: "fuzz_value",
        "value": lambda: 1.0,
        "display": lambda: False,
    },
    "icl_lib.plotting.style": {
        "name": lambda: "ridge",
        "labels": lambda: ["ridge", "OLS"],
        "colors": lambda: ["#009E73", "#0072B2"],
        "ax": _axes_with_two_series,
    },
    "icl_lib.theory.gd_construction.lsa_with_products": {
        "products": lambda: [
            __import__("icl_lib").theory.gd_construction.gd_products(D, 0.1, N)
        ],
    },
    "icl_lib.theory.implicit.apply_update": {
        "update": lambda: __import__("icl_lib").theory.implicit.implicit_update(
            _block(), _context(), _x()
        ),
    },
    "icl_lib.training.checkpoints.manifest_digest": {
        "manifest": lambda: __import__("icl_lib").training.checkpoints.read_manifest(
            "overview_noiseless"
        ),
    },
    "icl_lib.training.checkpoints.sha256": {
        "path": lambda: __import__("icl_lib").training.checkpoints.checkpoint_paths(
            "overview_noiseless"
        )[1],
    },
    "icl_lib.training.full_batch.fit_full_batch": {
        "model": lambda: _lsa_model(),
        "loss": lambda: __import__("icl_lib").training.losses.query_half_mse,
        "max_iter": lambda: 2,
    },
    "icl_lib.training.preset.environment": {"device": lambda: "cpu"},
    "icl_lib.training.samplers.GPRegressionPrompts": {
        "kernel": lambda: "exp",
        "train_size": lambda: 8,
        "train_seed": lambda: 0,
    },
    "icl_lib.training.samplers.HMMDocuments": {"length": lambda: CTX},
    "icl_lib.training.samplers.RegressionPrompts": {
        "dims": lambda: __import__("icl_lib").training.loop.Curriculum(D, D),
        "points": lambda: __import__("icl_lib").training.loop.Curriculum(N, N),
    },
    "icl_lib.models.recurrent.SequenceTokenModel": {
        "config": lambda: __import__("icl_lib").models.recurrent.SequenceModelConfig(
            layers=("selective",), n_embd=8, state_dim=4, vocab_size=VOCAB
        )
    },
    "icl_lib.models.recurrent.mixer_block": {"kind": lambda: "selective"},
}


# Fixtures of the public methods (self comes from the class's own baseline call).
def _hidden(width=8, T=5):  # a residual stream (B, T, width)
    return _randn(B, T, width, seed=12)


def _concepts_sample():  # a ConceptMixture's prompts: (concepts, inputs, labels)
    from icl_lib.tasks.concepts import ConceptMixture

    return ConceptMixture().sample(B, 3, seed=0)


def _concept_positions():
    return _concept_prompts().output_positions


def _claim_set_with(id, se=None):
    from icl_lib.claims import ClaimSet

    claims = ClaimSet("demo")
    claims.at_most(
        id,
        "a demonstration",
        kind="goal",
        book=0.5,
        goal=1.0,
        se=se,
        alternative="a learner that ignores the prompt",
        alternative_value=2.0,
        mark_reason="from the alternative",
        se_note="" if se is not None else "computed exactly",
    )
    return claims


def _preset():
    return __import__("icl_lib").presets.PRESETS["gd_looped2"]


def _sign_batch():  # prompts whose labels are classes -1 / +1
    import dataclasses

    batch = _regression_batch()
    return dataclasses.replace(batch, ys=torch.where(batch.ys >= 0, 1.0, -1.0))


METHOD_FIXTURES: dict[str, dict[str, typing.Callable[[], object]]] = {
    "icl_lib.analysis.curves.accuracy_curve": {"batch": _sign_batch},
    "icl_lib.analysis.curves.logged": {"curve": _curve, "key": lambda: "loss"},
    "icl_lib.claims.ClaimSet.at_most": {"goal": lambda: 1.0, "kind": lambda: "check"},
    "icl_lib.claims.ClaimSet.at_least": {"goal": lambda: 1.0, "kind": lambda: "check"},
    "icl_lib.claims.ClaimSet.close_to": {
        "rel_tol": lambda: 0.1,
        "target": lambda: 1.0,
        "kind": lambda: "check",
    },
    "icl_lib.claims.ClaimSet.monte_carlo": {
        "estimate": lambda: 1.0,
        "se": lambda: 0.1,
        "closed_form": lambda: 1.05,
    },
    "icl_lib.claims.ClaimSet.control": {
        "self": lambda: _claim_set_with("demo.a", se=0.1),
        "id": lambda: "demo.ctl",
        "of": lambda: "demo.a",
        "book": lambda: 1.5,
    },
    # a scratch folder: the default is the book's own _build/claims
    "icl_lib.claims.ClaimSet.save": {"directory": lambda: _claims_dir()},
    "icl_lib.claims.ClaimSet.summary": {
        "self": lambda: _claim_set_with("demo.a"),
        "rows": lambda: {"the claim": "demo.a"},
    },
    "icl_lib.models.associative_memory.AssociativeMemory.read": {
        "values": lambda: _randn(B, 2, seed=14).double()  # the memory's 2 pairs
    },
    "icl_lib.models.bursty_classifier.Attention.forward": {"h": lambda: _hidden(8)},
    "icl_lib.models.bursty_classifier.BurstyClassifier": {
        "labels": lambda: _bursty_batch().labels[:, :-1],
        "xs": lambda: _bursty_batch().xs,
    },
    "icl_lib.models.bursty_classifier.BurstyClassifier.predict": {  # the interface
        "xs": lambda: _bursty_batch().xs[:, :-1],
        "ys": lambda: _bursty_batch().labels[:, :-1].float(),
        "x_query": lambda: _bursty_batch().xs[:, -1],
    },
    "icl_lib.models.contextual.SoftmaxAttention.mix": {"u": lambda: _hidden(4)},
    "icl_lib.models.contextual.LinearAttention.mix": {"u": lambda: _hidden(4)},
    "icl_lib.models.contextual.LocalAttention.mix": {"u": lambda: _hidden(4)},
    "icl_lib.models.contextual.DiagonalSSM.mix": {"u": lambda: _hidden(4)},
    "icl_lib.models.contextual.MLP.forward": {"z": lambda: _randn(B, 4, seed=15)},
    # the abstract layer's forward, run by a concrete layer that inherits it
    "icl_lib.models.contextual.ContextualLayer.forward": {
        "self": lambda: (
            __import__("icl_lib").models.contextual.SoftmaxAttention(D + 1).double()
        )
    },
    "icl_lib.models.contextual.RegressionBlock.predict": {
        "self": lambda: (
            __import__("icl_lib")
            .models.contextual.RegressionBlockConfig(d=D, width=8, hidden=8, n_head=2)
            .build()
        )
    },
    "icl_lib.models.recurrent.RecurrentContextual.mix": {"u": lambda: _hidden(D)},
    # the concrete methods of an abstract sampler, run by a sampler that inherits them
    "icl_lib.training.samplers.StationarySampler": {
        "self": lambda: __import__("icl_lib").training.samplers.NoiseMixturePrompts(
            dim=D, n_points=N
        )
    },
    "icl_lib.training.samplers.MonitoredSampler": {
        "self": lambda: __import__("icl_lib").training.samplers.SparseRegressionPrompts(
            dim=D, n_points=N, sparsity=2, monitor_ks=(1,)
        )
    },
    "icl_lib.models.gpt.Block.forward": {"h": lambda: _hidden(8)},
    "icl_lib.models.gpt.CausalSelfAttention.forward": {"h": lambda: _hidden(8)},
    "icl_lib.models.gpt.ICLTransformer.position_embeddings": {"n": lambda: 3},
    "icl_lib.models.kernel_attention.KernelAttentionICL.functional_gd": {
        "dim": lambda: D,
        "n_layers": lambda: 2,
        "activation": lambda: "exp",
        "step": lambda: 0.5,
    },
    "icl_lib.models.lsa.LinearSelfAttention": {
        "Z": lambda: _randn(B, N + 1, D + 1, seed=16),
        "layer": lambda: 0,
        "kq": lambda: _randn(1, D + 1, D + 1, seed=17),
        "pv": lambda: _randn(1, D + 1, D + 1, seed=18),
    },
    "icl_lib.models.pfn.BarDistribution": {
        "logits": lambda: _randn(B, 4, seed=13),  # the fixture borders: 4 buckets
        "y": lambda: _randn(B, seed=19),
    },
    "icl_lib.models.pfn.PredictiveTransformer": {
        "params": lambda: _randn(B, 2, seed=20),  # the gaussian head's (mean, raw var)
        "y": lambda: _randn(B, seed=21),
    },
    "icl_lib.models.posterior_net.PosteriorTransformer": {
        "w": lambda: _randn(B, D, seed=22)
    },
    "icl_lib.models.token_gpt.TokenTransformer.next_token_probs": {
        "tokens": lambda: _concept_prompts().tokens,
        "positions": _concept_positions,
    },
    "icl_lib.prompts.PromptBatch.select": {"index": lambda: torch.tensor([0, 2])},
    "icl_lib.tasks.bursty.ClassWorld.draw": {
        "n_classes": lambda: 8,
        "dim": lambda: 5,
        "n_labels": lambda: 4,
        "class_seed": lambda: 0,
    },
    "icl_lib.tasks.concepts.ConceptMixture": {
        "ns": lambda: [1, 2],
        "n": lambda: 2,
        "batch_size": lambda: 50,
        "concepts": lambda: _concepts_sample()[0],
        "inputs": lambda: _concepts_sample()[1],
        "labels": lambda: _concepts_sample()[2],
        "query": lambda: _concepts_sample()[1][:, -1],
        "a": lambda: _concepts_sample()[1],
        "b": lambda: _concepts_sample()[1],
    },
    "icl_lib.tasks.hmm.HMMConceptMixture": {
        "prompts": _concept_prompts,
        "tokens": lambda: _concept_prompts().tokens,
        "positions": _concept_positions,
        "start_properties": lambda: _concept_prompts().start_properties,
        "length": lambda: CTX,
        "n_examples": lambda: 2,
    },
    # models that read the samplers' own default sequences
    "icl_lib.training.bursty.BurstySequences.monitor": {
        "model": lambda: __import__(
            "icl_lib"
        ).models.bursty_classifier.BurstyClassifier(
            __import__("icl_lib").models.bursty_classifier.BurstyClassifierConfig()
        )
    },
    "icl_lib.training.induction.RepeatedSegmentDocuments.monitor": {  # book sizes
        "self": lambda: __import__(
            "icl_lib"
        ).training.induction.RepeatedSegmentDocuments(length=65),
        "model": lambda: __import__("icl_lib").models.token_gpt.TokenTransformer(
            __import__("icl_lib").models.token_gpt.TokenTransformerConfig(
                vocab_size=128, n_ctx=64, n_embd=8, n_layer=2, n_head=2
            )
        ),
    },
    "icl_lib.training.loop.Curriculum.constant": {"value": lambda: 3},
    "icl_lib.training.preset.Preset": {
        "name": lambda: "a_preset",
        "chapter": lambda: "02_gd_theory",
        "description": lambda: "a preset of the fuzz suite",
        "model": lambda: _preset().model,
        "task": lambda: _preset().task,
        "loss": lambda: _preset().loss,
        "metric": lambda: _preset().metric,
        "steps": lambda: 10,
        "batch_size": lambda: 4,
        "lr": lambda: 1e-3,
    },
    "icl_lib.training.recall.RecallSequences": {
        "size": lambda: B,
        "gen": _gen,
        "step": lambda: 3,
    },
    "icl_lib.training.samplers": {"size": lambda: B, "gen": _gen, "step": lambda: 3},
    "icl_lib.training.samplers.NoiseMixturePrompts.monitor": {"model": _prompt_model},
    "icl_lib.training.samplers.NoiseMixturePrompts.monitor_batch": {
        "level": lambda: 0.1
    },
    "icl_lib.training.samplers.RegressionPrompts.monitor": {"model": _prompt_model},
    "icl_lib.training.samplers.MonitoredSampler.monitor": {"model": _prompt_model},
}
for _where, _given in METHOD_FIXTURES.items():
    CONTEXT_FIXTURES.setdefault(_where, {}).update(_given)


@cache
def _scratch_root():
    import tempfile

    return tempfile.TemporaryDirectory(prefix="icl-fuzz-")  # removed at exit


def _small_plot(k=0):
    """A one-inch figure of one line: the plot function an explorer's fixtures draw."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, k])
    return fig


def _scratch_dir():
    """A fresh temporary folder (a checkpoint written there touches nothing else)."""
    import tempfile

    return tempfile.mkdtemp(dir=_scratch_root().name)


def _scratch_manifest() -> dict:
    from icl_lib.training.checkpoints import read_manifest

    return {**read_manifest("overview_noiseless"), "name": "fuzz_scratch"}


def _step_loss():
    model = _lsa_model()  # a loss of the step number, through some parameters
    return lambda step: sum(p.sum() for p in model.parameters()) * 0.0 + float(step)


def _task_pool():
    from icl_lib.tasks.regression import TaskPool

    return TaskPool(4, D, seed=0)


def _pool_sweep():
    from icl_lib.analysis.diversity import pool_size_sweep

    entries = [(_task_pool(), _prompt_model()), (None, _prompt_model())]
    return pool_size_sweep(entries, dim=D, n_points=N, noise_std=0.5, n_prompts=16)


def _opposite_mixture() -> dict:
    """Two components with opposite first coordinates (component_weight_curves)."""
    means = torch.tensor([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    return {
        "means": means,
        "covs": 0.5 * torch.eye(D).repeat(2, 1, 1),
        "weights": torch.tensor([0.5, 0.5]),
    }


def _grouped_errors():
    return {
        name: [torch.rand(4, 3, generator=_gen(i)).double() + 0.1 for i in range(2)]
        for name in ("a", "b")
    }


def _claim():
    from icl_lib.claims import Claim

    return Claim(
        "demo.a",
        "demo",
        "goal",
        "a demonstration",
        None,
        0.5,
        "<= 1",
        "pass",
        high=1.0,
        alternative="a learner that ignores the prompt",
        alternative_value=2.0,
        mark_reason="from the alternative",
        se_note="computed exactly",
    )


def _block_batch():
    from icl_lib.tasks.regression import linear_regression

    return linear_regression(B, 5, D, seed=0, dtype=torch.float64)


def _memory():
    from icl_lib.models.associative_memory import AssociativeMemory

    return AssociativeMemory(_randn(4, 2).double(), _randn(4, 2, seed=1).double())


def _recall_model():
    from icl_lib.models.token_gpt import TokenTransformer, TokenTransformerConfig

    torch.manual_seed(0)
    return TokenTransformer(
        TokenTransformerConfig(vocab_size=9, n_ctx=8, n_embd=8, n_layer=1, n_head=2)
    )


def _pfn_model(head="riemann"):
    from icl_lib.models.pfn import PredictiveConfig, PredictiveTransformer

    torch.manual_seed(0)
    return PredictiveTransformer(
        PredictiveConfig(
            n_dims=D, n_positions=N, n_embd=8, n_layer=1, n_head=2,
            head=head, borders=(-3.0, -1.0, 0.0, 1.0, 3.0) if head == "riemann" else (),
        )
    )  # fmt: skip


def _posterior_model():
    from icl_lib.models.posterior_net import PosteriorConfig, PosteriorTransformer

    torch.manual_seed(0)
    return PosteriorTransformer(
        PosteriorConfig(n_dims=D, n_positions=N, n_embd=8, n_layer=1, n_head=2)
    )


def _claims_dir():
    """A folder of claims files that exists before any build: an empty scratch one."""
    return _scratch_dir()


OVERRIDES: dict[str, dict[str, typing.Callable[[], object]]] = {
    # never retrain here: the dry run lists what would be retrained
    "icl_lib.presets.retrain.retrain_stale": {"dry_run": lambda: True},
}

_STATE = "changes process-wide state (seeds, plotting style), leaking into other tests"
_WRITES = "trains a whole preset (minutes a call); tests/test_presets.py runs it small"
_RECORD = (
    "a record of results the library builds; its readers check its type, not its fields"
)

EXEMPT: dict[str, str] = {
    "icl_lib.notebook.setup_notebook": _STATE,
    "icl_lib.plotting.style.use_book_style": _STATE,
    "icl_lib.presets.train": _WRITES,
    "icl_lib.presets.load_or_train": _WRITES,
    "icl_lib.training.preset.train_preset": _WRITES,
    "icl_lib.analysis.ablation.ablation_table": "needs a model with an in-context "
    "gain, a trained checkpoint (tests/test_induction.py calls it on one)",
    "icl_lib.widgets.explore": "needs a live Jupyter kernel "
    "(tests/browser/test_widgets_live.py)",
    **{
        name: "abstract: every subclass defines its own, fuzzed there"
        for name in (
            "icl_lib.models.contextual.ContextualLayer.mix",
            "icl_lib.training.samplers.StationarySampler.draw",
        )
    },
    **{
        name: _RECORD
        for name in (
            "icl_lib.analysis.stability.StabilityCurve",
            "icl_lib.live_figures.ControlGrid",
            "icl_lib.analysis.diversity.PoolSweep",
            "icl_lib.learners.bayes.GaussianPosterior",
            "icl_lib.learners.bayes.MixturePosterior",
            "icl_lib.learners.linear.PosteriorPredictive",
            "icl_lib.theory.implicit.ImplicitUpdate",
            "icl_lib.theory.implicit.Trajectory",
            "icl_lib.exercises.Verdict",
            "icl_lib.notebook.NumberTable",
        )
    },
}


# Public callables with no fixture yet: the backlog of this suite. A new callable must
# be fuzzed or exempt, never added here; an entry leaves when it gets its fixtures.
BACKLOG = set((Path(__file__).parent / "api_fuzz_backlog.txt").read_text().split())


def exemption(name: str) -> str | None:
    """Why ``name`` is not fuzzed, or None (a method of an exempt class is exempt)."""
    if name in EXEMPT:
        return EXEMPT[name]
    owner = method_owner(name) if name in public_callables() else None
    if owner is not None and owner in EXEMPT:
        return f"a method of {owner.rsplit('.', 1)[1]}: {EXEMPT[owner]}"
    return None


# --- the baseline call ---------------------------------------------------------------


@dataclass
class Baseline:
    """A valid call of ``obj``: positional-or-keyword arguments by name."""

    name: str
    obj: object
    kwargs: dict  # name -> factory of a fresh valid value
    mutable: list  # the parameter names that are fuzzed


def _hint_name(obj, param) -> str | None:
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return None
    text = (
        annotation
        if isinstance(annotation, str)
        else getattr(annotation, "__name__", "")
    )
    text = text.strip("'\"").split(".")[-1]
    return text or None


def _context_fixture(name: str, param: str):
    """The fixture of ``param`` in the longest prefix of ``name`` that has one."""
    best = None
    for prefix, fixtures in CONTEXT_FIXTURES.items():
        if param in fixtures and (name == prefix or name.startswith(prefix + ".")):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, fixtures[param])
    return best[1] if best else None


def baseline(name: str) -> Baseline | None:
    """The baseline call of a public callable, or None when some required parameter has
    no fixture."""
    obj = public_callables()[name]
    sig = inspect.signature(obj)
    overrides = OVERRIDES.get(name, {})
    kwargs, mutable = {}, []
    owner = method_owner(name)
    for param in sig.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if owner is not None and param.name == "self":  # never mutated
            given = _context_fixture(name, "self")  # e.g. a concrete subclass
            instance = baseline(owner) if owner not in BACKLOG else None
            if given is None and instance is None:
                return None
            kwargs["self"] = given or (lambda instance=instance: call(instance))
            continue
        if param.name in overrides:
            kwargs[param.name] = overrides[param.name]
            mutable.append(param.name)
            continue
        context = _context_fixture(name, param.name)
        if context is not None:
            kwargs[param.name] = context
            mutable.append(param.name)
            continue
        required = param.default is inspect.Parameter.empty
        if not required:
            # an optional argument is fuzzed at its default: a number, option string,
            # flag, tuple, dtype or None (then with a value of no type it could mean)
            mutable.append(param.name)
            kwargs[param.name] = lambda default=param.default: default
            continue
        hint = _hint_name(obj, param)
        if hint in TYPE_FIXTURES:
            kwargs[param.name] = TYPE_FIXTURES[hint]
        elif param.name in NAME_FIXTURES:
            kwargs[param.name] = NAME_FIXTURES[param.name]
        else:
            return None
        mutable.append(param.name)
    return Baseline(name, obj, kwargs, mutable)


def call(base: Baseline, replaced: dict | None = None, *, eval_mode: bool = False):
    """Call ``base`` with fresh fixture values, ``replaced`` substituted by name; with
    ``eval_mode``, every model among them (``self`` too) in eval mode, as
    ``load_checkpoint`` returns one."""
    values = {k: f() for k, f in base.kwargs.items()}
    values.update(replaced or {})
    if eval_mode:
        for value in values.values():
            if isinstance(value, torch.nn.Module):
                value.eval()
    with _deadline(TIMEOUT_S):
        try:
            result = base.obj(**values)
            if inspect.isgeneratorfunction(getattr(base.obj, "__wrapped__", None)):
                with result:  # a @contextmanager checks its arguments when entered
                    pass
        finally:
            if "matplotlib.pyplot" in sys.modules:  # a drawing call's figures
                sys.modules["matplotlib.pyplot"].close("all")
        return result


class Hang(Exception):
    pass


class _deadline:
    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def _raise(*_):
            raise Hang(f"ran past {self.seconds} s")

        self.previous = signal.signal(signal.SIGALRM, _raise)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


# --- mutations: values no caller could mean ------------------------------------------


# options chosen by name: an unknown one must be refused
OPTION_NAMES = {
    "kind", "kernel", "activation", "mode", "rule", "mixer", "output", "param", "token",
    "key", "positions", "head", "data", "family", "inputs", "normalise", "per_position",
}  # fmt: skip
# text shown as given: any string is fine, and a number would print as one
FREE_TEXT = {
    "title", "xlabel", "ylabel", "desc", "description", "citation", "paper_note",
    "message", "variable", "fmt",
}  # fmt: skip
# numbers that cannot be negative (a step size ``lr`` can: the best multiple of a GD
# step on data with no signal is negative, and tune_gd finds it)
NONNEGATIVE = {
    "noise_std", "lam", "temperature", "bandwidth", "prior_std", "tol", "grad_clip",
    "init_scale", "init_noise", "sharpness", "eps", "variance", "radius",
    "label_bound", "lam_1", "n_se", "threshold", "input_range",
}  # fmt: skip


# Arguments whose docstring promises any shape (elementwise maps, an attention row
# (..., 2k + 1), matrices (..., p, q)): an extra axis is meant there, not a hole.
SHAPE_FREE = {
    "icl_lib.analysis.attention.attention_split": {"row"},
    "icl_lib.analysis.attention.demonstration_weights": {"row"},
    "icl_lib.analysis.calibration.coverage": {"u"},
    "icl_lib.analysis.calibration.calibration_curve": {"u"},
    "icl_lib.analysis.curves.sign": {"values"},
    "icl_lib.learners.risk.excess_error": {"errors"},
    "icl_lib.learners.selection.soft_threshold": {"z"},
    "icl_lib.theory.gd_construction.gd_plus_plus_eigenvalue_map": {"mu"},
    "icl_lib.theory.gd_construction.gd_plus_plus_preconditioner": {"gram"},
    "icl_lib.theory.implicit.singular_value_ratio": {"M"},
    "icl_lib.theory.implicit.linear_loss": {"Delta", "W"},
    # a head's outputs (..., m): any leading shape (labels must then match it)
    "icl_lib.models.pfn.BarDistribution.mean": {"logits"},
    "icl_lib.models.pfn.PredictiveTransformer.mean": {"params"},
    "icl_lib.models.pfn.PredictiveTransformer.gaussian": {"params"},
}
# Sizes and counts that must be at least 1 wherever they appear: zero is tried too.
POSITIVE = {
    "batch_size",
    "n_points",
    "d",
    "n_prompts",
    "n_boot",
    "n_layers",
    "n_layer",
    "n_head",
    "n_heads",
    "n_embd",
    "n_classes",
    "n_labels",
    "n_tasks",
    "max_iter",
    "log_every",
}
# Where a NaN among the numbers of a mapping is a gap (a learner undefined at some k, a
# table cell with no value) and only infinity is refused (plotting/_inputs.py).
NAN_IS_A_GAP = ("icl_lib.plotting.", "icl_lib.notebook.number_table")
# A table shows any number as its text, an infinite pool size "inf" included.
TABLE_CELLS = {"icl_lib.notebook.number_table"}
# The hidden stream a layer inside a model reads: like torch's own layers, a layer
# passes NaN on (its shape is still checked); the model refuses non-finite prompts at
# its boundary and fit names a diverged loss (_checks.check_stream).
LAYER_STREAMS = {
    **{
        f"icl_lib.models.{name}": {"h"}
        for name in (
            "gpt.Block.forward",
            "gpt.CausalSelfAttention.forward",
            "bursty_classifier.Attention.forward",
        )
    },
    **{
        f"icl_lib.models.{name}.mix": {"u"}
        for name in (
            "contextual.SoftmaxAttention",
            "contextual.LinearAttention",
            "contextual.LocalAttention",
            "contextual.DiagonalSSM",
            "recurrent.RecurrentContextual",
        )
    },
}
# Errors where NaN marks a context size a predictor was not asked (squared_errors'
# min_context): NaN passes into that column's ratio, inf must still be refused.
NAN_MEANS_MISSING = {
    "icl_lib.analysis.selection.error_ratio": {"numerator", "denominator"},
    # a batch's noise_std is NaN where prompts have no single Gaussian noise level
    **{
        f"icl_lib.tasks.{name}": {"noise_std"}
        for name in (
            "regression.RegressionBatch",
            "regression.MixtureRegressionBatch",
            "families.NoiseMixtureBatch",
            "families.FamilyBatch",
            "sphere.KernelBatch",
        )
    },  # fmt: skip
}
# A multiple of a run's training where inf means "never" (training_budget's answer for
# a curve that does not fall): NaN and -inf must still be refused.
INF_MEANS_NEVER = {"icl_lib.notebook.multiple_text": {"factor"}}
# Arguments that take any type: a glued value is a number, text, a figure or a table.
ANY_TYPE = {
    "icl_lib.notebook.glue": {"value"},
    # a student's answer is judged, not validated: anything that is not a function of
    # the right kind gets a failing verdict that says so ("expected a function")
    "icl_lib.exercises.check": {"answer"},
}
# Where an empty sequence has a meaning of its own (nothing removed, no head ablated,
# a ledger with no claims yet) and the result is not empty.
EMPTY_OK = {
    "icl_lib.analysis.ablation.ablated_heads": {"heads"},
    "icl_lib.analysis.ablation.ablation_losses": {"heads"},
    **{
        f"icl_lib.theory.implicit.{name}": {"absorbed"}
        for name in ("absorbed_mask", "remove_tokens", "implicit_update")
    },
    **{
        f"icl_lib.claims.{name}": {"claims"}
        for name in (
            "check_ledger",
            "claims_html",
            "grouped_claims_html",
            "ledger_counts",
            "ledger_sentence",
        )
    },
}
# Modules of any kind: training trains, and a checkpoint saves, any torch module.
ANY_MODULE = {
    "icl_lib.training.loop.fit": {"model"},
    "icl_lib.training.checkpoints.save_checkpoint": {"model"},
}
# Last axes that are free though another tensor's shape, or the other axis of a
# square fixture, has their size: symbols a (B, N) against b (B, M), tokens
# (B, n, width) of any width.
FREE_LAST_AXIS = {
    "icl_lib.tasks.concepts.ConceptMixture.kernel": {"a", "b"},
    "icl_lib.theory.implicit.remove_tokens": {"context"},
}
# Arguments documented to broadcast over leading axes: a batch of one is meant too.
BROADCAST = {"icl_lib.theory.implicit.linear_loss": {"Delta", "W"}}


_NO_DEFAULT = object()


def _default(base: Baseline, param: str):
    """The parameter's default (None is then a valid value, not a wrong type)."""
    try:
        default = inspect.signature(base.obj).parameters[param].default
    except (KeyError, TypeError, ValueError):
        return _NO_DEFAULT
    return _NO_DEFAULT if default is inspect.Parameter.empty else default


def _accepts_none(base: Baseline, param: str) -> bool:
    """Whether None is a meant value of the parameter: its default, or its
    annotation says ``... | None``."""
    try:
        annotation = inspect.signature(base.obj).parameters[param].annotation
    except (KeyError, TypeError, ValueError):
        return False
    return _default(base, param) is None or "None" in str(annotation)


def _value_at(t: torch.Tensor, index: int, value: float) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[index % t.numel()] = value
    return t


def _nan_at(t: torch.Tensor, index: int) -> torch.Tensor:
    return _value_at(t, index, math.nan)


def mutation_kinds(base: Baseline, param: str, valid) -> dict[str, object]:
    """``{kind: bad values}`` for one argument of a baseline call: a hypothesis
    strategy, drawn anew every example, or one fixed value, tried once in each mode
    (:func:`worst_outcomes`)."""
    kinds: dict[str, object] = {}
    if not (
        valid is None
        or _accepts_none(base, param)
        or param in ANY_TYPE.get(base.name, ())
        or param in FREE_TEXT
    ):
        kinds["none"] = None  # None where a value is required, the commonest slip
    if isinstance(valid, torch.nn.Module):
        kinds["wrong type"] = "abc"
        if param not in ANY_MODULE.get(base.name, ()):
            # a module without the methods asked for (a layer where a model was meant)
            kinds["wrong model"] = torch.nn.Linear(D, 1)
    elif isinstance(valid, torch.Tensor):
        kinds["wrong type"] = "abc"
        shape_free = param in SHAPE_FREE.get(base.name, ())
        broadcasts = param in BROADCAST.get(base.name, ())
        others = [
            v
            for other in base.mutable
            if other != param and isinstance(v := base.kwargs[other](), torch.Tensor)
        ]
        if not shape_free:
            kinds["extra axis"] = valid.unsqueeze(0)
            # one more entry along a last axis that another tensor's shape pins
            # (means (C, d) beside xs (B, n, d)), or of square matrices: a
            # disagreement to refuse by name
            pinned = valid.ndim >= 2 and (
                valid.shape[-1] == valid.shape[-2]
                or any(valid.shape[-1] in v.shape for v in others)
            )
            if pinned and param not in FREE_LAST_AXIS.get(base.name, ()):
                kinds["longer last axis"] = torch.cat((valid, valid[..., -1:]), -1)
        if valid.ndim >= 1 and not broadcasts:
            batched = valid.shape[0] == B and not shape_free
            kinds["empty batch" if batched else "empty"] = valid[:0].clone()
        if param in NAN_MEANS_MISSING.get(base.name, ()):
            kinds["inf"] = st.sampled_from([math.inf, -math.inf]).map(
                lambda bad: valid.clone().fill_(bad)
            )
        elif param in LAYER_STREAMS.get(base.name, ()):
            pass
        elif valid.is_floating_point() and valid.numel():
            # NaN and infinity each tried every time: a check of isnan alone fails
            kinds["nan"] = st.integers(0, valid.numel() - 1).map(
                lambda i: _nan_at(valid, i)
            )
            kinds["inf"] = st.builds(
                lambda i, bad: _value_at(valid, i, bad),
                st.integers(0, valid.numel() - 1),
                st.sampled_from([math.inf, -math.inf]),
            )
        elif valid.numel() and valid.dtype != torch.bool:
            # a field the class lists in SIGNED_FIELDS uses -1 as a marker
            top = -2 if param in getattr(base.obj, "SIGNED_FIELDS", ()) else -1
            kinds["negative id"] = st.integers(-5, top).map(
                lambda v: valid.clone().fill_(v)
            )
        batch_partners = [v for v in others if v.ndim >= 1 and v.shape[0] == B]
        if (
            valid.ndim >= 1
            and valid.shape[0] == B
            and batch_partners
            and not broadcasts
        ):
            kinds["batch of one"] = valid[:1].clone()
    elif isinstance(valid, bool):
        kinds["wrong type"] = "yes"
    elif isinstance(valid, int):
        if valid >= 0:  # an axis such as dim=-1 may be negative
            kinds["negative"] = st.integers(-(10**6), -1)
        if param in POSITIVE:
            kinds["zero"] = 0
        if valid >= 1 and not param.endswith("seed"):  # a seed may be any 64-bit int
            kinds["huge"] = 10**12  # refused by name (_checks.check_positive_int)
        kinds["fractional"] = st.floats(0.1, 9.9).filter(lambda v: v != int(v))
        kinds["wrong type"] = "3"
        kinds["bool"] = True
    elif isinstance(valid, float):
        if param in NAN_MEANS_MISSING.get(base.name, ()):
            kinds["inf"] = st.sampled_from([math.inf, -math.inf])
        elif param in INF_MEANS_NEVER.get(base.name, ()):
            kinds["nan"] = math.nan
            kinds["inf"] = -math.inf
        else:
            kinds["nan"] = math.nan
            kinds["inf"] = st.sampled_from([math.inf, -math.inf])
        if param not in ANY_TYPE.get(base.name, ()):
            kinds["wrong type"] = "0.1"
        if param in NONNEGATIVE:
            kinds["negative"] = st.floats(-1e6, -1e-3)
    elif isinstance(valid, str):
        if param in OPTION_NAMES:
            kinds["unknown option"] = st.sampled_from(["zzz", valid.upper() + "_"])
        if param not in FREE_TEXT:
            kinds["wrong type"] = 3
    elif type(valid) in (list, tuple) and valid:  # not a NamedTuple record
        if isinstance(valid[0], int):
            kinds["negative element"] = st.integers(-(10**6), -1).map(
                lambda v: [v, *valid[1:]]
            )
        if isinstance(valid[0], float):
            kinds["non-finite element"] = st.sampled_from([math.nan, math.inf]).map(
                lambda v: [v, *valid[1:]]
            )
        kinds["wrong type"] = "abc"
        kinds["number"] = 2.5  # one number where several were meant
        if param not in EMPTY_OK.get(base.name, ()):
            kinds["empty"] = type(valid)()
    elif isinstance(valid, dict) and valid:
        numeric = [
            key
            for key, value in valid.items()
            if isinstance(value, list) and value and isinstance(value[0], float)
        ]
        if numeric:  # e.g. a training curve: its logged numbers, not only its type

            def entry(v):
                return {**valid, numeric[0]: [v, *valid[numeric[0]][1:]]}

            # a drawn curve may show NaN as a gap; infinity is never drawn
            if not base.name.startswith(NAN_IS_A_GAP):
                kinds["nan entry"] = entry(math.nan)
            if base.name not in TABLE_CELLS:
                kinds["inf entry"] = entry(math.inf)
        kinds["wrong type"] = st.sampled_from(["abc", 3])
        kinds["empty"] = {}
    elif callable(valid) and not inspect.isclass(valid):
        if param not in ANY_TYPE.get(base.name, ()):
            kinds["wrong type"] = st.sampled_from(["abc", 3])
    elif valid is None:  # an optional argument left out: no caller means a bare object
        if param not in ANY_TYPE.get(base.name, ()):
            kinds["wrong type"] = object()
    else:
        kinds["wrong type"] = st.sampled_from(["abc", 3])
    return kinds


def edge_values(base: Baseline, param: str, valid) -> dict[str, object]:
    """``{kind: value}`` at the edge of an argument's valid domain: the call must
    return a result or refuse the value by name, never fail on it with an error of
    its own (a float32 computation that underflows there, naming an inner tensor)."""
    if isinstance(valid, float) and param in NONNEGATIVE:
        return {"small": 0.01}
    return {}


# --- the verdict ---------------------------------------------------------------------


CLEAR_ERRORS = (ValueError, TypeError, KeyError, FileNotFoundError)


def names_argument(message: str, param: str) -> bool:
    """Whether an error message blames ``param``: the library's messages start with
    the argument(s) at fault, ``"xs: expected ..."`` or ``"pool_ys, x_query: ..."``
    (``"ks[i]: ..."`` for an element), or, for two arguments that disagree, name the
    mutated one as the reference (``"ys: expected shape ... to match xs"``). A name
    that merely occurs in the text (torch's own errors quote keyword names) does not
    count."""
    blamed = [
        re.sub(r"\[.*?\]$", "", name.strip())
        for name in message.split(":", 1)[0].split(",")
    ]
    if ":" in message and param in blamed:
        return True
    reference = (
        rf"(to match|the shape of|the dtype of|that of|like) {re.escape(param)}(?!\w)"
    )
    return ":" in message and re.search(reference, message) is not None


def _empty(result) -> bool:
    """Whether a result holds nothing: an empty tensor or container, or a container
    of empty ones."""
    if isinstance(result, torch.Tensor):
        return result.numel() == 0
    if isinstance(result, dict):
        result = list(result.values())
    if isinstance(result, (tuple, list)):
        return all(_empty(v) for v in result)
    return False


def classify(
    base: Baseline,
    param: str,
    value,
    *,
    eval_mode: bool = False,
    meant: bool = False,
    empty_ok: bool = False,
) -> tuple[str, str]:
    """``(class, detail)`` of calling ``base`` with ``param`` replaced by ``value``
    (models in eval mode with ``eval_mode``). A value that is ``meant`` (an edge of
    the valid domain, :func:`edge_values`) may also return a result; with
    ``empty_ok`` (an empty sequence or tensor), an empty result is numpy's answer
    too (``np.sign([])``)."""
    mode = "eval mode: " if eval_mode else ""
    try:
        result = call(base, {param: value}, eval_mode=eval_mode)
    except Hang as error:
        return "hang", f"{mode}{error}"
    except CLEAR_ERRORS as error:
        message = str(error).strip("'\"")  # a KeyError's message comes quoted
        if names_argument(message, param):
            return "clear", message
        return (
            "raw",
            f"{mode}{type(error).__name__} not naming {param}: {message[:200]}",
        )
    except Exception as error:  # noqa: BLE001 - every other error is what we count
        return "raw", f"{mode}{type(error).__name__}: {str(error)[:200]}"
    if meant:
        return "clear", f"a valid value: returned {type(result).__name__}"
    if empty_ok and _empty(result):
        return "clear", "an empty input, an empty result"
    return "silent", f"{mode}returned {type(result).__name__}"


def fuzz_once(
    base: Baseline, draw=None, *, eval_mode: bool = False
) -> list[tuple[str, str, str, str]]:
    """Every (argument, kind of bad value) of ``base`` once: rows ``(param, kind,
    class, detail)``. With ``draw`` (hypothesis's ``data.draw``), the kinds whose
    values are drawn; without, the fixed values and the edges of the valid domain."""
    rows = []
    for param in base.mutable:
        valid = base.kwargs[param]()
        for kind, bad in mutation_kinds(base, param, valid).items():
            drawn = isinstance(bad, st.SearchStrategy)
            if drawn != (draw is not None):
                continue
            value = draw(bad, label=f"{param}: {kind}") if drawn else bad
            outcome = classify(
                base, param, value, eval_mode=eval_mode, empty_ok=kind == "empty"
            )
            rows.append((param, kind, *outcome))
        if draw is None:
            for kind, value in edge_values(base, param, valid).items():
                outcome = classify(base, param, value, eval_mode=eval_mode, meant=True)
                rows.append((param, kind, *outcome))
    return rows


def fuzz_settings(examples: int = EXAMPLES):
    """Hypothesis's settings for the suite: deterministic (derandomised, no example
    database), no deadline (a call may build a model), health checks off (the
    strategies are small and fixed)."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


def uses_model(base: Baseline) -> bool:
    """Whether a model (a torch module) is among the baseline's arguments or is its
    ``self``."""
    return any(isinstance(f(), torch.nn.Module) for f in base.kwargs.values())


def worst_outcomes(base: Baseline, examples: int = EXAMPLES) -> dict:
    """``{(param, kind): row}``, a hole kept over a clear outcome of the same (param,
    kind). Where a model takes part, every bad value meets it in training mode and in
    eval mode (what ``load_checkpoint`` returns): a fixed value once in each, drawn
    values over ``examples`` hypothesis examples, alternating."""
    from hypothesis import given

    seen: dict = {}
    modes = (False, True) if uses_model(base) else (False,)

    def keep(rows):
        for row in rows:
            if row[:2] not in seen or row[2] != "clear":
                seen[row[:2]] = row

    for eval_mode in modes:
        keep(fuzz_once(base, eval_mode=eval_mode))
    examples_run = []

    @fuzz_settings(examples)
    @given(st.data())
    def run(data):
        eval_mode = modes[len(examples_run) % len(modes)]
        examples_run.append(eval_mode)
        keep(fuzz_once(base, data.draw, eval_mode=eval_mode))

    run()
    return seen


def survey(names=None, examples: int = 2):
    """Fuzz ``names`` (default: every callable with a baseline) and return
    ``(rows, no_baseline, broken_baseline)``, ``rows`` as ``(name, param, kind, class,
    detail)``. Deterministic (hypothesis derandomised)."""
    rows, no_baseline, broken = [], [], {}
    for name in names or sorted(public_callables()):
        if exemption(name) or name in BACKLOG:
            continue
        base = baseline(name)
        if base is None:
            no_baseline.append(name)
            continue
        try:
            call(base)
        except Exception as error:  # noqa: BLE001
            broken[name] = f"{type(error).__name__}: {str(error)[:150]}"
            continue
        rows += [(name, *row) for row in worst_outcomes(base, examples).values()]
    return rows, no_baseline, broken
