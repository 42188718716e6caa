"""The causal token transformer (chapter 4): shapes, causality, named activations."""

import pytest
import torch

from icl_lib.models import TokenTransformer, TokenTransformerConfig
from icl_lib.models.gpt import Block, TransformerConfig

CONFIG = TokenTransformerConfig(vocab_size=7, n_ctx=12, n_embd=16, n_layer=2, n_head=2)


def tokens(B=3, T=10, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, CONFIG.vocab_size, (B, T), generator=gen)


def test_logits_have_one_row_per_position_and_token():
    model = CONFIG.build(seed=0)
    assert isinstance(model, TokenTransformer)
    assert model(tokens()).shape == (3, 10, 7)
    assert model(tokens(T=12)).shape == (3, 12, 7)  # n_ctx tokens
    probs = model.next_token_probs(tokens(), torch.tensor([0, 4, 9]))
    assert probs.shape == (3, 3, 7)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, 3))
    double = model.double()(tokens())
    assert double.dtype == torch.float64


def test_seeded_build():
    a, b = CONFIG.build(seed=3), CONFIG.build(seed=3)
    assert all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )
    assert CONFIG.to_dict()["mlp"] is True and CONFIG.to_dict()["vocab_size"] == 7


@pytest.mark.parametrize("mlp", [True, False])
def test_a_later_token_never_changes_earlier_logits(mlp):
    model = TokenTransformerConfig(**{**CONFIG.to_dict(), "mlp": mlp}).build(seed=1)
    model = model.double().eval()
    x = tokens()
    changed = x.clone()
    changed[:, 6] = (changed[:, 6] + 1) % CONFIG.vocab_size
    with torch.no_grad():
        a, b = model(x), model(changed)
    torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=1e-12)
    assert (a[:, 6:] - b[:, 6:]).abs().amax() > 1e-6


def test_cache_names_are_those_of_the_regression_gpt():
    model = CONFIG.build(seed=0)
    logits, cache = model.run_with_cache(tokens())
    torch.testing.assert_close(logits, model(tokens()))
    regression = TransformerConfig(n_dims=3, n_positions=5, n_embd=16, n_layer=2)
    _, reference = regression.build(0).run_with_cache(
        torch.randn(2, 4, 3), torch.randn(2, 4)
    )
    assert set(cache) == set(reference)
    assert cache["blocks.1.attn.hook_pattern"].shape == (3, 2, 10, 10)
    assert cache["blocks.0.attn.hook_q"].shape == (3, 2, 10, 8)
    assert cache["blocks.0.hook_resid_pre"].shape == (3, 10, 16)
    pattern = cache["blocks.0.attn.hook_pattern"]
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 2, 10))
    assert (pattern.triu(1) == 0).all()  # causal


def test_attention_only_blocks_have_no_mlp_and_old_blocks_keep_their_names():
    model = TokenTransformerConfig(**{**CONFIG.to_dict(), "mlp": False}).build(0)
    names = set(model.state_dict())
    assert not any(".mlp." in n or ".ln_2." in n for n in names)
    assert "blocks.0.attn.c_attn.weight" in names and "lm_head.weight" in names
    _, cache = model.run_with_cache(tokens())
    torch.testing.assert_close(
        cache["blocks.0.hook_resid_mid"], cache["blocks.0.hook_resid_post"]
    )
    old = set(Block(TransformerConfig()).state_dict())
    assert {"ln_2.weight", "mlp.0.weight", "mlp.2.bias"} <= old


def test_bad_input_is_refused():
    model = CONFIG.build(seed=0)
    with pytest.raises(TypeError, match="tokens: expected dtype torch.int64, got"):
        model(tokens().int())
    with pytest.raises(TypeError, match="tokens: expected a torch.Tensor, got list"):
        model([[0, 1]])
    with pytest.raises(ValueError, match="tokens: expected 2 dimensions, got shape"):
        model(tokens()[0])
    with pytest.raises(ValueError, match="tokens: expected at most n_ctx = 12 tokens"):
        model(tokens(T=13))
    with pytest.raises(ValueError, match=r"tokens: expected values in \[0, 7\)"):
        model(tokens() + 7)
    with pytest.raises(ValueError, match=r"positions: expected values in \[0, 10\)"):
        model.next_token_probs(tokens(), torch.tensor([10]))
    with pytest.raises(ValueError, match="n_head: expected a divisor of n_embd"):
        TokenTransformerConfig(n_embd=10, n_head=4)
    with pytest.raises(TypeError, match="mlp: expected a bool, got str"):
        TokenTransformerConfig(mlp="no")
    with pytest.raises(ValueError, match="vocab_size: expected an int >= 1, got 0"):
        TokenTransformerConfig(vocab_size=0)
