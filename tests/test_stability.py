"""Chapter 3: dMMSE, the ridge replacement identity and bound, stability and task
diversity measurements."""

import functools
import math

import numpy as np
import pytest
import torch

from icl_lib.analysis.curves import error_curve, excess_error_curve
from icl_lib.analysis.diversity import PoolSweep, transition_pool_size
from icl_lib.analysis.stability import (
    loglog_slope,
    position_changes,
    position_influence,
    replace_example,
    replacement_stability,
)
from icl_lib.learners import dmmse, pool_posterior, ridge
from icl_lib.presets import load_checkpoint
from icl_lib.presets import stability as diversity_presets
from icl_lib.tasks import TaskPool, linear_regression
from icl_lib.theory.stability import ridge_replacement_change, ridge_stability_bound
from icl_lib.training.samplers import TaskPoolPrompts

F64 = torch.float64


def test_dmmse_is_the_posterior_mean_over_the_pool():
    pool = TaskPool(7, 3, seed=1, dtype=F64).weights
    batch = TaskPool(7, 3, seed=1, dtype=F64).sample(5, 5, noise_std=0.4, seed=2)
    xs, ys, xq, _ = batch.prompt(4)
    # Bayes' rule written out: a product of Gaussian densities for each pool task.
    density = torch.distributions.Normal(xs @ pool.T, 0.4)  # (B, k, M)
    lik = density.log_prob(ys.unsqueeze(-1)).sum(1).exp()  # (B, M)
    post = lik / lik.sum(1, keepdim=True)
    torch.testing.assert_close(pool_posterior(xs, ys, pool, 0.4), post)
    expected = ((post @ pool) * xq).sum(-1)
    torch.testing.assert_close(dmmse(xs, ys, xq, pool, 0.4), expected)
    # No context: the pool's mean.
    empty = dmmse(xs[:, :0], ys[:, :0], xq, pool, 0.4)
    torch.testing.assert_close(empty, xq @ pool.mean(0))


def test_dmmse_tends_to_ridge_as_the_pool_grows():
    batch = linear_regression(20, 4, 2, noise_std=0.5, seed=3, dtype=F64)
    xs, ys, xq, _ = batch.prompt(3)
    target = ridge(xs, ys, xq, lam=0.25)
    gaps = []
    for m in (16, 256, 200_000):
        pool = TaskPool(m, 2, seed=4, dtype=F64).weights
        gaps.append((dmmse(xs, ys, xq, pool, 0.5) - target).abs().max().item())
    assert gaps[-1] < 0.05  # Monte Carlo over the pool: about 1 / sqrt(ESS)
    assert gaps[0] > gaps[1] > gaps[2]


def test_pool_posterior_errors_name_the_argument():
    xs, ys = torch.randn(2, 3, 4), torch.randn(2, 3)
    with pytest.raises(ValueError, match="pool: expected shape"):
        pool_posterior(xs, ys, torch.randn(5, 3), 0.5)
    with pytest.raises(ValueError, match="noise_std: expected a number > 0"):
        pool_posterior(xs, ys, torch.randn(5, 4), 0.0)


@pytest.mark.parametrize("lam", [0.25, 0.0])
def test_ridge_replacement_identity(lam):
    batch = linear_regression(64, 12, 4, noise_std=0.5, seed=5, dtype=F64)
    m, j = 11, 3
    perturbed = replace_example(batch, j, seed=6)
    xs, ys, xq, _ = batch.prompt(m)
    closed = ridge_replacement_change(
        xs, ys, xq, j, perturbed.xs[:, j], perturbed.ys[:, j], lam
    )
    xs2, ys2, _, _ = perturbed.prompt(m)
    direct = ridge(xs2, ys2, xq, lam) - ridge(xs, ys, xq, lam)
    torch.testing.assert_close(closed, direct, rtol=0, atol=1e-10)
    # The measurement averages exactly these changes.
    curve = replacement_stability(
        functools.partial(ridge, lam=lam), batch, [m], position=j, seed=6
    )
    assert curve.prediction_change[0] == pytest.approx(
        direct.abs().mean().item(), rel=1e-12
    )


@pytest.mark.parametrize("m", [5, 20, 80])
def test_ridge_stability_bound_holds_on_bounded_data(m):
    radius, label_bound, lam_1 = 1.5, 2.0, 0.3
    gen = torch.Generator().manual_seed(m)

    def ball(n):
        z = torch.randn(200, n, 3, generator=gen, dtype=F64)
        r = radius * torch.rand(200, n, 1, generator=gen, dtype=F64)
        return z / z.norm(dim=-1, keepdim=True) * r

    xs, x_new = ball(m + 1), ball(1)[:, 0]
    ys = label_bound * (2 * torch.rand(200, m, generator=gen, dtype=F64) - 1)
    y_new = -label_bound * torch.sign(ys[:, 0])  # the label furthest from the old one
    change = ridge_replacement_change(
        xs[:, :m], ys, xs[:, m], 0, x_new, y_new, m * lam_1
    )
    bound = ridge_stability_bound(m, lam_1, radius, label_bound)
    assert change.abs().max().item() <= bound
    assert ridge_stability_bound(2 * m, lam_1, radius, label_bound) == bound / 2


def test_replace_example_changes_one_example():
    batch = linear_regression(8, 6, 3, noise_std=0.5, seed=7)
    out = replace_example(batch, 2, seed=1, adversarial=True)
    keep = [0, 1, 3, 4, 5]
    assert torch.equal(out.xs[:, keep], batch.xs[:, keep])
    assert torch.equal(out.ys[:, keep], batch.ys[:, keep])
    assert not torch.equal(out.xs[:, 2], batch.xs[:, 2])
    honest = replace_example(batch, 2, seed=1)
    torch.testing.assert_close(out.ys[:, 2], -honest.ys[:, 2])
    with pytest.raises(ValueError, match="position: expected an index below n_points"):
        replace_example(batch, 6)
    with pytest.raises(TypeError, match="batch: expected a RegressionBatch"):
        replace_example(object(), 0)


def test_position_influence_finds_the_examples_a_predictor_reads():
    batch = linear_regression(16, 6, 2, seed=8)

    def first_label(xs, ys, x_query):  # reads example 0 only
        return ys[:, 0]

    influence = position_influence(first_label, batch, 5, seed=2)
    assert influence[0] > 0.1 and np.all(influence[1:] == 0)
    # prompt by prompt: its mean over prompts is the influence
    changes = position_changes(first_label, batch, 5, seed=2)
    assert changes.shape == (16, 5)
    np.testing.assert_allclose(changes.mean(0), influence)


def test_replacement_stability_positions_and_slope():
    batch = linear_regression(512, 21, 3, noise_std=0.5, seed=9)
    learner = functools.partial(ridge, lam=0.25)
    ms = [6, 10, 20]
    first = replacement_stability(learner, batch, ms, position=0, seed=1)
    last = replacement_stability(learner, batch, ms, position="last", seed=1)
    # Ridge reads a set of examples: which one is replaced does not matter on average.
    np.testing.assert_allclose(
        first.prediction_change, last.prediction_change, rtol=0.2
    )
    assert np.all(np.diff(first.prediction_change) < 0)
    # the per-prompt changes average to the curves
    assert first.prompt_prediction_change.shape == (512, 3)
    np.testing.assert_allclose(
        first.prompt_prediction_change.mean(0), first.prediction_change
    )
    np.testing.assert_allclose(first.prompt_loss_change.mean(0), first.loss_change)
    with pytest.raises(ValueError, match="position: expected an index below min"):
        replacement_stability(learner, batch, ms, position=6)
    assert loglog_slope([1, 2, 4, 8], [3.0, 1.5, 0.75, 0.375]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="values: expected finite positive"):
        loglog_slope([1, 2], [1.0, 0.0])


def test_excess_error_is_the_error_without_noise():
    batch = linear_regression(32, 6, 3, seed=10, dtype=F64)  # noiseless
    learner = functools.partial(ridge, lam=0.1)
    torch.testing.assert_close(
        excess_error_curve(learner, batch, range(6)),
        error_curve(learner, batch, range(6)),
    )
    with pytest.raises(TypeError, match="batch: expected prompts that keep"):
        excess_error_curve(learner, object(), range(2))


def test_task_pool_prompts():
    sampler = TaskPoolPrompts(dim=3, n_points=5, noise_std=0.5, n_tasks=4)
    pool = sampler.pool().weights
    batch = sampler.sample(64, 0, torch.Generator().manual_seed(0))
    assert all(any(torch.equal(w, p) for p in pool) for w in batch.w)
    sets = sampler.monitor_batches(16, 3)
    assert not any(any(torch.equal(w, p) for p in pool) for w in sets["fresh"].w)
    infinite = TaskPoolPrompts(dim=3, n_points=5, noise_std=0.5, n_tasks=None)
    assert infinite.pool() is None and infinite.eval_batch(4, 0).xs.shape == (4, 5, 3)
    with pytest.raises(ValueError, match="n_tasks: expected an int >= 1"):
        TaskPoolPrompts(dim=3, n_points=5, noise_std=0.5, n_tasks=0)


def test_transition_pool_size_interpolates_in_log_m():
    sizes = (2, 4, 8, 16, math.inf)
    t = np.array([0.0, 0.25, 0.75, 1.0])
    bayes, ridge_err = 1.0 + np.zeros(4), 0.2 + np.zeros(4)
    model = bayes - t * (bayes - ridge_err)

    def rows(values):
        return np.tile(np.append(values, np.nan)[:, None], (1, 3))

    errors = {
        ("transformer", "fresh"): rows(model),
        ("dMMSE", "fresh"): rows(bayes),
        ("ridge", "fresh"): rows(ridge_err),
    }
    sweep = PoolSweep(sizes, errors)
    assert transition_pool_size(sweep) == pytest.approx(2**2.5)
    errors[("transformer", "fresh")] = rows(bayes)  # never moves toward ridge
    assert math.isnan(transition_pool_size(PoolSweep(sizes, errors)))


def test_the_paired_transfer_gap_removes_what_ridge_shares():
    """A model whose errors are ridge's plus a pool-only advantage has exactly that
    advantage as its paired gap, whatever luck of the draw both share."""
    sizes = (2, 8, 64)
    luck = np.array([[0.05], [-0.03], [0.01]])  # the pools' draw: both series feel it
    ridge_fresh, ridge_pool = np.full((3, 4), 0.4), 0.4 + luck + np.zeros((3, 4))
    advantage = np.array([[0.3], [0.1], [0.0]])
    errors = {
        ("ridge", "fresh"): ridge_fresh,
        ("ridge", "pool"): ridge_pool,
        ("transformer", "fresh"): ridge_fresh + 0.02,
        ("transformer", "pool"): ridge_pool + 0.02 - advantage,
    }
    sweep = PoolSweep(sizes, errors)
    assert sweep.paired_transfer_gap() == pytest.approx(advantage[:, 0])
    assert sweep.transfer_gap() == pytest.approx(advantage[:, 0] - luck[:, 0])
    with pytest.raises(ValueError, match="prompt_errors: this sweep keeps no"):
        sweep.prompt_means("ridge", "fresh")


def test_the_dilution_ratio_separates_k_over_m_from_slower_dilution():
    from icl_lib.analysis.stability import StabilityCurve, dilution_ratio

    ms = np.arange(1, 21)
    k_over_m = StabilityCurve(ms, 3.0 / ms, np.zeros(20))
    root = StabilityCurve(ms, 3.0 / np.sqrt(ms), np.zeros(20))
    assert dilution_ratio(k_over_m, 5, 20) == pytest.approx(1.0)
    assert dilution_ratio(root, 5, 20) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="stop: expected one of the curve's sizes"):
        dilution_ratio(k_over_m, 5, 40)


def test_ridge_ratio_curve_ends_at_the_final_models_ratio():
    # the last logged point is the committed model's fresh-task error over ridge's,
    # recomputed here on the run's monitored prompts
    curve = diversity_presets.ridge_ratio_curve("stability_pool_inf")
    preset = diversity_presets.SWEEP[-1]
    fresh = preset.task.monitor_batches(1024, preset.seed + 2)["fresh"]
    model = load_checkpoint(preset.name)[0]
    ridge_fn = functools.partial(ridge, lam=diversity_presets.NOISE_STD**2)
    ratio = (
        excess_error_curve(model, fresh, range(10)).mean()
        / excess_error_curve(ridge_fn, fresh, range(10)).mean()
    ).item()
    assert curve["ratio"][-1] == pytest.approx(ratio, rel=1e-4)
    assert curve["step"][-1] == preset.steps
    with pytest.raises(ValueError, match="name: expected one of"):
        diversity_presets.ridge_ratio_curve("stability_pool_3")


def test_pool_size_sweep_keeps_each_prompts_error():
    """The per-prompt errors average to the curves' means, and the fresh prompts are
    shared by every pool size (so ratios between series pair prompt by prompt)."""
    from icl_lib.analysis.diversity import pool_size_sweep

    ridge_model = functools.partial(ridge, lam=0.25)
    entries = [(TaskPool(4, 3, seed=0), ridge_model), (None, ridge_model)]
    sweep = pool_size_sweep(entries, dim=3, n_points=5, noise_std=0.5, n_prompts=32)
    for series in ("transformer", "ridge"):
        for tasks in ("fresh", "pool"):
            per_prompt = sweep.prompt_means(series, tasks)
            assert per_prompt.shape == (2, 32)
            np.testing.assert_allclose(per_prompt.mean(1), sweep.mean(series, tasks))
    # the "model" is ridge itself: the same error on every prompt
    np.testing.assert_allclose(
        sweep.prompt_means("transformer", "fresh"), sweep.prompt_means("ridge", "fresh")
    )
    assert np.isnan(sweep.prompt_means("dMMSE", "fresh")[1]).all()


def test_context_sizes_are_named_ms_and_m():
    """Issue 42: None gave "object is not iterable", and a size beyond the prompts an
    error that named predictions' ks."""
    batch = linear_regression(8, 6, 3, seed=9)
    learner = functools.partial(ridge, lam=0.25)
    for ms in (None, 2.5, [], [2, 6]):
        with pytest.raises((TypeError, ValueError), match=r"^ms(\[i\])?: expected"):
            replacement_stability(learner, batch, ms)
    with pytest.raises(ValueError, match=r"^ms\[i\]: expected context sizes >= 1"):
        replacement_stability(learner, batch, [0, 2])
    with pytest.raises(ValueError, match="^m: expected context sizes below n_points"):
        position_changes(learner, batch, 6)
    with pytest.raises(ValueError, match="^pool: expected at least one"):
        dmmse(*batch.prompt(3)[:3], torch.randn(0, 3), 0.5)
