"""Prompt samplers: statistics, determinism, bad input."""

import pytest
import torch

from icl_lib.tasks import (
    RegressionBatch,
    TaskPool,
    linear_regression,
    make_generator,
    sparse_linear_regression,
)


def test_linear_regression_statistics():
    b = linear_regression(4000, 20, 5, noise_std=0.5, seed=1, dtype=torch.float64)
    assert (
        b.xs.shape == (4000, 20, 5)
        and b.ys.shape == (4000, 20)
        and b.w.shape == (4000, 5)
    )
    x = b.xs.reshape(-1, 5)
    torch.testing.assert_close(
        x.T @ x / x.shape[0], torch.eye(5, dtype=torch.float64), atol=0.02, rtol=0
    )
    torch.testing.assert_close(
        b.w.T @ b.w / 4000, torch.eye(5, dtype=torch.float64), atol=0.08, rtol=0
    )
    noise = b.ys - torch.einsum("bnd,bd->bn", b.xs, b.w)
    assert abs(noise.std().item() - 0.5) < 0.01 and abs(noise.mean().item()) < 0.01


def test_input_covariance():
    cov = torch.tensor(
        [[2.0, 0.6, 0.0], [0.6, 1.0, 0.0], [0.0, 0.0, 0.25]], dtype=torch.float64
    )
    b = linear_regression(2000, 50, 3, cov=cov, seed=2, dtype=torch.float64)
    x = b.xs.reshape(-1, 3)
    torch.testing.assert_close(x.T @ x / x.shape[0], cov, atol=0.03, rtol=0)


def test_noiseless_labels_are_exact():
    b = linear_regression(8, 10, 4, seed=3, dtype=torch.float64)
    torch.testing.assert_close(
        b.ys, torch.einsum("bnd,bd->bn", b.xs, b.w), rtol=0, atol=0
    )


def test_sparse_tasks_have_the_right_support():
    b = sparse_linear_regression(500, 5, 10, 3, seed=4)
    assert ((b.w != 0).sum(1) == 3).all()
    # every coordinate is in the support about 3/10 of the time
    freq = (b.w != 0).float().mean(0)
    assert ((freq - 0.3).abs() < 0.08).all()


def test_task_pool_draws_from_its_tasks():
    pool = TaskPool(4, 3, seed=5)
    b = pool.sample(300, 6, noise_std=0.1, seed=6)
    matches = (b.w.unsqueeze(1) == pool.weights.unsqueeze(0)).all(-1)  # (B, M)
    assert (matches.sum(1) == 1).all()
    counts = matches.sum(0)
    assert (counts > 40).all()  # each of the 4 tasks appears (expected 75)


def test_same_seed_same_numbers_and_different_seed_differs():
    a = linear_regression(4, 6, 3, noise_std=0.1, seed=7)
    b = linear_regression(4, 6, 3, noise_std=0.1, seed=7)
    c = linear_regression(4, 6, 3, noise_std=0.1, seed=8)
    assert torch.equal(a.xs, b.xs) and torch.equal(a.ys, b.ys) and torch.equal(a.w, b.w)
    assert not torch.equal(a.xs, c.xs)
    assert torch.equal(TaskPool(3, 2, seed=1).weights, TaskPool(3, 2, seed=1).weights)


def test_a_shared_generator_advances():
    gen = make_generator(9)
    a = linear_regression(2, 3, 2, seed=gen)
    b = linear_regression(2, 3, 2, seed=gen)
    assert not torch.equal(a.xs, b.xs)


def test_prompt_splits_context_and_query():
    b = linear_regression(3, 6, 2, seed=0)
    xs, ys, xq, yq = b.prompt(4)
    assert (
        xs.shape == (3, 4, 2)
        and ys.shape == (3, 4)
        and xq.shape == (3, 2)
        and yq.shape == (3,)
    )
    assert torch.equal(xq, b.xs[:, 4]) and torch.equal(yq, b.ys[:, 4])
    assert b.prompt(0)[0].shape == (3, 0, 2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: linear_regression(0, 5, 2), "batch_size: expected an int >= 1"),
        (lambda: linear_regression(2, 5, 2.0), "dim: expected an int"),
        (
            lambda: linear_regression(2, 5, 2, noise_std=-1),
            "noise_std: expected a number >= 0",
        ),
        (
            lambda: linear_regression(2, 5, 2, cov=torch.eye(3)),
            r"cov: expected shape \(dim, dim\)",
        ),
        (
            lambda: linear_regression(
                2, 5, 2, cov=torch.tensor([[1.0, 2.0], [2.0, 1.0]])
            ),
            "cov: expected a positive definite",
        ),
        (
            lambda: linear_regression(
                2, 5, 2, cov=torch.tensor([[1.0, 0.5], [0.0, 1.0]])
            ),
            "cov: expected a symmetric",
        ),
        (
            lambda: linear_regression(2, 5, 2, dtype=torch.int64),
            "dtype: expected torch.float32 or torch.float64",
        ),
        (
            lambda: linear_regression(2, 5, 2, seed="a"),
            "seed: expected an int or a torch.Generator",
        ),
        (
            lambda: sparse_linear_regression(2, 5, 3, 4),
            "sparsity: expected at most dim = 3",
        ),
        (
            lambda: linear_regression(2, 5, 2).prompt(5),
            "k: expected a context size below n_points = 5",
        ),
        (lambda: TaskPool(0, 2), "n_tasks: expected an int >= 1"),
    ],
)
def test_bad_input_is_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_batch_moves_dtype():
    b = linear_regression(2, 3, 2, seed=0).to(dtype=torch.float64)
    assert (
        isinstance(b, RegressionBatch)
        and b.xs.dtype == b.ys.dtype == b.w.dtype == torch.float64
    )


def test_records_refuse_fields_that_disagree_or_hold_nothing():
    """Issue 42: a latent longer than the labels, an empty selection and a world
    without classes passed or were blamed on another field."""
    from icl_lib.tasks import sphere_classification
    from icl_lib.tasks.bursty import ClassWorld
    from icl_lib.tasks.sphere import ClassificationBatch

    batch = sphere_classification(4, 6, dim=3, seed=0)
    with pytest.raises(ValueError, match="^latent: expected shape .* to match ys"):
        ClassificationBatch(batch.xs, batch.ys, batch.latent[:, :-1])
    with pytest.raises(ValueError, match="^index: expected at least one"):
        batch.select(torch.tensor([], dtype=torch.int64))
    world = ClassWorld.draw(8, 5, 4, 0)
    with pytest.raises(ValueError, match="^means: expected at least one"):
        ClassWorld(world.means[:0], world.labels[:0])
