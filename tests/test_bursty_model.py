"""The book's variant of Reddy's bursty classifier (chapter 6, experiment 4): shapes,
causality, the position offset, the attention scores, the sampler's monitor and bad
input; and the chapter's induction helpers (seen-token baseline, phase change)."""

import math

import pytest
import torch

from icl_lib import plotting
from icl_lib.analysis.bursty import (
    bursty_attention_scores,
    query_accuracy,
    query_loss,
)
from icl_lib.analysis.induction import phase_change, seen_token_loss
from icl_lib.models.bursty_classifier import BurstyClassifierConfig
from icl_lib.tasks.bursty import bursty_sequences
from icl_lib.tasks.induction import RepeatedTokensBatch, repeated_random_tokens
from icl_lib.training.bursty import BurstySequences
from icl_lib.training.losses import query_class_ce

SMALL = BurstyClassifierConfig(
    dim=6, n_labels=5, n_context=4, mlp_width=8, n_positions=11
)


def batch(size=16, seed=0, **options):
    return bursty_sequences(
        size, n_context=4, dim=6, n_labels=5, n_classes=12, seed=seed, **options
    )


def test_shapes_and_width():
    model = SMALL.build(0).eval()
    b = batch()
    assert SMALL.width == 6 + 11 and SMALL.n_tokens == 9
    assert model(b.xs, b.labels[:, :-1]).shape == (16, 5)
    assert model.tokens(b.xs, b.labels[:, :-1]).shape == (16, 9, 17)
    pred = model.predict(b.xs[:, :-1], b.ys[:, :-1], b.xs[:, -1])
    assert pred.shape == (16,) and pred.dtype == b.xs.dtype
    assert BurstyClassifierConfig().width == 128  # Reddy's D + P = 63 + 65
    assert model(b.xs[:, :3], b.labels[:, :2]).shape == (16, 5)  # k = 2 < N pairs


def test_tokens_interleave_items_and_labels():
    model = SMALL.build(0).eval()
    b = batch()
    tok = model.tokens(b.xs, b.labels[:, :-1])
    assert torch.equal(tok[:, 0::2, :6], b.xs)
    assert torch.equal(tok[:, 1::2, :6], model.label_vectors[b.labels[:, :-1]])
    assert torch.equal(tok[0, :, 6:], torch.eye(11)[:9])  # eval: slots 0..2N


def test_training_mode_shifts_positions_only():
    model = SMALL.build(0).train()
    b = batch()
    starts = {
        int(model.tokens(b.xs, b.labels[:, :-1])[0, 0, 6:].argmax()) for _ in range(40)
    }
    assert starts <= set(range(3)) and len(starts) > 1  # P - (2N + 1) + 1 = 3 slots


def test_causal_patterns_and_query_only_output():
    model = SMALL.build(1).double().eval()
    b = batch().to(dtype=torch.float64)
    _, cache = model.run_with_cache(b.xs, b.labels[:, :-1])
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
        assert pattern.shape == (16, 1, 9, 9)
        assert torch.allclose(
            pattern.sum(-1), torch.ones(16, 1, 9, dtype=torch.float64)
        )
        assert pattern.triu(1).abs().max() == 0
    # Changing the query changes no earlier row of any pattern.
    xs = b.xs.clone()
    xs[:, -1] += 1.0
    _, other = model.run_with_cache(xs, b.labels[:, :-1])
    for layer in range(2):
        a = cache[f"blocks.{layer}.attn.hook_pattern"][:, :, :-1]
        c = other[f"blocks.{layer}.attn.hook_pattern"][:, :, :-1]
        assert torch.allclose(a, c)


def test_loss_and_scores():
    model = SMALL.build(0)
    b = batch(p_novel=1.0)
    loss = query_class_ce(model, b)
    assert loss.ndim == 0 and loss.item() > 0
    assert 0 <= query_accuracy(model, b) <= 1
    assert math.isclose(query_loss(model, b), query_class_ce(model.eval(), b).item())
    scores = bursty_attention_scores(model, b)
    assert set(scores) == {"previous_item", "induction"}
    assert all(0 <= v <= 1 for v in scores.values())


def test_attention_scores_on_a_hand_set_pattern(monkeypatch):
    """A model whose layers attend exactly as the induction solution does."""
    model = SMALL.build(0).eval()
    b = batch(p_novel=1.0, seed=3)
    T = SMALL.n_tokens
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(0, T - 1)] = (
        1  # every token on the one before
    )

    def fake(xs, labels):
        B = xs.shape[0]
        last = torch.zeros(B, 1, T, T)
        last[:, 0, :, 0] = 1
        hits = labels == b.labels[:, -1:]
        share = hits.float() / hits.sum(-1, keepdim=True).clamp_min(1)
        last[:, 0, -1] = 0
        last[:, 0, -1, 1::2] = share
        last[~hits.any(-1), 0, -1, 0] = 1
        return None, {
            "blocks.0.attn.hook_pattern": prev.expand(B, 1, T, T),
            "blocks.1.attn.hook_pattern": last,
        }

    monkeypatch.setattr(model, "run_with_cache", fake)
    scores = bursty_attention_scores(model, b)
    assert scores == {"previous_item": 1.0, "induction": 1.0}


def test_bad_input():
    model = SMALL.build(0)
    b = batch()
    with pytest.raises(ValueError, match="xs: expected shape"):
        model(torch.cat([b.xs, b.xs], 1), b.labels[:, :-1])
    with pytest.raises(ValueError, match="labels: expected shape"):
        model(b.xs, b.labels)
    with pytest.raises(ValueError, match="labels: expected values"):
        model(b.xs, b.labels[:, :-1] + 5)
    with pytest.raises(TypeError, match="labels"):
        model(b.xs, b.ys[:, :-1])
    with pytest.raises(ValueError, match="ys: expected label indices"):
        model.predict(b.xs[:, :-1], b.ys[:, :-1] + 0.5, b.xs[:, -1])
    with pytest.raises(ValueError, match="n_positions"):
        BurstyClassifierConfig(n_context=8, n_positions=16)
    with pytest.raises(TypeError, match="model: expected a BurstyClassifier"):
        query_accuracy(torch.nn.Linear(2, 2), b)
    with pytest.raises(TypeError, match="batch: expected a BurstyBatch"):
        query_accuracy(model, b.xs)
    lone = batch(size=1)
    lone.labels[:, -1] = (lone.labels[:, :-1].max() + 1) % 5  # a label not in context
    if (lone.labels[:, :-1] != lone.labels[:, -1:]).all():
        with pytest.raises(ValueError, match="query's label"):
            bursty_attention_scores(model, lone)


def test_sampler_test_sets_and_monitor():
    sampler = BurstySequences(
        n_context=4,
        dim=6,
        n_labels=5,
        n_classes=12,
        burstiness=2,
        p_bursty=0.5,
        p_novel=0.0,
        monitor_size=32,
    )
    icl, iwl = sampler.in_context_test(), sampler.in_weights_test()
    assert icl.novel.all() and icl.bursty.all()
    assert not iwl.novel.any() and not iwl.bursty.any()
    assert icl.context_has_query_label().all()
    out = sampler.monitor(SMALL.build(0).train())
    assert set(out) == {
        "icl_accuracy",
        "icl_loss",
        "iwl_accuracy",
        "iwl_loss",
        "previous_item",
        "induction",
    }
    with pytest.raises(ValueError, match="burstiness"):
        BurstySequences(n_context=4, burstiness=3)


# --- chapter 6's induction helpers ---------------------------------------------------


def test_seen_token_loss_by_hand():
    tokens = torch.tensor([[5, 1, 2, 1, 2, 1, 2]])
    b = RepeatedTokensBatch(
        tokens=tokens, concepts=torch.tensor([2]), starts=torch.tensor([1])
    )
    # repeated positions t = 3, 4, 5 (t <= T - 2): distinct tokens seen 3, 3, 3
    assert math.isclose(seen_token_loss(b), math.log(3))
    probe = repeated_random_tokens(4, 8, 2, 64, seed=0)
    # at repeat t = 8 + i all 8 tokens are seen: log 8 everywhere
    assert math.isclose(seen_token_loss(probe), math.log(8), rel_tol=1e-12)


def test_phase_change_on_a_made_up_curve():
    steps = [100, 200, 300, 400, 500]
    icl = [-0.1, -0.2, -3.0, -3.2, -3.3]  # half of the fall, -1.7, inside (200, 300]
    pm = [
        [[0.0, 0.0], [0.1, 0.0]],
        [[0, 0], [0.1, 0.2]],
        [[0, 0], [0.2, 0.3]],
        [[0, 0], [0.9, 0.3]],
        [[0, 0], [0.95, 0.3]],
    ]  # best of layer 1: 0.1 -> 0.95, half 0.525 inside (300, 400]
    curve = {"step": steps, "icl_score": icl, "prefix_matching": pm}
    out = phase_change(curve)
    assert out["icl_step"] == pytest.approx(200 + 100 * 1.5 / 2.8)
    assert out["prefix_step"] == pytest.approx(300 + 100 * 0.225 / 0.6)
    assert out["resolution"] == 100
    with pytest.raises(ValueError, match="curve: expected the keys"):
        phase_change({"step": steps})
    with pytest.raises(ValueError, match="layer"):
        phase_change(curve, layer=2)


def test_attention_heatmaps():
    fig = plotting.attention_heatmaps(
        {"a": torch.eye(4), "b": torch.ones(4, 4).tril() / 4}, list("abcd")
    )
    assert len(fig.axes) == 3  # two panels and one colour bar
    with pytest.raises(ValueError, match="patterns: expected square"):
        plotting.attention_heatmaps({"a": torch.ones(2, 3)})
    with pytest.raises(ValueError, match="tick_labels"):
        plotting.attention_heatmaps({"a": torch.eye(3)}, ["x"])
