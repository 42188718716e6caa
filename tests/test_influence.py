"""Label influence (icl_lib.analysis.influence) and the learning-rate schedule of the
book's training recipe."""

import math

import pytest
import torch

from icl_lib.analysis.influence import influence_ratio, label_influence
from icl_lib.learners.linear import ols, ridge
from icl_lib.tasks import linear_regression
from icl_lib.training.loop import learning_rate_factor
from icl_lib.training.recipe import recipe


def test_least_squares_influence_is_its_hat_matrix_row():
    b = linear_regression(64, 12, 3, seed=0, dtype=torch.float64)
    k = 10
    X = b.xs[:, :k]
    hat = (b.xs[:, k].unsqueeze(1) @ torch.linalg.inv(X.mT @ X) @ X.mT).squeeze(1)
    torch.testing.assert_close(label_influence(ols, b, k), hat.abs().mean(0))


def test_exchangeable_examples_have_equal_mean_influence():
    # Over many prompts, every position of an exchangeable context moves ridge equally.
    b = linear_regression(20000, 9, 3, noise_std=0.5, seed=1, dtype=torch.float64)
    influence = label_influence(lambda xs, ys, xq: ridge(xs, ys, xq, 0.25), b, 8)
    assert influence.std() / influence.mean() < 0.03


def test_an_ignored_example_has_no_influence():
    b = linear_regression(256, 9, 3, seed=2, dtype=torch.float64)

    def skip_third(xs, ys, xq):  # least squares without example 2
        keep = [j for j in range(xs.shape[1]) if j != 2]
        return ols(xs[:, keep], ys[:, keep], xq)

    ratios = influence_ratio(skip_third, ols, b, 8)
    assert ratios[2] == 0 and (ratios[[0, 1, 3, 4, 5, 6, 7]] > 0.5).all()


def test_influence_bad_input():
    b = linear_regression(4, 5, 2, seed=0)
    with pytest.raises(ValueError, match="k: expected fewer than the batch's 5 points"):
        label_influence(ols, b, 5)
    with pytest.raises(ValueError, match="k: expected"):
        label_influence(ols, b, 0)
    with pytest.raises(TypeError, match="batch: expected a PromptBatch"):
        label_influence(ols, b.xs, 2)
    with pytest.raises(TypeError, match="predictor: expected"):
        label_influence(3, b, 2)


def test_learning_rate_schedule():
    steps, warmup = 100, 10
    factors = [learning_rate_factor(s, steps, warmup, True) for s in range(steps)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert factors[10] == pytest.approx(1.0)
    assert factors[55] == pytest.approx(0.5 * (1 + math.cos(math.pi * 45 / 90)))
    assert all(a >= b for a, b in zip(factors[10:], factors[11:], strict=False))
    # no warm-up: PyTorch's CosineAnnealingLR, step for step
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    for s in range(steps):
        assert opt.param_groups[0]["lr"] == pytest.approx(
            learning_rate_factor(s, steps, 0, True), abs=1e-12
        )
        opt.step()
        sched.step()
    assert learning_rate_factor(50, steps) == 1.0


def test_recipe_fields():
    fields = recipe(2000, 1e-3, 64)
    assert fields["warmup_steps"] == 100 and fields["cosine_decay"]
    assert fields["grad_clip"] == 1.0
    with pytest.raises(ValueError, match="lr: expected"):
        recipe(100, 0.0, 64)


def test_settled_step_and_significant_rises():
    from icl_lib.analysis.curves import settled_step, significant_rises

    curve = {"step": [1, 2, 3, 4, 5], "loss": [3.0, 0.5, 2.0, 0.4, 0.3]}
    assert settled_step(curve, 1.0) == 4  # below at step 2, but not for good
    assert settled_step(curve, 0.1) is None
    gen = torch.Generator().manual_seed(0)
    falling = 1.0 / torch.arange(1, 9) + 0.05 * torch.randn(4000, 8, generator=gen)
    assert significant_rises(falling) == []
    bumped = falling.clone()
    bumped[:, 5] += 0.2  # a rise from column 4 to 5 (then a fall)
    assert significant_rises(bumped) == [5]
    with pytest.raises(ValueError, match="errors: expected a"):
        significant_rises(torch.zeros(5))
    with pytest.raises(ValueError, match="NaN or inf"):
        significant_rises(torch.full((3, 2), float("nan")))
    with pytest.raises(ValueError, match="n_se: expected"):
        significant_rises(falling, n_se=-1)


def test_power_law_budget_recovers_a_power_law():
    from icl_lib.analysis.curves import power_law_budget

    steps = list(range(100, 10_001, 100))
    curve = {"step": steps, "loss": [3.0 * s**-0.5 for s in steps]}
    slope, needed = power_law_budget(curve, 3.0 * 40_000**-0.5)
    assert slope == pytest.approx(-0.5) and needed == pytest.approx(40_000)
    assert power_law_budget(curve, 1.0)[1] == 10_000  # already below
    flat = {"step": steps, "loss": [1.0] * len(steps)}
    assert power_law_budget(flat, 0.5)[1] == float("inf")
    with pytest.raises(ValueError, match="level: expected"):
        power_law_budget(curve, -1.0)


def test_training_budget_reads_the_end_the_goal_and_the_extrapolation():
    from icl_lib.analysis.curves import training_budget

    steps = list(range(100, 10_001, 100))
    curve = {"step": steps, "ratio": [3.0 * s**-0.5 for s in steps]}
    out = training_budget(curve, 3.0 * 40_000**-0.5, key="ratio")
    assert out["end"] == pytest.approx(0.03) and out["reached"] is None
    assert out["slope"] == pytest.approx(-0.5) and out["factor"] == pytest.approx(4.0)
    # a level the curve falls below for good at step 900 (3 / sqrt(900) = 0.1)
    reached = training_budget(curve, 0.1, key="ratio")
    assert reached["reached"] == 900 and reached["factor"] == 1.0
    # a curve that rises back above the level after dipping has not reached it
    dip = {"step": [100, 200, 300, 400], "loss": [2.0, 0.5, 2.0, 1.8]}
    assert training_budget(dip, 1.0)["reached"] is None
    flat = {"step": steps, "loss": [1.0] * len(steps)}
    assert training_budget(flat, 0.5)["factor"] == float("inf")
    with pytest.raises(ValueError, match="level: expected"):
        training_budget(curve, 0.0, key="ratio")
