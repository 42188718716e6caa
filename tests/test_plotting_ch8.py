"""Chapter 8's figures (icl_lib.plotting.kernel_figures): they draw what the chapter
says they draw, keep every series distinguishable, and refuse what they cannot draw."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from icl_lib.plotting import kernel_figures  # noqa: E402


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def _factors(scaled, steps=(1, 8, 64)):
    return {t: (1 - (1 - scaled) ** t, scaled * t / (1 + scaled * t)) for t in steps}


def test_the_slot_diagram_follows_the_label_slots_layer_by_layer():
    fig = kernel_figures.label_slot_diagram(n_examples=3, n_layers=2)
    texts = _texts(fig)
    (ax,) = fig.axes
    assert not ax.axison  # a schematic, not a plot
    # the prompt: labels in the example slots, 0 in the query's
    assert all(f"$y_{i}$" in texts for i in (1, 2, 3)) and "$0$" in texts
    # after each layer: the residuals, and the prediction with its sign flipped
    for layer in (1, 2):
        assert f"$y_1 - f_{layer}(x_1)$" in texts and f"$-f_{layer}(x_q)$" in texts
    assert "$y_4$" not in texts and "f_3" not in texts  # 3 examples, 2 layers
    assert "after layer 2" in texts and "prediction $f_2(x_q) = -u_q$" in texts
    assert texts.count("K(x_i, x_j)") == 2  # the update, once per layer
    # the arrows go into the query's slot only; the text says every slot is updated
    assert texts.count("every slot is updated (arrows: the query's update)") == 2
    plt.close(fig)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_examples": 0}, "n_examples: expected an int from 1 to 4"),
        ({"n_examples": 5}, "n_examples: expected an int from 1 to 4"),
        ({"n_layers": 0}, "n_layers: expected an int from 1 to 3"),
        ({"n_layers": True}, "n_layers: expected an int from 1 to 3"),
        ({"n_layers": 2.0}, "n_layers: expected an int from 1 to 3"),
    ],
)
def test_the_slot_diagram_refuses_sizes_it_cannot_draw(kwargs, message):
    with pytest.raises(ValueError, match=message):
        kernel_figures.label_slot_diagram(**kwargs)


def test_the_filter_factors_draw_gd_solid_and_ridge_dashed_per_step_count():
    scaled = np.logspace(-3, 0, 50)
    factors = _factors(scaled)
    fig = kernel_figures.filter_factors(scaled, factors)
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert len(lines) == 6 and ax.get_xscale() == "log"
    for t, (gd, ridge) in factors.items():
        gd_line = lines[f"functional GD, $t$ = {t}"]
        ridge_line = lines[f"ridge, $\\lambda = N/(\\eta t)$, $t$ = {t}"]
        assert gd_line.get_linestyle() == "-" and ridge_line.get_linestyle() == "--"
        assert to_hex(gd_line.get_color()) == to_hex(ridge_line.get_color())
        np.testing.assert_allclose(gd_line.get_ydata(), gd)
        np.testing.assert_allclose(ridge_line.get_ydata(), ridge)
    colours = {to_hex(line.get_color()) for line in ax.get_lines()}
    assert len(colours) == 3  # one colour per number of steps
    # plain log ticks, not 10^-3 style mathtext for values inside [0.001, 10^5)
    fig.canvas.draw()
    low, high = ax.get_xlim()
    labels = [
        t.get_text()
        for t in ax.get_xticklabels()
        if t.get_text() and low <= t.get_position()[0] <= high
    ]
    assert labels == ["0.001", "0.01", "0.1", "1"]
    plt.close(fig)


def test_the_filter_factors_agree_where_the_text_says_they_do():
    """Early stopping is ridge at both ends: for a small eta mu t / N both factors are
    about eta mu t / N, for a large one both are about 1 (the chapter's sentence)."""
    scaled = np.array([1e-5, 1.0])
    for t, (gd, ridge) in _factors(scaled, steps=(1, 8, 64)).items():
        assert gd[0] == pytest.approx(ridge[0], rel=1e-3)
        if t >= 8:
            assert gd[1] == pytest.approx(1.0) and ridge[1] > 0.88


@pytest.mark.parametrize(
    "scaled, factors, error, message",
    [
        (np.array([0.1, 2.0]), None, ValueError, "scaled_eigenvalues: expected eta mu"),
        (
            np.array([0.0, 0.5]),
            None,
            ValueError,
            "scaled_eigenvalues: expected numbers",
        ),
        (np.array([0.1, 0.5]), {}, ValueError, "factors: expected at least one"),
        (np.array([0.1, 0.5]), {1: (np.ones(2),)}, ValueError, "expected a pair"),
        (np.array([0.1, 0.5]), {1: (np.ones(3), np.ones(3))}, ValueError, "one per"),
        (np.array([0.1, 0.5]), {1: (np.ones(2), 2 * np.ones(2))}, ValueError, "[0, 1]"),
        (np.array([0.1, 0.5]), {0: (np.ones(2), np.ones(2))}, ValueError, "steps t"),
        (np.array([0.1, 0.5]), [1, 2], TypeError, "factors: expected a mapping"),
        ("0.1", None, TypeError, "scaled_eigenvalues: expected numbers"),
    ],
)
def test_the_filter_factors_refuse_what_they_cannot_draw(
    scaled, factors, error, message
):
    if factors is None:
        factors = {1: (np.ones(2), np.ones(2))}
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        kernel_figures.filter_factors(scaled, factors)
    plt.close("all")


def test_the_temperature_plot_marks_the_fit_and_the_rivals():
    temperatures = [0.02 * 1.4**i for i in range(8)]
    curve = np.linspace(0.8, 0.95, 8)
    fig = kernel_figures.temperature_agreement(
        temperatures,
        {
            "smoother, selection prompts": curve,
            "smoother, held-out prompts": curve - 0.01,
        },
        levels={
            "best head (held-out)": 0.88,
            "kernel ridge (held-out)": 0.95,
            "1-NN (held-out)": 0.89,
            "majority vote (held-out)": 0.74,
        },
        chosen=temperatures[3],
    )
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert ax.get_xscale() == "log"
    assert set(lines) == {
        "smoother, selection prompts",
        "smoother, held-out prompts",
        "best head (held-out)",
        "kernel ridge (held-out)",
        "1-NN (held-out)",
        "majority vote (held-out)",
        "chosen temperature",
    }
    # the model's rival in black, every other rival a colour of its own
    assert to_hex(lines["best head (held-out)"].get_color()) == "#000000"
    rival_colours = [
        to_hex(lines[name].get_color())
        for name in (
            "kernel ridge (held-out)",
            "1-NN (held-out)",
            "majority vote (held-out)",
        )
    ]
    assert len(set(rival_colours)) == 3 and "#000000" not in rival_colours
    # no rival or mark shares a colour with a curve or with another rival
    curve_colours = {
        to_hex(lines[name].get_color())
        for name in ("smoother, selection prompts", "smoother, held-out prompts")
    }
    chosen_colour = to_hex(lines["chosen temperature"].get_color())
    assert not curve_colours & {*rival_colours, chosen_colour}
    assert chosen_colour not in rival_colours
    assert (
        "#56b4e9" not in rival_colours
    )  # the light blue, too close to the first curve
    assert list(lines["best head (held-out)"].get_ydata()) == [0.88, 0.88]
    assert list(lines["chosen temperature"].get_xdata()) == [temperatures[3]] * 2
    np.testing.assert_allclose(lines["smoother, selection prompts"].get_ydata(), curve)
    fig.canvas.draw()  # plain major ticks, no crowded minor labels
    assert not [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    plt.close(fig)


def test_the_temperature_plot_refuses_mismatched_or_bad_input():
    with pytest.raises(ValueError, match=r"agreement\['a'\]: expected 3 values"):
        kernel_figures.temperature_agreement([0.1, 0.2, 0.3], {"a": [0.5, 0.6]})
    with pytest.raises(ValueError, match="temperatures: expected numbers >"):
        kernel_figures.temperature_agreement([0.0, 0.2], {"a": [0.5, 0.6]})
    with pytest.raises(TypeError, match="levels: expected a mapping"):
        kernel_figures.temperature_agreement([0.1, 0.2], {"a": [0.5, 0.6]}, levels=[1])
    with pytest.raises(ValueError, match="levels: expected at least one rival"):
        kernel_figures.temperature_agreement([0.1, 0.2], {"a": [0.5, 0.6]}, levels={})
    with pytest.raises(TypeError, match="chosen: expected a number or None"):
        kernel_figures.temperature_agreement([0.1, 0.2], {"a": [0.5, 0.6]}, chosen="x")
    plt.close("all")


def test_every_kernel_figure_can_draw_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    scaled = np.logspace(-2, 0, 10)
    assert kernel_figures.filter_factors(scaled, _factors(scaled), ax=left) is fig
    assert (
        kernel_figures.temperature_agreement([0.1, 0.2], {"a": [0.5, 0.6]}, ax=right)
        is fig
    )
    with pytest.raises(TypeError, match="ax: expected a matplotlib Axes"):
        kernel_figures.filter_factors(scaled, _factors(scaled), ax="left")
    plt.close(fig)


def _gap_panels(**kwargs):
    ks = [1, 2, 4, 8, 16]
    return kernel_figures.kernel_gap_panels(
        ks,
        {
            "kernel sum vs Bayes": [1.5, 1.1, 0.8, 0.55, 0.4],
            "prior vs Bayes": [0.3, 0.35, 0.4, 0.42, 0.45],
            "Bayes vs the true concept": [0.6, 0.3, 0.1, 0.01, 1e-5],
        },
        {"kernel sum vs Bayes": [1.5, 1.2, 0.9, 0.7, 0.6]},
        **{"limit": 0.45, **kwargs},
    )


def test_the_gap_panels_draw_the_rate_beside_the_curve_and_the_limit():
    fig = _gap_panels()
    left, right = fig.axes
    assert left.get_xscale() == right.get_xscale() == "log"
    assert left.get_yscale() == "log"
    lines = {line.get_label(): line for line in left.get_lines()}
    reference = lines["$\\propto N^{-0.5}$"]
    assert reference.get_linestyle() == ":"
    ks = np.array([1, 2, 4, 8, 16.0])
    ref = np.asarray(reference.get_ydata())
    # slope -1/2 on log-log axes, half again above the kernel sum's last point
    np.testing.assert_allclose(ref * np.sqrt(ks), ref[0])
    assert ref[-1] == pytest.approx(1.5 * 0.4)
    # a curve that falls below the floor leaves the panel; the others stay in view
    assert left.get_ylim()[0] == pytest.approx(0.02)
    assert left.get_ylim() == right.get_ylim()  # one scale for both panels
    (limit,) = [line for line in right.get_lines() if "limit" in line.get_label()]
    assert list(limit.get_ydata()) == [0.45, 0.45] and limit.get_linestyle() == "--"
    assert "0.45" in limit.get_label()
    plt.close(fig)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"limit": 0.0}, ValueError, "limit: expected numbers > 0"),
        ({"floor": 100.0}, ValueError, "floor: expected a value below"),
        ({"floor": -1.0}, ValueError, "floor: expected numbers > 0"),
        ({"limit": "x"}, TypeError, "limit: expected numbers"),
    ],
)
def test_the_gap_panels_refuse_what_they_cannot_draw(kwargs, error, message):
    with pytest.raises(error, match=message):
        _gap_panels(**kwargs)
    with pytest.raises(ValueError, match=r"in_distribution\['a'\]: expected 2 values"):
        kernel_figures.kernel_gap_panels(
            [1, 2], {"a": [1.0]}, {"b": [1.0, 0.5]}, limit=0.4
        )
    with pytest.raises(ValueError, match=r"shifted\['b'\]: expected numbers > 0"):
        kernel_figures.kernel_gap_panels(
            [1, 2], {"a": [1.0, 0.5]}, {"b": [1.0, 0.0]}, limit=0.4
        )
    plt.close("all")
