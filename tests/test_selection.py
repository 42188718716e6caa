"""Chapter 5's learners, tasks and measurements: Lasso against references, post-ICL
validation against the oracle choice, the pre-ICL routing statistic, the noise-mixture
Bayes predictor; every identity in float64, every bad input rejected."""

import math
from functools import partial

import numpy as np
import pytest
import torch

from icl_lib.analysis.selection import (
    bayes_label_accuracy,
    decisive_group,
    error_ratio,
    geometric_mean_ratio,
    group_means,
    grouped_error_ratio,
    grouped_squared_errors,
    minimax_ratio,
    noise_sweep,
    probe_accuracy,
    probe_by_layer,
    refined_minimax_ridge,
    residual_features,
    ridge_path_errors,
    squared_errors,
    tuned_learner,
)
from icl_lib.learners import (
    binary_label_statistic,
    gaussian_posterior,
    ista,
    lasso,
    lasso_exact,
    lasso_exact_weights,
    lasso_weights,
    logistic_posterior_mean,
    logistic_regression,
    logistic_weights,
    noise_mixture_posterior_mean,
    noise_posterior,
    ols,
    post_icl_validation,
    pre_icl_test,
    ridge,
    ridge_candidates,
    soft_threshold,
    validation_choice,
    validation_losses,
)
from icl_lib.models.gpt import TransformerConfig
from icl_lib.tasks import (
    family_mixture,
    linear_classification,
    linear_regression,
    noise_mixture_regression,
    sparse_linear_regression,
)
from icl_lib.training.samplers import (
    FamilyMixturePrompts,
    NoiseMixturePrompts,
    SparseRegressionPrompts,
)

F64 = torch.float64


def _prompt(B=6, N=12, d=4, seed=0, noise=0.3):
    batch = linear_regression(B, N + 1, d, noise_std=noise, seed=seed, dtype=F64)
    return batch.prompt(N)


# --- soft thresholding and the Lasso ---


def test_soft_threshold_is_two_relus():
    z = torch.linspace(-3, 3, 601, dtype=F64)
    for t in (0.0, 0.4, 2.5):
        relus = torch.relu(z - t) - torch.relu(-z - t)
        assert torch.allclose(soft_threshold(z, t), relus, atol=0, rtol=0)
    with pytest.raises(ValueError, match="threshold: expected a number >= 0"):
        soft_threshold(z, -1.0)
    with pytest.raises(TypeError, match="z: expected a torch.Tensor"):
        soft_threshold([1.0], 0.1)


def _kkt_violation(xs, ys, w, lam):
    """Largest violation of the Lasso's optimality conditions, per prompt."""
    N = xs.shape[1]
    corr = torch.einsum("bnd,bn->bd", xs, ys - torch.einsum("bnd,bd->bn", xs, w)) / N
    on = w != 0
    v_on = (corr - lam * torch.sign(w)).abs() * on
    v_off = (corr.abs() - lam).clamp(min=0) * ~on
    return (v_on + v_off).amax(1)


@pytest.mark.parametrize("N", [3, 8, 30])
def test_lasso_satisfies_its_optimality_conditions(N):
    xs, ys, _, _ = _prompt(B=4 if N < 6 else 10, N=N, d=6, seed=N)
    for lam in (0.01, 0.1, 1.0):
        # Below N = d the objective is not strongly convex: more sweeps.
        w = lasso_weights(xs, ys, lam, sweeps=10_000 if N < 6 else 2000)
        assert _kkt_violation(xs, ys, w, lam).max() < 1e-9


def _reference_lasso(X, y, lam, iters=50_000):
    """A plain numpy ISTA, run far past convergence (the reference solution)."""
    N = X.shape[0]
    L = np.linalg.eigvalsh(X.T @ X / N)[-1]
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        z = w - X.T @ (X @ w - y) / (N * L)
        w = np.sign(z) * np.maximum(np.abs(z) - lam / L, 0)
    return w


def test_lasso_matches_a_reference_solver():
    xs, ys, _, _ = _prompt(B=3, N=20, d=5, seed=7)
    w = lasso_weights(xs, ys, 0.05, sweeps=500)
    for b in range(3):
        ref = _reference_lasso(xs[b].numpy(), ys[b].numpy(), 0.05)
        np.testing.assert_allclose(w[b].numpy(), ref, atol=1e-9)


def test_lasso_on_an_orthogonal_design_is_soft_thresholded_correlation():
    N, d = 8, 4
    q, _ = torch.linalg.qr(torch.randn(N, d, dtype=F64, generator=torch.manual_seed(0)))
    xs = (math.sqrt(N) * q).unsqueeze(0)  # X^T X / N = I
    ys = torch.randn(1, N, dtype=F64, generator=torch.manual_seed(1))
    expected = soft_threshold(xs[0].T @ ys[0] / N, 0.2)
    assert torch.allclose(lasso_weights(xs, ys, 0.2)[0], expected, atol=1e-12)


def test_lasso_limits_and_ista():
    xs, ys, xq, _ = _prompt(N=15, d=4)
    assert torch.allclose(lasso(xs, ys, xq, 0.0, sweeps=3000), ols(xs, ys, xq))
    huge = lasso(xs, ys, xq, 1e6)
    assert torch.equal(huge, torch.zeros_like(huge))
    exact = lasso(xs, ys, xq, 0.1, sweeps=1000)
    assert torch.allclose(ista(xs, ys, xq, 0.1, steps=5000), exact, atol=1e-9)
    gaps = [(ista(xs, ys, xq, 0.1, steps=t) - exact).abs().max() for t in (1, 10, 100)]
    assert gaps[0] > gaps[1] > gaps[2]
    empty = lasso(xs[:, :0], ys[:, :0], xq, 0.1)
    assert torch.equal(empty, torch.zeros_like(empty))
    assert torch.equal(ista(xs[:, :0], ys[:, :0], xq, 0.1, 3), empty)


def test_lasso_rejects_bad_input():
    xs, ys, xq, _ = _prompt()
    with pytest.raises(ValueError, match="lam: expected a number >= 0"):
        lasso(xs, ys, xq, -0.1)
    with pytest.raises(ValueError, match="sweeps: expected an int >= 1"):
        lasso(xs, ys, xq, 0.1, sweeps=0)
    with pytest.raises(ValueError, match="x_query: expected shape"):
        lasso(xs, ys, xq[:, :2], 0.1)
    with pytest.raises(TypeError, match="ys: expected dtype"):
        lasso(xs, ys.float(), xq, 0.1)
    with pytest.raises(ValueError, match="steps: expected an int >= 0"):
        ista(xs, ys, xq, 0.1, steps=-1)


# --- logistic regression ---


def test_logistic_regression_is_stationary():
    batch = linear_classification(8, 21, 5, seed=3, dtype=F64)
    for k in (2, 5, 20):
        xs, ys, xq, _ = batch.prompt(k)
        for lam in (0.5, 1.0):
            w = logistic_weights(xs, ys, lam)
            margin = ys * torch.einsum("bnd,bd->bn", xs, w)
            grad = (
                -torch.einsum("bnd,bn->bd", xs, ys * torch.sigmoid(-margin)) + lam * w
            )
            assert grad.abs().max() < 1e-10
            z = (w * xq).sum(1)
            assert torch.allclose(
                logistic_regression(xs, ys, xq, lam), torch.tanh(z / 2)
            )
            assert torch.allclose(
                logistic_regression(xs, ys, xq, lam, output="logit"), z
            )


def test_logistic_posterior_mean_against_quadrature():
    # d = 1: the posterior of the scalar w is N(0, 1) times prod_i sigmoid(y_i w x_i).
    xs = torch.tensor([[[0.8], [-1.5], [0.3], [2.0]]], dtype=F64)
    ys = torch.tensor([[1.0, -1.0, -1.0, 1.0]], dtype=F64)
    x_query = torch.tensor([[1.2]], dtype=F64)
    grid = torch.linspace(-12, 12, 200001, dtype=F64)
    log_post = -(grid**2) / 2 + torch.nn.functional.logsigmoid(
        ys[0, :, None] * xs[0, :, 0, None] * grid
    ).sum(0)
    post = torch.softmax(log_post, 0)
    exact = (post * torch.tanh(grid * x_query[0, 0] / 2)).sum()
    mc = logistic_posterior_mean(xs, ys, x_query, n_samples=400_000)
    assert abs(mc.item() - exact.item()) < 3e-3
    assert 0.2 < exact.item() < 0.6  # the check is not against 0
    empty = logistic_posterior_mean(xs[:, :0], ys[:, :0], x_query)
    assert empty.abs().item() < 1e-15  # antithetic pairs: the prior mean, 0
    with pytest.raises(ValueError, match=r"ys: expected labels in \{-1, \+1\}"):
        logistic_posterior_mean(xs, ys * 0.5, x_query)
    with pytest.raises(ValueError, match="n_samples: expected"):
        logistic_posterior_mean(xs, ys, x_query, n_samples=0)


def test_logistic_regression_rejects_bad_input():
    batch = linear_classification(4, 6, 3, seed=0, dtype=F64)
    xs, ys, xq, _ = batch.prompt(5)
    with pytest.raises(
        ValueError, match=r"ys: expected labels in \{-1, \+1\}, got 0.5"
    ):
        logistic_regression(xs, torch.full_like(ys, 0.5), xq)
    with pytest.raises(ValueError, match="lam: expected a number > 0"):
        logistic_regression(xs, ys, xq, 0.0)
    with pytest.raises(ValueError, match="output: expected 'mean' or 'logit'"):
        logistic_regression(xs, ys, xq, output="probability")


# --- post-ICL validation ---


def test_validation_losses_are_the_split_fit_errors():
    xs, ys, _, _ = _prompt(B=4, N=10, d=3)
    cands = ridge_candidates([0.01, 1.0, 100.0])
    losses = validation_losses(xs, ys, cands, n_val=4)
    for j, c in enumerate(cands):
        direct = torch.stack(
            [(c(xs[:, :6], ys[:, :6], xs[:, i]) - ys[:, i]) ** 2 for i in range(6, 10)]
        ).mean(0)
        assert torch.allclose(losses[:, j], direct, atol=1e-12)
    assert torch.equal(validation_choice(xs, ys, cands, n_val=4), losses.argmin(1))


def test_post_icl_validation_picks_the_oracle_lambda_on_constructed_prompts():
    # Half the prompts are almost noiseless (the oracle is the smallest lambda), half
    # are pure noise, w = 0 (the oracle is the largest). A long validation part makes
    # the validation loss a sharp estimate of each candidate's risk.
    B, n_fit, n_val, d = 200, 8, 400, 4
    gen = torch.Generator().manual_seed(0)
    xs = torch.randn(B, n_fit + n_val, d, generator=gen, dtype=F64)
    w = torch.randn(B, d, generator=gen, dtype=F64)
    w[B // 2 :] = 0
    sigma = torch.where(torch.arange(B) < B // 2, 0.01, 1.0).to(F64)
    ys = torch.einsum("bnd,bd->bn", xs, w) + sigma[:, None] * torch.randn(
        B, n_fit + n_val, generator=gen, dtype=F64
    )
    lams = [1e-4, 1.0, 1e4]
    cands = ridge_candidates(lams)
    choice = validation_choice(xs, ys, cands, n_val=n_val)
    # The oracle: the candidate whose training-part fit has the smallest risk,
    # E (<w_hat - w, x>)^2 + sigma^2 = ||w_hat - w||^2 + sigma^2 for x ~ N(0, I).
    eye = torch.eye(d, dtype=F64)
    risks = []
    for lam in lams:
        X, y = xs[:, :n_fit], ys[:, :n_fit]
        w_hat = torch.linalg.solve(
            X.transpose(1, 2) @ X + lam * eye, X.transpose(1, 2) @ y.unsqueeze(-1)
        ).squeeze(-1)
        risks.append(((w_hat - w) ** 2).sum(1))
    oracle = torch.stack(risks, 1).argmin(1)
    assert (choice == oracle).double().mean() >= 0.99
    assert bool((oracle[: B // 2] == 0).all()) and bool((oracle[B // 2 :] == 2).all())
    # The prediction is the chosen candidate's, refitted on the whole context or not.
    xq = torch.randn(B, d, generator=gen, dtype=F64)
    refit = post_icl_validation(xs, ys, xq, cands, n_val=n_val)
    split = post_icl_validation(xs, ys, xq, cands, n_val=n_val, refit=False)
    for j, c in enumerate(cands):
        m = choice == j
        assert torch.allclose(refit[m], c(xs, ys, xq)[m])
        assert torch.allclose(split[m], c(xs[:, :n_fit], ys[:, :n_fit], xq)[m])


def test_post_icl_validation_with_one_candidate_is_that_candidate():
    xs, ys, xq, _ = _prompt()
    one = [partial(ridge, lam=0.3)]
    assert torch.equal(post_icl_validation(xs, ys, xq, one), ridge(xs, ys, xq, 0.3))


def test_post_icl_validation_rejects_bad_input():
    xs, ys, xq, _ = _prompt(N=6)
    cands = ridge_candidates([0.1, 1.0])
    with pytest.raises(ValueError, match="xs: expected at least 2 context examples"):
        post_icl_validation(xs[:, :1], ys[:, :1], xq, cands)
    with pytest.raises(ValueError, match="n_val: expected fewer validation examples"):
        post_icl_validation(xs, ys, xq, cands, n_val=6)
    with pytest.raises(TypeError, match="candidates: expected a non-empty list"):
        post_icl_validation(xs, ys, xq, [])
    with pytest.raises(TypeError, match=r"candidates\[1\]: expected a learner"):
        post_icl_validation(xs, ys, xq, [cands[0], 3.0])
    with pytest.raises(TypeError, match="lams: expected a non-empty list"):
        ridge_candidates(0.1)
    with pytest.raises(ValueError, match=r"lams\[0\]: expected a number >= 0"):
        ridge_candidates([-1.0])


# --- pre-ICL testing ---


def test_binary_label_statistic_separates_the_families():
    batch = family_mixture(400, 11, 5, seed=0, dtype=F64)
    for k in (1, 5, 10):
        stat = binary_label_statistic(batch.ys[:, :k])
        cls = batch.family == 1
        assert bool((stat[cls] == 0).all()) and bool((stat[~cls] > 0).all())
    assert torch.equal(
        binary_label_statistic(batch.ys[:, :0]), torch.zeros(400, dtype=F64)
    )
    manual = torch.tensor([[1.0, -1.0, 1.5], [0.0, 1.0, -1.0]], dtype=F64)
    assert torch.equal(
        binary_label_statistic(manual), torch.tensor([0.5, 1.0], dtype=F64)
    )
    with pytest.raises(ValueError, match="ys: expected 2 dimensions"):
        binary_label_statistic(torch.ones(3, dtype=F64))


def test_pre_icl_test_routes_each_family_to_its_learner():
    batch = family_mixture(300, 11, 5, seed=1, dtype=F64)
    xs, ys, xq, _ = batch.prompt(8)
    routed = pre_icl_test(xs, ys, xq)
    cls = batch.family == 1
    assert torch.allclose(routed[cls], logistic_regression(xs[cls], ys[cls], xq[cls]))
    assert torch.allclose(routed[~cls], ridge(xs[~cls], ys[~cls], xq[~cls], 0.25))
    with pytest.raises(ValueError, match="tol: expected a number >= 0"):
        pre_icl_test(xs, ys, xq, tol=-1.0)
    with pytest.raises(TypeError, match="binary: expected a learner"):
        pre_icl_test(xs, ys, xq, binary="logistic")


# --- the noise-mixture Bayes predictor ---


def test_noise_posterior_matches_the_evidence_of_each_level():
    xs, ys, xq, _ = _prompt(B=5, N=7, d=3, noise=0.5)
    levels = (0.1, 0.5, 1.0)
    post = noise_posterior(xs, ys, levels, weights=(0.2, 0.3, 0.5))
    log_ev = torch.stack(
        [
            gaussian_posterior(
                xs,
                ys,
                prior_mean=torch.zeros(3, dtype=F64),
                prior_cov=torch.eye(3, dtype=F64),
                noise_std=s,
            ).log_evidence
            for s in levels
        ],
        1,
    )
    expected = torch.softmax(log_ev + torch.tensor([0.2, 0.3, 0.5], dtype=F64).log(), 1)
    assert torch.allclose(post, expected, atol=1e-12)
    mean = noise_mixture_posterior_mean(xs, ys, xq, levels, weights=(0.2, 0.3, 0.5))
    ridges = torch.stack([ridge(xs, ys, xq, s**2) for s in levels], 1)
    assert torch.allclose(mean, (expected * ridges).sum(1), atol=1e-12)
    one = noise_mixture_posterior_mean(xs, ys, xq, (0.5,))
    assert torch.allclose(one, ridge(xs, ys, xq, 0.25), atol=1e-12)
    empty = noise_posterior(xs[:, :0], ys[:, :0], levels)
    assert torch.allclose(empty, torch.full((5, 3), 1 / 3, dtype=F64))


def test_noise_posterior_rejects_bad_input():
    xs, ys, _, _ = _prompt()
    with pytest.raises(ValueError, match="weights: expected 2 prior weights"):
        noise_posterior(xs, ys, (0.1, 1.0), weights=(1.0,))
    with pytest.raises(ValueError, match="weights: expected weights summing to 1"):
        noise_posterior(xs, ys, (0.1, 1.0), weights=(0.5, 0.6))
    with pytest.raises(ValueError, match=r"noise_levels\[1\]: expected a number > 0"):
        noise_posterior(xs, ys, (0.1, 0.0))
    with pytest.raises(TypeError, match="noise_levels: expected a non-empty tuple"):
        noise_posterior(xs, ys, 0.1)


# --- tasks and samplers ---


def test_the_new_prompt_distributions():
    b = noise_mixture_regression(2000, 4, 3, (0.1, 1.0), seed=0, dtype=F64)
    assert torch.equal(b.sigmas, torch.tensor([0.1, 1.0], dtype=F64)[b.component])
    resid = b.ys - torch.einsum("bnd,bd->bn", b.xs, b.w)
    for c, s in enumerate((0.1, 1.0)):
        assert abs(resid[b.component == c].std().item() / s - 1) < 0.05
    fam = family_mixture(4000, 3, 2, classification_prob=0.25, seed=0)
    assert abs(fam.family.double().mean().item() - 0.25) < 0.03
    assert bool((fam.ys[fam.family == 1].abs() == 1).all())
    only = family_mixture(10, 3, 2, classification_prob=0.0, seed=0)
    assert int(only.family.sum()) == 0
    c = linear_classification(20000, 1, 2, seed=0, dtype=F64)
    z = torch.einsum("bnd,bd->bn", c.xs, c.w)
    # P(y = 1 | z) = sigmoid(z): E[y - tanh(z / 2)] = 0.
    assert abs((c.ys - torch.tanh(z / 2)).mean().item()) < 0.02
    with pytest.raises(ValueError, match="classification_prob: expected a number <= 1"):
        family_mixture(2, 2, 2, classification_prob=1.5)
    with pytest.raises(TypeError, match="noise_levels: expected a non-empty tuple"):
        noise_mixture_regression(2, 2, 2, ())
    for sampler in (
        NoiseMixturePrompts(dim=3, n_points=5),
        FamilyMixturePrompts(dim=3, n_points=5),
        SparseRegressionPrompts(dim=3, n_points=5, sparsity=2),
    ):
        batch = sampler.sample(4, 0, torch.Generator().manual_seed(0))
        assert batch.xs.shape == (4, 5, 3) and sampler.eval_batch(2, 0).ys.shape == (
            2,
            5,
        )
        assert sampler.to_dict()["type"] == type(sampler).__name__
    with pytest.raises(ValueError, match=r"noise_levels\[0\]: expected a number > 0"):
        NoiseMixturePrompts(dim=3, n_points=5, noise_levels=(0.0,))


# --- measurements ---


def test_grouped_and_tuned_error_curves():
    b = noise_mixture_regression(300, 6, 3, (0.1, 1.0), seed=0, dtype=F64)
    curves = group_means(
        grouped_squared_errors(
            {"ridge": partial(ridge, lam=0.1), "ols": ols}, b, b.component, [0, 3, 5]
        )
    )
    assert curves["ridge"].shape == (2, 3)
    assert curves["ridge"][1, 0] > curves["ridge"][0, 0]  # k = 0: 3 + sigma^2
    with pytest.raises(ValueError, match="groups: expected one group per prompt"):
        grouped_squared_errors({"ols": ols}, b, b.component[:5], [1])
    with pytest.raises(TypeError, match="predictors: expected a non-empty dict"):
        grouped_squared_errors([ols], b, b.component, [1])
    with pytest.raises(TypeError, match="errors: expected the non-empty dict"):
        group_means({})
    s = sparse_linear_regression(200, 8, 4, 1, noise_std=0.1, seed=0, dtype=F64)
    t = sparse_linear_regression(200, 8, 4, 1, noise_std=0.1, seed=1, dtype=F64)
    tuned = tuned_learner(lasso, t, [2, 6], [0.001, 0.05, 5.0])
    chosen = [tuned.choices[k] for k in (2, 6)]
    assert set(chosen) <= {0.001, 0.05, 5.0}
    assert chosen[1] != 5.0  # with 6 examples a huge penalty is never best
    with pytest.raises(TypeError, match="grid: expected a non-empty list"):
        tuned_learner(lasso, t, [2], [])
    xs, ys, x_query, _ = s.prompt(6)
    assert torch.equal(tuned(xs, ys, x_query), lasso(xs, ys, x_query, chosen[1]))
    with pytest.raises(ValueError, match=r"xs: expected a context size in \[2, 6\]"):
        tuned(*s.prompt(3)[:3])
    sweep = noise_sweep(
        {"ols": ols, "ridge": partial(ridge, lam=1.0)},
        [0.0, 1.0],
        dim=3,
        n_points=6,
        n_prompts=64,
    )
    assert sweep.shape == (2, 2, 6) and sweep[0, 0, 5] < 1e-8


def test_per_prompt_errors_average_to_the_curves():
    b = noise_mixture_regression(300, 6, 3, (0.1, 1.0), seed=0, dtype=F64)
    learners = {"ridge": partial(ridge, lam=0.1), "ols": ols}
    per_prompt = grouped_squared_errors(
        learners, b, b.component, [0, 3, 5], min_context={"ols": 1}
    )
    curves = group_means(per_prompt)
    for name, parts in per_prompt.items():
        assert [p.shape[0] for p in parts] == b.component.bincount().tolist()
        means = torch.stack([p.mean(0) for p in parts])
        assert torch.allclose(means, curves[name], equal_nan=True, atol=1e-15)
    assert bool(per_prompt["ols"][0][:, 0].isnan().all())
    one = squared_errors(ols, b, [4])
    _, ys, x_query, y = b.prompt(4)
    assert torch.allclose(one[:, 0], (ols(b.xs[:, :4], ys, x_query) - y) ** 2)


def test_error_ratio_and_its_standard_error():
    g = torch.Generator().manual_seed(0)
    b = torch.rand(4000, 3, generator=g, dtype=F64) + 0.5
    ratio, se = error_ratio(2 * b, b)  # proportional errors: the ratio is exact
    assert torch.allclose(ratio, torch.full((3,), 2.0, dtype=F64)) and se.max() < 1e-12
    # Independent errors: the delta method against the spread over repetitions.
    draws = [
        error_ratio(
            torch.rand(500, generator=g, dtype=F64) + 0.5,
            torch.rand(500, generator=g, dtype=F64) + 0.5,
        )
        for _ in range(400)
    ]
    ratios = torch.stack([r for r, _ in draws])
    mean_se = torch.stack([s for _, s in draws]).mean()
    assert abs(ratios.std() / mean_se - 1) < 0.1
    with pytest.raises(ValueError, match="denominator: expected the shape"):
        error_ratio(b, b[:, :2])
    with pytest.raises(ValueError, match="numerator: expected errors of n >= 2"):
        error_ratio(b[:1], b[:1])
    with pytest.raises(ValueError, match="numerator: expected a tensor"):
        error_ratio([1.0, 2.0], b)


def test_grouped_error_ratio_pairs_each_group_with_its_denominator():
    b = noise_mixture_regression(400, 6, 3, (0.1, 1.0), seed=0, dtype=F64)
    learners = {"low": partial(ridge, lam=0.01), "high": partial(ridge, lam=1.0)}
    learners["ols"] = ols
    errors = grouped_squared_errors(learners, b, b.component, [4, 5])
    ratio, se = grouped_error_ratio(errors, "ols", ["low", "high"])
    assert ratio.shape == se.shape == (2, 2)
    for g, name in enumerate(["low", "high"]):
        r, s = error_ratio(errors["ols"][g], errors[name][g])
        assert torch.equal(ratio[g], r) and torch.equal(se[g], s)
    same, _ = grouped_error_ratio(errors, "high", "high")
    assert torch.allclose(same, torch.ones(2, 2, dtype=F64))
    with pytest.raises(ValueError, match="denominator: expected one name or 2"):
        grouped_error_ratio(errors, "ols", ["low"])
    with pytest.raises(ValueError, match="denominator: expected one of"):
        grouped_error_ratio(errors, "ols", "lasso")
    with pytest.raises(ValueError, match="numerator: expected one of"):
        grouped_error_ratio(errors, "lasso", "ols")


def test_error_curves_draw_bands_and_reference_lines():
    import matplotlib

    matplotlib.use("Agg")
    from icl_lib import plotting

    fig = plotting.error_curves(
        [1, 2, 3],
        {"a": [1.0, 1.1, 1.2], "b": [0.9, 1.0, 1.0]},
        bands={"a": [0.1, 0.1, 0.1]},
        hlines={"ratio 1": 1.0},
    )
    ax = fig.axes[0]
    assert len(ax.collections) == 1  # one band
    assert any(line.get_linestyle() == ":" for line in ax.lines)
    with pytest.raises(ValueError, match=r"bands\['a'\]: expected 3 values"):
        plotting.error_curves([1, 2, 3], {"a": [1, 1, 1]}, bands={"a": [0.1]})
    with pytest.raises(ValueError, match="bands: expected names of curves"):
        plotting.error_curves([1, 2, 3], {"a": [1, 1, 1]}, bands={"c": [0, 0, 0]})
    matplotlib.pyplot.close("all")


def test_budget_curves_draw_runs_with_gaps_on_log_axes():
    import math

    import matplotlib

    matplotlib.use("Agg")
    from icl_lib import plotting

    # two runs logged over different stretches of one axis of steps: NaN is a gap
    fig = plotting.budget_curves(
        [100, 200, 300, 400],
        {
            "first": [3.0, 2.0, math.nan, math.nan],
            "second": [math.nan, math.nan, 1.5, 1.2],
        },
        hlines={"goal": 0.1},
        xlabel="optimiser steps",
    )
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel() == "optimiser steps"
    assert [line.get_label() for line in ax.lines] == ["first", "second", "goal"]
    with pytest.raises(ValueError, match=r"curves\['first'\]: expected 4 values"):
        plotting.budget_curves([100, 200, 300, 400], {"first": [1.0, 2.0]})
    matplotlib.pyplot.close("all")


def test_probes():
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(2, (400,), generator=gen)
    feats = torch.randn(400, 6, generator=gen)
    feats[:, 2] += 4 * labels
    assert probe_accuracy(feats, labels) > 0.95
    assert abs(probe_accuracy(torch.randn(400, 6, generator=gen), labels) - 0.5) < 0.12
    with pytest.raises(ValueError, match=r"labels: expected values in \{0, 1\}"):
        probe_accuracy(feats, labels + 1)
    with pytest.raises(ValueError, match="labels: expected one label per row"):
        probe_accuracy(feats, labels[:3])
    with pytest.raises(ValueError, match="train_fraction: expected a number < 1"):
        probe_accuracy(feats, labels, train_fraction=1.0)
    post = torch.tensor([[0.9, 0.1], [0.2, 0.8]])
    assert bayes_label_accuracy(post, torch.tensor([0, 0])) == 0.5
    model = TransformerConfig(n_dims=3, n_positions=6, n_embd=8, n_layer=2, n_head=2)
    model = model.build(0)
    b = noise_mixture_regression(40, 6, 3, (0.1, 1.0), seed=0)
    feats = residual_features(model, b, [0, 2, 5])
    assert feats.shape == (3, 40, 3, 8)
    acc = probe_by_layer(model, b, b.component, [2, 5])
    assert acc.shape == (3, 2) and bool(((acc >= 0) & (acc <= 1)).all())
    with pytest.raises(ValueError, match="ks: expected context sizes in 0..5"):
        residual_features(model, b, [6])
    with pytest.raises(ValueError, match="ks: expected context sizes in 1..5"):
        residual_features(model, b, [0], token="label")
    with pytest.raises(ValueError, match="token: expected 'query' or 'label'"):
        residual_features(model, b, [1], token="y")
    # The label token of context size k is the token before the query token of k.
    _, cache = model.run_with_cache(b.xs, b.ys)
    labels = residual_features(model, b, [1, 4], token="label")
    assert torch.equal(labels[-1, :, 1], cache["blocks.1.hook_resid_post"][:, 7])
    assert torch.equal(feats[0, :, 1], cache["blocks.0.hook_resid_pre"][:, 4])
    with pytest.raises(TypeError, match="model: expected a model with run_with_cache"):
        residual_features(ols, b, [1])


def test_the_binary_test_function_is_a_sum_of_relus():
    # ||y| - 1| = -y - 1 + 2 relu(y + 1) - 2 relu(y) + 2 relu(y - 1) (chapter 5).
    y = torch.linspace(-4, 4, 8001, dtype=F64)
    relus = -y - 1 + 2 * torch.relu(y + 1) - 2 * torch.relu(y) + 2 * torch.relu(y - 1)
    assert torch.allclose(relus, (y.abs() - 1).abs(), atol=1e-15, rtol=0)


@pytest.mark.parametrize("N", [1, 2, 4, 5, 8])
def test_exact_lasso_satisfies_the_optimality_conditions(N):
    """KKT: X_j^T r / N = lam sign(w_j) on the support, |X_j^T r / N| <= lam off it;
    coordinate descent, even after 5000 sweeps, does no better when N <= d."""
    g = torch.Generator().manual_seed(N)
    xs = torch.randn(64, N, 5, generator=g, dtype=torch.float64)
    w = torch.randn(64, 5, generator=g, dtype=torch.float64) * (
        torch.rand(64, 5, generator=g) < 0.4
    )
    ys = (xs @ w.unsqueeze(-1)).squeeze(-1) + 0.1 * torch.randn(
        64, N, generator=g, dtype=torch.float64
    )

    def objective(v):
        resid = ys - (xs @ v.unsqueeze(-1)).squeeze(-1)
        return (resid**2).sum(1) / (2 * N) + lam * v.abs().sum(1)

    for lam in (0.003, 0.05, 0.5):
        exact = lasso_exact_weights(xs, ys, lam)
        resid = ys - (xs @ exact.unsqueeze(-1)).squeeze(-1)
        grad = (xs.transpose(1, 2) @ resid.unsqueeze(-1)).squeeze(-1) / N
        active = exact != 0
        assert torch.allclose(grad[active], lam * exact[active].sign(), atol=1e-10)
        assert bool((grad[~active].abs() <= lam + 1e-10).all())
        slow = lasso_weights(xs, ys, lam, sweeps=5000)
        assert bool((objective(exact) <= objective(slow) + 1e-12).all())
        if N > 5:  # strictly convex: one minimiser, which coordinate descent reaches
            assert torch.allclose(exact, slow, atol=1e-8)


def test_exact_lasso_in_float32_is_the_float64_solution():
    # Near-singular supports at N <= d gave float32 a catastrophic cancellation in
    # the objective (errors of 1e9 at N = 3, d = 5) until it was computed in float64.
    batch = sparse_linear_regression(4096, 4, 5, 2, noise_std=0.1, seed=53)
    for N in (1, 2, 3):
        xs, ys = batch.xs[:, :N], batch.ys[:, :N]
        single = lasso_exact_weights(xs, ys, 0.01)
        double = lasso_exact_weights(xs.double(), ys.double(), 0.01)
        assert single.dtype == torch.float32
        assert torch.allclose(single.double(), double, atol=1e-4, rtol=1e-4)
        assert double.abs().max() < 100


def test_exact_lasso_predicts_with_its_weights():
    xs, ys, x_query, _ = _prompt(N=3, d=4)
    weights = lasso_exact_weights(xs, ys, 0.05)
    assert torch.allclose(
        lasso_exact(xs, ys, x_query, 0.05), (weights * x_query).sum(-1), atol=1e-15
    )


def test_exact_lasso_rejects_bad_input():
    xs = torch.randn(2, 3, 8, dtype=torch.float64)
    ys = torch.randn(2, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="at most MAX_EXACT_DIM"):
        lasso_exact_weights(xs, ys, 0.1)
    with pytest.raises(ValueError, match="lam: expected a number > 0"):
        lasso_exact_weights(xs[..., :3], ys, 0.0)


def test_logged_curve_helpers():
    from icl_lib.analysis.curves import first_step_below, logged_range

    curve = {"step": [100, 200, 300, 400], "loss": [3.0, 2.4, 2.6, 0.4]}
    assert logged_range(curve, 200) == (0.4, 2.6)
    assert logged_range(curve, 200, 400) == (2.4, 2.6)
    assert first_step_below(curve, 0.5) == 400
    assert first_step_below(curve, 0.1) is None
    with pytest.raises(ValueError, match="start: expected a logged step"):
        logged_range(curve, 500)
    with pytest.raises(ValueError, match="key: expected a logged quantity"):
        first_step_below({"step": [1]}, 0.5)
    with pytest.raises(ValueError, match="curve: expected a manifest curve"):
        first_step_below({"loss": [1.0]}, 0.5)


# --- the pass mark of a selection claim ---


def test_minimax_ratio_by_hand():
    # three learners on two kinds, the reference (1, 2): ratios (1, 2), (2, 1),
    # (3, 0.5); worst (2, 2, 3); the best member is the first (ties: the first)
    errors = torch.tensor([[1.0, 4.0], [2.0, 2.0], [3.0, 1.0]], dtype=F64)
    c_star, p_star, worst = minimax_ratio(errors, torch.tensor([1.0, 2.0], dtype=F64))
    assert c_star == 2.0 and p_star == 0
    assert torch.equal(worst, torch.tensor([2.0, 2.0, 3.0], dtype=F64))
    with pytest.raises(ValueError, match="reference: expected one error per kind"):
        minimax_ratio(errors, torch.ones(3, dtype=F64))
    with pytest.raises(ValueError, match="reference: expected errors > 0"):
        minimax_ratio(errors, torch.tensor([1.0, 0.0], dtype=F64))


def test_ridge_path_errors_match_ridge_and_least_squares():
    batch = noise_mixture_regression(64, 9, 4, (0.1, 1.0), seed=3, dtype=F64)
    ks, lams = [0, 2, 4, 6, 8], [0.0, 0.01, 0.5, 3.0]
    path = ridge_path_errors(batch, ks, lams)
    assert path.shape == (4, 64, 5) and path.dtype == F64
    for i, lam in enumerate(lams):
        learner = ols if lam == 0 else partial(ridge, lam=lam)
        direct = squared_errors(learner, batch, ks)
        assert torch.allclose(path[i], direct, rtol=1e-8, atol=1e-10)


def test_the_one_penalty_family_fails_its_own_mark():
    # two noise levels, d = 5, k = 10: the best single penalty pays c* > 1 on its worst
    # level against the exact mixture posterior, so every one-penalty ridge fails
    # the mark sqrt(c*) there; the mixture posterior itself passes it
    levels = (0.1, 1.0)
    batch = noise_mixture_regression(4096, 11, 5, levels, seed=8, dtype=F64)
    lams = [0.0, *np.logspace(-3, 1, 25).tolist()]
    path = ridge_path_errors(batch, [10], lams)[..., 0]  # (P, B)
    groups = batch.component
    errors = torch.stack([path[:, groups == g].mean(1) for g in (0, 1)], dim=1)
    bayes = squared_errors(
        partial(noise_mixture_posterior_mean, noise_levels=levels), batch, [10]
    )[:, 0]
    reference = torch.stack([bayes[groups == g].mean() for g in (0, 1)])
    c_star, _, worst = minimax_ratio(errors, reference)
    assert c_star > 1.05
    assert bool((worst >= c_star).all()) and bool((worst > c_star**0.5).all())


def test_decisive_group_decides_the_joint_claim():
    ratio = torch.tensor([1.3, 1.05, 1.12], dtype=F64)
    se = torch.tensor([0.2, 0.01, 0.01], dtype=F64)
    # z = (0.1, -5, 2): the third kind is clearly above the mark 1.1
    assert decisive_group(ratio, se, 1.1) == 2
    assert decisive_group(ratio[:2], se[:2], 1.1) == 0  # z = (1, -5): undecided
    with pytest.raises(ValueError, match="se: expected the shape of ratio"):
        decisive_group(ratio, se[:2], 1.1)


def test_geometric_mean_ratio():
    gen = torch.Generator().manual_seed(0)
    a = torch.rand(500, 3, generator=gen, dtype=F64) + 0.5
    b = a * torch.tensor([1.0, 2.0, 4.0], dtype=F64) + 0.1 * torch.rand(
        500, 3, generator=gen, dtype=F64
    )
    ratio, se = geometric_mean_ratio(a, b)
    per_k = a.mean(0) / b.mean(0)
    assert math.isclose(ratio, per_k.log().mean().exp().item(), rel_tol=1e-12)
    one, one_se = geometric_mean_ratio(a[:, :1], b[:, :1])
    direct, direct_se = error_ratio(a[:, 0], b[:, 0])
    assert math.isclose(one, direct.item(), rel_tol=1e-12)
    assert math.isclose(one_se, direct_se.item(), rel_tol=1e-9)


def test_empty_groups_choices_and_families_are_refused_by_name():
    """Issue 42: an empty mapping gave StopIteration, an empty family an argmin error,
    and a disagreement blamed the partner without naming the argument changed."""
    from icl_lib.analysis.selection import TunedLearner

    with pytest.raises(ValueError, match="^errors: expected the errors of two"):
        grouped_error_ratio({}, "a", "b")
    with pytest.raises(ValueError, match="^choices: expected a value for some k"):
        TunedLearner(ridge, {})
    with pytest.raises(ValueError, match="^errors: expected at least one"):
        minimax_ratio(torch.rand(0, 2), torch.rand(2) + 0.1)
    with pytest.raises(ValueError, match="^reference: expected .* to match errors"):
        minimax_ratio(torch.rand(3, 3), torch.rand(2) + 0.1)
    with pytest.raises(ValueError, match="^labels: expected .* to match features"):
        probe_accuracy(torch.rand(0, 5), torch.tensor([0, 1] * 4))
    xs, ys, xq, _ = linear_regression(4, 6, 3, seed=0).prompt(5)
    with pytest.raises(TypeError, match="^binary: expected a learner, got NoneType"):
        pre_icl_test(xs, ys, xq, binary=None)
    batch = linear_regression(8, 6, 3, seed=0)
    model = TransformerConfig(
        n_dims=3, n_positions=6, n_embd=8, n_layer=1, n_head=2
    ).build()
    labels = torch.tensor([0, 1] * 4)
    for ks in (None, []):
        with pytest.raises((TypeError, ValueError), match="^ks: expected"):
            residual_features(model, batch, ks)
        with pytest.raises((TypeError, ValueError), match="^ks: expected"):
            probe_by_layer(model, batch, labels, ks)
        with pytest.raises((TypeError, ValueError), match="^ks: expected"):
            grouped_squared_errors({"ridge": ridge}, batch, torch.zeros(8).long(), ks)


def test_refined_minimax_ridge_finds_the_grid_minimum_between_neighbours():
    """The refined c* is no worse than the coarse grid's, and matches a brute-force
    search on a fine grid to the fine grid's resolution; the returned errors are
    those of the returned penalty."""
    batch = noise_mixture_regression(512, 12, 4, (0.1, 1.0), seed=3, dtype=F64)
    groups, k = batch.component, 6
    reference = torch.stack(
        [
            ridge_path_errors(batch, [k], [s**2])[0, groups == g, 0].mean() / batch.dim
            for g, s in enumerate((0.1, 1.0))
        ]
    )
    lams = [0.0, *np.logspace(-3, 1, 9).tolist()]

    def worst(penalties):
        errors = ridge_path_errors(batch, [k], penalties)[..., 0] / batch.dim
        means = torch.stack([errors[:, groups == g].mean(1) for g in (0, 1)], 1)
        return minimax_ratio(means, reference)[0]

    c, lam, errors = refined_minimax_ridge(batch, groups, k, reference, lams)
    assert c <= worst(lams) + 1e-12
    assert c == pytest.approx(worst(np.linspace(1e-3, 10, 2001).tolist()), rel=1e-3)
    again = ridge_path_errors(batch, [k], [lam])[0, :, 0] / batch.dim
    for g in (0, 1):
        torch.testing.assert_close(errors[g], again[groups == g])
    coarse = ridge_path_errors(batch, [k], lams)[..., 0] / batch.dim
    assert (
        refined_minimax_ridge(batch, groups, k, reference, lams, coarse=coarse)[0] == c
    )
    with pytest.raises(ValueError, match="coarse: expected"):
        refined_minimax_ridge(batch, groups, k, reference, lams, coarse=coarse[:2])
    with pytest.raises(ValueError, match="groups: expected prompts of every kind"):
        refined_minimax_ridge(batch, torch.zeros_like(groups), k, reference, lams)
    with pytest.raises(TypeError, match="lams: expected a list"):
        refined_minimax_ridge(batch, groups, k, reference, [0.1])
