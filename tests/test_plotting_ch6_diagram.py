"""Chapter 6's token diagram of Reddy's task (icl_lib.plotting.bursty_diagram): it draws
the sequence it describes, and refuses what it cannot draw."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from icl_lib.plotting.bursty_diagram import (  # noqa: E402
    CLASSES,
    LABELS,
    bursty_classes,
    bursty_sequence_diagram,
)


@pytest.mark.parametrize(("n_pairs", "burstiness"), [(8, 2), (8, 1), (8, 4), (6, 3)])
def test_a_bursty_context_holds_its_classes_burstiness_times_and_the_query(
    n_pairs, burstiness
):
    classes, query = bursty_classes(n_pairs, burstiness)
    assert len(classes) == n_pairs
    assert set(classes) == set(range(n_pairs // burstiness))
    assert all(classes.count(k) == burstiness for k in set(classes))
    assert query in classes  # a bursty sequence always holds the query's class


def test_the_diagram_draws_both_sequences_and_the_circuit():
    fig = bursty_sequence_diagram(n_pairs=8, burstiness=2)
    top, bottom = fig.axes
    assert not top.axison and not bottom.axison  # a schematic, not a plot
    top_texts = [t.get_text() for t in top.texts]
    bottom_texts = [t.get_text() for t in bottom.texts]
    for texts in (top_texts, bottom_texts):  # x_1 l_1 ... x_8 l_8 x_q, in order
        assert "$x_1$" in texts and "$\\ell_8$" in texts and "$x_q$" in texts
        assert "$x_9$" not in texts
    classes, query = bursty_classes(8, 2)
    # the answer read off the context is the label of the query's class ...
    assert f"label {LABELS[query]}" in top_texts
    assert any("layer 0" in t for t in top_texts)
    assert any("layer 1" in t for t in top_texts)
    # ... one arc per label (layer 0) and one per label of the query's class (layer 1)
    assert len(top.patches) == 17 + 1 + 8 + classes.count(query)
    # the i.i.d. context does not hold the query's class: no token there but the query
    assert bottom_texts.count(CLASSES[query]) == 1
    assert any("weights" in t for t in bottom_texts)
    plt.close(fig)


def test_the_diagram_refuses_sizes_it_cannot_draw():
    with pytest.raises(ValueError, match="n_pairs: expected an int from 2 to 8"):
        bursty_sequence_diagram(n_pairs=9)
    with pytest.raises(ValueError, match="burstiness: expected a divisor of n_pairs"):
        bursty_sequence_diagram(n_pairs=8, burstiness=3)
    with pytest.raises(TypeError, match="burstiness: expected an int"):
        bursty_sequence_diagram(burstiness=2.0)
    with pytest.raises(ValueError, match="burstiness: expected an int from 1 to 4"):
        bursty_sequence_diagram(burstiness=0)
