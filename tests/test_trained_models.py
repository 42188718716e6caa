"""The retrained regression models use every example of their context.

The book's first chapter-1 models ignored 7 of their 20 examples (label influence about
0.02 of least squares' at positions 9 and 14-19; tools/positional_defect.py), and every
model warm-started from them inherited it. These tests load the committed checkpoints
and require, at the last context size, that no example is ignored: its label influence
(icl_lib.analysis.influence) is at least a quarter of the Bayes predictor's at that
position, more than ten times what an ignored example keeps (chapter 1's claim asks
more, half, and reports its verdict); and that the error does not rise with k (paired
over prompts, two standard errors).
"""

import pytest
import torch

from icl_lib.analysis.curves import significant_rises
from icl_lib.analysis.influence import influence_ratio
from icl_lib.analysis.selection import squared_errors
from icl_lib.learners.linear import ols, ridge
from icl_lib.presets import load_checkpoint
from icl_lib.tasks import linear_regression

IGNORED_BELOW = 0.25  # an ignored example keeps about 0.02 of the Bayes influence
# preset -> label noise sigma of its prompts (the Bayes predictor: ridge, lambda =
# sigma^2, or least squares without noise)
MODELS = {
    "overview_noiseless": 0.0,
    "overview_noisy": 0.5,
    "selection_noise_low_only": 0.1,
    "selection_noise_high_only": 1.0,
}


def _bayes(sigma):
    if sigma == 0:
        return ols
    return lambda xs, ys, xq: ridge(xs, ys, xq, sigma**2)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_example_of_the_context_counts(name):
    model, manifest = load_checkpoint(name)
    sigma = MODELS[name]
    n_points = manifest["preset"]["task"].get("n_points") or model.config.n_positions
    batch = linear_regression(2048, n_points, 5, noise_std=sigma, seed=99)
    ratios = influence_ratio(model, _bayes(sigma), batch, n_points - 1)
    assert ratios.min() > IGNORED_BELOW, f"{name}: influence ratios {ratios.tolist()}"
    with torch.no_grad():
        errors = squared_errors(model, batch, range(5, n_points))
    assert significant_rises(errors) == [], f"{name}: the error rises with k"
