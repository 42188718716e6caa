"""Every identity of chapter 7 (Dherin et al. 2025) in float64, for every contextual
layer we ship.

Theorem 2.2 and its skip version, the rank of dW, the case Y = C, the trajectory W_i of
Section 3, Proposition 3.1 (with the gradient of the linear loss taken by autograd), the
product form of Appendix B, and the fine-tuning baseline with its validation grid.
"""

import matplotlib.pyplot as plt
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icl_lib.models.contextual import LAYERS, make_block
from icl_lib.plotting import implicit_update_panels
from icl_lib.prompts import PromptBatch, context_and_query
from icl_lib.theory.finetuning import (
    finetune_error_curve,
    finetune_first_layer,
    finetune_to_convergence,
    finetuning_grid,
    grid_optimum,
    last_crossing,
)
from icl_lib.theory.implicit import (
    absorbed_mask,
    apply_update,
    gradient_form,
    implicit_error_curve,
    implicit_trajectory,
    implicit_update,
    in_context_task_errors,
    linear_loss,
    product_form,
    rank_one,
    remove_tokens,
    singular_value_ratio,
    step_norms,
    theorem_check,
    theorem_gap,
)

F64 = torch.float64
TOL = 1e-10
VARIANTS = ("plain", "skip", "pre_ln")


def build(kind, variant, D, width, hidden, seed):
    torch.manual_seed(seed)
    kwargs = {"window": 3} if kind == "local" else {}
    block = make_block(
        kind,
        D,
        width=width,
        hidden=hidden,
        skip=variant == "skip",
        pre_ln=variant == "pre_ln",
        **kwargs,
    )
    return block.double()


def second_singular_value(M):
    """sigma_2 of each matrix: 0 up to rounding for a rank-1 matrix (a ratio is
    meaningless when M is ~0)."""
    return torch.linalg.svdvals(M.detach())[:, 1]


def data(B, n, D, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, n, D, generator=g, dtype=F64), torch.randn(
        B, D, generator=g, dtype=F64
    )


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(sorted(LAYERS)))
    variant = draw(st.sampled_from(VARIANTS))
    D = draw(st.integers(2, 6))
    width = draw(st.sampled_from([None, 4, 6]))
    hidden = draw(st.integers(2, 9))
    n = draw(st.integers(1, 7))
    B = draw(st.integers(1, 3))
    Y = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**16))
    block = build(kind, variant, D, width, hidden, seed)
    context, x = data(B, n, D, seed + 1)
    return block, context, x, torch.tensor(Y)


@settings(max_examples=60, deadline=None)
@given(cases())
def test_theorem_2_2_absorbing_any_subset(case):
    """T_W(C, x) = T_{W + dW(Y)}(C \\ Y, x) (and b' + ds(Y) with a skip), dW(Y) of rank
    <= 1."""
    block, context, x, Y = case
    update = implicit_update(block, context, x, Y)
    with torch.no_grad():
        full = block(context, x)
        absorbed = apply_update(block, update, x)
    scale = 1.0 + full.abs().max()
    assert (full - absorbed).abs().max() <= TOL * scale
    assert update.kept_context.shape[1] == int((~Y).sum())
    assert second_singular_value(update.delta_W).max() <= TOL * (
        1 + block.W.abs().max()
    )


@settings(max_examples=30, deadline=None)
@given(cases())
def test_absorbing_the_whole_context(case):
    """Y = C: T_W(C, x) = T_{W + dW}(x) with dW = (W dA) A(x)^T / ||A(x)||^2, dA = A(C,
    x) - A(x)."""
    block, context, x, _ = case
    update = implicit_update(block, context, x)
    empty = context[:, :0]
    assert update.kept_context.shape[1] == 0
    torch.testing.assert_close(
        update.anchor, block.contextual(empty, x), rtol=0, atol=1e-12
    )
    torch.testing.assert_close(
        update.contextual_vector,
        block.contextual(context, x) - block.contextual(empty, x),
        rtol=0,
        atol=1e-12,
    )
    with torch.no_grad():
        assert (
            block(context, x) - apply_update(block, update, x)
        ).abs().max() <= TOL * (1 + block(context, x).abs().max())


@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_update_is_needed(kind, variant):
    """The check above can fail: dropping Y without updating W changes the output."""
    block = build(kind, variant, 4, None, 6, seed=0)
    context, x = data(2, 4, 4, seed=1)
    Y = [2, 3]  # inside every window, so every layer sees them
    update = implicit_update(block, context, x, Y)
    with torch.no_grad():
        assert (block(context, x) - block(update.kept_context, x)).abs().max() > 1e-4
    if (
        variant != "plain"
    ):  # with a skip, moving W alone is not enough: the bias must move too
        with torch.no_grad():
            wrong = block(update.kept_context, x, W=block.W + update.delta_W)
        assert (block(context, x) - wrong).abs().max() > 1e-4
        torch.testing.assert_close(
            update.delta_b_out,
            block.stream(context, x) - block.stream(update.kept_context, x),
        )


def test_no_absorbed_tokens_and_tokens_outside_the_window_give_no_update():
    block = build("local", "plain", 4, None, 5, seed=2)
    context, x = data(2, 6, 4, seed=3)
    assert implicit_update(block, context, x, []).delta_W.abs().max() == 0
    assert (
        implicit_update(block, context, x, [0, 1, 2]).delta_W.abs().max() == 0
    )  # window 3 sees c_5, c_6, x


def test_rank_one_is_the_least_norm_solution():
    g = torch.Generator().manual_seed(4)
    W = torch.randn(5, 4, generator=g, dtype=F64)
    delta, anchor = (
        torch.randn(3, 4, generator=g, dtype=F64),
        torch.randn(3, 4, generator=g, dtype=F64),
    )
    D = rank_one(W, delta, anchor)
    torch.testing.assert_close(torch.einsum("bhm,bm->bh", D, anchor), delta @ W.T)
    proj = (
        torch.eye(4, dtype=F64)
        - anchor[:, :, None] * anchor[:, None, :] / (anchor**2).sum(-1)[:, None, None]
    )
    other = (
        D + torch.randn(3, 5, 4, generator=g, dtype=F64) @ proj
    )  # also maps anchor to W delta
    torch.testing.assert_close(torch.einsum("bhm,bm->bh", other, anchor), delta @ W.T)
    assert (other.flatten(1).norm(dim=1) > D.flatten(1).norm(dim=1)).all()


@settings(max_examples=40, deadline=None)
@given(cases())
def test_trajectory_reproduces_every_prefix(case):
    """T_{W_i}(x) (with b'_i under a skip) equals T_{W_0}(c_1..c_i, x) for every i; W_i
    - W_0 has rank 1."""
    block, context, x, _ = case
    traj = implicit_trajectory(block, context, x)
    empty = context[:, :0]
    with torch.no_grad():
        for i in range(context.shape[1] + 1):
            b = None if traj.b_out is None else traj.b_out[:, i]
            out = block(empty, x, W=traj.W[:, i], b_out=b)
            ref = block(context[:, :i], x)
            assert (out - ref).abs().max() <= TOL * (1 + ref.abs().max())
    change = (traj.W[:, -1] - block.W).detach()
    assert second_singular_value(change).max() <= TOL * (1 + block.W.abs().max())


@settings(max_examples=25, deadline=None)
@given(cases())
def test_proposition_3_1(case):
    """W_{i+1} = W_i - h grad_W tr(Delta_i^T W) with h = 1/||A(x)||^2; the gradient is
    Delta_i wherever it is taken."""
    block, context, x, _ = case
    W = implicit_trajectory(block, context, x).W.detach()
    Delta, h = gradient_form(block, context, x)
    Delta = Delta.detach()
    assert torch.allclose(h, 1 / (block.contextual(context[:, :0], x) ** 2).sum(-1))
    for i in range(context.shape[1]):
        grads = []
        elsewhere = torch.randn(
            W[:, i].shape, generator=torch.Generator().manual_seed(i), dtype=F64
        )
        for where in (W[:, i], elsewhere):
            Wv = where.clone().requires_grad_(True)
            (g,) = torch.autograd.grad(linear_loss(Delta[:, i], Wv).sum(), Wv)
            grads.append(g)
        torch.testing.assert_close(grads[0], Delta[:, i], rtol=0, atol=1e-12)
        torch.testing.assert_close(
            grads[1], Delta[:, i], rtol=0, atol=1e-12
        )  # linear: same gradient anywhere
        step = W[:, i] - h[:, None, None].detach() * grads[0]
        assert (step - W[:, i + 1]).abs().max() <= TOL * (1 + W.abs().max())
    norms = step_norms(block, context, x).detach()
    torch.testing.assert_close(
        norms, (h[:, None, None, None] * Delta).flatten(2).norm(dim=-1).detach()
    )


@settings(max_examples=40, deadline=None)
@given(cases())
def test_product_form(case):
    """W'_i = W'_{i-1}(I + h_i A_i): T_{W'_i}(c_{i+1}..c_n, x) = T(C, x); W'_n A(x) =
    W_n A(x), ||W'_n - W_0|| >= ||W_n - W_0||."""
    block, context, x, _ = case
    if (
        block.skip
    ):  # the product form moves W only; the skip's bias is covered by the theorem tests
        return
    P = product_form(block, context, x).detach()
    n = context.shape[1]
    with torch.no_grad():
        ref = block(context, x)
        for i in range(n + 1):
            out = block(context[:, i:], x, W=P[:, i])
            assert (out - ref).abs().max() <= TOL * (1 + ref.abs().max())
        a_x = block.contextual(context[:, :0], x)
        W_n = implicit_trajectory(block, context, x).W[:, -1]
        scale = 1 + W_n.abs().max() * a_x.abs().max()
        assert (
            torch.einsum("bhm,bm->bh", P[:, -1] - W_n, a_x)
        ).abs().max() <= TOL * scale
        excess = (P[:, -1] - block.W).flatten(1).norm(dim=1) - (W_n - block.W).flatten(
            1
        ).norm(dim=1)
        assert (excess >= -TOL * scale).all()


def test_theorem_check_reports_error_control_and_rank():
    block = build("softmax", "skip", 4, 6, 5, seed=12)
    context, x = data(3, 6, 4, seed=13)
    choices = (None, [0, 2], [5])
    check = theorem_check(block, context, x, choices)
    assert check["error"] == theorem_gap(block, context, x, choices) < 1e-12
    assert check["control"] > 1e3 * check["error"]  # dropping Y without the update
    assert check["rank_ratio"] < 1e-12


def test_implicit_error_curve_is_the_in_context_error():
    block = build("softmax", "plain", 3, 4, 5, seed=14)
    from icl_lib.tasks import linear_regression

    tasks = linear_regression(3, 6, 2, seed=15).to(dtype=F64)
    curve, gap = implicit_error_curve(block, tasks, 4)
    assert curve.shape == (5,) and gap < 1e-12
    xs, ys = (
        tasks.xs[:, :4].repeat_interleave(2, 0),
        tasks.ys[:, :4].repeat_interleave(2, 0),
    )
    xq, yq = tasks.xs[:, 4:].reshape(-1, 2), tasks.ys[:, 4:].reshape(-1)
    context, query = context_and_query(xs, ys, xq)
    with torch.no_grad():
        expected = [
            ((block(context[:, :i], query)[:, -1] - yq) ** 2).mean() / 2
            for i in range(5)
        ]
    torch.testing.assert_close(curve, torch.stack(expected))
    with pytest.raises(ValueError, match="n_context: expected 1 to 5"):
        implicit_error_curve(block, tasks, 6)
    with pytest.raises(ValueError, match="block: expected a block without a skip"):
        implicit_error_curve(build("softmax", "skip", 3, 4, 5, seed=14), tasks, 4)
    # per task, the same errors: their mean at every size is the curve
    for i in range(5):
        per_task = in_context_task_errors(block, tasks, 4, i)
        assert per_task.shape == (3,)
        torch.testing.assert_close(per_task.mean(), curve[i])
    with pytest.raises(ValueError, match="size: expected an int in 0..4"):
        in_context_task_errors(block, tasks, 4, 5)


def test_product_form_for_one_token_is_the_trajectory():
    block = build("softmax", "plain", 3, None, 4, seed=5)
    context, x = data(2, 1, 3, seed=6)
    torch.testing.assert_close(
        product_form(block, context, x)[:, -1],
        implicit_trajectory(block, context, x).W[:, -1],
    )


def test_finetuning_baseline():
    block = build("softmax", "plain", 3, 4, 5, seed=7)
    g = torch.Generator().manual_seed(8)
    xs, ys, xt = (
        torch.randn(*s, generator=g, dtype=F64) for s in ((2, 3, 2), (2, 3), (2, 4, 2))
    )

    def no_context(inp):
        q = torch.cat((inp, torch.zeros_like(inp[..., :1])), -1)
        return block(q.new_zeros(q.shape[0], 0, 3), q)[:, -1]

    ref = torch.stack([no_context(xt[b]) for b in range(2)])  # (2, Q)
    still = finetune_first_layer(block, xs, ys, xt, lr=0.0)
    for i in range(4):
        torch.testing.assert_close(still[:, i], ref)
    tuned = finetune_first_layer(block, xs, ys, xt, lr=0.1)
    torch.testing.assert_close(tuned[:, 0], ref)  # no example: no step
    for b in range(2):  # one example: one explicit SGD step by hand
        W = block.W.detach().clone().requires_grad_(True)
        q = torch.cat((xs[b, :1], torch.zeros(1, 1, dtype=F64)), -1)
        pred = block(q.new_zeros(1, 0, 3), q, W=W[None])[:, -1]
        (grad,) = torch.autograd.grad(0.5 * ((pred - ys[b, 0]) ** 2).sum(), W)
        W1 = (W - 0.1 * grad).detach()
        qt = torch.cat((xt[b], torch.zeros(4, 1, dtype=F64)), -1)
        expected = block(qt.new_zeros(4, 0, 3), qt, W=W1.expand(4, -1, -1))[:, -1]
        torch.testing.assert_close(tuned[b, 1], expected)


def test_finetuning_to_convergence_interpolates_its_examples():
    block = build("softmax", "plain", 3, 4, 5, seed=7)
    g = torch.Generator().manual_seed(9)
    xs = torch.randn(2, 3, 2, generator=g, dtype=F64)
    ys = torch.randn(2, 3, generator=g, dtype=F64)
    # the training inputs as test inputs: a converged fit on i examples returns their
    # labels for the first i of them, and W_0's predictions when i = 0
    pred, train_error = finetune_to_convergence(block, xs, ys, xs)
    assert pred.shape == (2, 4, 3) and train_error.shape == (2, 4)
    assert float(train_error.max()) < 1e-20
    for i in range(1, 4):
        torch.testing.assert_close(pred[:, i, :i], ys[:, :i])
    torch.testing.assert_close(
        pred[:, 0], finetune_first_layer(block, xs, ys, xs, lr=0.0)[:, 0]
    )
    with pytest.raises(ValueError, match="sizes: expected a non-empty list"):
        finetune_to_convergence(block, xs, ys, xs, sizes=[4])
    with pytest.raises(ValueError, match="x_test"):
        finetune_to_convergence(block, xs, ys, xs[:1])


def test_float32_default_holds_to_single_precision():
    torch.manual_seed(9)
    block = make_block("softmax", 4, hidden=6)
    context, x = torch.randn(3, 5, 4), torch.randn(3, 4)
    update = implicit_update(block, context, x, [1, 3])
    assert update.delta_W.dtype == torch.float32
    with torch.no_grad():
        assert (block(context, x) - apply_update(block, update, x)).abs().max() < 1e-5


def test_bad_input_gets_a_clear_error():
    block = build("linear", "plain", 3, None, 4, seed=10)
    context, x = data(2, 4, 3, seed=11)
    with pytest.raises(ValueError, match="absorbed: expected token indices"):
        implicit_update(block, context, x, [4])
    with pytest.raises(ValueError, match="absorbed: expected a bool mask"):
        implicit_update(block, context, x, torch.tensor([True, False]))
    with pytest.raises(TypeError, match="absorbed"):
        absorbed_mask("all", 4)
    with pytest.raises(TypeError, match="block"):
        implicit_update(torch.nn.Linear(3, 3), context, x)
    with pytest.raises(ValueError, match="context"):
        implicit_update(block, context[..., :2], x)
    with pytest.raises(
        ValueError, match="non-zero"
    ):  # linear attention of the zero query is 0: no rank-1 update
        implicit_update(block, context, torch.zeros_like(x))
    with pytest.raises(ValueError, match="M: expected matrices"):
        singular_value_ratio(torch.zeros(3, 1, 4))
    with pytest.raises(ValueError, match="lr"):
        finetune_first_layer(
            block,
            torch.zeros(1, 2, 2, dtype=F64),
            torch.zeros(1, 2, dtype=F64),
            torch.zeros(1, 3, 2, dtype=F64),
            lr=-1.0,
        )
    with pytest.raises(ValueError, match="x_test"):
        finetune_first_layer(
            block,
            torch.zeros(1, 2, 2, dtype=F64),
            torch.zeros(1, 2, dtype=F64),
            torch.zeros(2, 3, 2, dtype=F64),
            lr=0.1,
        )
    assert remove_tokens(context, [0, 2]).shape == (2, 2, 3)


def test_finetuning_sizes_select_rows_and_the_figure_draws():
    block = build("softmax", "plain", 3, 4, 5, seed=12)
    g = torch.Generator().manual_seed(13)
    xs, ys, xt = (
        torch.randn(*s, generator=g, dtype=F64) for s in ((2, 4, 2), (2, 4), (2, 3, 2))
    )
    every = finetune_first_layer(block, xs, ys, xt, lr=0.05, epochs=2)
    some = finetune_first_layer(block, xs, ys, xt, lr=0.05, epochs=2, sizes=[0, 2, 4])
    torch.testing.assert_close(some, every[:, [0, 2, 4]])
    with pytest.raises(ValueError, match="sizes"):
        finetune_first_layer(block, xs, ys, xt, lr=0.05, sizes=[5])
    context, x = data(1, 4, 3, seed=14)
    fig = implicit_update_panels(
        implicit_update(block, context, x, [1]).delta_W[0].detach().numpy(),
        {"a": 0.1, "b": -0.2},
    )
    assert len(fig.axes) == 4  # three panels and a colour bar
    plt.close(fig)


def _sgd_by_autograd(block, xs, ys, xt, lr, epochs, size):
    """Fine-tuning of W on the first ``size`` examples, step by step with autograd."""
    B, _, d = xs.shape
    preds = []
    for b in range(B):
        W = block.W.detach().clone()
        for _ in range(epochs):
            for j in range(size):
                W.requires_grad_(True)
                q = torch.cat((xs[b, j : j + 1], torch.zeros(1, 1, dtype=F64)), -1)
                pred = block(q.new_zeros(1, 0, d + 1), q, W=W[None])[:, -1]
                (grad,) = torch.autograd.grad(0.5 * ((pred - ys[b, j]) ** 2).sum(), W)
                W = (W - lr * grad).detach()
        qt = torch.cat((xt[b], torch.zeros(len(xt[b]), 1, dtype=F64)), -1)
        zero = qt.new_zeros(len(qt), 0, d + 1)
        with torch.no_grad():
            preds.append(block(zero, qt, W=W.expand(len(qt), -1, -1))[:, -1])
    return torch.stack(preds)


@pytest.mark.parametrize(
    ("activation", "skip"), [("gelu", False), ("tanh", True), ("relu", False)]
)
def test_finetuning_matches_autograd_sgd_over_several_passes(activation, skip):
    torch.manual_seed(15)
    block = make_block(
        "softmax", 3, width=4, hidden=5, activation=activation, skip=skip
    ).double()
    g = torch.Generator().manual_seed(16)
    xs, ys, xt = (
        torch.randn(*s, generator=g, dtype=F64) for s in ((2, 4, 2), (2, 4), (2, 3, 2))
    )
    sizes = [3, 0, 4]  # any order; size 0 is never trained
    got = finetune_first_layer(block, xs, ys, xt, lr=0.07, epochs=3, sizes=sizes)
    for k, size in enumerate(sizes):
        expected = _sgd_by_autograd(block, xs, ys, xt, 0.07, 3, size)
        torch.testing.assert_close(got[:, k], expected)


def test_recorded_passes_equal_separate_runs_and_the_grid_uses_them():
    block = build("softmax", "plain", 3, 4, 5, seed=17)
    g = torch.Generator().manual_seed(18)
    xs, ys, xt = (
        torch.randn(*s, generator=g, dtype=F64) for s in ((3, 4, 2), (3, 4), (3, 2, 2))
    )
    nested = finetune_first_layer(block, xs, ys, xt, lr=0.05, epochs=(1, 2, 5))
    assert nested.shape == (3, 3, 5, 2)
    for k, ep in enumerate((1, 2, 5)):
        alone = finetune_first_layer(block, xs, ys, xt, lr=0.05, epochs=ep)
        torch.testing.assert_close(nested[:, k], alone)

    batch = PromptBatch(  # the test inputs xt, with labels the grid does not read
        torch.cat((xs, xt), 1), torch.cat((ys, torch.zeros(3, 2, dtype=F64)), 1)
    )
    grid = finetuning_grid(
        block, batch, 4, lrs=(0.01, 0.05), epochs=(5, 1), sizes=[2, 4]
    )
    assert set(grid) == {(0.01, 1), (0.01, 5), (0.05, 1), (0.05, 5)}
    curve = finetune_error_curve(block, batch, 4, lr=0.05, epochs=5, sizes=[2, 4])
    assert grid[(0.05, 5)] == pytest.approx(curve.mean().item())
    with pytest.raises(ValueError, match="epochs"):
        finetune_first_layer(block, xs, ys, xt, lr=0.05, epochs=(2, 1))
    with pytest.raises(ValueError, match="epochs"):
        finetune_first_layer(block, xs, ys, xt, lr=0.05, epochs=0)


def test_a_diverging_run_scores_inf_and_stops():
    block = build("softmax", "plain", 3, 4, 5, seed=19)
    g = torch.Generator().manual_seed(20)

    batch = PromptBatch(
        10 * torch.randn(2, 6, 2, generator=g, dtype=F64),
        10 * torch.randn(2, 6, generator=g, dtype=F64),
    )
    curves = finetune_error_curve(
        block, batch, 4, lr=50.0, epochs=(1, 1000), sizes=[0, 4]
    )
    assert curves[1, 1] == float("inf")  # diverged (and stopped long before 1000)
    assert torch.isfinite(curves[:, 0]).all()  # i = 0 is never trained


def test_grid_optimum_names_the_edge():
    grid = {
        (lr, ep): abs(lr - 0.1) + 1 / ep for lr in (0.01, 0.1, 1.0) for ep in (1, 10)
    }
    assert grid_optimum(grid) == ((0.1, 10), {"lr": None, "epochs": "high"})
    assert grid_optimum({(0.1, 3): 1.0}) == ((0.1, 3), {"lr": None, "epochs": None})
    grid[(0.01, 1)] = -1.0
    assert grid_optimum(grid)[1] == {"lr": "low", "epochs": "low"}
    with pytest.raises(ValueError, match="grid"):
        grid_optimum({})


def test_last_crossing():
    first = torch.tensor([1.0, 0.8, 0.6, 0.5, 0.4])
    assert last_crossing(first, torch.tensor([1.0, 0.9, 0.7, 0.4, 0.3])) == 3
    # a tie counts on either side: from index 2 on, second is not above first
    assert last_crossing(first, torch.tensor([1.0, 0.9, 0.6, 0.4, 0.3])) == 2
    assert last_crossing(first, torch.tensor([1.0, 0.9, 0.7, 0.6, 0.5])) is None
    assert last_crossing(first, first.clone()) is None
    # crossing twice: the last crossing counts
    assert last_crossing(first, torch.tensor([0.9, 0.9, 0.5, 0.6, 0.3])) == 4
    with pytest.raises(ValueError, match="second"):
        last_crossing(first, first[:3])


@pytest.mark.parametrize("epochs", [None, 2.5, [], "3"])
def test_pass_counts_are_an_int_or_a_sequence_of_them(epochs):
    """Issue 42: None or 2.5 gave "object is not iterable" instead of the name."""
    block = build("softmax", "plain", 3, 4, 5, seed=7)
    g = torch.Generator().manual_seed(8)
    xs, ys, xt = (
        torch.randn(*s, generator=g, dtype=F64) for s in ((2, 3, 2), (2, 3), (2, 4, 2))
    )
    with pytest.raises((TypeError, ValueError), match="^epochs: expected"):
        finetune_first_layer(block, xs, ys, xt, lr=0.1, epochs=epochs)
    labels = torch.cat((ys, torch.zeros(2, 4, dtype=F64)), 1)
    batch = PromptBatch(torch.cat((xs, xt), 1), labels)
    with pytest.raises((TypeError, ValueError), match="^epochs: expected"):
        finetuning_grid(block, batch, 3, lrs=[0.1], epochs=epochs)
    with pytest.raises(ValueError, match="^x_test: expected .* to match xs"):
        finetune_first_layer(block, xs, ys, torch.randn(2, 4, 3, dtype=F64), lr=0.1)
