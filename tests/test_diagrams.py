"""Schematic diagrams of icl_lib.plotting: they draw, and refuse what they cannot."""

import matplotlib.pyplot as plt
import pytest

from icl_lib import plotting


@pytest.mark.parametrize(
    "draw", [plotting.gd_attention_diagram, plotting.replace_one_diagram]
)
def test_a_diagram_draws_its_tokens_and_no_axes(draw):
    fig = draw()
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert all(not ax.axison for ax in fig.axes)  # a schematic, not a plot
    assert any("x_q" in t or "$x$" in t for t in texts)  # the query token is drawn
    plt.close(fig)


def test_the_induction_diagram_draws_the_circuit_on_a_repeat():
    fig = plotting.induction_circuit_diagram()
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert all(not ax.axison for ax in fig.axes)
    assert texts.count("A") == 2 and "after\nA" in texts and "predict B" in texts
    plt.close(fig)


def test_the_implicit_update_diagram_shows_both_blocks_and_the_update():
    fig = plotting.implicit_update_diagram()
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert all(not ax.axison for ax in fig.axes)
    assert "with the context" in texts and "without it" in texts
    assert "\\Delta W" in texts and "rank 1" in texts
    plt.close(fig)


def test_diagrams_refuse_sizes_they_cannot_draw():
    with pytest.raises(ValueError, match="n_context: expected an int from 2 to 6"):
        plotting.gd_attention_diagram(n_context=9)
    with pytest.raises(ValueError, match="replaced: expected an int from 0 to 5"):
        plotting.replace_one_diagram(n_context=6, replaced=6)


def test_the_cache_and_state_diagram_shows_both_memories():
    fig = plotting.cache_and_state_diagram(n_pairs=2)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert all(not ax.axison for ax in fig.axes)
    assert "a cache that grows" in texts and "a state of fixed size" in texts
    # two pairs, drawn on both sides
    assert texts.count("$\\kappa_2$") == 2 and "$\\kappa_3$" not in texts
    plt.close(fig)
    with pytest.raises(ValueError, match="n_pairs: expected an int from 1 to 4"):
        plotting.cache_and_state_diagram(n_pairs=0)


def test_the_bayes_diagram_shows_training_and_inference_meeting():
    fig = plotting.bayes_two_views_diagram()
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert all(not ax.axison for ax in fig.axes)
    assert "training" in texts and "inference" in texts
    assert "-\\log q(y" in texts and "p(w \\mid D)" in texts
    assert "its minimiser over all $q$" in texts
    plt.close(fig)


def test_the_attention_smoother_diagram_weighs_examples_near_the_query():
    fig = plotting.attention_smoother_diagram()
    top, bottom = fig.axes
    weights = [patch.get_height() for patch in bottom.patches]
    assert sum(weights) == pytest.approx(1.0)  # softmax weights
    assert "query $x_q$" in [t.get_text() for t in bottom.texts]
    plt.close(fig)


def test_the_selection_diagram_shows_validation_and_testing_side_by_side():
    fig = plotting.selection_routes_diagram(n_candidates=2)
    left, right = fig.axes
    left_texts = " ".join(t.get_text() for t in left.texts)
    right_texts = " ".join(t.get_text() for t in right.texts)
    assert all(not ax.axison for ax in fig.axes)
    # validation: two candidates scored on the held-out part, no third
    assert "$f_2$" in left_texts and "$f_3$" not in left_texts
    assert "validate on these" in left_texts and "\\hat L_2" in left_texts
    # testing: one statistic of the context routes to one of two learners
    assert "t(D)" in right_texts and "logistic regression" in right_texts
    assert "$x_q$" in left_texts and "$x_q$" in right_texts
    plt.close(fig)
    with pytest.raises(ValueError, match="n_candidates: expected an int from 2 to 4"):
        plotting.selection_routes_diagram(n_candidates=1)


def test_the_prompt_layout_diagram_draws_both_layouts_of_one_prompt():
    fig = plotting.prompt_layout_diagram(n_context=2)
    left, right = fig.axes
    left_texts = [t.get_text() for t in left.texts]
    right_texts = [t.get_text() for t in right.texts]
    assert all(not ax.axison for ax in fig.axes)
    # 2k + 1 tokens on the left, each input token with its prediction above it
    assert len(left.patches) == 2 * 2 + 1 + 2  # a label token is two boxes
    assert {"$\\hat y_1$", "$\\hat y_2$", "$\\hat y_q$"} <= set(left_texts)
    # k + 1 columns of Z on the right, the query's label slot 0
    assert {"$x_1$", "$x_2$", "$x_q$", "$0$"} <= set(right_texts)
    plt.close(fig)
    with pytest.raises(ValueError, match="n_context: expected an int from 1 to 4"):
        plotting.prompt_layout_diagram(n_context=5)


def test_a_plot_of_nothing_is_refused_by_name():
    """Issue 42: no curves drew an empty figure, and no x positions or no labels were
    blamed on the curves or the values."""
    calls = {
        "curves": lambda: plotting.error_curves([1, 2], {}),
        "ks": lambda: plotting.error_curves([], {"ridge": [1.0, 0.5]}),
        "pool_sizes": lambda: plotting.pool_size_curves([], {"ridge": [1.0]}),
        "series": lambda: plotting.grouped_bars(["a"], {}, ylabel="e"),
        "groups": lambda: plotting.grouped_bars([], {"ridge": [1.0]}, ylabel="e"),
        "row_labels": lambda: plotting.annotated_heatmap([[0.1]], [], ["c"]),
        "band": lambda: plotting.predictive_band([0.0], {"model_mean": [0.0]}),
        "outputs": lambda: plotting.implicit_update_panels([[0.1, 0.2]], {}),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=f"^{name}: expected"):
            call()
    with pytest.raises(ValueError, match="^k: expected an int <= "):
        plotting.attention_map([[0.2] * 5], ["L0 H0"], 10**12)
    plt.close("all")
