"""The ICL transformer: shapes, causality, determinism, prompt formats, bad input."""

import pytest
import torch

from icl_lib.models.gpt import (
    EVAL_CHUNK,
    GARG_STANDARD,
    GARG_TINY,
    ICLTransformer,
    TransformerConfig,
)
from icl_lib.prompts import interleave, prompt_matrix
from icl_lib.tasks import linear_regression

CFG = TransformerConfig(n_dims=4, n_positions=8, n_embd=32, n_layer=2, n_head=2)


def test_shapes_and_padding():
    model = ICLTransformer(CFG)
    b = linear_regression(3, 8, 4, seed=0)
    assert model(b.xs, b.ys).shape == (3, 8)
    small = linear_regression(3, 5, 2, seed=0)  # fewer dims and points than the config
    assert model(small.xs, small.ys).shape == (3, 5)


def test_prediction_k_sees_only_the_first_k_examples():
    torch.manual_seed(0)
    model = ICLTransformer(CFG).double()
    b = linear_regression(2, 8, 4, seed=1, dtype=torch.float64)
    base = model(b.xs, b.ys)
    ys = b.ys.clone()
    ys[:, 5] += 10.0  # change label 5: predictions 0..5 must not move, 6.. must
    xs = b.xs.clone()
    xs[:, 6] += 1.0  # change input 6: predictions 0..5 must not move
    out = model(xs, ys)
    torch.testing.assert_close(out[:, :6], base[:, :6], rtol=0, atol=1e-12)
    assert (out[:, 6:] - base[:, 6:]).abs().min() > 1e-6


def test_evaluation_in_chunks_is_the_whole_batch_pass():
    """In eval mode a large batch goes through in chunks of EVAL_CHUNK prompts, in
    train mode in one pass (the model has no dropout). Both give the same predictions
    and the same gradients (float64), and a wrong batch size still fails by name."""
    torch.manual_seed(0)
    model = ICLTransformer(CFG).double()
    b = linear_regression(2 * EVAL_CHUNK + 7, 8, 4, seed=2, dtype=torch.float64)
    passes = []  # one entry per pass through the read-in layer
    model.read_in.register_forward_hook(lambda module, args, out: passes.append(1))
    outputs, grads, counts = [], [], []
    for mode in (model.train, model.eval):
        mode()
        passes.clear()
        ys = b.ys.clone().requires_grad_(True)
        out = model(b.xs, ys)
        out.sum().backward()
        outputs.append(out.detach())
        grads.append(ys.grad)
        counts.append(len(passes))
    assert counts == [1, 3]  # train: one pass; eval: 256 + 256 + 7 prompts
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=1e-12)
    with torch.no_grad(), pytest.raises(ValueError, match="ys: expected shape"):
        model(b.xs, b.ys[:2])


def test_same_seed_same_weights():
    torch.manual_seed(3)
    a = ICLTransformer(CFG)
    torch.manual_seed(3)
    b = ICLTransformer(CFG)
    assert all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


def test_interleave_and_prompt_matrix():
    b = linear_regression(2, 3, 2, seed=4)
    tokens = interleave(b.xs, b.ys)
    assert tokens.shape == (2, 6, 2)
    assert torch.equal(tokens[:, 0::2], b.xs)
    assert torch.equal(tokens[:, 1::2, 0], b.ys) and torch.equal(
        tokens[:, 1::2, 1], torch.zeros(2, 3)
    )
    xs, ys, xq, _ = b.prompt(2)
    Z = prompt_matrix(xs, ys, xq)
    assert Z.shape == (2, 3, 3)
    assert torch.equal(Z[:, :2, :2], xs.transpose(1, 2)) and torch.equal(
        Z[:, 2, :2], ys
    )
    assert torch.equal(Z[:, :2, 2], xq) and torch.equal(Z[:, 2, 2], torch.zeros(2))


def test_garg_configs_and_parameter_count():
    # Garg et al.'s sizes (Appendix A.1); counts exclude GPT-2's unused token table
    assert (GARG_TINY.n_layer, GARG_TINY.n_head, GARG_TINY.n_embd) == (3, 2, 64)
    assert (GARG_STANDARD.n_layer, GARG_STANDARD.n_head, GARG_STANDARD.n_embd) == (
        12,
        8,
        256,
    )
    model = ICLTransformer(CFG)
    per_block = (
        2 * 2 * 32
        + (32 * 96 + 96)
        + (32 * 32 + 32)
        + (32 * 128 + 128)
        + (128 * 32 + 32)
    )
    expected = (4 * 32 + 32) + 16 * 32 + 2 * per_block + 2 * 32 + (32 + 1)
    assert model.n_params() == expected


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda m: m(torch.zeros(2, 3, 5), torch.zeros(2, 3)),
            "xs: expected at most n_dims = 4",
        ),
        (
            lambda m: m(torch.zeros(2, 9, 4), torch.zeros(2, 9)),
            "xs: expected at most n_positions = 8",
        ),
        (
            lambda m: m(torch.zeros(2, 3, 4), torch.zeros(2, 4)),
            r"ys: expected shape \(B, N\)",
        ),
        (
            lambda m: m(torch.zeros(2, 3, 4, dtype=torch.int64), torch.zeros(2, 3)),
            "xs: expected dtype",
        ),
    ],
)
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(ICLTransformer(CFG))


def test_token_types_replace_absolute_positions():
    config = TransformerConfig(
        n_dims=4, n_positions=8, n_embd=32, n_layer=2, n_head=2, positions="types"
    )
    model = ICLTransformer(config)
    assert model.wpe.weight.shape == (2, 32)  # one x type, one y type
    added = model.position_embeddings(5)
    assert added.shape == (10, 32)
    assert torch.equal(added[0::2], model.wpe.weight[0].expand(5, 32))
    assert torch.equal(added[1::2], model.wpe.weight[1].expand(5, 32))
    learned = ICLTransformer(CFG)
    assert learned.wpe.weight.shape == (16, 32)
    assert torch.equal(learned.position_embeddings(5), learned.wpe.weight[:10])


def test_bad_config():
    with pytest.raises(ValueError, match="positions: expected one of"):
        TransformerConfig(positions="rotary")
    with pytest.raises(ValueError, match="n_head: expected a divisor of n_embd = 30"):
        TransformerConfig(n_embd=30, n_head=4)
    with pytest.raises(ValueError, match="n_layer: expected an int >= 1"):
        TransformerConfig(n_layer=0)


def test_cache_holds_every_named_activation_and_leaves_the_output_alone():
    torch.manual_seed(5)
    model = ICLTransformer(CFG).double().eval()
    b = linear_regression(3, 6, 4, seed=5, dtype=torch.float64)
    out, cache = model.run_with_cache(b.xs, b.ys)
    torch.testing.assert_close(out, model(b.xs, b.ys), rtol=0, atol=0)
    T, H, C = 12, CFG.n_head, CFG.n_embd
    for layer in range(CFG.n_layer):
        for hook in ("hook_resid_pre", "hook_resid_mid", "hook_resid_post"):
            assert cache[f"blocks.{layer}.{hook}"].shape == (3, T, C)
        for hook in ("hook_q", "hook_k", "hook_v", "hook_z"):
            assert cache[f"blocks.{layer}.attn.{hook}"].shape == (3, H, T, C // H)
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
        # the recorded pattern mixes the recorded values into the recorded head outputs
        torch.testing.assert_close(
            pattern @ cache[f"blocks.{layer}.attn.hook_v"],
            cache[f"blocks.{layer}.attn.hook_z"],
        )
    # the residual stream flows: a block's output is the next block's input
    torch.testing.assert_close(
        cache["blocks.0.hook_resid_post"], cache["blocks.1.hook_resid_pre"]
    )
    assert len(cache) == CFG.n_layer * 8


def test_per_head_weights_are_slices_of_the_fused_matrices():
    torch.manual_seed(6)
    attn = ICLTransformer(CFG).double().blocks[0].attn
    h = torch.randn(2, 5, CFG.n_embd, dtype=torch.float64)
    cache = {}
    attn(h, cache)
    q = torch.einsum("hdc,btc->bhtd", attn.W_Q, h) + attn.c_attn.bias[:32].view(
        2, 1, 16
    )
    torch.testing.assert_close(q, cache["hook_q"])
    v = torch.einsum("hdc,btc->bhtd", attn.W_V, h) + attn.c_attn.bias[64:].view(
        2, 1, 16
    )
    torch.testing.assert_close(v, cache["hook_v"])
    out = torch.einsum("hcd,bhtd->btc", attn.W_O, cache["hook_z"]) + attn.c_proj.bias
    torch.testing.assert_close(out, attn(h))
    assert attn.W_K.shape == (2, 16, 32)


def test_predict_is_the_causal_prediction_at_the_query():
    torch.manual_seed(7)
    model = ICLTransformer(CFG).double().eval()
    b = linear_regression(4, 7, 4, seed=7, dtype=torch.float64)
    xs, ys, xq, _ = b.prompt(5)
    torch.testing.assert_close(
        model.predict(xs, ys, xq), model.predict_prefixes(b.xs, b.ys)[:, 5]
    )
    with pytest.raises(ValueError, match="x_query"):
        model.predict(xs, ys, xq[:2])
