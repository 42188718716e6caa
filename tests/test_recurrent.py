"""Chapter 9's layers and tasks: the diagonal recurrence and the selective SSM
(shapes, causality, their recurrences in float64), chapter 7's rank-1 identity for
the recurrent contextual layer, linear attention as a matrix-state recurrence, the
recall and parity tasks, and clear errors."""

import itertools
import math
from types import SimpleNamespace

import pytest
import torch

from icl_lib.analysis.recall import (
    recall_accuracy,
    recall_answers,
    recall_curve,
    value_guess_accuracy,
    value_guess_loss,
)
from icl_lib.learners.parity import parity_posterior_mean, prior_vote_risk
from icl_lib.models.contextual import MLP, ContextualBlock
from icl_lib.models.recurrent import (
    MIXERS,
    DiagonalRecurrence,
    RecurrentContextual,
    SelectiveSSM,
    SequenceModelConfig,
    linear_attention_parallel,
    linear_attention_recurrent,
    make_mixer,
    state_numbers,
)
from icl_lib.presets.frontiers import PRESETS
from icl_lib.tasks import linear_regression
from icl_lib.tasks.recall import associative_recall, sparse_parity
from icl_lib.theory.implicit import apply_update, implicit_update, theorem_gap
from icl_lib.training.losses import recall_ce

F64 = torch.float64


def rand(*shape, seed=0, dtype=F64):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


@pytest.mark.parametrize("kind", MIXERS)
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_every_mixer_keeps_the_shape_and_is_causal(kind, dtype):
    torch.manual_seed(0)
    mixer = make_mixer(kind, SequenceModelConfig(n_embd=8, state_dim=4)).to(dtype)
    u = rand(3, 7, 8, dtype=dtype)
    out = mixer(u)
    assert out.shape == (3, 7, 8) and out.dtype == dtype
    changed = u.clone()
    changed[:, 4] += 1.0  # a change at t = 4 reaches outputs t >= 4 only
    again = mixer(changed)
    torch.testing.assert_close(again[:, :4], out[:, :4], rtol=0, atol=1e-12)
    assert not torch.allclose(again[:, 4:], out[:, 4:])


def test_diagonal_recurrence_is_its_recurrence():
    torch.manual_seed(1)
    layer = DiagonalRecurrence(5, 6).double()
    u = rand(2, 9, 5)
    h, hs = torch.zeros(2, 6, dtype=F64), []
    a = layer.decay
    assert bool(((a > 0) & (a < 1)).all())
    for t in range(9):
        h = a * h + layer.B(u[:, t])
        hs.append(layer.C(h) + layer.D * u[:, t])
    torch.testing.assert_close(layer(u), torch.stack(hs, 1), rtol=1e-12, atol=1e-12)


def test_selective_scan_is_the_closed_form():
    """``h_t = sum_s (prod_{s < r <= t} exp(Delta_r A)) Delta_s x_s B_s``."""
    torch.manual_seed(2)
    layer = SelectiveSSM(4, state_dim=3, expand=2).double()
    u = rand(2, 6, 4)
    x, z, delta, Bt, Ct = layer.gates(u)
    A = -torch.exp(layer.A_log)
    T = u.shape[1]
    ys = []
    for t in range(T):
        h = 0
        for s in range(t + 1):
            factor = torch.exp(delta[:, s + 1 : t + 1, :, None] * A).prod(1)
            h = h + factor * (delta[:, s] * x[:, s])[..., None] * Bt[:, s, None, :]
        ys.append((h * Ct[:, t, None, :]).sum(-1) + layer.D * x[:, t])
    expected = layer.out_proj(torch.stack(ys, 1) * torch.nn.functional.silu(z))
    torch.testing.assert_close(layer(u), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mixer", ["diag", "selective"])
@pytest.mark.parametrize("skip", [False, True])
def test_chapter_7_identity_for_the_recurrent_layer(mixer, skip):
    """Theorem 2.2 of Dherin et al.: ``T_W(C, x) = T_{W + dW(Y)}(C \\ Y, x)``."""
    torch.manual_seed(3)
    layer = RecurrentContextual(
        4, 6, mixer=mixer, state_dim=3, residual=skip, pre_norm=skip
    )
    block = ContextualBlock(layer, MLP(6, 10, 6, "gelu"), skip=skip, norm=skip)
    block = block.double()
    context, x = rand(5, 7, 4), rand(5, 4, seed=1)
    full = block(context, x)
    choices, gaps = (None, [0, 3, 6], [2]), []
    for absorbed in choices:
        update = implicit_update(block, context, x, absorbed)
        absorbed_out = apply_update(block, update, x)
        torch.testing.assert_close(absorbed_out, full, rtol=1e-10, atol=1e-10)
        gaps.append((absorbed_out - full).abs().max().item())
        ranks = torch.linalg.matrix_rank(update.delta_W)
        assert bool((ranks <= 1).all())
        assert update.delta_W.abs().max() > 1e-6  # the context does act
    # theorem_gap, what chapter 9 calls, is the largest of these gaps.
    assert theorem_gap(block, context, x, choices) == max(gaps)


def test_linear_attention_is_a_matrix_state_recurrence():
    q, k, v = rand(2, 8, 3), rand(2, 8, 3, seed=1), rand(2, 8, 5, seed=2)
    torch.testing.assert_close(
        linear_attention_recurrent(q, k, v),
        linear_attention_parallel(q, k, v),
        rtol=1e-12,
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="k: expected the shape of q"):
        linear_attention_parallel(q, k[:, :, :2], v)
    with pytest.raises(ValueError, match="v: expected shape"):
        linear_attention_recurrent(q, k, v[:, :5])


@pytest.mark.parametrize(
    "layers", [("attn",), ("diag", "selective"), ("selective", "attn")]
)
def test_regressor_predicts_like_the_transformer(layers):
    cfg = SequenceModelConfig(
        layers=layers, n_embd=8, state_dim=4, n_dims=3, n_positions=6
    )
    model = cfg.build(0).eval()
    batch = linear_regression(4, 6, 3, seed=0)
    prefixes = model.predict_prefixes(batch.xs, batch.ys)
    assert prefixes.shape == (4, 6)
    xs, ys, xq, _ = batch.prompt(3)
    torch.testing.assert_close(model.predict(xs, ys, xq), prefixes[:, 3])
    # causal: a later label does not move an earlier prediction
    ys2 = batch.ys.clone()
    ys2[:, 4] += 5.0
    torch.testing.assert_close(
        model.predict_prefixes(batch.xs, ys2)[:, :5], prefixes[:, :5]
    )


def test_token_model_and_recall_task():
    batch = associative_recall(6, 5, n_queries=3, n_keys=8, n_values=4, seed=0)
    assert batch.tokens.shape == (6, 13) and batch.targets.shape == (6, 3)
    keys, values = batch.tokens[:, :10:2], batch.tokens[:, 1:10:2]
    for b in range(6):
        assert len(set(keys[b].tolist())) == 5 and bool((values[b] >= 8).all())
        for j in range(3):
            i = keys[b].tolist().index(batch.tokens[b, 10 + j].item())
            assert values[b, i] == batch.targets[b, j]
    cfg = SequenceModelConfig(
        layers=("selective", "attn"), n_embd=8, vocab_size=12, n_positions=7
    )
    model = cfg.build(0)
    assert model(batch.tokens).shape == (6, 13, 12)
    assert recall_ce(model, batch).ndim == 0
    assert 0 <= recall_accuracy(model, batch) <= 1
    curve = recall_curve(model, [1, 2], size=8, n_keys=8, n_values=4, n_queries=3)
    assert curve.shape == (2,) and curve.dtype == F64


def test_parity_task_and_its_bayes_predictor():
    batch = sparse_parity(50, 30, 5, 2, seed=0, dtype=F64)
    picked = batch.xs.gather(2, batch.subset[:, None, :].expand(50, 30, 2))
    torch.testing.assert_close(batch.ys, picked.prod(2))
    xs, ys, xq, yq = batch.prompt(29)
    mean = parity_posterior_mean(xs, ys, xq)  # 29 points identify S almost surely
    assert (torch.sign(mean) == yq).double().mean() > 0.95
    empty = parity_posterior_mean(xs[:, :0], ys[:, :0], xq)  # the prior's mean
    assert empty.abs().max() <= 1


class _Answers(torch.nn.Module):
    """A stand-in token model whose most likely tokens at the last positions are
    ``answers (B, Q)``."""

    def __init__(self, answers, vocab):
        super().__init__()
        self.answers, self.vocab = answers, vocab
        self.config = SimpleNamespace(vocab_size=vocab)  # what a token model names

    def forward(self, tokens):
        B, T = tokens.shape
        Q = self.answers.shape[1]
        logits = torch.zeros(B, T, self.vocab)
        logits[:, -Q:] = torch.nn.functional.one_hot(self.answers, self.vocab).float()
        return logits


def test_recall_answers_counts_where_the_answers_come_from():
    batch = associative_recall(40, 3, n_queries=4, n_keys=8, n_values=6, seed=3)
    first = recall_answers(_Answers(batch.tokens[:, 1:2].expand(40, 4), 14), batch)
    assert first["in_context"] == 1.0
    assert first["by_pair"][0] == 1.0 and first["by_pair"].shape == (3,)
    hit = (batch.targets == batch.tokens[:, 1:2]).double().mean().item()
    assert first["accuracy"] == pytest.approx(hit)
    right = recall_answers(_Answers(batch.targets, 14), batch)
    assert right["accuracy"] == 1.0 and right["in_context"] == 1.0
    mixed = associative_recall(4, 2, n_keys=8, n_values=6).tokens
    with pytest.raises(ValueError, match="same pairs P"):
        recall_answers(
            _Answers(batch.targets[:4], 14),
            type(batch)(
                mixed,
                torch.tensor([2, 2, 3, 2]),
                torch.zeros(4, 4, dtype=torch.int64),
            ),
        )


def test_the_guess_among_context_values_by_simulation():
    batch = associative_recall(20000, 5, n_queries=1, n_keys=8, n_values=4, seed=1)
    values = batch.tokens[:, 1:10:2]  # (B, 5)
    share = (values == batch.targets).double().mean(1)  # the answer's probability
    assert value_guess_loss(5, 4) == pytest.approx(-share.log().mean().item(), abs=0.01)
    assert value_guess_accuracy(5, 4) == pytest.approx(
        (1 + 4 / 4) / 5, abs=1e-12
    )  # the mean of share
    assert share.mean().item() == pytest.approx(value_guess_accuracy(5, 4), abs=0.01)
    assert value_guess_loss(1) == 0.0
    assert value_guess_loss(16, 2**28) == pytest.approx(math.log(16))  # V -> inf


def test_prior_vote_risk_is_the_context_free_bayes_predictor():
    risk = prior_vote_risk(5, 2)
    assert risk["accuracy"] == pytest.approx(0.625, abs=1e-12)
    entropy = -(0.6 * math.log(0.6) + 0.4 * math.log(0.4))
    assert risk["log_loss"] == pytest.approx(30 / 32 * entropy, abs=1e-12)
    # the same as the Bayes predictor with an empty context, over every x
    xs = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=4)), dtype=F64)
    mean = parity_posterior_mean(xs.new_zeros(16, 0, 4), xs.new_zeros(16, 0), xs)
    assert prior_vote_risk(4, 2)["accuracy"] == pytest.approx(
        ((1 + mean.abs()) / 2).mean().item(), abs=1e-12
    )
    # d = 2, k = 1: x_1 = x_2 (half the time) gives y for sure, else a coin flip
    half = prior_vote_risk(2, 1)
    assert half["accuracy"] == pytest.approx(0.75)
    assert half["log_loss"] == pytest.approx(math.log(2) / 2)


def test_a_simplex_frame_recalls_one_pair_more_than_its_dimension():
    """Exercise ex-frontiers-recall-bound: P = N + 1 unit keys at equal angles (the
    simplex frame) recall the sign of random +-1 values by the linear read-out
    ``S kappa_q``, and fail exactly when all values are equal: probability
    ``2^-N`` per query, under the Hoeffding bound ``exp(-N / (2 (P - N)))``."""
    N = 3
    P = N + 1
    centred = torch.eye(P, dtype=F64) - 1 / P  # P points of the simplex in R^P
    basis = torch.linalg.svd(centred).U[:, :N]  # an orthonormal basis of their span
    keys = centred @ basis  # (P, N)
    keys = keys / keys.norm(dim=1, keepdim=True)
    gram = keys @ keys.T
    torch.testing.assert_close(gram, (1 + 1 / N) * torch.eye(P, dtype=F64) - 1 / N)
    fails = 0
    signs = list(itertools.product((-1.0, 1.0), repeat=P))
    for v in signs:
        v = torch.tensor(v, dtype=F64)
        readout = gram @ v  # S kappa_q for every q
        fails += int((readout * v <= 1e-12).sum())  # a wrong sign or a tie
    assert fails / (len(signs) * P) == pytest.approx(2.0**-N)
    assert 2.0**-N <= math.exp(-N / (2 * (P - N)))


def test_state_numbers_and_matched_parameters():
    cfg = SequenceModelConfig(
        layers=("attn", "diag", "selective"), n_embd=4, state_dim=2
    )
    assert state_numbers(cfg, 10) == 2 * 4 * 10 + 2 + (4 * 2 + 4 * 3)
    for task in ("regression", "recall", "parity"):
        counts = [
            p.build().n_params()
            for p in PRESETS
            # the controls with another state size are matched in state, not parameters
            if p.name.startswith(f"frontiers_{task}")
            and not p.name.endswith("_state")
            and "state_matched" not in p.name
        ]
        assert max(counts) / min(counts) < 1.05, counts


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="layers: expected kinds from"):
        SequenceModelConfig(layers=("lstm",))
    with pytest.raises(ValueError, match="n_head: expected a divisor"):
        SequenceModelConfig(n_embd=6, n_head=4)
    with pytest.raises(ValueError, match="u: expected 3 dimensions"):
        DiagonalRecurrence(4, 2)(torch.zeros(2, 4))
    with pytest.raises(TypeError, match="u: expected dtype float32 or float64"):
        SelectiveSSM(4)(torch.zeros(1, 2, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="mixer: expected 'diag' or 'selective'"):
        RecurrentContextual(3, mixer="attn")
    model = SequenceModelConfig(n_embd=8, n_positions=3, n_dims=2).build()
    with pytest.raises(ValueError, match="xs: expected at most n_positions = 3"):
        model(torch.zeros(1, 4, 2), torch.zeros(1, 4))
    tokens = SequenceModelConfig(n_embd=8, vocab_size=5, n_positions=2).build()
    with pytest.raises(ValueError, match=r"tokens: expected values in \[0, 5\)"):
        tokens(torch.tensor([[1, 7]]))
    with pytest.raises(ValueError, match="tokens: expected at most n_ctx = 4"):
        tokens(torch.zeros(1, 5, dtype=torch.int64))
    with pytest.raises(ValueError, match="n_pairs: expected at most n_keys = 4"):
        associative_recall(2, 5, n_keys=4)
    with pytest.raises(ValueError, match="k: expected at most dim = 3"):
        sparse_parity(2, 4, 3, 4)
    with pytest.raises(TypeError, match="batch: expected a RecallBatch"):
        recall_accuracy(tokens, linear_regression(2, 3, 2))


def test_recall_refuses_a_layer_for_a_token_model_and_pairs_that_are_not_a_list():
    """Issue 42: a Linear gave torch's dtype error, pairs=None "not iterable"."""
    batch = associative_recall(4, 2, n_queries=2, n_keys=8, n_values=4, seed=0)
    model = SequenceModelConfig(n_embd=8, vocab_size=14, n_positions=8).build()
    for call in (
        lambda m: recall_accuracy(m, batch),
        lambda m: recall_answers(m, batch),
        lambda m: recall_curve(m, [1], size=4, n_keys=8, n_values=4),
        lambda m: recall_ce(m, batch),
    ):
        with pytest.raises(TypeError, match="^model: expected a token model"):
            call(torch.nn.Linear(3, 1))
    for pairs in (None, 2.5, []):
        with pytest.raises((TypeError, ValueError), match="^pairs: expected"):
            recall_curve(model, pairs, size=4, n_keys=8, n_values=4)
