"""Chapter 8's identities in float64: attention is Nadaraya-Watson, functional GD,
kernel ridge = GP mean."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icl_lib.kernels import kernel_matrix
from icl_lib.learners import (
    attention_regression,
    functional_gd,
    functional_gd_path,
    gd,
    kernel_ridge,
    nadaraya_watson,
    nadaraya_watson_weights,
)
from icl_lib.learners.kernel import (
    best_nadaraya_watson_error,
    fit_attention_temperature,
    majority_vote,
)
from icl_lib.tasks import (
    ConceptMixture,
    gp_regression,
    nearest_demonstrations,
    psd_projection,
    sphere_classification,
    sphere_inputs,
)

F64 = torch.float64


def _prompt(seed, B, N, d, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    xs = scale * torch.randn(B, N, d, generator=g, dtype=F64)
    ys = torch.randn(B, N, generator=g, dtype=F64)
    xq = scale * torch.randn(B, d, generator=g, dtype=F64)
    return xs, ys, xq


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    N=st.integers(1, 12),
    d=st.integers(1, 6),
    temperature=st.floats(0.2, 5.0),
)
def test_softmax_attention_is_gaussian_nadaraya_watson(seed, N, d, temperature):
    xs, ys, xq = _prompt(seed, 3, N, d)
    attn = attention_regression(xs, ys, xq, temperature)
    nw = nadaraya_watson(xs, ys, xq, "gaussian", bandwidth=math.sqrt(temperature))
    assert (attn - nw).abs().max().item() <= 1e-12


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    N=st.integers(1, 12),
    d=st.integers(2, 6),
    temperature=st.floats(0.2, 5.0),
)
def test_on_the_sphere_attention_needs_no_key_bias(seed, N, d, temperature):
    g = torch.Generator().manual_seed(seed)
    xs = sphere_inputs(2, N + 1, d, seed=g, dtype=F64)
    ys = torch.randn(2, N, generator=g, dtype=F64)
    attn = attention_regression(xs[:, :N], ys, xs[:, N], temperature, key_bias=False)
    gauss = nadaraya_watson(
        xs[:, :N], ys, xs[:, N], "gaussian", bandwidth=math.sqrt(temperature)
    )
    expo = nadaraya_watson(xs[:, :N], ys, xs[:, N], "exp", temperature=temperature)
    assert (attn - gauss).abs().max().item() <= 1e-12
    assert (attn - expo).abs().max().item() <= 1e-12


def test_off_the_sphere_the_key_bias_matters():
    xs, ys, xq = _prompt(0, 4, 6, 3, scale=2.0)
    without = attention_regression(xs, ys, xq, 1.0, key_bias=False)
    nw = nadaraya_watson(xs, ys, xq, "gaussian", bandwidth=1.0)
    assert (without - nw).abs().max().item() > 1e-3


def test_nadaraya_watson_weights_are_probabilities_and_small_bandwidth_is_1nn():
    xs, ys, xq = _prompt(1, 5, 8, 3)
    w = nadaraya_watson_weights(xs, xq, "gaussian", bandwidth=0.7)
    assert torch.allclose(w.sum(-1), torch.ones(5, dtype=F64))
    assert bool((w >= 0).all())
    nearest = ((xs - xq.unsqueeze(1)) ** 2).sum(-1).argmin(1)
    pred = nadaraya_watson(xs, ys, xq, "gaussian", bandwidth=0.02)
    assert torch.allclose(
        pred, ys.gather(1, nearest.unsqueeze(1)).squeeze(1), atol=1e-8
    )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    N=st.integers(1, 10),
    d=st.integers(1, 5),
    steps=st.integers(0, 6),
    lr=st.floats(0.05, 1.0),
)
def test_functional_gd_with_the_linear_kernel_is_chapter_2s_gd(seed, N, d, steps, lr):
    xs, ys, xq = _prompt(seed, 3, N, d)
    lr = lr / (
        1.0 + float(torch.linalg.matrix_norm(xs, ord=2).max()) ** 2 / N
    )  # a stable step
    f = functional_gd(xs, ys, xq, "linear", lr=lr, steps=steps)
    w = gd(xs, ys, xq, lr=lr, steps=steps)
    assert (f - w).abs().max().item() <= 1e-10


@pytest.mark.parametrize(
    "kernel,params", [("exp", {}), ("relu", {}), ("gaussian", {"bandwidth": 0.8})]
)
def test_functional_gd_closed_form(kernel, params):
    """f_t(x_q) = K(x_q, X) K^{-1} (I - (I - lr K / N)^t) y, and one step is (lr/N) sum
    K(x_q, x_i) y_i."""
    xs, ys, xq = _prompt(2, 3, 7, 4, scale=0.5)
    N, lr, t = 7, 0.3, 5
    K = kernel_matrix(xs, xs, kernel, **params)
    kq = kernel_matrix(xq.unsqueeze(1), xs, kernel, **params)
    one = functional_gd(xs, ys, xq, kernel, lr=lr, steps=1, **params)
    assert torch.allclose(one, lr / N * (kq.squeeze(1) * ys).sum(-1), atol=1e-12)
    # alpha_t = (lr/N) sum_{j<t} (I - lr K / N)^j y (no inverse: valid for singular K
    # too)
    M = torch.eye(N, dtype=F64) - lr / N * K
    alpha, power = torch.zeros_like(ys), ys.clone()
    for _ in range(t):
        alpha = alpha + lr / N * power
        power = (M @ power.unsqueeze(-1)).squeeze(-1)
    closed = (kq.squeeze(1) * alpha).sum(-1)
    assert torch.allclose(
        functional_gd(xs, ys, xq, kernel, lr=lr, steps=t, **params), closed, atol=1e-12
    )


def test_functional_gd_converges_to_the_kernel_interpolant():
    g = torch.Generator().manual_seed(3)
    xs = sphere_inputs(4, 8, 5, seed=g, dtype=F64)
    ys, xq = torch.randn(4, 7, generator=g, dtype=F64), xs[:, 7]
    xs = xs[:, :7]
    K = kernel_matrix(xs, xs, "gaussian", bandwidth=0.5)
    lr = 7 / float(
        torch.linalg.eigvalsh(K).max()
    )  # the largest stable step is 2N / lambda_max
    path = functional_gd_path(xs, ys, xq, "gaussian", lr=lr, steps=4000, bandwidth=0.5)
    interp = kernel_ridge(xs, ys, xq, "gaussian", lam=1e-300, bandwidth=0.5)
    assert (path[:, -1] - interp).abs().max().item() <= 1e-8
    gaps = (path - interp.unsqueeze(1)).abs().max(0).values
    assert gaps[10] < gaps[1] and gaps[1000] < gaps[10]


@pytest.mark.parametrize("kernel", ["linear", "exp", "gaussian"])
def test_kernel_ridge_is_the_gp_posterior_mean(kernel):
    batch = gp_regression(16, 12, 5, kernel, noise_std=0.3, seed=4, dtype=F64)
    xs, ys, xq, _ = batch.prompt(11)
    assert torch.allclose(
        batch.bayes_prediction(11),
        kernel_ridge(xs, ys, xq, kernel, lam=0.09),
        atol=1e-10,
    )


def test_the_relu_kernel_is_not_positive_definite_and_the_projection_fixes_it():
    xs = sphere_inputs(50, 15, 5, seed=5, dtype=F64)
    gram = kernel_matrix(xs, xs, "relu")
    assert (
        torch.linalg.eigvalsh(gram)[:, 0].max().item() < -1e-3
    )  # every Gram matrix here is indefinite
    proj = psd_projection(gram)
    assert torch.linalg.eigvalsh(proj)[:, 0].min().item() >= -1e-12
    assert torch.allclose(psd_projection(proj), proj, atol=1e-12)
    exp_gram = kernel_matrix(xs, xs, "exp")
    assert torch.allclose(psd_projection(exp_gram), exp_gram, atol=1e-10)


def test_gp_samples_have_the_kernel_covariance():
    batch = gp_regression(20_000, 3, 5, "exp", noise_std=0.0, seed=6, dtype=F64)
    # E[y_i^2] = K(x, x) = e on the sphere; the Monte-Carlo error is about e * sqrt(2 /
    # 20000) per entry
    second = (batch.ys**2).mean().item()
    assert abs(second - math.e) < 5 * math.e * math.sqrt(2 / 60_000)


def test_samplers_are_seeded_and_on_the_sphere():
    a = gp_regression(4, 6, 5, "relu", seed=7)
    b = gp_regression(4, 6, 5, "relu", seed=7)
    assert torch.equal(a.ys, b.ys) and torch.equal(a.xs, b.xs)
    assert torch.allclose(a.xs.norm(dim=-1), torch.ones(4, 6))
    c = sphere_classification(8, 10, 5, seed=8)
    assert set(c.ys.unique().tolist()) <= {-1.0, 1.0}
    assert torch.equal(c.ys, torch.where(c.latent >= 0, 1.0, -1.0))


def test_nearest_demonstrations_keeps_the_most_similar_last():
    pool = sphere_inputs(3, 20, 5, seed=9, dtype=F64)
    labels = torch.arange(20, dtype=F64).expand(3, 20)
    xq = pool[:, 0] * 0.9 + 0.1 * pool[:, 1]
    xs, ys = nearest_demonstrations(pool, labels, xq, 4)
    sims = (xs * xq.unsqueeze(1)).sum(-1)
    assert bool((sims[:, 1:] >= sims[:, :-1]).all())
    full = (pool * xq.unsqueeze(1)).sum(-1)
    assert torch.allclose(sims[:, -1], full.max(1).values)
    assert torch.equal(ys[:, -1], labels[0, 0].expand(3))


def test_concept_mixture_kernel_regression_is_unbiased_for_the_concept_predictive():
    """E[e(y) K(x_q, x)] over x ~ pretraining, y ~ P(y | x, theta) is exactly P(y | x_q,
    theta)."""
    cm = ConceptMixture(n_inputs=30, n_states=5, n_concepts=4, n_classes=3, seed=10)
    V = cm.n_inputs
    every = torch.arange(V).unsqueeze(0)  # all symbols, each with weight 1 / V
    for theta in range(cm.n_concepts):
        concept = torch.tensor([theta])
        probs = cm.label_probs(concept, every)[0]  # (V, C)
        for q in (0, 7, 29):
            k = cm.kernel(torch.tensor([[q]]), every)[0, 0]  # (V,)
            expected = (k.unsqueeze(1) * probs).sum(0) / V
            assert torch.allclose(
                expected, cm.label_probs(concept, torch.tensor([[q]]))[0, 0], atol=1e-12
            )
            assert (
                abs(k.mean().item() - 1.0) < 1e-12
            )  # E[K(x_q, x)] = 1: the normaliser tends to 1


def test_concept_mixture_shifted_demonstrations_have_a_biased_limit():
    """With inputs from p_theta, E[e(y) K(x_q, x)] = W_theta^T Sigma_theta Sigma^{-1}
    phi(x_q) (exercise)."""
    cm = ConceptMixture(shift=1.0, seed=13)
    every = torch.arange(cm.n_inputs).unsqueeze(0)
    theta, q = 2, 5
    p = cm.input_probs[theta]
    probs = cm.label_probs(torch.tensor([theta]), every)[0]
    k = cm.kernel(torch.tensor([[q]]), every)[0, 0]
    expected = ((p * k).unsqueeze(1) * probs).sum(0)
    sigma_theta = (cm.beliefs.T * p) @ cm.beliefs
    limit = (
        cm.emissions[theta].T
        @ sigma_theta
        @ torch.linalg.inv(cm.second_moment)
        @ cm.beliefs[q]
    )
    assert torch.allclose(expected, limit, atol=1e-12)
    truth = cm.label_probs(torch.tensor([theta]), torch.tensor([[q]]))[0, 0]
    assert (limit - truth).abs().sum().item() > 0.05


def test_concept_mixture_bayes_predictive_concentrates_on_the_true_concept():
    cm = ConceptMixture(seed=11)
    concepts, inputs, labels = cm.sample(200, 201, seed=12)
    bayes = cm.bayes_predictive(inputs[:, :200], labels[:, :200], inputs[:, 200])
    assert torch.allclose(bayes.sum(-1), torch.ones(200, dtype=F64))
    truth = cm.label_probs(concepts, inputs[:, 200:])[:, 0]
    assert (bayes - truth).abs().sum(-1).mean().item() < 0.05


def test_bad_input_is_rejected_with_a_named_argument():
    xs, ys, xq = _prompt(0, 2, 3, 2)
    with pytest.raises(ValueError, match="kernel"):
        kernel_matrix(xs, xs, "cosine")
    with pytest.raises(ValueError, match="temperature"):
        attention_regression(xs, ys, xq, 0.0)
    with pytest.raises(ValueError, match="kernel"):
        nadaraya_watson(xs, ys, xq, "linear")
    with pytest.raises(ValueError, match="x_query"):
        nadaraya_watson(xs, ys, xq[:, :1], "gaussian")
    with pytest.raises(TypeError, match="ys"):
        kernel_ridge(xs, ys.float(), xq, "exp")
    with pytest.raises(ValueError, match="lam"):
        kernel_ridge(xs, ys, xq, "exp", lam=0.0)
    with pytest.raises(ValueError, match="steps"):
        functional_gd(xs, ys, xq, "exp", lr=0.1, steps=-1)
    with pytest.raises(ValueError, match="k"):
        nearest_demonstrations(xs, ys, xq, 4)
    with pytest.raises(ValueError, match="kernel"):
        gp_regression(2, 3, 5, "poly")
    with pytest.raises(ValueError, match="n_inputs"):
        ConceptMixture(n_inputs=3, n_states=5)


@pytest.mark.parametrize("activation", ["linear", "relu", "exp"])
def test_kernel_attention_layers_are_functional_gd_steps(activation):
    """Cheng et al., Prop. 3.1: B = C = I, r = eta makes layer t the t-th functional GD
    step."""
    from icl_lib.models.kernel_attention import KernelAttentionICL

    g = torch.Generator().manual_seed(14)
    xs = sphere_inputs(5, 11, 5, seed=g, dtype=F64)
    ys = torch.randn(5, 10, generator=g, dtype=F64)
    model = KernelAttentionICL.functional_gd(5, 4, activation, step=0.25)
    layers = model(xs[:, :10], ys, xs[:, 10], every_layer=True)
    path = functional_gd_path(xs[:, :10], ys, xs[:, 10], activation, lr=0.25, steps=4)
    assert (layers - path).abs().max().item() <= 1e-12


def test_kernel_attention_rejects_bad_input():
    from icl_lib.models.kernel_attention import KernelAttentionICL

    with pytest.raises(ValueError, match="activation"):
        KernelAttentionICL(5, 2, "softmax")
    model = KernelAttentionICL(5, 2, "exp")
    xs, ys, xq = _prompt(0, 2, 3, 4)
    with pytest.raises(ValueError, match="xs"):
        model(xs, ys, xq)


def test_functional_gd_with_a_singular_gram_converges_to_the_min_norm_fit():
    # linear kernel, N = 14 > d = 5: K(X, X) has rank 5 and no inverse; the limit is
    # K(x_q, X) K^+ y, i.e. minimum-norm least squares x_q^T X^+ y (not kernel ridge)
    xs, ys, xq = _prompt(4, 3, 14, 5)
    gram = kernel_matrix(xs, xs, "linear")
    assert (torch.linalg.matrix_rank(gram) == 5).all()
    lr = 14 / float(torch.linalg.eigvalsh(gram).max())
    path = functional_gd_path(xs, ys, xq, "linear", lr=lr, steps=3000)
    kq = kernel_matrix(xq.unsqueeze(1), xs, "linear").squeeze(1)
    limit = (kq.unsqueeze(1) @ torch.linalg.pinv(gram) @ ys.unsqueeze(-1)).reshape(3)
    min_norm = (xq.unsqueeze(1) @ torch.linalg.pinv(xs) @ ys.unsqueeze(-1)).reshape(3)
    assert (limit - min_norm).abs().max().item() <= 1e-8
    assert (path[:, -1] - limit).abs().max().item() <= 1e-8
    ridge = kernel_ridge(xs, ys, xq, "linear", lam=0.5)
    assert (path[:, -1] - ridge).abs().max().item() > 1e-3
    # one step is the unnormalised kernel sum (lr / N) sum_i K(x_q, x_i) y_i
    one = functional_gd(xs, ys, xq, "exp", lr=0.7, steps=1)
    kq_exp = kernel_matrix(xq.unsqueeze(1), xs, "exp").squeeze(1)
    assert (one - 0.7 / 14 * (kq_exp * ys).sum(-1)).abs().max().item() <= 1e-12


def test_majority_vote_is_the_flat_kernel_limit_and_fits_are_the_best_of_the_grid():
    xs, ys, xq = _prompt(5, 64, 9, 3)
    vote = majority_vote(xs, ys, xq)
    assert torch.allclose(vote, ys.mean(-1), atol=0, rtol=0)
    wide = nadaraya_watson(xs, ys, xq, "gaussian", bandwidth=1e6)
    assert (vote - wide).abs().max().item() <= 1e-8
    # the fitted temperature recovers the one that produced the target labels
    sph = sphere_inputs(512, 10, 4, seed=6, dtype=F64)
    labels = torch.where(torch.randn(512, 9, dtype=F64) >= 0, 1.0, -1.0).to(F64)
    grid = [0.05, 0.2, 1.0, 5.0]
    target = torch.where(
        attention_regression(sph[:, :9], labels, sph[:, 9], 0.2, key_bias=False) >= 0,
        1.0,
        -1.0,
    ).to(F64)
    t, agreement = fit_attention_temperature(
        sph[:, :9], labels, sph[:, 9], target, grid
    )
    assert t == 0.2 and agreement == 1.0
    error, h = best_nadaraya_watson_error(xs, ys, xq, ys[:, 0], [0.1, 1.0, 10.0])
    errors = [
        ((nadaraya_watson(xs, ys, xq, "gaussian", bandwidth=b) - ys[:, 0]) ** 2)
        .mean()
        .item()
        for b in (0.1, 1.0, 10.0)
    ]
    assert error == min(errors) and h == [0.1, 1.0, 10.0][errors.index(error)]
    with pytest.raises(ValueError, match="temperatures"):
        fit_attention_temperature(sph[:, :9], labels, sph[:, 9], target, [])
    with pytest.raises(ValueError, match="bandwidths"):
        best_nadaraya_watson_error(xs, ys, xq, ys[:, 0], [])


def test_concept_kernel_rows_average_to_one_and_bayes_concentrates():
    cm = ConceptMixture(seed=0)
    table = cm.kernel_table()
    assert table.shape == (cm.n_inputs, cm.n_inputs)
    assert (table.mean(1) - 1).abs().max().item() <= 1e-12
    symbols = torch.arange(cm.n_inputs).unsqueeze(0)
    assert torch.equal(table, cm.kernel(symbols, symbols)[0])
    assert 0 < (table < 0).double().mean().item() < 1  # not a weighted average
    gaps = cm.bayes_gap([1, 8, 64], batch_size=500)
    assert gaps[0] > gaps[1] > gaps[2] >= 0


def test_concept_prior_baseline_and_negative_kernel_weight():
    """The demonstration-free predictor: exact for one concept, worse than Bayes with
    many demonstrations; a negative total kernel weight is counted prompt by prompt."""
    one = ConceptMixture(n_concepts=1, seed=3)
    gaps, agree = one.prior_gap([1, 4], batch_size=200)
    assert max(gaps) < 1e-12 and min(agree) == 1.0  # nothing to infer
    cm = ConceptMixture(seed=0)
    gaps, _ = cm.prior_gap([1, 256], batch_size=500)
    assert gaps[1] > gaps[0]  # Bayes moves away from the prior as it learns
    share = cm.negative_weight_share(8, batch_size=500, seed=2)
    _, inputs, _ = cm.sample(500, 9, seed=2)
    K = cm.kernel_table()
    total = K[inputs[:, -1:], inputs[:, :8]].sum(1)  # (500, 8) -> (500,)
    assert share == (total < 0).double().mean().item() and 0 < share < 1
    with pytest.raises(ValueError, match="n: expected"):
        cm.negative_weight_share(0)


def test_a_non_square_covariance_and_an_empty_grid_are_refused_by_name():
    """Issue 42: torch's eigh error, and an empty grid blamed on xs."""
    from icl_lib.learners.kernel import attention_regression_curve

    with pytest.raises(ValueError, match="^cov: expected square matrices"):
        psd_projection(torch.randn(2, 4, 3))
    with pytest.raises(ValueError, match="^grid: expected at least one"):
        attention_regression_curve(torch.randn(6), torch.randn(6), torch.empty(0), 1.0)
