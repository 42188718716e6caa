"""The book's one rule for which examples a model reads (icl_lib.analysis.reading),
used by chapter 3 (and offered to chapter 1): ignored below half of the reference's
influence, weighed about alike within a factor 1.25."""

import numpy as np
import pytest
import torch

from icl_lib.analysis.reading import ALIKE_WITHIN, IGNORED_BELOW, describe_reading


def test_a_flat_profile_reads_every_example_about_alike():
    out = describe_reading(np.full(20, 1.0) + 0.05 * np.sin(np.arange(20)))
    assert out["ignored"] == () and out["pattern"] == "alike"
    assert out["phrase"] == "reads all 20 examples and weighs them about alike"
    assert out["spread"] <= ALIKE_WITHIN


def test_a_first_example_worth_one_and_a_half_is_not_weighed_alike():
    # chapter 3's case: example 1 moves the prediction 1.42 times ridge's average,
    # the rest about alike, the last 0.99
    profile = np.r_[1.42, 1.25, 1.17, np.full(16, 1.08), 0.99]
    out = describe_reading(profile)
    assert out["pattern"] == "first"
    assert out["phrase"] == "reads all 20 examples and weighs the first ones most"
    assert describe_reading(profile[::-1])["pattern"] == "last"


def test_ignored_examples_are_listed_from_1_and_the_rest_described():
    profile = torch.tensor([1.0, 1.1, 0.02, 1.0, 0.3, 0.95])
    out = describe_reading(profile)
    assert out["ignored"] == (3, 5) and out["n_examples"] == 6
    assert out["phrase"] == (
        "ignores 2 of its 6 examples (positions 3 and 5) and weighs the others "
        "about alike"
    )
    one = describe_reading([1.0, 0.1, 1.0])
    assert "1 of its 3 examples (position 2)" in one["phrase"]


def test_a_profile_high_at_both_ends_is_uneven_and_thresholds_are_the_books():
    out = describe_reading([2.0, 1.0, 1.0, 1.0, 1.5, 1.0, 1.0, 1.5, 1.2])
    assert out["pattern"] == "uneven" and out["phrase"].endswith("weighs them unevenly")
    assert IGNORED_BELOW == 0.5  # chapter 1's definition of an ignored example
    assert describe_reading([0.6, 0.6], ignored_below=0.7)["ignored"] == (1, 2)
    assert describe_reading([0.1, 0.2])["phrase"] == "ignores all 2 of its examples"
    assert describe_reading([1.0])["pattern"] == "alike"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"relative": [[1.0, 2.0]]}, ValueError, "relative: expected a 1-D profile"),
        ({"relative": []}, ValueError, "relative: expected a 1-D profile"),
        ({"relative": [1.0, float("nan")]}, ValueError, "relative: expected finite"),
        ({"relative": [1.0, -0.5]}, ValueError, "non-negative"),
        ({"relative": ["a", "b"]}, TypeError, "relative: expected numbers"),
        ({"relative": [1.0], "alike_within": 1.0}, ValueError, "alike_within"),
        ({"relative": [1.0], "ignored_below": -1.0}, ValueError, "ignored_below"),
    ],
)
def test_describe_reading_refuses_what_it_cannot_read(kwargs, error, message):
    with pytest.raises(error, match=message):
        describe_reading(**kwargs)
