"""Chapter 3's task-pool diagram (icl_lib.plotting.task_pool_diagram): it draws the
pool, its posterior weights and ridge's posterior, and refuses what it cannot draw."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from icl_lib.learners.pool import pool_posterior
from icl_lib.plotting.task_pool_diagram import task_pool_diagram


def _context(seed=0, m=3, sigma=0.5):
    g = torch.Generator().manual_seed(seed)
    task = torch.randn(2, generator=g, dtype=torch.float64)
    xs = torch.randn(m, 2, generator=g, dtype=torch.float64)
    ys = xs @ task + sigma * torch.randn(m, generator=g, dtype=torch.float64)
    A = xs.T @ xs + sigma**2 * torch.eye(2, dtype=torch.float64)
    return (
        task,
        xs,
        ys,
        torch.linalg.solve(A, xs.T @ ys),
        sigma**2 * torch.linalg.inv(A),
    )


def _panel(xs, ys, n_tasks, seed=1, sigma=0.5):
    pool = torch.randn(n_tasks, 2, generator=torch.Generator().manual_seed(seed))
    pool = pool.double()
    weights = pool_posterior(xs[None], ys[None], pool, sigma)[0]
    return {"pool": pool, "weights": weights, "title": f"M = {n_tasks}"}


def test_the_diagram_draws_every_pool_task_its_weight_and_both_means():
    task, xs, ys, mean, cov = _context()
    panels = [_panel(xs, ys, 8), _panel(xs, ys, 64, seed=2)]
    fig = task_pool_diagram(panels, ridge_mean=mean, ridge_cov=cov, task=task)
    assert len(fig.axes) == 2
    for ax, panel in zip(fig.axes, panels, strict=True):
        points, discs = ax.collections  # the open circles, then the weights
        assert len(points.get_offsets()) == len(panel["pool"])
        sizes = discs.get_sizes()
        assert np.allclose(sizes / sizes.sum(), panel["weights"].numpy())  # area
        assert ax.get_title() == panel["title"] and ax.get_aspect() == 1.0
        # dMMSE's mean is the weighted pool, ridge's the mean it was given
        marks = {line.get_marker(): line.get_xydata()[0] for line in ax.get_lines()}
        expected = (panel["weights"] @ panel["pool"]).numpy()
        assert np.allclose(marks["x"], expected)
        assert np.allclose(marks["+"], mean.numpy()) and np.allclose(marks["*"], task)
        assert len(ax.patches) == 5  # two prior circles, three ellipse patches
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "dMMSE's $\\hat w$" in labels and "ridge's $\\hat w$" in labels
    assert "the prompt's task" in labels and len(labels) == len(set(labels))
    plt.close(fig)


def test_the_ridge_ellipse_has_the_posterior_sds_as_half_axes():
    _, xs, ys, mean, cov = _context(seed=3)
    fig = task_pool_diagram([_panel(xs, ys, 4)], ridge_mean=mean, ridge_cov=cov)
    one_sd = fig.axes[0].patches[3]  # the filled 1-sd ellipse
    sds = np.sqrt(np.linalg.eigvalsh(cov.numpy()))
    assert sorted([one_sd.width / 2, one_sd.height / 2]) == pytest.approx(sorted(sds))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "the prompt's task" not in labels  # no task given, none drawn
    plt.close(fig)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"panels": []}, "panels: expected"),
        ({"pool": np.zeros((3, 3))}, r"pool'\]: expected shape \(M, 2\)"),
        ({"weights": [0.5, 0.5]}, r"weights'\]: expected 3 weights"),
        ({"weights": [0.5, 0.5, 0.5]}, "summing to 1"),
        ({"weights": [1.5, -0.5, 0.0]}, r"expected numbers >= 0.0"),
        ({"ridge_cov": [[1.0, 2.0], [2.0, 1.0]]}, "positive definite"),
        ({"ridge_cov": np.eye(3)}, r"ridge_cov: expected shape \(2, 2\)"),
        ({"ridge_mean": [0.0, 0.0, 0.0]}, r"ridge_mean: expected shape \(2,\)"),
        ({"task": [0.0]}, r"task: expected shape \(2,\)"),
        ({"prior_sd": 0.0}, "prior_sd: expected numbers > 0"),
        ({"extra": 1}, "expected keys 'pool', 'weights'"),
    ],
)
def test_the_diagram_refuses_what_it_cannot_draw(change, message):
    panel = {"pool": np.zeros((3, 2)), "weights": [0.2, 0.3, 0.5]}
    kwargs = {"ridge_mean": [0.0, 0.0], "ridge_cov": np.eye(2), "task": [0.0, 0.0]}
    panels = [panel]
    for key, value in change.items():
        if key in ("pool", "weights"):
            panel[key] = value
        elif key == "extra":
            panel["colour"] = value
        elif key == "panels":
            panels = value
        else:
            kwargs[key] = value
    with pytest.raises(ValueError, match=message):
        task_pool_diagram(panels, **kwargs)
    plt.close("all")


def test_a_title_must_be_text():
    panel = {"pool": np.zeros((1, 2)), "weights": [1.0], "title": 3}
    with pytest.raises(TypeError, match=r"title'\]: expected a str"):
        task_pool_diagram([panel], ridge_mean=[0, 0], ridge_cov=np.eye(2))


def test_the_means_and_the_task_are_drawn_above_every_disc_and_ellipse():
    # With a large pool the discs cover dMMSE's mean; it must stay visible on top.
    task, xs, ys, mean, cov = _context(seed=5)
    fig = task_pool_diagram(
        [_panel(xs, ys, 512, seed=6)], ridge_mean=mean, ridge_cov=cov, task=task
    )
    ax = fig.axes[0]
    below = [a.get_zorder() for a in (*ax.collections, *ax.patches)]
    marks = {line.get_marker(): line for line in ax.get_lines()}
    assert set(marks) == {"x", "+", "*"}
    for line in marks.values():
        assert line.get_zorder() > max(below)
        assert line.get_path_effects(), "each mark keeps a halo against the discs"
    plt.close(fig)


def test_the_likelihood_is_drawn_as_four_dashed_level_sets_when_given():
    _, xs, ys, mean, cov = _context(seed=4)
    gram = xs.T @ xs
    like = (torch.linalg.solve(gram, xs.T @ ys), 0.25 * torch.linalg.inv(gram))
    fig = task_pool_diagram(
        [_panel(xs, ys, 8)], ridge_mean=mean, ridge_cov=cov, likelihood=like
    )
    ax = fig.axes[0]
    assert len(ax.patches) == 5 + 4  # prior, ridge, then the likelihood at 1..4 sd
    one_sd = ax.patches[5]
    sds = np.sqrt(np.linalg.eigvalsh(like[1].numpy()))
    assert sorted([one_sd.width / 2, one_sd.height / 2]) == pytest.approx(sorted(sds))
    assert np.allclose(one_sd.center, like[0].numpy())
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "likelihood of the examples: 1 to 4 sd" in labels
    plt.close(fig)
    with pytest.raises(ValueError, match="likelihood"):
        task_pool_diagram(
            [_panel(xs, ys, 8)], ridge_mean=mean, ridge_cov=cov, likelihood=(mean,)
        )
    with pytest.raises(ValueError, match=r"likelihood\[1\]: expected a symmetric"):
        task_pool_diagram(
            [_panel(xs, ys, 8)],
            ridge_mean=mean,
            ridge_cov=cov,
            likelihood=(mean, [[1.0, 2.0], [2.0, 1.0]]),
        )
