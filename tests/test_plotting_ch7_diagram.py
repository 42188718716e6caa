"""Chapter 7's figures (icl_lib.plotting.implicit_figures): the two ways of consuming a
context, the identity check and the fine-tuning comparison draw what the chapter says
they draw, and refuse what they cannot draw."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from icl_lib.plotting import implicit_figures


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_the_consumption_diagram_draws_both_orders_with_shifted_anchors():
    fig = implicit_figures.consumption_diagram(n_context=3)
    texts = _texts(fig)
    joined = " ".join(texts)
    assert all(not ax.axison for ax in fig.axes)  # a schematic, not a plot
    assert "prefix trajectory" in joined and "product form" in joined
    # the trajectory: W_0 .. W_3, each step anchored at A(x)
    assert {"$W_0$", "$W_1$", "$W_2$", "$W_3$"} <= set(texts)
    assert texts.count("anchor $A(x)$") == 3
    # the product form: tilde W_1 .. tilde W_3, step i anchored at a_{i+1}, the last
    # at a_{N+1} = A(x)
    assert {"$\\tilde W_1$", "$\\tilde W_2$", "$\\tilde W_3$"} <= set(texts)
    assert "anchor $a_{2}$" in texts and "anchor $a_{3}$" in texts
    assert "anchor $a_{4} = A(x)$" in texts
    assert "$\\times\\,(I + h_{1} E_{1})$" in texts
    assert "$\\times\\,(I + h_{3} E_{3})$" in texts
    assert "$-\\,h\\,\\Delta_{0}$" in texts and "$-\\,h\\,\\Delta_{2}$" in texts
    # each of the two rows draws every prompt as its N context slots and the query
    assert texts.count("$x$") == 2 * 4
    assert "rank 1" in joined and "rank up to 3" in joined
    plt.close(fig)


@pytest.mark.parametrize("n", [2, 4])
def test_the_consumption_diagram_follows_the_context_size(n):
    fig = implicit_figures.consumption_diagram(n_context=n)
    texts = _texts(fig)
    assert f"anchor $a_{{{n + 1}}} = A(x)$" in texts
    assert f"$\\tilde W_{n}$" in texts and f"$\\tilde W_{n + 1}$" not in texts
    assert texts.count("$x$") == 2 * (n + 1)
    plt.close(fig)


@pytest.mark.parametrize("bad", [1, 5, True, 2.0, "3"])
def test_the_consumption_diagram_refuses_sizes_it_cannot_draw(bad):
    with pytest.raises(ValueError, match="n_context: expected an int from 2 to 4"):
        implicit_figures.consumption_diagram(n_context=bad)


def test_the_identity_check_draws_errors_below_controls_on_a_log_axis():
    labels = ["softmax, plain", "ssm, skip", "local, pre-LN"]
    fig = implicit_figures.identity_check(labels, [1e-16, 0.0, 3e-16], [0.01, 0.4, 0.2])
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == labels
    dots, squares = {}, {}
    for line in ax.get_lines():
        if line.get_marker() == "o":
            dots = line.get_ydata()
        elif line.get_marker() == "s":
            squares = line.get_ydata()
    assert len(dots) == len(squares) == 3
    assert np.all(np.asarray(dots) > 0)  # an exact zero is drawn, below rounding
    assert np.all(np.asarray(dots) < np.asarray(squares))
    # the axis names what both series measure; the legend says which is which, and
    # names the rounding line, where no dot can cover its label
    assert ax.get_ylabel() == "change of the output at the query"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("smallest change" in t for t in legend)
    assert any("largest change" in t for t in legend)
    assert "float64 machine epsilon" in legend
    plt.close(fig)


def test_the_identity_check_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="labels, errors, controls"):
        implicit_figures.identity_check(["a", "b"], [1e-16], [0.1])
    with pytest.raises(ValueError, match="errors: expected numbers >= 0"):
        implicit_figures.identity_check(["a"], [-1.0], [0.1])
    with pytest.raises(ValueError, match="controls: expected numbers > 0"):
        implicit_figures.identity_check(["a"], [1e-16], [0.0])


def _decay(**changes):
    args = {
        "ks": [0, 1, 2, 3],
        "curves": {
            "trained block": [1.0, 0.6, 0.4, 0.3],
            "trained block, shuffled labels": [1.0, 0.61, 0.39, 0.3],
            "online gradient descent": [1.0, 0.9, 0.8, 0.7],
        },
        "first_steps": {"trained block": 2.51},
        "reference": [1.0, 0.58, 0.41, 0.32],
        "reference_label": "uniform average",
    }
    args.update(changes)
    return implicit_figures.step_decay(args.pop("ks"), args.pop("curves"), **args)


def test_the_step_decay_pairs_each_series_with_its_shuffled_control():
    fig = _decay()
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    trained = lines["trained block (first step 2.5)"]
    shuffled = lines["trained block, shuffled labels"]
    other = lines["online gradient descent"]
    # a series and its control: one colour and marker, told apart by the line style
    assert trained.get_color() == shuffled.get_color() != other.get_color()
    assert trained.get_marker() == shuffled.get_marker() != other.get_marker()
    assert trained.get_linestyle() == "-" and shuffled.get_linestyle() == "--"
    # the reference: a wide light band beneath the curves, not a line hidden by them
    reference = lines["uniform average"]
    assert reference.get_linewidth() > 3 * trained.get_linewidth()
    assert reference.get_zorder() < trained.get_zorder()
    assert ax.get_yscale() == "log"
    # plain tick labels at every tick, not only at the powers of ten
    ticks = [t for t in ax.get_yticks() if 0.2 <= t <= 1]
    labels = [ax.yaxis.get_major_formatter()(t, k) for k, t in enumerate(ticks)]
    assert labels == ["0.2", "0.5", "1"]
    plt.close(fig)


def test_the_step_decay_legend_thins_only_the_references_swatch():
    legend = _decay().axes[0].get_legend()
    widths = {
        text.get_text(): line.get_linewidth()
        for text, line in zip(legend.get_texts(), legend.get_lines(), strict=True)
    }
    assert widths["uniform average"] == 6 and widths["online gradient descent"] == 1.6
    # with no label the reference has no entry, and every curve keeps its own width
    legend = _decay(reference_label="").axes[0].get_legend()
    assert [line.get_linewidth() for line in legend.get_lines()] == [1.6, 1.6, 1.6]
    plt.close("all")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {
                "curves": {"a, shuffled labels": [1.0, 0.5, 0.4, 0.3]},
                "first_steps": None,
            },
            "the series it shuffles",
        ),
        ({"first_steps": {"nobody": 1.0}}, "first_steps: expected names of curves"),
        ({"reference": [1.0, 0.5]}, "reference: expected 4 values"),
        ({"first_steps": {}}, "first_steps: expected at least one name"),
        ({"curves": {"a": [1.0, 0.5, 0.0, 0.3]}, "first_steps": None}, "numbers > 0"),
        ({"curves": {"a": [1.0, 0.5]}, "first_steps": None}, "expected 4 values"),
    ],
)
def test_the_step_decay_refuses_what_it_cannot_draw(change, message):
    with pytest.raises(ValueError, match=message):
        _decay(**change)
    plt.close("all")


def _comparison(**changes):
    ks = list(range(6))
    args = {
        "ks": ks,
        "implicit": [1.0, 0.8, 0.6, 0.5, 0.45, 0.4],
        "budgets": {
            "1 pass": [1.0, 0.9, 0.8, 0.7, 0.65, 0.6],
            "100 passes": [1.0, 0.85, 0.6, 0.45, 0.35, 0.3],
        },
        "converged_ks": [2, 5],
        "converged": [0.7, 0.3],
    }
    args.update(changes)
    return implicit_figures.finetuning_comparison(
        args.pop("ks"),
        args.pop("implicit"),
        args.pop("budgets"),
        args.pop("converged_ks"),
        args.pop("converged"),
        **args,
    )


def test_the_finetuning_comparison_draws_errors_and_their_ratios():
    fig = _comparison()
    left, right = fig.axes
    lines = {line.get_label(): line for line in left.get_lines()}
    assert list(lines) == [
        "the implicit update",
        "1 pass",
        "100 passes",
        "SGD run to interpolation",
    ]
    # left: the errors themselves
    np.testing.assert_allclose(
        lines["the implicit update"].get_ydata(), [1.0, 0.8, 0.6, 0.5, 0.45, 0.4]
    )
    np.testing.assert_allclose(
        lines["SGD run to interpolation"].get_ydata(), [0.7, 0.3]
    )
    # right: each over the implicit update's error, which is the line at 1
    ratios = [line.get_ydata() for line in right.get_lines()]
    assert list(ratios[0]) == [1, 1]
    np.testing.assert_allclose(
        ratios[1],
        np.array([1.0, 0.9, 0.8, 0.7, 0.65, 0.6]) / [1.0, 0.8, 0.6, 0.5, 0.45, 0.4],
    )
    np.testing.assert_allclose(ratios[-1], [0.7 / 0.6, 0.3 / 0.4])
    assert left.get_yscale() == "log" and right.get_yscale() == "log"
    assert "within 20 %" in right.get_title()
    plt.close(fig)


def test_the_finetuning_comparison_marks_where_a_budget_differs():
    fig = _comparison(differs={"1 pass": [3, 4, 5]})
    left, right = fig.axes
    dots = [
        line
        for line in right.get_lines()
        if line.get_marker() == "o" and len(line.get_xdata())
    ]
    assert len(dots) == 1
    np.testing.assert_allclose(dots[0].get_xdata(), [3, 4, 5])
    np.testing.assert_allclose(
        dots[0].get_ydata(), np.array([0.7, 0.65, 0.6]) / [0.5, 0.45, 0.4]
    )
    budget = {line.get_label(): line for line in left.get_lines()}["1 pass"]
    assert dots[0].get_color() == budget.get_color()
    assert right.get_legend() is not None
    # the squares share no colour with a budget curve
    squares = [line for line in left.get_lines() if line.get_marker() == "s"]
    colours = {line.get_color() for line in left.get_lines()[1:-1]}
    assert squares[0].get_color() not in colours
    plt.close(fig)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"implicit": [1.0, 0.5]}, "implicit: expected 6 values"),
        ({"differs": {"nobody": [1]}}, "differs: expected labels of budgets"),
        ({"differs": {"1 pass": [9]}}, "expected counts among ks"),
        ({"budgets": {"1 pass": [1.0, 0.5]}}, "1 pass'\\]: expected 6 values"),
        ({"budgets": {}}, "budgets: expected at least one"),
        ({"converged": [0.7]}, "converged: expected 2 values"),
        ({"converged_ks": [2, 7]}, "converged_ks: expected counts among ks"),
        ({"band": 1.0}, "band: expected numbers > 1"),
    ],
)
def test_the_finetuning_comparison_refuses_mismatched_inputs(change, message):
    with pytest.raises(ValueError, match=message):
        _comparison(**change)
    plt.close("all")


def _run(**changes):
    args = {
        "passes": [1, 10, 100],
        "test_error": [0.6, 0.35, 0.3],
        "train_error": [0.5, 1e-3, 1e-9],
        "implicit_error": 0.4,
    }
    args.update(changes)
    return implicit_figures.interpolation_run(
        args.pop("passes"), args.pop("test_error"), args.pop("train_error"), **args
    )


def test_the_interpolation_run_draws_both_errors_and_the_implicit_level():
    fig = _run()
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == [
        "test error",
        "its own training error",
        "the implicit update's test error",
    ]
    assert lines["the implicit update's test error"].get_ydata()[0] == 0.4
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    plt.close(fig)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"passes": [1, 100, 10]}, "passes: expected increasing counts"),
        ({"train_error": [0.5, 0.0, 1e-9]}, "train_error: expected numbers > 0"),
        ({"test_error": [0.6, 0.3]}, "test_error: expected 3 values"),
        ({"implicit_error": -1.0}, "implicit_error: expected numbers > 0"),
    ],
)
def test_the_interpolation_run_refuses_mismatched_inputs(change, message):
    with pytest.raises(ValueError, match=message):
        _run(**change)
    plt.close("all")
