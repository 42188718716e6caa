"""Chapter 6's induction-head library: the repeated-token samplers and their masks,
the attention scores on hand-built patterns, the circuits against the model's own
forward pass, and head ablation against a model built without the head."""

import math

import pytest
import torch

from icl_lib.analysis.ablation import (
    MODES,
    ablated_heads,
    ablation_losses,
    ablation_table,
    gain_lost_share,
    head_ablation_scores,
    mean_head_outputs,
)
from icl_lib.analysis.circuits import (
    circuit_copying_score,
    copying_break_even,
    copying_score,
    diagonal_accuracy,
    direct_logit_attribution,
    eigenvalue_copying_score,
    ov_circuit,
    previous_token_residuals,
    qk_circuit,
)
from icl_lib.analysis.induction import (
    attention_by_distance,
    attention_patterns,
    change_step,
    head_scores,
    icl_score,
    loss_by_position,
    positional_icl_score,
    prefix_matching_from_patterns,
    previous_token_from_patterns,
    repeat_losses,
    token_losses,
)
from icl_lib.models.token_gpt import TokenTransformerConfig
from icl_lib.tasks.bursty import ClassWorld, bursty_sequences
from icl_lib.tasks.induction import (
    RepeatedTokensBatch,
    induction_targets,
    repeated_random_tokens,
    repeated_segment_tokens,
)
from icl_lib.tasks.tokens import check_tokens
from icl_lib.training.induction import RepeatedSegmentDocuments


def small_model(n_layer=2, n_head=2, vocab=16, n_ctx=24, seed=0):
    config = TokenTransformerConfig(
        vocab_size=vocab,
        n_ctx=n_ctx,
        n_embd=8,
        n_layer=n_layer,
        n_head=n_head,
        mlp=False,
    )
    return config.build(seed).double().eval()


# --- samplers and masks ---------------------------------------------------------------


def test_segments_repeat_with_varying_offsets_and_starts():
    batch = repeated_segment_tokens(500, 65, 128, seed=3)
    P, s = batch.periods, batch.starts
    assert P.min() >= 8 and P.max() <= 24 and len(set(P.tolist())) > 10
    assert len(set(s.tolist())) > 10 and (s + 2 * P <= 65).all()
    for b in range(50):
        x, p, start = batch.tokens[b], int(P[b]), int(s[b])
        assert torch.equal(x[start + p :], x[start : 65 - p])
    again = repeated_segment_tokens(500, 65, 128, seed=3)
    assert torch.equal(batch.tokens, again.tokens)


def test_masks_mark_the_predictable_and_the_first_positions():
    batch = RepeatedTokensBatch(
        tokens=torch.arange(12).remainder(5).unsqueeze(0),
        concepts=torch.tensor([3]),
        starts=torch.tensor([2]),
    )
    # t >= start + P = 5 and t <= T - 2 = 10
    assert batch.repeated_mask()[0].nonzero().flatten().tolist() == list(range(5, 11))
    assert batch.first_mask()[0].nonzero().flatten().tolist() == [2, 3]


def test_probe_has_distinct_tokens_and_exact_targets():
    probe = repeated_random_tokens(8, 6, 3, 20, seed=1)
    x = probe.tokens
    assert x.shape == (8, 18)
    assert all(len(set(row[:6].tolist())) == 6 for row in x)
    assert torch.equal(x[:, 6:12], x[:, :6]) and torch.equal(x[:, 12:], x[:, :6])
    targets = induction_targets(x)
    for t in range(18):
        expected = [t - k * 6 + 1 for k in (1, 2) if t - k * 6 >= 0]
        for b in range(8):
            assert targets[b, t].nonzero().flatten().tolist() == sorted(expected)


def test_bad_sampler_input_is_named():
    with pytest.raises(ValueError, match="max_period: expected at most length / 2"):
        repeated_segment_tokens(2, 20, 50, max_period=11)
    with pytest.raises(ValueError, match="max_period: expected at least min_period"):
        repeated_segment_tokens(2, 64, 50, min_period=9, max_period=8)
    with pytest.raises(ValueError, match="vocab_size: expected an int >= 2"):
        repeated_segment_tokens(2, 64, 1)
    with pytest.raises(ValueError, match="n_tokens: expected at most vocab_size"):
        repeated_random_tokens(2, 30, 2, 20)
    with pytest.raises(ValueError, match="starts: expected shape"):
        RepeatedTokensBatch(
            tokens=torch.zeros(2, 8, dtype=torch.long),
            concepts=torch.tensor([2, 2]),
            starts=torch.tensor([0]),
        )
    with pytest.raises(ValueError, match="start \\+ period <= T = 8"):
        RepeatedTokensBatch(
            tokens=torch.zeros(1, 8, dtype=torch.long),
            concepts=torch.tensor([5]),
            starts=torch.tensor([4]),
        )


# --- attention scores on hand-built patterns ------------------------------------------


def hand_built_patterns(tokens):
    """Head 0: uniform over the induction targets (else on itself); head 1: on the
    previous token (position 0 on itself); head 2: uniform causal."""
    B, T = tokens.shape
    targets = induction_targets(tokens).double()
    self_ = torch.eye(T, dtype=torch.float64).expand(B, T, T)
    counts = targets.sum(-1, keepdim=True)
    induction = torch.where(counts > 0, targets / counts.clamp_min(1), self_)
    previous = torch.diag_embed(torch.ones(T - 1, dtype=torch.float64), offset=-1)
    previous[0, 0] = 1.0
    uniform = torch.ones(T, T, dtype=torch.float64).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    heads = [induction, previous.expand(B, T, T), uniform.expand(B, T, T)]
    return torch.stack(heads, dim=1).unsqueeze(1)  # (B, 1, 3, T, T)


def test_prefix_matching_and_previous_token_scores_are_exact():
    probe = repeated_random_tokens(4, 5, 3, 30, seed=0)  # P = 5, T = 15
    patterns = hand_built_patterns(probe.tokens)
    pm = prefix_matching_from_patterns(patterns, probe.tokens)
    prev = previous_token_from_patterns(patterns)
    # Queries are t >= 5, with 1 target for t < 10 and 2 for t >= 10: the uniform
    # head puts (targets) / (t + 1) on them.
    uniform = sum((1 if t < 10 else 2) / (t + 1) for t in range(5, 15)) / 10
    torch.testing.assert_close(
        pm, torch.tensor([[1.0, 0.0, uniform]], dtype=torch.float64)
    )
    uniform_prev = sum(1 / (t + 1) for t in range(1, 15)) / 14
    torch.testing.assert_close(
        prev, torch.tensor([[0.0, 1.0, uniform_prev]], dtype=torch.float64)
    )


def test_attention_by_distance_on_hand_built_patterns():
    probe = repeated_random_tokens(2, 5, 3, 30, seed=0)  # T = 15
    patterns = hand_built_patterns(probe.tokens)
    by_distance = attention_by_distance(patterns, min_position=1)  # (1, 3, T)
    torch.testing.assert_close(by_distance.sum(-1), torch.ones(1, 3).double())
    assert by_distance[0, 1, 1].item() == pytest.approx(1.0)  # previous token
    # Uniform causal: from t, each distance d <= t gets 1 / (t + 1).
    d = 3
    expected = sum(1 / (t + 1) for t in range(max(d, 1), 15)) / 14
    assert by_distance[0, 2, d].item() == pytest.approx(expected)
    with pytest.raises(ValueError, match="min_position: expected an int"):
        attention_by_distance(patterns, min_position=15)


def test_head_scores_read_the_models_own_patterns():
    model = small_model()
    probe = repeated_random_tokens(3, 6, 4, 16, seed=2)
    patterns = attention_patterns(model, probe.tokens)
    assert patterns.shape == (3, 2, 2, 24, 24)
    torch.testing.assert_close(patterns.sum(-1), torch.ones(3, 2, 2, 24).double())
    scores = head_scores(model, probe)
    torch.testing.assert_close(
        scores["prefix_matching"],
        prefix_matching_from_patterns(patterns, probe.tokens),
    )
    # documents one token longer than the model reads: their first n_ctx tokens
    documents = repeated_segment_tokens(3, 25, 16, min_period=3, max_period=12)
    read = attention_patterns(model, documents.tokens[:, :24])
    torch.testing.assert_close(
        head_scores(model, documents)["prefix_matching"],
        prefix_matching_from_patterns(read, documents.tokens[:, :24]),
    )


def test_bad_pattern_input_is_named():
    tokens = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="patterns: expected shape"):
        prefix_matching_from_patterns(torch.zeros(2, 1, 1, 4, 4), tokens)
    with pytest.raises(ValueError, match="tokens: expected some repeated token"):
        prefix_matching_from_patterns(
            torch.zeros(1, 1, 1, 3, 3), torch.tensor([[0, 1, 2]])
        )
    with pytest.raises(TypeError, match="model: expected a TokenTransformer"):
        token_losses(torch.nn.Linear(2, 2), tokens)
    with pytest.raises(TypeError, match="batch: expected a RepeatedTokensBatch"):
        icl_score(small_model(), tokens)


# --- losses and the ICL score ---------------------------------------------------------


def test_repeat_losses_average_over_the_masks():
    batch = repeated_segment_tokens(6, 30, 20, min_period=4, max_period=10, seed=0)
    rep, first = batch.repeated_mask()[:, :-1], batch.first_mask()[:, :-1]
    losses = torch.full((6, 29), 7.0, dtype=torch.float64)
    losses[rep], losses[first] = 1.0, 3.0
    parts = repeat_losses(losses, batch)
    assert parts["repeated"].item() == 1.0 and parts["first"].item() == 3.0
    assert loss_by_position(losses).shape == (29,)
    assert positional_icl_score(losses, 0, 28) == losses[:, 28].mean() - 7.0
    with pytest.raises(ValueError, match="losses: expected shape \\(B, T - 1\\)"):
        repeat_losses(losses[:, 1:], batch)
    with pytest.raises(ValueError, match="late: expected an int in \\[0, 29\\)"):
        positional_icl_score(losses, 0, 29)


def test_token_losses_are_the_cross_entropy_of_next_tokens():
    model = small_model()
    batch = repeated_segment_tokens(3, 25, 16, min_period=3, max_period=12, seed=1)
    losses = token_losses(model, batch.tokens)
    logp = torch.log_softmax(model(batch.tokens[:, :-1]), -1)
    expected = -logp.gather(-1, batch.tokens[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(losses, expected)
    parts = repeat_losses(losses, batch)
    assert icl_score(model, batch) == pytest.approx(
        (parts["repeated"] - parts["first"]).item()
    )


def test_change_step():
    steps = [100, 200, 300, 400, 500]
    # falls from 3.0 to 0.8: the level 1.9 is crossed 1.0 / 1.9 into (200, 300]
    assert change_step(steps, [3.0, 2.9, 1.0, 0.9, 0.8]) == pytest.approx(
        200 + 100 / 1.9
    )
    # rises from 0 to 1.0: 0.5 is crossed 0.3 / 0.7 of the way into (300, 400]
    up = [0.0, 0.1, 0.2, 0.9, 1.0]
    assert change_step(steps, up, direction="up") == pytest.approx(300 + 300 / 7)
    # two surges: the half-way crossing stays with the first, whatever the slopes
    surges = [0.0, 0.6, 0.6, 1.0, 1.0]
    assert change_step(steps, surges, direction="up") == pytest.approx(100 + 500 / 6)
    with pytest.raises(ValueError, match="values: expected a curve that goes down"):
        change_step(steps, up)
    # the 10 % and 90 % crossings of the fall from 3.0 to 0.8
    assert change_step(steps, [3.0, 2.9, 1.0, 0.9, 0.8], fraction=0.1) == pytest.approx(
        200 + 100 * (0.22 - 0.1) / 1.9
    )
    with pytest.raises(ValueError, match="fraction: expected a number in"):
        change_step(steps, up, direction="up", fraction=1.0)
    with pytest.raises(ValueError, match="direction: expected"):
        change_step(steps, steps, direction="left")
    with pytest.raises(ValueError, match="steps, values: expected two 1-D"):
        change_step([1], [2])


# --- circuits -------------------------------------------------------------------------


def test_qk_circuit_is_the_models_attention_score():
    model = small_model(n_layer=1)
    with torch.no_grad():
        model.wpe.weight.zero_()  # then token_residuals are the embeddings
    a, b = 5, 11
    _, cache = model.run_with_cache(torch.tensor([[b, a]]))
    pattern = cache["blocks.0.attn.hook_pattern"][0, :, 1]  # (H, 2): keys b, a
    for head in range(2):
        qk = qk_circuit(model, 0, head)
        expected = torch.softmax(torch.stack([qk[a, b], qk[a, a]]), 0)
        torch.testing.assert_close(pattern[head], expected)


def test_ov_circuit_is_the_heads_centred_write_through_the_unembedding():
    model = small_model(n_layer=1)
    with torch.no_grad():
        model.wpe.weight.zero_()
    head, a = 1, 7
    _, cache = model.run_with_cache(torch.tensor([[a]]))  # attends to itself
    z = cache["blocks.0.attn.hook_z"][0, head, 0]  # (C/H,)
    attn = model.blocks[0].attn
    bias_v = attn.c_attn.bias[2 * 8 + 4 : 2 * 8 + 8]
    write = attn.W_O[head] @ (z - bias_v)  # the head's write without its bias
    write = (write - write.mean()) * model.ln_f.weight
    expected = model.lm_head.weight @ write
    torch.testing.assert_close(ov_circuit(model, 0, head)[:, a], expected.detach())


def test_copying_scores_on_hand_built_circuits():
    eye = torch.eye(6, dtype=torch.float64)
    everything = torch.arange(6)[None]  # one sample: the whole vocabulary
    assert circuit_copying_score(3 * eye + 1, everything) == pytest.approx(1.0)
    assert circuit_copying_score(-eye, everything) == pytest.approx(-1.0)
    shift = eye.roll(1, 0)  # attending to a raises a + 1
    assert circuit_copying_score(shift, everything) == pytest.approx(-1.0)
    # Column a raises a by 2 and a + 1 by 1: shares 2/3 after centring and ReLU.
    ov = 2 * eye + shift
    r = torch.relu(ov - ov.mean(0))
    share = (r.diagonal() / r.sum(0)).mean().item()
    assert circuit_copying_score(ov, everything) == pytest.approx(2 * share - 1)
    # A sample without a + 1 leaves a alone in it: share 1, score 1.
    assert circuit_copying_score(ov, torch.tensor([[0, 2, 4]])) == pytest.approx(1.0)
    assert eigenvalue_copying_score(2 * eye) == pytest.approx(1.0)
    assert eigenvalue_copying_score(-eye) == pytest.approx(-1.0)
    assert diagonal_accuracy(ov, dim=0) == 1.0 and diagonal_accuracy(shift) == 0.0
    with pytest.raises(ValueError, match="ov: expected a square"):
        circuit_copying_score(torch.zeros(3, 4), everything)
    with pytest.raises(ValueError, match="tokens: expected distinct tokens"):
        circuit_copying_score(ov, torch.tensor([[0, 0, 1]]))


def test_copying_score_is_the_share_of_the_heads_own_write_among_the_sample():
    model = small_model(n_layer=1)
    gen = torch.Generator().manual_seed(3)
    tokens = torch.stack([torch.randperm(16, generator=gen)[:7] for _ in range(2)])
    layer, head = 0, 1
    _, cache = model.run_with_cache(tokens)
    z = cache["blocks.0.attn.hook_z"][:, head]
    pattern = cache["blocks.0.attn.hook_pattern"][:, head]
    attn = model.blocks[0].attn
    shares = []
    for b in range(2):
        for t in range(1, 7):
            write = attn.W_O[head] @ z[b, t]
            logits = model.lm_head.weight @ ((write - write.mean()) * model.ln_f.weight)
            r = torch.relu(logits - logits.mean())
            attended = tokens[b, pattern[b, t].argmax()]
            shares.append(2 * r[attended] / r[tokens[b]].sum() - 1)
    expected = torch.stack(shares).mean().item()
    score = copying_score(model, layer, head, tokens)
    assert score == pytest.approx(expected)
    assert -1 <= score <= 1
    with pytest.raises(ValueError, match="tokens: expected distinct tokens"):
        copying_score(model, 0, 0, torch.tensor([[1, 2, 1]]))


def test_k_composition_inputs_and_bad_heads():
    model = small_model()
    keys = previous_token_residuals(model, 0, 1)
    assert keys.shape == (16, 8)
    assert qk_circuit(model, 1, 0, key_residuals=keys).shape == (16, 16)
    with pytest.raises(ValueError, match="layer: expected an int in \\[0, 2\\)"):
        qk_circuit(model, 2, 0)
    with pytest.raises(ValueError, match="key_residuals: expected shape"):
        qk_circuit(model, 1, 0, key_residuals=keys[:, :4])


# --- ablation -------------------------------------------------------------------------


def test_zero_ablation_equals_the_model_without_the_head():
    model = small_model()
    tokens = repeated_segment_tokens(4, 24, 16, min_period=3, max_period=12).tokens
    intact = model(tokens)
    with ablated_heads(model, [(0, 1), (1, 0)]):
        ablated = model(tokens)
    assert torch.equal(model(tokens), intact)  # hooks removed
    without = small_model()
    with torch.no_grad():
        without.blocks[0].attn.c_proj.weight[:, 4:8] = 0.0
        without.blocks[1].attn.c_proj.weight[:, 0:4] = 0.0
    torch.testing.assert_close(ablated, without(tokens))
    assert not torch.allclose(ablated, intact)


def test_mean_ablation_equals_the_head_replaced_by_a_constant():
    model = small_model()
    reference = repeated_random_tokens(5, 6, 4, 16, seed=4).tokens
    tokens = repeated_segment_tokens(3, 24, 16, min_period=3, max_period=12).tokens
    means = mean_head_outputs(model, reference)
    with ablated_heads(model, [(1, 1)], mode="mean", reference=reference):
        ablated = model(tokens)
    constant = small_model()
    with torch.no_grad():
        proj = constant.blocks[1].attn.c_proj
        proj.bias += proj.weight[:, 4:8] @ means[1, 1]
        proj.weight[:, 4:8] = 0.0
    torch.testing.assert_close(ablated, constant(tokens))


def test_position_mean_ablation_keeps_the_average_write_at_each_position():
    model = small_model()
    tokens = repeated_segment_tokens(1, 20, 16, min_period=3, max_period=8).tokens
    same = tokens.expand(4, -1)  # reference: one sequence four times
    intact = model(tokens)
    # The per-position mean over identical sequences is the head's own output.
    with ablated_heads(model, [(0, 1), (1, 0)], mode="position_mean", reference=same):
        torch.testing.assert_close(model(tokens), intact)
    with ablated_heads(model, [(0, 1), (1, 0)], mode="mean", reference=same):
        assert not torch.allclose(model(tokens), intact)
    per_position = mean_head_outputs(model, same, per_position=True)
    assert per_position.shape == (2, 2, 20, 4)
    torch.testing.assert_close(per_position.mean(2), mean_head_outputs(model, same))
    with pytest.raises(ValueError, match="reference: expected at least the 20"):
        with ablated_heads(
            model, [(0, 0)], mode="position_mean", reference=same[:, :10]
        ):
            model(tokens)


def test_ablation_losses_report_both_parts_of_the_score():
    model = small_model()
    batch = repeated_segment_tokens(4, 25, 16, min_period=3, max_period=12)
    parts = ablation_losses(model, batch, [(1, 1)])
    with ablated_heads(model, [(1, 1)]):
        losses = repeat_losses(token_losses(model, batch.tokens), batch)
    assert parts["repeated"] == pytest.approx(losses["repeated"].item())
    assert parts["first"] == pytest.approx(losses["first"].item())
    assert parts["icl_score"] == pytest.approx(parts["repeated"] - parts["first"])
    table = head_ablation_scores(model, batch)
    assert table["repeated"][1, 1].item() == pytest.approx(parts["repeated"])
    full = ablation_losses(model, batch, [])["icl_score"]
    assert full == pytest.approx(icl_score(model, batch), abs=1e-6)
    with pytest.raises(TypeError, match="batch: expected a RepeatedTokensBatch"):
        ablation_losses(model, batch.tokens, [])


def test_gain_lost_share_and_the_ablation_table():
    assert gain_lost_share(-2.0, -0.5) == pytest.approx(0.75)
    assert gain_lost_share(-2.0, -2.5) == pytest.approx(-0.25)
    with pytest.raises(ValueError, match="full_score: expected a negative"):
        gain_lost_share(0.1, 0.0)
    model = small_model()
    batch = repeated_segment_tokens(4, 25, 16, min_period=3, max_period=12)
    table = head_ablation_scores(model, batch)
    assert table["ablated"].shape == table["gain_lost"].shape == (2, 2)
    with ablated_heads(model, [(1, 1)]):
        assert table["ablated"][1, 1].item() == pytest.approx(icl_score(model, batch))
    with pytest.raises(ValueError, match="heads: expected \\(layer, head\\) pairs"):
        with ablated_heads(model, [(2, 0)]):
            pass
    with pytest.raises(ValueError, match="reference: expected tokens"):
        with ablated_heads(model, [(0, 0)], mode="mean"):
            pass


# --- the training monitor -------------------------------------------------------------


def test_documents_monitor_logs_icl_and_head_scores():
    documents = RepeatedSegmentDocuments(
        length=25, vocab_size=16, min_period=3, max_period=12, probe_tokens=6
    )
    model = small_model().float()
    logged = documents.monitor(model)
    assert set(logged) == {
        "icl_score",
        "repeated_loss",
        "first_loss",
        "prefix_matching",
        "previous_token",
    }
    assert logged["icl_score"] == pytest.approx(
        logged["repeated_loss"] - logged["first_loss"], abs=2e-5
    )
    assert len(logged["prefix_matching"]) == 2 and len(logged["previous_token"][0]) == 2
    assert math.isfinite(logged["icl_score"])
    with pytest.raises(ValueError, match="max_period: expected at most length / 2"):
        RepeatedSegmentDocuments(length=20)


# --- Reddy's bursty classification task -----------------------------------------------


def test_bursty_sequences_repeat_classes_and_put_the_query_in_context():
    batch = bursty_sequences(64, burstiness=2, p_novel=0.0, n_classes=40, seed=1)
    assert batch.xs.shape == (64, 9, 63) and batch.labels.shape == (64, 9)
    assert batch.bursty.all() and not batch.novel.any()
    world = ClassWorld.draw(40, 63, 32, 0)
    for b in range(64):
        classes = batch.classes[b, :-1].tolist()
        assert all(classes.count(c) == 2 for c in classes) and len(set(classes)) == 4
        assert batch.classes[b, -1].item() in classes
    assert torch.equal(batch.labels, world.labels[batch.classes])
    assert batch.context_has_query_label().all()
    norms = (batch.xs**2).sum(-1)
    assert norms.mean().item() == pytest.approx(1.0, abs=0.05)


def test_novel_and_iid_sequences():
    novel = bursty_sequences(32, seed=2)  # the book's setting: B = 1, all novel
    assert (novel.classes == -1).all() and novel.novel.all()
    items = novel.xs[:, :-1]  # the query is the noisy copy of one context item
    distance = ((items - novel.xs[:, -1:]) ** 2).sum(-1)
    nearest = distance.argmin(-1)
    assert torch.equal(novel.labels[torch.arange(32), nearest], novel.query_labels)
    iid = bursty_sequences(32, p_bursty=0.0, p_novel=0.0, zipf_alpha=1.0, seed=3)
    assert not iid.bursty.any() and (iid.classes >= 0).all()
    with pytest.raises(ValueError, match="burstiness: expected a divisor of"):
        bursty_sequences(2, burstiness=3)
    with pytest.raises(ValueError, match="p_novel: expected a probability"):
        bursty_sequences(2, p_novel=1.5)
    with pytest.raises(ValueError, match="n_classes: expected at least"):
        bursty_sequences(2, n_classes=4)


def test_copying_break_even_solves_its_equation_and_zeroes_the_score():
    V, n = 512, 25
    x = copying_break_even(V, n)
    u = x / V
    phi = math.exp(-u * u / 2) / math.sqrt(2 * math.pi)
    tail = phi - u * (1 - 0.5 * (1 + math.erf(u / math.sqrt(2))))  # E[(Z - u)^+]
    assert x * (1 - 1 / V) == pytest.approx((n - 1) * tail, rel=1e-12)
    # OV = c I + s Z: the score is near 0 at the break-even ratio, clearly above
    # beyond it and below short of it (one large random matrix, 200 samples).
    gen = torch.Generator().manual_seed(0)
    noise = torch.randn(V, V, generator=gen, dtype=torch.float64)
    eye = torch.eye(V, dtype=torch.float64)
    samples = torch.stack([torch.randperm(V, generator=gen)[:n] for _ in range(200)])
    assert abs(circuit_copying_score(x * eye + noise, samples)) < 0.05
    assert circuit_copying_score(1.5 * x * eye + noise, samples) > 0.1
    assert circuit_copying_score(0.5 * x * eye + noise, samples) < -0.2
    # the whole vocabulary as the sample needs c / s in proportion to V
    whole = copying_break_even(V, V)
    assert abs(circuit_copying_score(whole * eye + noise, torch.arange(V)[None])) < 0.05
    assert whole > 5 * x
    with pytest.raises(ValueError, match="vocab_size"):
        copying_break_even(1, 1)
    with pytest.raises(ValueError, match="sample_size: expected at most"):
        copying_break_even(8, 9)


def test_direct_logit_attribution_is_the_heads_raise_of_the_next_token():
    model = small_model(n_layer=1)
    tokens = repeated_random_tokens(2, 5, 3, 16, seed=3).tokens  # (2, 15): period 5
    _, cache = model.run_with_cache(tokens[:, :-1])
    z = cache["blocks.0.attn.hook_z"][:, 1]
    attn = model.blocks[0].attn
    gains = []
    for b in range(2):
        for t in range(5, 14):  # x_t and x_{t+1} repeat the pair five back
            write = attn.W_O[1] @ z[b, t]
            logits = model.lm_head.weight @ ((write - write.mean()) * model.ln_f.weight)
            gains.append(logits[tokens[b, t + 1]] - logits.mean())
    expected = torch.stack(gains).mean().item()
    assert direct_logit_attribution(model, 0, 1, tokens) == pytest.approx(expected)
    with pytest.raises(ValueError, match="tokens: expected some repeated pair"):
        direct_logit_attribution(model, 0, 0, torch.arange(6)[None])


def test_ablation_table_is_the_group_ablations_of_every_mode():
    from icl_lib.presets import load_checkpoint, mechanistic

    model, _ = load_checkpoint("induction_attn2")  # a model with a gain to lose
    batch = mechanistic.DOCUMENTS.draw(32, 5)
    reference = batch.tokens[:, :-1]
    groups = {"induction": [(1, h) for h in range(4)], "one head": [(0, 1)]}
    table = ablation_table(model, batch, groups, reference=reference)
    assert list(table) == list(groups)
    for name, heads in groups.items():
        assert list(table[name]) == list(MODES)
        for mode in MODES:
            ref = None if mode == "zero" else reference
            cell = table[name][mode]
            parts = ablation_losses(model, batch, heads, mode=mode, reference=ref)
            assert cell["repeated"] == pytest.approx(parts["repeated"])
            assert cell["first"] == pytest.approx(parts["first"])
            full = ablation_losses(model, batch, [])["icl_score"]
            assert cell["gain_lost"] == pytest.approx(
                gain_lost_share(full, parts["icl_score"])
            )
    with pytest.raises(ValueError, match="modes: expected modes from"):
        ablation_table(model, batch, groups, modes=["half"])
    with pytest.raises(ValueError, match="groups: expected a non-empty dict"):
        ablation_table(model, batch, {})


def test_ablation_and_pattern_errors_name_the_argument():
    """Issue 42: modes=None gave "object is not iterable", a bad reference an error
    naming mean_head_outputs' tokens, and patterns that are not square a result."""
    model = small_model()
    batch = repeated_segment_tokens(4, 25, 16, min_period=3, max_period=12)
    groups = {"one head": [(0, 1)]}
    for modes in (None, [], "zero"):
        with pytest.raises((TypeError, ValueError), match="^modes: expected"):
            ablation_table(model, batch, groups, modes=modes)
    for reference in (batch.tokens.float(), batch.tokens + 100):
        with pytest.raises((TypeError, ValueError), match="^reference: expected"):
            with ablated_heads(model, [(0, 1)], mode="mean", reference=reference):
                pass
    patterns = attention_patterns(model, batch.tokens[:, :24])
    for read in (previous_token_from_patterns, attention_by_distance):
        with pytest.raises(ValueError, match="^patterns: expected .* one row per"):
            read(patterns[..., :-1])
    with pytest.raises(TypeError, match="^name: expected the argument's name"):
        check_tokens(batch.tokens, 16, None)
