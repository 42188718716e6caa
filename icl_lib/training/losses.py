"""Training losses: ``loss(model, batch) -> scalar tensor`` for a model and a prompt
batch.

A *query* loss scores the prediction of the last point of each prompt from the points
before it (``model.predict``); a *prefix* loss scores a causal model's prediction at
every position at once (``model.predict_prefixes``), the loss of Garg et al. (2022).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._checks import check_instance, check_model, check_token_model
from ..prompts import PromptBatch
from ..tasks.bursty import BurstyBatch
from ..tasks.recall import RecallBatch
from ..tasks.tokens import TokenBatch


def _checked(model, batch, method: str, kind=PromptBatch):
    """A loss's arguments: a model with the ``method`` the loss calls and a batch of
    ``kind``."""
    check_model("model", model, method)
    check_instance("batch", batch, kind, f"a {kind.__name__}")


def _query(model, batch: PromptBatch) -> tuple[torch.Tensor, torch.Tensor]:
    xs, ys, x_query, y_query = batch.prompt(batch.n_points - 1)
    return model.predict(xs, ys, x_query), y_query


def query_mse(model, batch: PromptBatch) -> torch.Tensor:
    """``mean (prediction - y_q)^2`` at the last point of each prompt."""
    _checked(model, batch, "predict")
    pred, target = _query(model, batch)
    return ((pred - target) ** 2).mean()


def query_half_mse(model, batch: PromptBatch) -> torch.Tensor:
    """von Oswald et al.'s ``0.5 * mean (prediction - y_q)^2`` at the last point."""
    _checked(model, batch, "predict")
    return 0.5 * query_mse(model, batch)


def prefix_mse(model, batch: PromptBatch) -> torch.Tensor:
    """Squared error of every prefix's prediction, averaged over prompts and
    positions."""
    _checked(model, batch, "predict_prefixes")
    return ((model.predict_prefixes(batch.xs, batch.ys) - batch.ys) ** 2).mean()


def prefix_logistic(model, batch: PromptBatch) -> torch.Tensor:
    """``mean log(1 + exp(-y * logit))`` over prompts and positions (labels in
    ``{-1, +1}``)."""
    _checked(model, batch, "predict_prefixes")
    return F.softplus(-batch.ys * model.predict_prefixes(batch.xs, batch.ys)).mean()


def prefix_nll(model, batch: PromptBatch) -> torch.Tensor:
    """Negative log-likelihood of every label under the predictive distribution a
    model gives it from the examples before it (``model.log_predictive``), averaged:
    the loss of a prior-data fitted network (Müller et al. 2022)."""
    _checked(model, batch, "log_predictive")
    return -model.log_predictive(batch.xs, batch.ys).mean()


def posterior_nll(model, batch: PromptBatch) -> torch.Tensor:
    """``-log q(w | first k examples)``, averaged over prompts and ``k``
    (``model.posterior_log_prob``; the batch keeps its task vectors ``w``)."""
    _checked(model, batch, "posterior_log_prob")
    return -model.posterior_log_prob(batch.xs, batch.ys, batch.w).mean()


def next_token_ce(model, batch) -> torch.Tensor:
    """Mean next-token cross-entropy of a causal token model over every position of
    ``batch.tokens (B, T)``: the model reads ``x_0..x_{T-2}`` and predicts
    ``x_1..x_{T-1}`` (the pretraining loss of Xie et al.'s GPT-2; chapter 4)."""
    check_token_model("model", model)
    check_instance("batch", batch, TokenBatch, "a TokenBatch")
    logits = model(batch.tokens[:, :-1])  # (B, T - 1, V)
    return F.cross_entropy(logits.flatten(0, 1), batch.tokens[:, 1:].flatten())


def posterior_mean_mse(model, batch: PromptBatch) -> torch.Tensor:
    """``||mean_k - w||^2`` of a posterior model's mean, averaged over prompts and
    ``k`` (``model.mean_squared_error``): fits the mean before its uncertainty."""
    _checked(model, batch, "mean_squared_error")
    return model.mean_squared_error(batch.xs, batch.ys, batch.w).mean()


def query_class_ce(model, batch) -> torch.Tensor:
    """Mean cross-entropy of each query's label under a classifier of item-label
    sequences, ``model(xs (B, N + 1, D), labels (B, N)) -> logits (B, L)``, on a
    :class:`icl_lib.tasks.bursty.BurstyBatch` (Reddy's task; chapter 6)."""
    _checked(model, batch, "predict", BurstyBatch)
    logits = model(batch.xs, batch.labels[:, :-1])
    return F.cross_entropy(logits, batch.query_labels)


def recall_ce(model, batch) -> torch.Tensor:
    """Mean cross-entropy of the answer at each query of an associative-recall
    sequence, ``model(tokens (B, T)) -> logits (B, T, V)`` read at the last ``Q``
    positions against ``batch.targets (B, Q)``
    (:class:`icl_lib.tasks.recall.RecallBatch`; chapter 9)."""
    check_token_model("model", model)
    check_instance("batch", batch, RecallBatch, "a RecallBatch")
    Q = batch.targets.shape[1]
    logits = model(batch.tokens)[:, -Q:]  # (B, Q, V)
    return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten())


LOSSES = {
    "query_mse": query_mse,
    "query_half_mse": query_half_mse,
    "prefix_mse": prefix_mse,
    "prefix_logistic": prefix_logistic,
    "prefix_nll": prefix_nll,
    "posterior_nll": posterior_nll,
    "posterior_mean_mse": posterior_mean_mse,
    "next_token_ce": next_token_ce,
    "query_class_ce": query_class_ce,
    "recall_ce": recall_ce,
}
