"""The book's figures: one style, one palette, functions that take arrays and return a
Figure.

Nothing here runs a model or computes an experiment; nothing is shown or saved.
"""

from .curves import (
    accuracy_curves,
    budget_curves,
    error_curves,
    grouped_bars,
    loglog_curves,
    pool_size_curves,
    prediction_scatter,
    recall_capacity,
    smoother_fit,
    training_curves,
)
from .diagrams import (
    attention_smoother_diagram,
    bayes_two_views_diagram,
    cache_and_state_diagram,
    gd_attention_diagram,
    implicit_update_diagram,
    induction_circuit_diagram,
    prompt_layout_diagram,
    replace_one_diagram,
    selection_routes_diagram,
)
from .distributions import calibration_plot, predictive_band
from .heatmaps import (
    annotated_heatmap,
    attention_heatmaps,
    attention_map,
    heatmap_panels,
    matrix_panels,
)
from .panels import implicit_update_panels, small_multiples
from .style import (
    PALETTE,
    check_distinct_series,
    color_for,
    line_styles,
    plain_log_ticks,
    use_book_style,
)

__all__ = [
    "PALETTE",
    "accuracy_curves",
    "budget_curves",
    "annotated_heatmap",
    "attention_smoother_diagram",
    "bayes_two_views_diagram",
    "attention_heatmaps",
    "attention_map",
    "cache_and_state_diagram",
    "calibration_plot",
    "check_distinct_series",
    "color_for",
    "error_curves",
    "gd_attention_diagram",
    "implicit_update_diagram",
    "induction_circuit_diagram",
    "grouped_bars",
    "heatmap_panels",
    "implicit_update_panels",
    "line_styles",
    "loglog_curves",
    "matrix_panels",
    "plain_log_ticks",
    "pool_size_curves",
    "prediction_scatter",
    "prompt_layout_diagram",
    "recall_capacity",
    "replace_one_diagram",
    "selection_routes_diagram",
    "predictive_band",
    "small_multiples",
    "smoother_fit",
    "training_curves",
    "use_book_style",
]
