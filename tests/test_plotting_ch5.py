"""Chapter 5's figures (icl_lib.plotting.selection_figures): the selection frontier
and the two diagrams of the chapter's theory."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from icl_lib.plotting import selection_figures as sf  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


# a frontier like chapter 5's: penalty 0 is good on kind y and poor on kind x,
# a large penalty the reverse
FX = [1.35, 1.30, 1.20, 1.06, 1.00, 1.02]
FY = [1.00, 1.01, 1.40, 4.30, 9.00, 13.0]


def _labels(ax):
    return [
        line.get_label()
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    ]


def test_envelope_is_the_lowest_y_reached_without_exceeding_x():
    xs = [0.9, 1.0, 1.06, 1.35, 2.0]
    env = sf.frontier_envelope(FX, FY, xs)
    assert np.isinf(env[0])  # left of every one-penalty learner: nothing reaches it
    assert env[1] == pytest.approx(9.0)
    assert env[2] == pytest.approx(4.3)
    assert env[3] == pytest.approx(1.0) and env[4] == pytest.approx(1.0)
    # between two vertices the envelope follows the segment on log-log axes
    mid = np.sqrt(1.06 * 1.20)
    assert sf.frontier_envelope(FX, FY, [mid])[0] == pytest.approx(np.sqrt(4.3 * 1.4))


def test_envelope_refuses_curves_it_cannot_read():
    with pytest.raises(ValueError, match="frontier_y"):
        sf.frontier_envelope([1.0, 2.0], [1.0], [1.5])
    with pytest.raises(ValueError, match="frontier_x"):
        sf.frontier_envelope([0.0, 2.0], [1.0, 2.0], [1.5])


def test_frontier_draws_every_learner_apart_with_plain_log_ticks():
    points = {
        "transformer (two levels)": (1.04, 5.1),
        "transformer (σ = 0.1 only)": (1.43, 2.4),
        "transformer (σ = 1 only)": (1.01, 14.0),
        "Bayes predictor (mixture posterior)": (1.0, 1.01),
        "post-ICL validation, refitted": (1.10, 2.2),
        "parent (noiseless)": (1.47, 2.3),
    }
    fig = sf.selection_frontier(
        FX,
        FY,
        points,
        xlabel="σ = 1",
        ylabel="σ = 0.1",
        errors={"transformer (two levels)": (0.02, 0.3)},
        marks={"λ = 0.01": (1.30, 1.01)},
    )
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    labels = _labels(ax)
    assert labels[0] == "ridge, one penalty for every prompt"
    assert set(points) <= set(labels)
    looks = {
        (line.get_color(), line.get_linestyle(), line.get_marker())
        for line in ax.get_lines()
        if line.get_label() in points
    }
    assert len(looks) == len(points)  # three black transformers, three markers
    assert ax.get_xscale() == ax.get_yscale() == "log"
    fig.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert ticks and not any("times" in t for t in ticks)  # no 1.14x10^0
    assert "1" in ticks
    assert ax.collections  # the shaded inside of the frontier
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("inside the frontier" in t for t in legend)
    # inside: no one penalty is as good on both kinds at once (not: better than each)
    assert any("no one penalty\nis as good on both kinds" in t for t in legend)
    # every point is within the axes
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for x, y in points.values():
        assert x0 < x < x1 and y0 < y < y1


def test_no_point_takes_the_frontiers_colour():
    """A Bayes predictor, coloured as ridge elsewhere, would vanish against the arc."""
    points = {
        "transformer (both families)": (1.2, 1.03),
        "pre-ICL test": (1.0, 1.01),
        "Bayes predictor (mixture posterior)": (1.0, 1.0),
    }
    fig = sf.selection_frontier(FX, FY, points, xlabel="x", ylabel="y")
    colours = {
        line.get_label(): matplotlib.colors.to_hex(line.get_color())
        for line in fig.axes[0].get_lines()
        if line.get_label() in points
    }
    assert set(colours) == set(points)
    assert sf.FRONTIER.lower() not in {c.lower() for c in colours.values()}
    assert len(set(colours.values())) == len(points)


def test_efficient_points_are_the_ones_no_other_beats_on_both_axes():
    assert sf.efficient_points(FX, FY).tolist() == [True] * 5 + [False]
    # a hook at each end: the first and the last points are beaten on both axes
    hooked_x, hooked_y = [1.4, *FX[:-1], 1.05], [1.2, *FY[:-1], 12.0]
    assert sf.efficient_points(hooked_x, hooked_y).tolist() == [False] + [True] * 5 + [
        False
    ]
    with pytest.raises(ValueError, match="frontier_y"):
        sf.efficient_points([1.0, 2.0], [1.0])


def test_frontier_draws_its_efficient_arc_solid_and_the_hooks_faint():
    hooked_x, hooked_y = [1.4, *FX[:-1], 1.05], [1.2, *FY[:-1], 12.0]
    fig = sf.selection_frontier(
        hooked_x, hooked_y, {"a": (1.1, 1.1)}, xlabel="x", ylabel="y"
    )
    ax = fig.axes[0]
    solid = next(
        line for line in ax.get_lines() if line.get_label().startswith("ridge")
    )
    faint = next(line for line in ax.get_lines() if "ends" in line.get_label())
    assert solid.get_linestyle() == "-" and faint.get_linestyle() == "--"
    x, y = (np.asarray(v, dtype=float) for v in solid.get_data())
    assert np.allclose(x, FX[:-1]) and np.allclose(y, FY[:-1])
    x, y = (np.asarray(v, dtype=float) for v in faint.get_data())
    # the two hooks, one segment each, apart
    assert np.allclose(x, [1.4, FX[0], np.nan, FX[-2], 1.05], equal_nan=True)
    # a curve with no hook draws no faint part
    fig = sf.selection_frontier(
        FX[:-1], FY[:-1], {"a": (1.1, 1.1)}, xlabel="", ylabel=""
    )
    assert not any("ends" in line.get_label() for line in fig.axes[0].get_lines())


def test_frontier_refuses_bad_points_by_name():
    with pytest.raises(ValueError, match="points\\['a'\\]"):
        sf.selection_frontier(FX, FY, {"a": (1.0, 0.0)}, xlabel="", ylabel="")
    with pytest.raises(ValueError, match="points\\['a'\\]"):
        sf.selection_frontier(FX, FY, {"a": (1.0, 2.0, 3.0)}, xlabel="", ylabel="")
    with pytest.raises(ValueError, match="errors"):
        sf.selection_frontier(
            FX, FY, {"a": (1.0, 2.0)}, errors={"b": (0.1, 0.1)}, xlabel="", ylabel=""
        )
    with pytest.raises(ValueError, match="points"):
        sf.selection_frontier(FX, FY, {}, xlabel="", ylabel="")
    with pytest.raises(TypeError, match="ax"):
        sf.selection_frontier(FX, FY, {"a": (1.0, 2.0)}, xlabel="", ylabel="", ax=1)


def test_frontier_draws_into_a_given_axis():
    fig, ax = plt.subplots()
    out = sf.selection_frontier(
        FX, FY, {"a": (1.1, 1.1)}, xlabel="x", ylabel="y", ax=ax
    )
    assert out is fig and ax.get_xlabel() == "x"


def test_ista_diagram_shows_the_layers_and_the_two_relus():
    fig = sf.ista_layers_diagram(n_layers=3, tau=0.5)
    left, right = fig.axes
    texts = " ".join(t.get_text() for t in left.texts)
    assert texts.count("attention") == 3 and texts.count("MLP") == 3
    assert "layer $T$" in texts and "ISTA" in texts
    # the sum drawn on the right is the soft threshold
    line = next(line for line in right.get_lines() if "sum" in line.get_label())
    z, s = (np.asarray(v) for v in line.get_data())
    assert np.allclose(s, np.sign(z) * np.maximum(np.abs(z) - 0.5, 0.0))
    with pytest.raises(ValueError, match="n_layers"):
        sf.ista_layers_diagram(n_layers=7)
    with pytest.raises(ValueError, match="tau"):
        sf.ista_layers_diagram(tau=0.0)


def test_mixture_diagram_has_one_ridge_and_weight_per_level():
    fig = sf.ridge_mixture_diagram(weights=(0.5, 0.3, 0.2))
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for j in (1, 2, 3):
        assert f"\\sigma_{j}^2" in texts and f"\\omega_{j}" in texts
    with pytest.raises(ValueError, match="weights"):
        sf.ridge_mixture_diagram(weights=(0.5, 0.2))
    with pytest.raises(ValueError, match="weights"):
        sf.ridge_mixture_diagram(weights=(1.0,))


# --- icl_lib.analysis.frontier: where a learner lies against the one-penalty curve ---


def _two_kinds():
    import torch

    gen = torch.Generator().manual_seed(0)
    groups = torch.arange(400) % 2
    base = torch.rand(400, generator=gen, dtype=torch.float64) + 0.5
    # three one-penalty learners: good on kind 0, a compromise, good on kind 1
    scale = torch.tensor([[1.0, 3.0], [1.5, 1.5], [3.0, 1.0]], dtype=torch.float64)
    path = scale[:, groups] * base
    return path, groups, base


def test_frontier_curve_is_each_penalty_over_the_reference_on_each_kind():
    import torch

    from icl_lib.analysis.frontier import frontier_curve

    path, groups, base = _two_kinds()
    reference = torch.tensor([0.5, 2.0], dtype=torch.float64)
    curve = frontier_curve(path, groups, reference)
    brute = torch.tensor(
        [[path[p, groups == g].mean() / reference[g] for g in (0, 1)] for p in range(3)]
    )
    assert torch.allclose(curve, brute)
    with pytest.raises(ValueError, match="reference"):
        frontier_curve(path, groups, torch.tensor([1.0]))
    with pytest.raises(ValueError, match="groups"):
        frontier_curve(path, groups[:-1], reference)


def test_depth_is_above_one_only_beyond_every_one_penalty_learner():
    import torch

    from icl_lib.analysis.frontier import frontier_depth
    from icl_lib.analysis.selection import error_ratio

    path, groups, base = _two_kinds()
    # a learner equal to the compromise penalty lies on the frontier
    depth, se, p = frontier_depth(path, groups, path[1])
    assert depth == pytest.approx(1.0) and p == 1 and se >= 0
    # a selector: the best penalty on each kind, with a little noise of its own
    selector = torch.where(groups == 0, path[0], path[2]) * 1.1
    depth, se, p = frontier_depth(path, groups, selector)
    assert depth == pytest.approx(1.5 / 1.1) and p == 1
    g = 0  # both kinds tie at the compromise; the first attains the maximum
    ratio, expected = error_ratio(path[p, groups == g], selector[groups == g])
    assert ratio.item() == pytest.approx(depth) and se == pytest.approx(expected.item())
    # a learner worse than the compromise on both kinds lies outside
    assert frontier_depth(path, groups, path[1] * 1.2)[0] < 1
    with pytest.raises(ValueError, match="learner_errors"):
        frontier_depth(path, groups, selector[:-1])
    with pytest.raises(ValueError, match="groups"):
        frontier_depth(
            path,
            torch.zeros(400, dtype=torch.long).index_fill(0, torch.tensor([0]), 1),
            selector,
        )


def test_the_best_linear_learner_for_a_mix_of_noise_levels_is_one_ridge():
    """Chapter 5's proposition (prop-selection-frontier): the linear weights a that
    minimise sum_j alpha_j (|X^T a - x_q|^2 + sigma_j^2 |a|^2) predict a^T y = ridge
    with lambda = sum_j alpha_j sigma_j^2, for every X, x_q and y (float64)."""
    import torch

    from icl_lib.learners import ridge

    gen = torch.Generator().manual_seed(5)
    xs = torch.randn(4, 7, 5, generator=gen, dtype=torch.float64)
    xq = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    ys = torch.randn(4, 7, generator=gen, dtype=torch.float64)
    sigmas, alphas = torch.tensor([0.1, 1.0]), torch.tensor([0.3, 0.7])
    mixed = float((alphas * sigmas**2).sum())
    # the weighted error is a quadratic in a: solve its normal equations directly
    gram = xs @ xs.transpose(1, 2) + mixed * torch.eye(7, dtype=torch.float64)
    a = torch.linalg.solve(gram, xs @ xq[..., None])[..., 0]
    best_linear = (a * ys).sum(-1)
    assert torch.allclose(best_linear, ridge(xs, ys, xq, lam=mixed), atol=1e-10)


def test_scaled_ridge_depth_is_the_depth_against_every_scaled_ridge():
    """scaled_ridge_depth against a brute force: every (lam, s) member's per-prompt
    errors stacked as a path for frontier_depth; with s = 1 alone it is the ridge
    frontier's depth."""
    import torch

    from icl_lib.analysis.frontier import frontier_depth, scaled_ridge_depth
    from icl_lib.analysis.selection import ridge_path_errors
    from icl_lib.learners import ols, ridge
    from icl_lib.tasks import noise_mixture_regression

    batch = noise_mixture_regression(600, 8, 3, [0.1, 1.0], seed=3, dtype=torch.float64)
    groups, k = batch.component, 5
    lams, scales = [0.0, 0.01, 0.1, 0.5, 1.0, 3.0], [0.6, 0.8, 1.0, 1.2]
    ridge_path = ridge_path_errors(batch, [k], lams)[..., 0]  # (P, B)
    # a learner that selects: the matched ridge on each level
    matched = ridge_path_errors(batch, [k], [0.01, 1.0])[..., 0]
    learner = torch.where(groups == 0, matched[0], matched[1])
    depth, se, lam, s = scaled_ridge_depth(batch, groups, k, learner, lams, [1.0])
    ridge_depth, ridge_se, p = frontier_depth(ridge_path, groups, learner)
    assert (depth, lam, s) == (pytest.approx(ridge_depth), lams[p], 1.0)
    assert se == pytest.approx(ridge_se)
    # every scaled ridge, errors computed one by one
    xs, ys, xq, yq = batch.prompt(k)
    preds = [
        ols(xs, ys, xq) if lam_ == 0 else ridge(xs, ys, xq, lam=lam_) for lam_ in lams
    ]
    brute = torch.stack([(c * pr - yq) ** 2 for pr in preds for c in scales])
    depth, se, lam, s = scaled_ridge_depth(batch, groups, k, learner, lams, scales)
    b_depth, b_se, q = frontier_depth(brute, groups, learner)
    assert depth == pytest.approx(b_depth, rel=1e-9) and se == pytest.approx(b_se)
    assert (lam, s) == (lams[q // len(scales)], scales[q % len(scales)])
    assert depth <= ridge_depth + 1e-12  # a larger family reaches at least as far


def test_scaled_ridge_depth_refuses_bad_input_by_name():
    import torch

    from icl_lib.analysis.frontier import scaled_ridge_depth
    from icl_lib.tasks import noise_mixture_regression

    batch = noise_mixture_regression(8, 6, 3, [0.1, 1.0], seed=0)
    groups, errors = batch.component, torch.ones(8)
    with pytest.raises(TypeError, match="batch"):
        scaled_ridge_depth(None, groups, 2, errors, [0.1], [1.0])
    with pytest.raises(ValueError, match="k"):
        scaled_ridge_depth(batch, groups, 6, errors, [0.1], [1.0])
    with pytest.raises(TypeError, match="scales"):
        scaled_ridge_depth(batch, groups, 2, errors, [0.1], [])
    with pytest.raises(ValueError, match="lams"):
        scaled_ridge_depth(batch, groups, 2, errors, [-0.1], [1.0])
    with pytest.raises(ValueError, match="learner_errors"):
        scaled_ridge_depth(batch, groups, 2, errors[:-1], [0.1], [1.0])
    with pytest.raises(ValueError, match="groups"):
        scaled_ridge_depth(batch, groups[:-1], 2, errors, [0.1], [1.0])


def test_mark_offsets_place_a_label_and_name_only_marks():
    def frontier(offsets):
        return sf.selection_frontier(
            FX,
            FY,
            {"transformer": (1.1, 3.0)},
            xlabel="x",
            ylabel="y",
            marks={"end": (1.35, 1.0)},
            mark_offsets=offsets,
        )

    fig = frontier({"end": (-6, -12)})
    (text,) = [t for t in fig.axes[0].texts if t.get_text() == "end"]
    assert text.get_ha() == "right"
    with pytest.raises(ValueError, match="mark_offsets"):
        frontier({"other": (1, 1)})


def test_looks_from_draws_a_learner_alike_in_a_figure_of_some_learners():
    everyone = {"a": (1.1, 2.0), "b": (1.2, 1.5), "c": (1.05, 3.0), "d": (1.3, 1.2)}

    def looks(fig):
        return {
            line.get_label(): (line.get_color(), line.get_marker())
            for line in fig.axes[0].get_lines()
            if line.get_label() in everyone
        }

    full = looks(sf.selection_frontier(FX, FY, everyone, xlabel="x", ylabel="y"))
    some = {name: everyone[name] for name in ("a", "d")}
    part = looks(
        sf.selection_frontier(
            FX, FY, some, xlabel="x", ylabel="y", looks_from=list(everyone)
        )
    )
    assert part == {name: full[name] for name in some}
    assert looks(sf.selection_frontier(FX, FY, some, xlabel="x", ylabel="y")) != part
    with pytest.raises(ValueError, match="looks_from"):
        sf.selection_frontier(FX, FY, some, xlabel="x", ylabel="y", looks_from=["a"])
    with pytest.raises(TypeError, match="looks_from"):
        sf.selection_frontier(FX, FY, some, xlabel="x", ylabel="y", looks_from="ad")
