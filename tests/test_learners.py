"""The classical learners against their closed forms, in float64."""

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from icl_lib import learners
from icl_lib.learners.linear import linear_attention_readout, similarity_slope
from icl_lib.tasks import linear_regression

F64 = torch.float64


def prompt(B=16, N=12, d=4, noise=0.3, seed=0, dtype=F64):
    batch = linear_regression(B, N + 1, d, noise_std=noise, seed=seed, dtype=dtype)
    return batch.prompt(N)[:3]


@settings(max_examples=25, deadline=None)
@given(N=st.integers(4, 20), d=st.integers(1, 4), seed=st.integers(0, 10_000))
@example(N=4, d=4, seed=21)  # a Gram matrix with condition number 1e8
def test_ols_solves_the_normal_equations(N, d, seed):
    xs, ys, xq = prompt(N=N, d=d, seed=seed)
    gram = xs.transpose(1, 2) @ xs
    w = torch.linalg.solve(gram, xs.transpose(1, 2) @ ys.unsqueeze(-1)).squeeze(-1)
    # Two backward-stable solvers agree to about cond(X^T X) times the rounding unit:
    # at N = d the Gram matrix of a few Gaussian rows can have a condition number of
    # 1e8, where 1e-9 alone is below float64's reach (seed 21, N = d = 4: 6e-8).
    tol = 1e-9 + 10 * torch.finfo(F64).eps * torch.linalg.cond(gram).max().item()
    torch.testing.assert_close(
        learners.ols(xs, ys, xq), (w * xq).sum(1), rtol=tol, atol=tol
    )


@settings(max_examples=25, deadline=None)
@given(N=st.integers(1, 6), extra=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_ols_is_the_min_norm_interpolant_below_d(N, extra, seed):
    d = N + extra
    xs, ys, xq = prompt(N=N, d=d, seed=seed)
    # min-norm interpolant: w = X^T (X X^T)^{-1} y
    w = (
        xs.transpose(1, 2)
        @ torch.linalg.solve(xs @ xs.transpose(1, 2), ys.unsqueeze(-1))
    ).squeeze(-1)
    torch.testing.assert_close(
        learners.ols(xs, ys, xq), (w * xq).sum(1), rtol=1e-8, atol=1e-8
    )
    # it interpolates the context
    torch.testing.assert_close(
        (xs @ w.unsqueeze(-1)).squeeze(-1), ys, rtol=1e-8, atol=1e-8
    )


def test_ridge_tends_to_ols_and_zero_lambda_is_ols():
    xs, ys, xq = prompt(N=3, d=6)
    torch.testing.assert_close(
        learners.ridge(xs, ys, xq, lam=0.0), learners.ols(xs, ys, xq)
    )
    torch.testing.assert_close(
        learners.ridge(xs, ys, xq, lam=1e-9),
        learners.ols(xs, ys, xq),
        rtol=1e-6,
        atol=1e-6,
    )


@settings(max_examples=25, deadline=None)
@given(
    N=st.integers(0, 15),
    d=st.integers(1, 5),
    tau=st.floats(0.3, 3.0),
    sigma=st.floats(0.05, 2.0),
    seed=st.integers(0, 10_000),
)
def test_ridge_equals_posterior_mean(N, d, tau, sigma, seed):
    xs, ys, xq = prompt(N=N, d=d, seed=seed)
    post = learners.bayes_posterior_predictive(
        xs, ys, xq, prior_std=tau, noise_std=sigma
    )
    if N == 0:
        torch.testing.assert_close(post.mean, torch.zeros_like(post.mean))
        torch.testing.assert_close(post.var, tau**2 * (xq**2).sum(1) + sigma**2)
        return
    torch.testing.assert_close(
        post.mean,
        learners.ridge(xs, ys, xq, lam=sigma**2 / tau**2),
        rtol=1e-8,
        atol=1e-8,
    )


def test_ridge_minimises_its_objective():
    xs, ys, xq = prompt(N=8, d=3)
    lam = 0.7
    gram = xs.transpose(1, 2) @ xs + lam * torch.eye(3, dtype=F64)
    w = torch.linalg.solve(gram, xs.transpose(1, 2) @ ys.unsqueeze(-1)).squeeze(-1)
    grad = (
        2
        * (
            xs.transpose(1, 2) @ ((xs @ w.unsqueeze(-1)).squeeze(-1) - ys).unsqueeze(-1)
        ).squeeze(-1)
        + 2 * lam * w
    )
    assert grad.abs().max() < 1e-10
    torch.testing.assert_close(learners.ridge(xs, ys, xq, lam=lam), (w * xq).sum(1))


def test_posterior_variance_against_sampling():
    # the predictive variance is the variance of <w, x_q> + noise under the Gaussian
    # posterior
    xs, ys, xq = prompt(B=1, N=6, d=3)
    tau, sigma = 1.0, 0.5
    post = learners.bayes_posterior_predictive(
        xs, ys, xq, prior_std=tau, noise_std=sigma
    )
    A = xs[0].T @ xs[0] / sigma**2 + torch.eye(3, dtype=F64) / tau**2
    cov = torch.linalg.inv(A)
    mean = cov @ xs[0].T @ ys[0] / sigma**2
    gen = torch.Generator().manual_seed(1)
    w = (
        mean
        + torch.randn(200_000, 3, generator=gen, dtype=F64)
        @ torch.linalg.cholesky(cov).T
    )
    y = w @ xq[0] + sigma * torch.randn(200_000, generator=gen, dtype=F64)
    assert (
        abs(y.mean().item() - post.mean.item()) < 5 * (post.var.item() / 200_000) ** 0.5
    )
    assert abs(y.var().item() / post.var.item() - 1) < 0.02


@settings(max_examples=25, deadline=None)
@given(
    N=st.integers(1, 15),
    d=st.integers(1, 5),
    lr=st.floats(-2.0, 2.0),
    seed=st.integers(0, 10_000),
)
def test_one_gd_step_is_averaging_times_lr(N, d, lr, seed):
    xs, ys, xq = prompt(N=N, d=d, seed=seed)
    torch.testing.assert_close(
        learners.gd(xs, ys, xq, lr=lr),
        lr * learners.averaging(xs, ys, xq),
        rtol=1e-10,
        atol=1e-10,
    )


def test_gd_converges_to_ols_with_a_small_enough_step():
    xs, ys, xq = prompt(N=30, d=3, noise=0.5)
    # step below 2 / lambda_max of (1/N) X^T X guarantees convergence
    lam_max = torch.linalg.eigvalsh(xs.transpose(1, 2) @ xs / 30).max().item()
    torch.testing.assert_close(
        learners.gd(xs, ys, xq, lr=1.0 / lam_max, steps=3000),
        learners.ols(xs, ys, xq),
        rtol=1e-8,
        atol=1e-8,
    )


def test_gd_two_steps_by_hand():
    xs, ys, xq = prompt(N=5, d=2)
    lr, N = 0.3, 5
    w = torch.zeros(xs.shape[0], 2, dtype=F64)
    for _ in range(2):
        w = w - lr / N * torch.einsum(
            "bnd,bn->bd", xs, torch.einsum("bnd,bd->bn", xs, w) - ys
        )
    torch.testing.assert_close(learners.gd(xs, ys, xq, lr=lr, steps=2), (w * xq).sum(1))


def test_knn_by_brute_force():
    xs, ys, xq = prompt(B=4, N=9, d=2)
    out = learners.knn(xs, ys, xq, k=3)
    for b in range(4):
        order = sorted(range(9), key=lambda i: ((xs[b, i] - xq[b]) ** 2).sum().item())
        assert abs(out[b].item() - ys[b, order[:3]].mean().item()) < 1e-12


def test_empty_context_predicts_zero():
    xs, ys, xq = prompt(N=0, d=3)
    for f in (
        learners.ols,
        learners.averaging,
        lambda a, b, c: learners.ridge(a, b, c, lam=1.0),
        lambda a, b, c: learners.gd(a, b, c, lr=1.0),
    ):
        assert torch.equal(f(xs, ys, xq), torch.zeros(xs.shape[0], dtype=F64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_learners_keep_the_dtype_and_shape(dtype):
    xs, ys, xq = prompt(B=5, N=7, d=3, dtype=dtype)
    outs = [
        learners.ols(xs, ys, xq),
        learners.ridge(xs, ys, xq, lam=0.1),
        learners.gd(xs, ys, xq, lr=0.5),
        learners.averaging(xs, ys, xq),
        learners.knn(xs, ys, xq),
        *learners.bayes_posterior_predictive(xs, ys, xq, noise_std=0.5),
    ]
    for out in outs:
        assert out.shape == (5,) and out.dtype == dtype


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda xs, ys, xq: learners.ols(xs[0], ys, xq), "xs: expected 3 dimensions"),
        (
            lambda xs, ys, xq: learners.ols(xs, ys[:, :-1], xq),
            r"ys: expected shape \(B, N\)",
        ),
        (
            lambda xs, ys, xq: learners.ols(xs, ys, xq[:, :-1]),
            r"x_query: expected shape \(B, d\)",
        ),
        (
            lambda xs, ys, xq: learners.ols(xs, ys.float(), xq),
            "ys: expected dtype torch.float64",
        ),
        (
            lambda xs, ys, xq: learners.ols(xs.long(), ys, xq),
            "xs: expected dtype float32 or float64",
        ),
        (
            lambda xs, ys, xq: learners.ols(xs.numpy(), ys, xq),
            "xs: expected a torch.Tensor",
        ),
        (
            lambda xs, ys, xq: learners.ridge(xs, ys, xq, lam=-0.1),
            "lam: expected a number >= 0",
        ),
        (lambda xs, ys, xq: learners.knn(xs, ys, xq, k=8), "k: expected at most N = 7"),
        (lambda xs, ys, xq: learners.knn(xs, ys, xq, k=0), "k: expected an int >= 1"),
        (
            lambda xs, ys, xq: learners.gd(xs, ys, xq, lr=0.1, steps=1.5),
            "steps: expected an int",
        ),
        (
            lambda xs, ys, xq: learners.bayes_posterior_predictive(
                xs, ys, xq, noise_std=0.0
            ),
            "noise_std: expected a number > 0",
        ),
    ],
)
def test_bad_input_is_named(call, match):
    xs, ys, xq = prompt(B=3, N=7, d=2)
    with pytest.raises((ValueError, TypeError), match=match):
        call(xs, ys, xq)


@pytest.mark.parametrize("N", [0, 1, 7, 20])
def test_linear_attention_readout_is_one_gd_step(N):
    """scale * sum_i <x_q, x_i> y_i read from Z equals GD with lr = scale * N."""
    xs, ys, xq = prompt(B=32, N=N, d=5, noise=0.1, seed=3)
    for scale in (0.77 / max(N, 1), 1.0):
        torch.testing.assert_close(
            linear_attention_readout(xs, ys, xq, scale=scale),
            learners.gd(xs, ys, xq, lr=scale * N),
            rtol=0,
            atol=1e-12,
        )


def test_similarity_slope_is_a_one_dimensional_fit():
    xs, ys, xq = prompt(B=16, N=9, d=3, seed=4)
    s = torch.einsum("bnd,bd->bn", xs, xq)
    slope = torch.linalg.lstsq(s.unsqueeze(-1), ys.unsqueeze(-1)).solution[:, 0, 0]
    torch.testing.assert_close(similarity_slope(xs, ys, xq), slope, rtol=1e-10, atol=0)
    empty = similarity_slope(xs[:, :0], ys[:, :0], xq)
    assert torch.equal(empty, torch.zeros_like(empty))


def test_similarity_slope_tends_to_the_rescaled_label():
    """For large N the seed's value estimates <w, x_q> / ||x_q||^2, not <w, x_q>."""
    batch = linear_regression(64, 20_001, 3, seed=5, dtype=F64)
    xs, ys, xq, _ = batch.prompt(20_000)
    rescaled = (batch.w * xq).sum(1) / (xq**2).sum(1)
    rel = ((similarity_slope(xs, ys, xq) - rescaled) ** 2).mean() / (rescaled**2).mean()
    assert rel.item() < 1e-2
