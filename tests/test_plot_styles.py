"""No figure draws two series alike, and log axes carry plain tick labels."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from icl_lib import plotting  # noqa: E402
from icl_lib.plotting.style import _PlainLogFormatter  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _looks(ax):
    return {
        line.get_label(): (line.get_color(), line.get_linestyle(), line.get_marker())
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def test_two_transformers_are_drawn_apart():
    # chapter 1's comparison: both names take the transformer's black
    fig = plotting.error_curves(
        [1, 2, 3],
        {
            "transformer (trained with noise)": [1, 0.5, 0.3],
            "transformer (trained without noise)": [1, 0.6, 0.4],
            "ridge": [1, 0.4, 0.2],
            "Bayes (sparse prior)": [1, 0.3, 0.1],
        },
    )
    looks = list(_looks(fig.axes[0]).values())
    assert len(set(looks)) == len(looks) == 4
    # the second black series and the second green one are dashed
    assert looks[1][1] == "--" and looks[3][1] == "--"


def test_explicit_styles_that_collide_are_refused_by_name():
    with pytest.raises(ValueError, match="styles\\['ridge, tuned'\\].*'ridge'"):
        plotting.error_curves(
            [1, 2],
            {"ridge": [1, 0.5], "ridge, tuned": [1, 0.4]},
            styles={"ridge": "-", "ridge, tuned": "solid"},
        )


def test_explicit_styles_are_kept_and_others_move_around_them():
    fig = plotting.accuracy_curves(
        [1, 2],
        {"ridge": [0.1, 0.2], "ridge, tuned": [0.2, 0.3]},
        styles={"ridge, tuned": "-"},
    )
    looks = _looks(fig.axes[0])
    assert looks["ridge, tuned"][1] == "-" and looks["ridge"][1] == "--"


def test_an_unknown_line_style_is_refused():
    with pytest.raises(ValueError, match="styles\\['ridge'\\].*line style"):
        plotting.error_curves([1, 2], {"ridge": [1, 0.5]}, styles={"ridge": "wavy"})


@pytest.mark.parametrize(
    "draw",
    [
        lambda c: plotting.error_curves([1, 2], c),
        lambda c: plotting.budget_curves([1, 2], c),
        lambda c: plotting.accuracy_curves([1, 2], c),
        lambda c: plotting.pool_size_curves([2, math.inf], c),
        lambda c: plotting.training_curves(
            {k: {"step": [1, 2], "loss": v} for k, v in c.items()}
        ),
        lambda c: plotting.calibration_plot([0.2, 0.8], c),
    ],
    ids=["error", "budget", "accuracy", "pool_size", "training", "calibration"],
)
def test_every_curve_function_draws_same_coloured_learners_apart(draw):
    fig = draw({"ridge (a)": [0.5, 0.4], "ridge (b)": [0.6, 0.5], "OLS": [0.7, 0.6]})
    looks = list(_looks(fig.axes[0]).values())
    assert len(set(looks)) == len(looks)


def test_more_same_coloured_series_than_line_styles_is_an_error():
    curves = {f"ridge {i}": [1.0, 0.5] for i in range(5)}
    with pytest.raises(ValueError, match="more than 4 series share colour"):
        plotting.error_curves([1, 2], curves)


def test_a_hand_drawn_figure_with_two_alike_series_is_caught():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], color="k", label="model A")
    ax.plot([1, 2], [2, 1], color="k", label="model B")
    with pytest.raises(ValueError, match="'model A' and 'model B'"):
        plotting.check_distinct_series(ax)
    ax.lines[1].set_linestyle("--")
    plotting.check_distinct_series(ax)


def test_a_shared_legend_refuses_two_labels_drawn_alike():
    def draw(label, ax):
        ax.plot([1, 2], [1, 2], color="k", label=label)

    with pytest.raises(ValueError, match="shared legend"):
        plotting.small_multiples(draw, [{"label": "run 1"}, {"label": "run 2"}])


@pytest.mark.parametrize(
    "value, view, text",
    [
        (2.0, (0.1, 10), "2"),
        (1.14, (1, 2), "1.14"),
        (0.1, (0.1, 10), "0.1"),
        (1000.0, (1, 5000), "1000"),
        # a wide axis labels every power of ten alike: 10^4 beside 10^5, not 10000
        (1e4, (100, 1e6), "$10^{4}$"),
        (1e-5, (1e-6, 1), "$10^{-5}$"),
        (2e5, (100, 1e6), "200000"),
    ],
)
def test_log_tick_labels_are_plain_numbers(value, view, text):
    assert _PlainLogFormatter()._num_to_string(value, *view) == text


def test_a_log_axis_of_one_decade_shows_no_power_notation():
    fig = plotting.error_curves([1, 2, 3], {"ridge": [1.05, 1.2, 1.3]}, logy=True)
    fig.canvas.draw()
    labels = [
        t.get_text()
        for t in fig.axes[0].get_yticklabels() + fig.axes[0].get_yticklabels(minor=True)
        if t.get_text()
    ]
    assert labels and not any("times" in s or "^" in s for s in labels)
    assert all(float(s.replace("\u2212", "-")) > 0 for s in labels)
    assert np.isfinite([float(s.replace("\u2212", "-")) for s in labels]).all()


def test_matrix_panels_on_their_own_scales_draw_a_colour_bar_each():
    """One bar for panels on different scales would state only the last one's scale
    (chapter 2's key-query diagonal of 1 read as 6)."""
    matrices = {"a": np.eye(3), "b": 6 * np.ones((3, 3))}
    own = plotting.matrix_panels(matrices, shared_scale=False)
    shared = plotting.matrix_panels(matrices)
    assert len(own.axes) == 4 and len(shared.axes) == 3  # panels plus colour bars
    limits = sorted(ax.get_ylim()[1] for ax in own.axes[2:])
    assert limits == pytest.approx([1.0, 6.0])


@pytest.mark.parametrize(
    ("vlines", "expected"),
    [
        ({"k = d": 5}, [0, 5, 10, 15, 20]),  # d and 2d are ticks
        ({"k = d": 5, "k = 2d": 10}, [0, 5, 10, 15, 20]),
        ({"k = s": 2, "k = d": 5}, None),  # spacing 1: too many ticks, integers only
        ({"repeat begins": 7.5}, None),  # not a whole count
    ],
)
def test_error_curve_ticks_fall_on_whole_reference_lines(vlines, expected):
    ks = np.arange(21)
    fig = plotting.error_curves(ks, {"ridge": ks / 20.0}, vlines=vlines)
    axis = fig.axes[0].xaxis
    ticks = [t for t in fig.axes[0].get_xticks() if 0 <= t <= 20]
    if expected is None:  # matplotlib's integer ticks (0, 3, 6, ... here)
        assert isinstance(axis.get_major_locator(), MaxNLocator)
        assert all(float(t).is_integer() for t in ticks)
    else:
        assert ticks == expected
