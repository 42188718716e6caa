"""The closed-form errors of chapter 1's theorem against Monte Carlo, in float64."""

import math

import pytest
import torch

from icl_lib import learners
from icl_lib.analysis.curves import error_curve
from icl_lib.analysis.curves import error_with_se as mc
from icl_lib.learners import risk
from icl_lib.tasks import linear_regression

D = 4


@pytest.fixture(scope="module")
def batches():
    return {
        sigma: linear_regression(
            60_000, 16, D, noise_std=sigma, seed=11, dtype=torch.float64
        )
        for sigma in (0.0, 0.5)
    }


def test_error_with_se_is_the_curve_and_its_standard_error(batches):
    batch = batches[0.5]
    mean, se = mc(learners.averaging, batch, 6)
    assert mean == pytest.approx(error_curve(learners.averaging, batch, [6])[0].item())
    xs, ys, xq, yq = batch.prompt(6)
    sq = (learners.averaging(xs, ys, xq) - yq) ** 2 / D
    assert se == pytest.approx(sq.std().item() / math.sqrt(sq.numel()))
    with pytest.raises(ValueError, match="batch: expected at least 2 prompts"):
        mc(learners.averaging, batch.select(torch.arange(1)), 6)


@pytest.mark.parametrize("sigma", [0.0, 0.5])
@pytest.mark.parametrize("k", [1, 3, 8, 15])
def test_averaging_and_gd_step(batches, sigma, k):
    batch = batches[sigma]
    for step in (1.0, 0.4, risk.best_gd_step(D, k, sigma)):
        value, se = mc(lambda a, b, c, lr=step: learners.gd(a, b, c, lr=lr), batch, k)
        assert abs(value - risk.gd_step_error(D, k, step, sigma)) < 5 * se
    assert risk.averaging_error(D, k, sigma) == pytest.approx(
        risk.gd_step_error(D, k, 1.0, sigma)
    )


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 6, 10])
def test_ols_noiseless(batches, k):
    value, se = mc(learners.ols, batches[0.0], k)
    assert abs(value - risk.ols_error(D, k)) < 5 * se + 1e-12


@pytest.mark.parametrize("k", [0, 1, 7, 9, 15])
def test_ols_noisy_finite_cases(batches, k):
    value, se = mc(learners.ols, batches[0.5], k)
    assert abs(value - risk.ols_error(D, k, 0.5)) < 5 * se


def test_ols_noisy_diverges_near_d():
    assert all(math.isinf(risk.ols_error(D, k, 0.5)) for k in (D - 1, D, D + 1))


def test_best_step_is_the_minimiser():
    for k in (1, 5, 20):
        c = risk.best_gd_step(D, k, 0.3)
        assert risk.gd_step_error(D, k, c, 0.3) < min(
            risk.gd_step_error(D, k, c + h, 0.3) for h in (-1e-3, 1e-3)
        )


def test_error_curve_uses_the_same_prompts(batches):
    curve = error_curve(learners.averaging, batches[0.0], [2, 5])
    assert curve.shape == (2,)
    assert curve[0].item() == pytest.approx(mc(learners.averaging, batches[0.0], 2)[0])


def test_bad_input():
    with pytest.raises(ValueError, match="d: expected an int >= 1"):
        risk.ols_error(0, 3)
    with pytest.raises(ValueError, match="noise_std: expected a number >= 0"):
        risk.averaging_error(3, 3, -0.1)


@pytest.mark.parametrize("sigma", [0.0, 0.5])
@pytest.mark.parametrize("k", [1, 4, 12])
def test_excess_error_of_the_closed_forms(sigma, k):
    floor = risk.noise_floor(D, sigma)
    assert floor == pytest.approx(sigma**2 / D, abs=1e-15)
    spread = D + 1 + sigma**2
    assert risk.excess_error(
        risk.best_gd_step_error(D, k, sigma), D, sigma
    ) == pytest.approx(spread / (k + spread), abs=1e-12)
    if sigma > 0 and k >= D + 2:
        assert risk.excess_error(
            risk.ols_error(D, k, sigma), D, sigma
        ) == pytest.approx(sigma**2 / (k - D - 1), abs=1e-12)


def test_excess_error_is_the_estimation_error(batches):
    """error / d - sigma^2 / d = E||w_hat - w||^2 / d for ridge, on the same prompts."""
    batch, k, lam = batches[0.5], 6, 0.25
    xs, ys, xq, yq = batch.prompt(k)
    gram = xs.transpose(1, 2) @ xs + lam * torch.eye(D, dtype=xs.dtype)
    w_hat = torch.linalg.solve(gram, xs.transpose(1, 2) @ ys.unsqueeze(-1))[..., 0]
    est = ((w_hat - batch.w) ** 2).sum(1) / D
    err = (learners.ridge(xs, ys, xq, lam=lam) - yq) ** 2 / D
    gap = risk.excess_error(err, D, 0.5) - est
    assert abs(gap.mean().item()) < 5 * gap.std().item() / math.sqrt(gap.numel())


def test_excess_ratio_on_tensors():
    errors = torch.tensor([0.3, 0.2, 0.1], dtype=torch.float64)
    reference = torch.tensor([0.2, 0.15, 0.075], dtype=torch.float64)
    ratio = risk.excess_ratio(errors, reference, D, 0.5)
    floor = 0.25 / D
    torch.testing.assert_close(
        ratio, (errors - floor) / (reference - floor), rtol=0, atol=1e-15
    )
    assert risk.excess_ratio(0.3, 0.3, D, 0.5) == pytest.approx(1.0, abs=1e-15)


def test_iid_best_gd_step_is_gaussian_for_kurtosis_3_and_holds_for_uniform_inputs():
    eta, error = risk.iid_best_gd_step(5, 8)
    assert eta == pytest.approx(risk.best_gd_step(5, 8))
    assert error == pytest.approx(5 * risk.best_gd_step_error(5, 8))
    # uniform inputs on [-1/2, 1/2]: variance 1/12, kurtosis 9/5 (Monte Carlo, float64)
    d, k = 4, 6
    eta, error = risk.iid_best_gd_step(d, k, variance=1 / 12, kurtosis=9 / 5)
    gen = torch.Generator().manual_seed(3)
    xs = torch.rand(200_000, k + 1, d, generator=gen, dtype=torch.float64) - 0.5
    w = torch.randn(200_000, d, generator=gen, dtype=torch.float64)
    ys = torch.einsum("bnd,bd->bn", xs, w)
    pred = learners.gd(xs[:, :k], ys[:, :k], xs[:, k], lr=eta)
    sq = (pred - ys[:, k]) ** 2
    assert abs(sq.mean().item() - error) < 4 * sq.std().item() / math.sqrt(sq.numel())
    # a step 10 % off is worse, in expectation
    worse = learners.gd(xs[:, :k], ys[:, :k], xs[:, k], lr=1.1 * eta)
    assert ((worse - ys[:, k]) ** 2).mean() > sq.mean()
    with pytest.raises(ValueError, match="k: expected at least 1 example"):
        risk.iid_best_gd_step(3, 0)
    with pytest.raises(ValueError, match="kurtosis"):
        risk.iid_best_gd_step(3, 2, kurtosis=0.5)
