"""Classical in-context learners:
``f(xs (B, N, d), ys (B, N), x_query (B, d)) -> (B,)``.

:mod:`.linear` holds the linear learners (least squares, ridge, GD and its variants,
Bayes), :mod:`.bayes` the exact Bayes learners for Gaussian and Gaussian-mixture priors,
:mod:`.kernel` the kernel learners (Nadaraya-Watson, attention, kernel ridge,
functional GD), :mod:`.pool` the Bayes predictor for a finite pool of
tasks (dMMSE), :mod:`.selection` Lasso, logistic regression and the selection
learners of chapter 5 (post-ICL validation, pre-ICL testing), :mod:`.risk` the
closed-form expected errors of the linear ones.
"""

from . import risk
from .bayes import (
    best_covariance_kl,
    gaussian_kl,
    gaussian_posterior,
    gaussian_posterior_mean,
    mixture_posterior,
    mixture_posterior_mean,
)
from .kernel import (
    attention_regression,
    attention_regression_curve,
    functional_gd,
    functional_gd_path,
    kernel_ridge,
    nadaraya_watson,
    nadaraya_watson_weights,
)
from .linear import (
    PosteriorPredictive,
    averaging,
    bayes_posterior_predictive,
    gd,
    gd_plus_plus,
    knn,
    ols,
    preconditioned_gd,
    ridge,
)
from .pool import dmmse, pool_posterior
from .selection import (
    binary_label_statistic,
    ista,
    lasso,
    lasso_exact,
    lasso_exact_weights,
    lasso_weights,
    logistic_posterior_mean,
    logistic_regression,
    logistic_weights,
    noise_mixture_posterior_mean,
    noise_posterior,
    post_icl_validation,
    pre_icl_test,
    ridge_candidates,
    soft_threshold,
    validation_choice,
    validation_losses,
)

__all__ = [
    "PosteriorPredictive",
    "attention_regression",
    "attention_regression_curve",
    "averaging",
    "bayes_posterior_predictive",
    "best_covariance_kl",
    "binary_label_statistic",
    "dmmse",
    "functional_gd",
    "functional_gd_path",
    "gaussian_kl",
    "gaussian_posterior",
    "gaussian_posterior_mean",
    "gd",
    "gd_plus_plus",
    "ista",
    "kernel_ridge",
    "knn",
    "lasso",
    "lasso_exact",
    "lasso_exact_weights",
    "lasso_weights",
    "logistic_posterior_mean",
    "logistic_regression",
    "logistic_weights",
    "mixture_posterior",
    "mixture_posterior_mean",
    "nadaraya_watson",
    "nadaraya_watson_weights",
    "noise_mixture_posterior_mean",
    "noise_posterior",
    "ols",
    "pool_posterior",
    "post_icl_validation",
    "pre_icl_test",
    "preconditioned_gd",
    "ridge",
    "ridge_candidates",
    "risk",
    "soft_threshold",
    "validation_choice",
    "validation_losses",
]
