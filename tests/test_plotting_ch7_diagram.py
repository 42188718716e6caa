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
    assert "float64 rounding unit" in " ".join(t.get_text() for t in ax.texts)
    plt.close(fig)


def test_the_identity_check_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="labels, errors, controls"):
        implicit_figures.identity_check(["a", "b"], [1e-16], [0.1])
    with pytest.raises(ValueError, match="errors: expected numbers >= 0"):
        implicit_figures.identity_check(["a"], [-1.0], [0.1])
    with pytest.raises(ValueError, match="controls: expected numbers > 0"):
        implicit_figures.identity_check(["a"], [1e-16], [0.0])


def _comparison(**changes):
    ks = list(range(6))
    args = {
        "ks": ks,
        "implicit": [1.0, 0.8, 0.6, 0.5, 0.45, 0.4],
        "one_pass": [1.0, 0.9, 0.8, 0.7, 0.65, 0.6],
        "converged_ks": [2, 5],
        "converged": [0.7, 0.3],
        "passes": [1, 10, 100],
        "test_error": [0.6, 0.35, 0.3],
        "train_error": [0.5, 1e-3, 1e-9],
    }
    args.update(changes)
    return implicit_figures.finetuning_comparison(
        args.pop("ks"),
        args.pop("implicit"),
        args.pop("one_pass"),
        args.pop("converged_ks"),
        args.pop("converged"),
        args.pop("passes"),
        args.pop("test_error"),
        args.pop("train_error"),
    )


def test_the_finetuning_comparison_draws_both_panels():
    fig = _comparison()
    left, right = fig.axes
    labels = [line.get_label() for line in left.get_lines()]
    assert labels == [
        "implicit update (= in context)",
        "SGD, one pass",
        "SGD run to convergence",
    ]
    assert right.get_xscale() == "log" and right.get_yscale() == "log"
    assert "SGD on i = 5 examples" in right.get_title()
    # the implicit update's error at the largest converged count, as the reference
    levels = [
        line.get_ydata()[0]
        for line in right.get_lines()
        if line.get_label().startswith("_")
    ]
    assert 0.4 in levels
    plt.close(fig)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"implicit": [1.0, 0.5]}, "implicit: expected 6 values"),
        ({"converged": [0.7]}, "converged: expected 2 values"),
        ({"converged_ks": [2, 7]}, "converged_ks: expected counts among ks"),
        ({"passes": [1, 100, 10]}, "passes: expected increasing counts"),
        ({"train_error": [0.5, 0.0, 1e-9]}, "train_error: expected numbers > 0"),
        ({"test_error": [0.6, 0.3]}, "test_error: expected 3 values"),
    ],
)
def test_the_finetuning_comparison_refuses_mismatched_inputs(change, message):
    with pytest.raises(ValueError, match=message):
        _comparison(**change)
    plt.close("all")
