"""A model's posterior over the task, against the exact one (chapter 4).

Two readings of "the model infers the task": a model that outputs a Gaussian over
``w`` (:class:`icl_lib.models.posterior_net.PosteriorTransformer`) is compared with the
exact Gaussian posterior by their KL divergence; a model that only predicts is probed
for the task vector its predictions imply, as Panwar et al. (2024) do, and under a
two-component mixture prior that vector gives the weight the model puts on each
component.
"""

from __future__ import annotations

import torch

from .._checks import (
    check_finite,
    check_model,
    check_positive_int,
    check_real,
    check_sequence,
    check_tensor,
)
from ..learners.bayes import (
    best_covariance_kl,
    gaussian_kl,
    gaussian_posterior,
    mixture_posterior,
)
from ..prompts import PromptBatch
from ..runtime import make_generator


def _check_batch(batch, field):
    if not isinstance(batch, PromptBatch) or not hasattr(batch, field):
        raise TypeError(
            f"batch: expected a PromptBatch with {field!r} (a regression sampler's), "
            f"got {type(batch).__name__}"
        )


def _standard_posterior(xs, ys, k: int, noise_std: float):
    """The exact Gaussian posterior over ``w`` after the first ``k`` examples of the
    float64 ``xs (B, n, d)``, ``ys (B, n)``, under the prior ``N(0, I)``."""
    d = xs.shape[2]
    return gaussian_posterior(
        xs[:, :k],
        ys[:, :k],
        prior_mean=torch.zeros(d, dtype=torch.float64),
        prior_cov=torch.eye(d, dtype=torch.float64),
        noise_std=noise_std,
    )


def posterior_kl_curve(
    model, batch: PromptBatch, noise_std: float
) -> dict[str, torch.Tensor]:
    """``KL(exact posterior || model's)`` in nats after ``k = 0..n-1`` examples,
    averaged over prompts, its two parts and its floor: ``{"total", "mean",
    "covariance", "floor"}``, each ``(n,)``.

    ``mean`` is ``(mu_q - mu_p)^T Sigma_q^{-1} (mu_q - mu_p) / 2``, what the model's
    posterior mean costs; ``covariance`` is the KL between the two Gaussians moved to
    a common mean, what its covariance costs; they add up to ``total``. ``floor`` is
    the KL the model's mean would have with the best covariance for it,
    ``log(1 + delta^T Sigma_p^{-1} delta) / 2``
    (:func:`icl_lib.learners.bayes.best_covariance_kl`): no covariance brings the
    total below it. The exact
    posterior is that of ``w ~ N(0, I)`` and label noise ``noise_std``
    (:func:`icl_lib.learners.bayes.gaussian_posterior`), computed in float64.
    """
    check_model("model", model, "eval", "posterior")
    _check_batch(batch, "w")
    noise_std = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    with torch.no_grad():
        mean, chol = model.eval().posterior(batch.xs, batch.ys)
    mean, chol = mean.double(), chol.double()
    xs, ys = batch.xs.double(), batch.ys.double()
    curves = {"total": [], "mean": [], "covariance": [], "floor": []}
    per_prompt = []
    for k in range(batch.n_points):
        exact = _standard_posterior(xs, ys, k, noise_std)
        cov_q = chol[:, k] @ chol[:, k].transpose(1, 2)
        total = gaussian_kl(exact.mean, exact.cov, mean[:, k], cov_q)
        covariance = gaussian_kl(exact.mean, exact.cov, exact.mean, cov_q)
        curves["total"].append(total.mean())
        per_prompt.append(total)
        curves["covariance"].append(covariance.mean())
        curves["mean"].append((total - covariance).mean())
        curves["floor"].append(
            best_covariance_kl(exact.mean, exact.cov, mean[:, k]).mean()
        )
    out = {name: torch.stack(values) for name, values in curves.items()}
    out["prompt_total"] = torch.stack(per_prompt, 1).mean(1)
    return out


def implied_task_vectors(
    model, batch: PromptBatch, ks, *, n_queries: int | None = None, seed=0
) -> torch.Tensor:
    """The task vector a model's predictions imply after ``k`` examples: ``(B, len(ks),
    d)``.

    For each context, the model predicts ``n_queries`` (default ``2d + 1``, as Panwar
    et al.) Gaussian queries; the least-squares fit of those predictions on the
    queries is the implied ``w_hat``. It is exact when the model's prediction is
    linear in the query, as every Bayes predictor here is.
    """
    check_model("model", model, "eval", "predict")
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    B, n, d = batch.xs.shape
    Q = 2 * d + 1 if n_queries is None else n_queries  # 0 is an error, not the default
    Q = check_positive_int("n_queries", Q, minimum=d)
    ks = _check_ks(batch, ks)
    queries = torch.randn(Q, d, generator=make_generator(seed)).to(batch.xs)
    out = []
    with torch.no_grad():
        for k in ks:
            xs, ys, _, _ = batch.prompt(k)
            rep_x = xs.repeat_interleave(Q, 0)  # (B Q, k, d)
            rep_y = ys.repeat_interleave(Q, 0)
            preds = model.eval().predict(rep_x, rep_y, queries.repeat(B, 1)).view(B, Q)
            fit = torch.linalg.lstsq(queries.double(), preds.double().T).solution
            out.append(fit.T)  # (B, d)
    return torch.stack(out, 1)


def component_weight_curves(
    model, batch: PromptBatch, ks, *, means, covs, weights, noise_std: float, seed=0
) -> dict[str, torch.Tensor]:
    """The weight on the prompt's own component after ``k`` examples, exact and as the
    model's predictions imply (:func:`implied_task_vectors`), read by
    :func:`component_weights_from_vectors`: the same dict, each entry
    ``(len(ks),)`` but ``prompt_gap``, ``(B, len(ks))``.

    For a two-component prior whose components differ only in their mean's first
    coordinate, ``+a`` or ``-a`` with no variance there (Panwar et al.'s, see
    :func:`icl_lib.tasks.mixture_prior`), the Bayes predictor's task vector has first
    coordinate ``a (2 beta_+ - 1)``; the model's implied first coordinate is read the
    same way.
    """
    _check_batch(batch, "component")
    _opposite_means(means)
    implied = implied_task_vectors(model, batch, ks, seed=seed)  # (B, K, d)
    return component_weights_from_vectors(
        implied,
        batch,
        ks,
        means=means,
        covs=covs,
        weights=weights,
        noise_std=noise_std,
    )


def _opposite_means(means) -> torch.Tensor:
    means = check_tensor("means", means, 2).double()
    if means.shape[0] != 2 or not torch.allclose(means[0, 0], -means[1, 0]):
        raise ValueError(
            "means: expected two components with opposite first coordinates, got "
            f"{means[:, 0].tolist()}"
        )
    return means


def _check_ks(batch, ks) -> list[int]:
    ks = check_sequence("ks", ks, "a sequence of ints", nonempty=True)
    ks = [check_positive_int("ks[i]", k, minimum=0) for k in ks]
    if max(ks) >= batch.n_points:
        raise ValueError(
            f"ks: expected context sizes below n_points = {batch.n_points}, got "
            f"{max(ks)}"
        )
    return ks


def posterior_mean_vectors(
    batch: PromptBatch, ks, *, means, covs, weights, noise_std: float
) -> torch.Tensor:
    """The posterior mean of ``w`` after ``k`` examples under the prior
    ``sum_c weights[c] N(means[c], covs[c])`` (one component: a Gaussian prior), for
    every prompt and ``k`` in ``ks``: ``(B, len(ks), d)``, float64
    (:func:`icl_lib.learners.bayes.mixture_posterior`)."""
    if not isinstance(batch, PromptBatch):
        raise TypeError(f"batch: expected a PromptBatch, got {type(batch).__name__}")
    ks = _check_ks(batch, ks)
    exact = batch.to(dtype=torch.float64)
    out = []
    for k in ks:
        xs, ys, _, _ = exact.prompt(k)
        out.append(
            mixture_posterior(
                xs,
                ys,
                means=check_tensor("means", means, 2).double(),
                covs=check_tensor("covs", covs, 3).double(),
                weights=check_tensor("weights", weights, 1).double(),
                noise_std=noise_std,
            ).mean
        )
    return torch.stack(out, 1)


def component_weights_from_vectors(
    vectors, batch: PromptBatch, ks, *, means, covs, weights, noise_std: float
) -> dict[str, torch.Tensor]:
    """Read the weight on each prompt's own component from task vectors
    ``vectors (B, len(ks), d)`` (a model's implied ones, or any predictor's posterior
    mean, :func:`posterior_mean_vectors`) under Panwar et al.'s two-component prior
    (first coordinates ``+a`` and ``-a``): ``(a_own v_1 / a + 1) / 2``.

    Returns, each ``(len(ks),)`` float64: ``exact`` and ``model``, the mean exact and
    implied weight; ``gap`` and ``gap_se``, the mean over prompts of
    ``|implied - exact|`` and its standard error (and ``prompt_gap``, ``(B,
    len(ks))``, that difference prompt by prompt, for standard errors paired with
    another predictor's on the same prompts); ``first_error`` and ``rest_error``,
    the mean over prompts of ``(v_1 - w_1)^2`` and ``||v_{2:} - w_{2:}||^2``: the
    excess squared error of predicting with ``v`` at ``x ~ N(0, I)`` split into the
    component's coordinate and the coordinates inside the component.
    """
    _check_batch(batch, "component")
    means = _opposite_means(means)
    ks = _check_ks(batch, ks)
    vectors = check_finite("vectors", check_tensor("vectors", vectors, 3)).double()
    B, _, d = batch.xs.shape
    if vectors.shape != (B, len(ks), d):
        raise ValueError(
            f"vectors: expected shape {(B, len(ks), d)} (prompts, ks, d), got "
            f"{tuple(vectors.shape)}"
        )
    a = means[0, 0]
    own = torch.where(batch.component == 0, 1.0, -1.0).double().unsqueeze(1)
    model_beta = (own * vectors[..., 0] / a + 1) / 2  # weight on the own component
    exact = []
    for k in ks:
        xs, ys, _, _ = batch.to(dtype=torch.float64).prompt(k)
        beta = mixture_posterior(
            xs, ys, means=means, covs=covs, weights=weights, noise_std=noise_std
        ).weights
        exact.append(beta.gather(1, batch.component.unsqueeze(1)).squeeze(1))
    exact = torch.stack(exact, 1)  # (B, K)
    error = (vectors - batch.w.double().unsqueeze(1)) ** 2  # (B, K, d)
    return {
        "exact": exact.mean(0),
        "model": model_beta.mean(0),
        "gap": (model_beta - exact).abs().mean(0),
        "gap_se": (model_beta - exact).abs().std(0) / B**0.5,
        "prompt_gap": (model_beta - exact).abs(),
        "first_error": error[..., 0].mean(0),
        "rest_error": error[..., 1:].sum(-1).mean(0),
    }


def posterior_kl_baselines(batch: PromptBatch, noise_std: float) -> dict:
    """Two posteriors a trained head must beat, as ``KL(exact || q)`` in nats after
    ``k = 0..n-1`` examples, averaged over prompts: ``{"prior", "isotropic"}``, each
    ``(n,)`` float64.

    ``prior``: ``q`` the prior ``N(0, I)`` itself, a head that learns nothing from the
    context (its KL is the information the examples carry about ``w``);
    ``isotropic``: the exact mean with one covariance ``c_k I`` per context size,
    ``c_k`` the mean over prompts of ``tr(Sigma_p) / d`` (the best such ``c_k``), a
    head that knows the mean but not the shape of the posterior or which prompts are
    uncertain. The exact posterior is that
    of ``w ~ N(0, I)`` and label noise ``noise_std``.
    """
    _check_batch(batch, "w")
    noise_std = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    xs, ys = batch.xs.double(), batch.ys.double()
    B, n, d = xs.shape
    eye = torch.eye(d, dtype=torch.float64)
    out = {"prior": [], "isotropic": []}
    for k in range(n):
        exact = _standard_posterior(xs, ys, k, noise_std)
        prior_kl = gaussian_kl(
            exact.mean, exact.cov, torch.zeros_like(exact.mean), eye.expand(B, d, d)
        )
        scale = exact.cov.diagonal(dim1=-2, dim2=-1).sum(-1).mean() / d
        iso_kl = gaussian_kl(
            exact.mean, exact.cov, exact.mean, scale * eye.expand(B, d, d)
        )
        out["prior"].append(prior_kl.mean())
        out["isotropic"].append(iso_kl.mean())
    return {name: torch.stack(values) for name, values in out.items()}


def posterior_entropy_curve(batch: PromptBatch, noise_std: float) -> torch.Tensor:
    """The differential entropy in nats of the exact posterior over ``w`` after
    ``k = 0..n-1`` examples, averaged over prompts: ``(n,)`` float64.

    What turns a posterior head's training loss into its KL. For ``(w, prompt)`` drawn
    together, ``w`` given the prompt follows the exact posterior ``p``, so the
    cross-entropy splits: ``E[-log q(w | prompt)] = E[KL(p || q)] + E[H(p)]``. The
    loss ``posterior_nll`` (averaged over ``k``) minus the mean of this curve is
    therefore the mean KL of :func:`posterior_kl_curve`, measured on the training
    batches. ``H(N(mu, S)) = (d log(2 pi e) + log det S) / 2``; the posterior is that of
    ``w ~ N(0, I)`` and label noise ``noise_std``, and does not depend on the labels.
    """
    _check_batch(batch, "xs")
    noise_std = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    xs, ys = batch.xs.double(), batch.ys.double()
    d = xs.shape[2]
    log_2pie = torch.log(torch.tensor(2 * torch.pi, dtype=torch.float64)) + 1
    entropies = [
        (
            d * log_2pie + torch.logdet(_standard_posterior(xs, ys, k, noise_std).cov)
        ).mean()
        / 2
        for k in range(batch.n_points)
    ]
    return torch.stack(entropies)


def readout_errors(
    model, batch: PromptBatch, noise_std: float
) -> dict[str, torch.Tensor]:
    """What a linear read-out of a model's final residual stream can recover, per
    context size: ``{"prediction", "vector", "zero"}``, each ``(n,)``.

    At the token ``x_k`` (after ``k`` examples) a least-squares probe with a bias is
    fitted on the first half of the prompts to the exact posterior predictive mean
    ``mu_k^T x_k`` (``prediction``) and to the exact posterior mean ``mu_k`` itself
    (``vector``), and scored on the second half: the mean squared error, summed over
    the coordinates for the vector; ``zero`` is the vector's error when predicting 0,
    ``E ||mu_k||^2``. A model trained to predict holds the first; a posterior head needs
    the second (chapter 4).
    """
    check_model("model", model, "eval", "hidden")
    _check_batch(batch, "w")
    noise_std = check_real("noise_std", noise_std, minimum=0.0, strict=True)
    B, n, d = batch.xs.shape
    if B < 4:
        raise ValueError(
            f"batch: expected at least 4 prompts to fit and score, got {B}"
        )
    with torch.no_grad():
        feats = model.eval().hidden(batch.xs, batch.ys).double()  # (B, n, C)
    feats = torch.cat((feats, feats.new_ones(B, n, 1)), -1)
    xs, ys = batch.xs.double(), batch.ys.double()
    half = B // 2
    out = {"prediction": [], "vector": [], "zero": []}
    for k in range(n):
        mean = _standard_posterior(xs, ys, k, noise_std).mean  # (B, d)
        targets = {
            "prediction": (mean * xs[:, k]).sum(-1, keepdim=True),
            "vector": mean,
        }
        for name, target in targets.items():
            fit = torch.linalg.lstsq(feats[:half, k], target[:half]).solution
            error = ((feats[half:, k] @ fit - target[half:]) ** 2).sum(-1).mean()
            out[name].append(error)
        out["zero"].append((mean[half:] ** 2).sum(-1).mean())
    return {name: torch.stack(values) for name, values in out.items()}
