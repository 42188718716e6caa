"""Every construction equals its learner in float64 (von Oswald's Proposition 1, GD++,
Ahn's optimum)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icl_lib.learners import gd, gd_plus_plus, preconditioned_gd
from icl_lib.models.lsa import LinearSelfAttention, lsa_layer
from icl_lib.prompts import token_matrix
from icl_lib.tasks import linear_regression, uniform_linear_regression
from icl_lib.theory import gd_construction as C

F64 = torch.float64


def prompt(B=4, N=6, d=3, seed=0):
    return uniform_linear_regression(B, N + 1, d, seed=seed, dtype=F64).prompt(N)


@settings(max_examples=25, deadline=None)
@given(
    N=st.integers(1, 12),
    d=st.integers(1, 6),
    lr=st.floats(-5, 20),
    seed=st.integers(0, 9999),
)
def test_proposition_1_one_layer_is_one_gd_step_from_any_w0(N, d, lr, seed):
    xs, ys, xq, _ = prompt(N=N, d=d, seed=seed)
    w0 = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=F64)
    Z = token_matrix(xs, ys, xq)
    Z[:, -1, -1] = -(xq @ w0)  # the query enters as (x_q, -W_0 x_q)
    out = lsa_layer(Z, *[m.unsqueeze(0) for m in C.gd_products(d, lr, N, w0=w0)])
    grad = torch.einsum("bnd,bn->bd", xs, xs @ w0 - ys) / N  # grad L(W_0)
    dW = -lr * grad
    torch.testing.assert_close(
        out[:, :, :d], Z[:, :, :d], rtol=0, atol=0
    )  # inputs untouched
    torch.testing.assert_close(
        out[:, :N, d], ys - (xs * dW.unsqueeze(1)).sum(-1), rtol=1e-10, atol=1e-10
    )
    torch.testing.assert_close(
        out[:, -1, d], -(xq * (w0 + dW)).sum(-1), rtol=1e-10, atol=1e-10
    )


def test_von_oswald_factors_multiply_to_the_products():
    f = C.gd_factors(4, 2.5, 7, w0=torch.arange(4, dtype=F64))
    kq, pv = C.gd_products(4, 2.5, 7, w0=torch.arange(4, dtype=F64))
    torch.testing.assert_close(f["W_K"].T @ f["W_Q"], kq)
    torch.testing.assert_close(f["P"] @ f["W_V"], pv)


@settings(max_examples=15, deadline=None)
@given(
    K=st.integers(1, 4),
    N=st.integers(2, 10),
    d=st.integers(1, 5),
    lr=st.floats(0.1, 10),
    gamma=st.floats(0, 0.5),
    seed=st.integers(0, 9999),
)
def test_k_layers_are_k_steps_of_gd_and_gd_plus_plus(K, N, d, lr, gamma, seed):
    xs, ys, xq, _ = prompt(N=N, d=d, seed=seed)
    model = C.lsa_with_products(d, [C.gd_products(d, lr, N)] * K)
    torch.testing.assert_close(
        model(xs, ys, xq), gd(xs, ys, xq, lr, K), rtol=1e-9, atol=1e-10
    )
    model = C.lsa_with_products(d, [C.gd_plus_plus_products(d, lr, gamma, N)] * K)
    torch.testing.assert_close(
        model(xs, ys, xq), gd_plus_plus(xs, ys, xq, lr, gamma, K), rtol=1e-9, atol=1e-10
    )


def test_gd_plus_plus_maps_the_eigenvalues_of_the_input_gram_matrix():
    xs, ys, xq, _ = prompt(N=8, d=3, seed=5)
    gamma = 0.2
    H = xs.transpose(1, 2) @ xs
    Z = token_matrix(xs, ys, xq)
    out = lsa_layer(
        Z, *[m.unsqueeze(0) for m in C.gd_plus_plus_products(3, 1.0, gamma, 8)]
    )
    x_new = out[:, :8, :3]
    mu = torch.linalg.eigvalsh(H)
    torch.testing.assert_close(
        torch.linalg.eigvalsh(x_new.transpose(1, 2) @ x_new),
        mu * (1 - gamma * mu) ** 2,
        rtol=1e-9,
        atol=1e-10,
    )


def test_preconditioned_construction_and_its_effective_preconditioner():
    xs, ys, xq, _ = prompt(N=7, d=3, seed=2)
    G = torch.randn(3, 3, generator=torch.Generator().manual_seed(0), dtype=F64)
    model = C.lsa_with_products(3, [C.preconditioned_gd_products(G, 7)])
    torch.testing.assert_close(
        model(xs, ys, xq), preconditioned_gd(xs, ys, xq, G), rtol=1e-10, atol=1e-12
    )
    G_eff, stray = C.effective_preconditioner(model, 7)
    torch.testing.assert_close(G_eff, G, rtol=1e-12, atol=1e-12)
    assert stray == 0.0
    # a rescaled pair (c W_KQ, W_PV / c) is the same model with the same G_eff
    kq, pv = C.preconditioned_gd_products(G, 7)
    G2, _ = C.effective_preconditioner(C.lsa_with_products(3, [(4 * kq, pv / 4)]), 7)
    torch.testing.assert_close(G2, G, rtol=1e-12, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(d=st.integers(1, 6), n=st.integers(1, 40), seed=st.integers(0, 9999))
def test_ahn_preconditioner_is_a_stationary_point_and_the_minimum(d, n, seed):
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(d, d, generator=gen, dtype=F64)
    cov = A @ A.T + 0.1 * torch.eye(d, dtype=F64)
    G = C.ahn_preconditioner(cov, n).requires_grad_(True)
    loss = C.preconditioned_gd_population_loss(G, cov, n)
    (grad,) = torch.autograd.grad(loss, G)
    assert grad.abs().max() <= 1e-9 * (1 + cov.abs().max() ** 3)
    # the loss is a convex quadratic in G: any perturbation raises it
    E = torch.randn(d, d, generator=gen, dtype=F64)
    assert (
        C.preconditioned_gd_population_loss(G.detach() + 1e-3 * E, cov, n)
        > loss.detach()
    )


@given(d=st.integers(1, 8), n=st.integers(1, 50))
@settings(max_examples=20, deadline=None)
def test_ahn_preconditioner_for_identity_is_the_best_plain_step(d, n):
    G = C.ahn_preconditioner(torch.eye(d, dtype=F64), n)
    torch.testing.assert_close(
        G, n / (n + d + 1) * torch.eye(d, dtype=F64), rtol=1e-12, atol=1e-14
    )


def test_population_loss_matches_monte_carlo():
    d, n, B = 3, 5, 200_000
    cov = C.ahn_covariance((1.0, 0.5, 0.2), seed=1)
    G = torch.tensor([[0.5, 0.1, 0.0], [0.1, 0.8, -0.2], [0.0, -0.2, 1.0]], dtype=F64)
    batch = linear_regression(B, n + 1, d, cov=cov, seed=0, dtype=F64)
    xs, ys, xq, yq = batch.prompt(n)
    err = (preconditioned_gd(xs, ys, xq, G) - yq) ** 2
    se = float(err.std() / B**0.5)
    assert (
        abs(float(err.mean()) - float(C.preconditioned_gd_population_loss(G, cov, n)))
        < 4 * se
    )


def test_ahn_covariance_has_the_requested_spectrum():
    cov = C.ahn_covariance(seed=3)
    torch.testing.assert_close(
        torch.linalg.eigvalsh(cov),
        torch.tensor([0.0625, 0.25, 1, 1, 1], dtype=F64),
        rtol=1e-12,
        atol=1e-12,
    )
    assert not torch.allclose(
        cov, torch.diag(torch.diagonal(cov))
    )  # rotated, not diagonal


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="w0: expected shape"):
        C.gd_products(3, 1.0, 5, w0=torch.zeros(4, dtype=F64))
    with pytest.raises(TypeError, match="lr"):
        C.gd_products(3, "big", 5)
    with pytest.raises(ValueError, match="precond: expected a square"):
        C.preconditioned_gd_products(torch.zeros(2, 3, dtype=F64), 5)
    with pytest.raises(ValueError, match="cov: expected a square"):
        C.ahn_preconditioner(torch.zeros(2, 3, dtype=F64), 5)
    with pytest.raises(ValueError, match="products: expected at least one"):
        C.lsa_with_products(3, [])
    with pytest.raises(ValueError, match="one-layer"):
        C.effective_preconditioner(LinearSelfAttention(3, n_layers=2), 5)
    with pytest.raises(ValueError, match="eigenvalues"):
        C.ahn_covariance((1.0, -1.0))


def test_best_multiple_population_loss_is_the_minimum_over_the_scale():
    cov = C.ahn_covariance(seed=1)
    for direction in (torch.eye(5, dtype=torch.float64), torch.linalg.inv(cov)):
        best = C.best_multiple_population_loss(direction, cov, 20)
        grid = [
            float(C.preconditioned_gd_population_loss(c * direction, cov, 20))
            for c in torch.linspace(0.0, 3.0, 3001, dtype=torch.float64)
        ]
        assert best == pytest.approx(min(grid), abs=1e-6) and best <= min(grid) + 1e-12
    # the optimum itself is its own best multiple (c = 1)
    G = C.ahn_preconditioner(cov, 20)
    assert C.best_multiple_population_loss(G, cov, 20) == pytest.approx(
        float(C.preconditioned_gd_population_loss(G, cov, 20)), rel=1e-12
    )
    with pytest.raises(ValueError, match="direction: expected a finite, nonzero"):
        C.best_multiple_population_loss(torch.zeros(5, 5, dtype=torch.float64), cov, 20)


def test_read_gd_plus_plus_recovers_the_construction_at_any_scale():
    layer = C.lsa_with_products(4, [C.gd_plus_plus_products(4, 6.0, 0.15, 10)])
    reading = C.read_gd_plus_plus(layer, 10)
    assert reading["eta"] == pytest.approx(6.0) and reading["gamma"] == pytest.approx(
        0.15
    )
    assert reading["stray"] == pytest.approx(0.0, abs=1e-12)
    kq, pv = layer.kq(0), layer.pv(0)
    with torch.no_grad():
        layer.set_products(0, 3.0 * kq, pv / 3.0)  # the scalar freedom changes nothing
        assert C.read_gd_plus_plus(layer, 10)["eta"] == pytest.approx(6.0)
        layer.set_products(0, kq, pv + 0.01)  # off-pattern weights show up as stray
    assert C.read_gd_plus_plus(layer, 10)["stray"] > 0
