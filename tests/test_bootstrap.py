"""The bootstrap standard error: the textbook se of a mean, pairing, arrays, and
refusals by name."""

import numpy as np
import pytest
import torch

from icl_lib.analysis.bootstrap import bootstrap_se, bootstrap_se_of_means


def test_the_se_of_a_mean_is_sd_over_root_n():
    """For a mean, the bootstrap se is the plug-in sd / sqrt(n), up to the
    resampling's own noise (about 1/sqrt(2 * resamples) relative: 1.6 % here)."""
    x = torch.randn(
        400, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    se = bootstrap_se(lambda rows: x[rows].mean(), 400, resamples=2000, seed=3)
    exact = x.std(unbiased=False).item() / 400**0.5
    assert se == pytest.approx(exact, rel=0.06)


def test_pairing_cancels_what_two_learners_share():
    """Two learners whose errors share the prompts' difficulty: the paired se of their
    difference is that of the small independent part, far below an unpaired one."""
    g = torch.Generator().manual_seed(2)
    shared = torch.randn(1000, generator=g, dtype=torch.float64) * 10
    a = shared + 0.1 * torch.randn(1000, generator=g, dtype=torch.float64)
    b = shared + 0.1 * torch.randn(1000, generator=g, dtype=torch.float64)
    paired = bootstrap_se(lambda rows: (a[rows] - b[rows]).mean(), 1000)
    independent = (0.1 * 2**0.5) / 1000**0.5
    assert paired == pytest.approx(independent, rel=0.15)
    other = torch.randint(0, 1000, (1000,), generator=g)
    unpaired = bootstrap_se(lambda rows: a[rows].mean() - b[other[rows]].mean(), 1000)
    assert unpaired > 20 * paired


def test_arrays_and_determinism():
    x = torch.randn(50, 3, generator=torch.Generator().manual_seed(4))
    se = bootstrap_se(lambda rows: x[rows].mean(0), 50, seed=5)
    assert isinstance(se, np.ndarray) and se.shape == (3,) and np.all(se > 0)
    again = bootstrap_se(lambda rows: x[rows].mean(0), 50, seed=5)
    np.testing.assert_array_equal(se, again)
    assert isinstance(bootstrap_se(lambda rows: float(x[rows, 0].max()), 50), float)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"statistic": 1.0}, TypeError, "statistic: expected a function"),
        ({"n": 1}, ValueError, "n: "),
        ({"n": 2.5}, TypeError, "n: "),
        ({"resamples": 0}, ValueError, "resamples: "),
        ({"seed": "0"}, TypeError, "seed: expected an int"),
        (
            {"statistic": lambda rows: float("nan")},
            ValueError,
            "statistic: expected finite values",
        ),
        (
            {"statistic": lambda rows: np.zeros(int(rows[0]) % 2 + 1)},
            ValueError,
            "statistic: expected the same shape",
        ),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    call = {"statistic": lambda rows: rows.double().mean(), "n": 10, **kwargs}
    with pytest.raises(error, match=match):
        bootstrap_se(call.pop("statistic"), call.pop("n"), **call)


def test_the_vectorised_means_agree_with_the_general_bootstrap():
    """bootstrap_se_of_means draws the same rows as bootstrap_se for one seed, so a
    ratio of two means gets the same standard error either way."""
    g = torch.Generator().manual_seed(7)
    a, b = torch.rand(300, generator=g) + 1, torch.rand(300, generator=g) + 1
    fast = bootstrap_se_of_means(lambda x, y: x / y, [a, b], resamples=500, seed=3)
    slow = bootstrap_se(
        lambda rows: a[rows].double().mean() / b[rows].double().mean(),
        300,
        resamples=500,
        seed=3,
    )
    assert fast == pytest.approx(slow, rel=1e-9)
    rows = torch.rand(300, 4, generator=g)
    assert bootstrap_se_of_means(lambda m: m.max(1).values, [rows]) > 0
    with pytest.raises(TypeError, match="columns: expected a list of tensors"):
        bootstrap_se_of_means(lambda m: m, a)
    with pytest.raises(ValueError, match="columns: expected the same number of rows"):
        bootstrap_se_of_means(lambda x, y: x / y, [a, b[:10]])
    with pytest.raises(ValueError, match="statistic: expected one value per resample"):
        bootstrap_se_of_means(lambda x: x.mean(), [a])
