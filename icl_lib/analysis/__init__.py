"""Measurements on predictors and trained models.

:mod:`.curves`: error and accuracy against context size for any predictor;
:mod:`.alignment`: how close a model is to a learner, and step-size searches;
:mod:`.stability`: how far one replaced example moves a prediction;
:mod:`.diversity`: models trained on task pools beside the Bayes predictors;
:mod:`.attention`: attention read-outs and probes from a model's named activations.
:mod:`.selection`: errors by group and noise level, tuned learners, and linear
probes of the residual stream (chapter 5).
:mod:`.induction`: per-token losses, the ICL score, prefix-matching and
previous-token scores; :mod:`.circuits`: QK / OV circuits and copying scores;
:mod:`.ablation`: head ablations and the share of the in-context gain lost (chapter 6).
:mod:`.bootstrap`: the (paired) bootstrap standard error of a statistic of prompts.
"""
