"""QK and OV circuits of a token transformer's heads (Elhage et al. 2021), and the
copying scores read from them.

For an attention-only transformer without LayerNorm, Elhage et al. write a head's
attention score between a query token ``a`` and a key token ``b`` as the entry of the
QK circuit ``W_E^T W_Q^T W_K W_E`` and its effect on the logits, when it attends to
token ``a``, as the column of the OV circuit ``W_U W_O W_V W_E``. The book's models
(:class:`icl_lib.models.token_gpt.TokenTransformer`) add learned positions, a LayerNorm
before each attention layer and one before the unembedding, and biases. What this
module does about them:

* The input of token ``a`` is the residual vector ``r_a = W_E[a] + p_mean`` (the token
  embedding plus the mean of the position embeddings over the ``n_ctx`` positions;
  :func:`token_residuals`), passed through the layer's own ``ln_1`` exactly (centring,
  division by the norm, gain and bias). Only the direct path is kept: for a layer
  ``l > 0`` the earlier layers' writes are left out, except in
  :func:`previous_token_residuals`, which adds one earlier head's output
  (K-composition).
* QK: ``scores[a, b] = (W_Q x_a + b_Q) . (W_K x_b + b_K) / sqrt(C/H)`` with
  ``x = ln_1(r)``, the scaled score the softmax sees (biases included: exact for those
  inputs).
* OV: ``logits[v, a] = (W_U diag(g_f) P W_O W_V x_a)_v`` with ``P = I - 11^T / C``
  the centring of the final LayerNorm and ``g_f`` its gain. The final LayerNorm's
  division by the residual's norm (a positive factor per position) is left out, and so
  are the value and output biases and ``ln_f``'s bias (the same whatever the head
  attends to). When the head attends fully to one token, the left-out division is one
  positive factor on that token's column. Olsson et al.'s copying score and the
  column-wise diagonal accuracy are invariant to a positive factor per column; the
  eigenvalue copying score only to one positive factor on the whole matrix.

:func:`copying_score` is Olsson et al.'s evaluator, read from the head's actual output
on sequences of random tokens; :func:`circuit_copying_score` reads the same share from
the OV circuit.

Chapter 6.
"""

from __future__ import annotations

import math

import torch

from .._checks import check_finite, check_positive_int, check_tensor
from ..models.token_gpt import TokenTransformer
from ..tasks.tokens import check_tokens


def _check_head(model, layer, head) -> None:
    if not isinstance(model, TokenTransformer):
        raise TypeError(
            f"model: expected a TokenTransformer, got {type(model).__name__}"
        )
    for name, value, size in (
        ("layer", layer, model.config.n_layer),
        ("head", head, model.config.n_head),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value < size
        ):
            raise ValueError(f"{name}: expected an int in [0, {size}), got {value!r}")


def _check_inputs(name, inputs, model) -> torch.Tensor:
    check_tensor(name, inputs, 2)
    if inputs.shape[1] != model.config.n_embd:
        raise ValueError(
            f"{name}: expected shape (N, n_embd = {model.config.n_embd}), got "
            f"{tuple(inputs.shape)}"
        )
    return inputs


def token_residuals(model: TokenTransformer) -> torch.Tensor:
    """``(V, C)``: ``W_E[a] + p_mean`` for every token ``a``, the residual stream a
    token writes, with the position embeddings averaged over ``n_ctx`` positions."""
    _check_head(model, 0, 0)
    return (model.wte.weight + model.wpe.weight.mean(0)).detach()


def _qkv(model, layer, head, part: int) -> tuple[torch.Tensor, torch.Tensor]:
    attn = model.blocks[layer].attn
    C = model.config.n_embd
    d = C // model.config.n_head
    rows = slice(part * C + head * d, part * C + (head + 1) * d)
    return attn.c_attn.weight[rows].detach(), attn.c_attn.bias[rows].detach()


def _w_o(model, layer, head) -> torch.Tensor:
    d = model.config.n_embd // model.config.n_head
    proj = model.blocks[layer].attn.c_proj.weight
    return proj[:, head * d : (head + 1) * d].detach()  # (C, C/H)


@torch.no_grad()
def qk_circuit(
    model: TokenTransformer,
    layer: int,
    head: int,
    query_residuals: torch.Tensor | None = None,
    key_residuals: torch.Tensor | None = None,
) -> torch.Tensor:
    """The head's QK circuit ``(N_q, N_k)``: the pre-softmax attention score of each
    query residual on each key residual (rows: queries; Elhage et al.'s
    ``W_E^T W_Q^T W_K W_E`` with the LayerNorm and biases of the module doc).

    Both residual sets are ``(N, C)`` vectors before the layer's ``ln_1``; by default
    :func:`token_residuals` (then ``(V, V)``, entry ``[a, b]``: query token ``a`` on key
    token ``b``).
    """
    _check_head(model, layer, head)
    if query_residuals is None:
        query_residuals = token_residuals(model)
    if key_residuals is None:
        key_residuals = token_residuals(model)
    _check_inputs("query_residuals", query_residuals, model)
    _check_inputs("key_residuals", key_residuals, model)
    ln = model.blocks[layer].ln_1
    (wq, bq), (wk, bk) = _qkv(model, layer, head, 0), _qkv(model, layer, head, 1)
    q = ln(query_residuals) @ wq.T + bq  # (N_q, C/H)
    k = ln(key_residuals) @ wk.T + bk  # (N_k, C/H)
    return q @ k.T / math.sqrt(q.shape[-1])


@torch.no_grad()
def ov_circuit(
    model: TokenTransformer,
    layer: int,
    head: int,
    residuals: torch.Tensor | None = None,
) -> torch.Tensor:
    """The head's OV circuit ``(V, N)``: column ``a`` is the head's direct effect on the
    logits when it attends fully to the source residual ``a`` (Elhage et al.'s
    ``W_U W_O W_V W_E``, with the LayerNorms of the module doc).

    ``residuals (N, C)`` are source vectors before the layer's ``ln_1``; by default
    :func:`token_residuals` (then ``(V, V)``, entry ``[v, a]``: the logit of ``v`` when
    attending to token ``a``).
    """
    _check_head(model, layer, head)
    if residuals is None:
        residuals = token_residuals(model)
    _check_inputs("residuals", residuals, model)
    wv, _ = _qkv(model, layer, head, 2)
    out = model.blocks[layer].ln_1(residuals) @ wv.T @ _w_o(model, layer, head).T
    out = out - out.mean(-1, keepdim=True)  # the final LayerNorm's centring
    return ((out * model.ln_f.weight) @ model.lm_head.weight.T).T  # (V, N)


@torch.no_grad()
def previous_token_residuals(
    model: TokenTransformer, layer: int, head: int
) -> torch.Tensor:
    """``(V, C)``: the residual at a key position whose *previous* token is ``b``, when
    head ``(layer, head)`` attends fully to that previous token (a perfect
    previous-token head) and writes its output there.

    Row ``b`` is ``mean_a W_E[a] + p_mean + W_O (W_V ln_1(W_E[b] + p_mean) + b_V) +
    b_O``: the key's own token averaged out, the other heads of the layer left out.
    Passed as ``key_residuals`` to :func:`qk_circuit` of a later layer's head, it gives
    the K-composition circuit, entry ``[a, b]``: query token ``a`` on a key whose
    previous token is ``b``; an induction head's is large on the diagonal.
    """
    _check_head(model, layer, head)
    wv, bv = _qkv(model, layer, head, 2)
    residual = token_residuals(model)
    written = (model.blocks[layer].ln_1(residual) @ wv.T + bv) @ _w_o(
        model, layer, head
    ).T + model.blocks[layer].attn.c_proj.bias
    return model.wte.weight.mean(0) + model.wpe.weight.mean(0) + written


def _sample_share_score(r: torch.Tensor, own: torch.Tensor, sample: torch.Tensor):
    """``mean(2 s - 1)`` with ``s = r[own] / sum_{v in sample} r[v]`` for each row of
    ``r (N, V)`` (positive centred logit changes), ``own (N,)`` the attended token and
    ``sample (N, V)`` a mask of the tokens of its sample (0 where nothing is raised)."""
    total = (r * sample).sum(-1)
    mine = r.gather(-1, own[:, None])[:, 0]
    share = torch.where(total > 0, mine / total.clamp_min(1e-30), 0.0)
    return (2 * share - 1).mean().item()


def circuit_copying_score(ov: torch.Tensor, tokens: torch.Tensor) -> float:
    """Olsson et al.'s copying score read from an OV circuit ``ov (V, V)`` (entry
    ``[v, a]``: logit change of ``v`` when attending to ``a``), in ``[-1, 1]``.

    ``tokens (B, n)`` holds ``B`` samples of distinct tokens. For each sample and each
    of its tokens ``a``, as if the head attended fully to ``a``: the logit changes
    ``ov[:, a]`` are mean-subtracted over the vocabulary and ReLU'd,
    ``r = max(l - mean(l), 0)``; the share of ``a`` is ``s = r_a / sum_{v in sample}
    r_v``; the score is the mean of ``2 s - 1``. With the vocabulary as the sample,
    a head that raises its token most but many others a little scores below 0: the
    sample bounds what the share competes with. Invariant to a positive factor on each
    column of ``ov``.
    """
    check_finite("ov", check_tensor("ov", ov, 2))
    if ov.shape[0] != ov.shape[1]:
        raise ValueError(f"ov: expected a square (V, V) matrix, got {tuple(ov.shape)}")
    sample = _check_samples(tokens, ov.shape[0])
    r = torch.relu(ov - ov.mean(0, keepdim=True)).T  # (V, V), row a: source a
    rows = tokens.reshape(-1)
    return _sample_share_score(
        r[rows], rows, sample.repeat_interleave(tokens.shape[1], 0)
    )


def _check_samples(tokens, vocab_size: int) -> torch.Tensor:
    """The ``(B, V)`` mask of the tokens of each sample ``tokens (B, n)``, which must
    hold distinct tokens."""
    check_tokens(tokens, vocab_size)
    if tokens.ndim != 2:
        raise ValueError(
            f"tokens: expected samples of shape (B, n), got {tuple(tokens.shape)}"
        )
    sample = torch.zeros(tokens.shape[0], vocab_size, dtype=torch.bool)
    sample.scatter_(1, tokens, True)
    if (sample.sum(-1) != tokens.shape[1]).any():
        raise ValueError("tokens: expected distinct tokens in each sample, got repeats")
    return sample.double()


def copying_break_even(vocab_size: int, sample_size: int) -> float:
    """The ratio ``c / s`` at which :func:`circuit_copying_score` of ``OV = c I + s Z``
    (``Z`` standard normal, ``V = vocab_size``) is 0 in expectation, for samples of
    ``n = sample_size`` tokens (chapter 6's exercise).

    After centring over the vocabulary the diagonal is about ``c (1 - 1/V)`` and each
    of the ``n - 1`` other tokens of the sample adds ``s E[(Z - c / (V s))^+]`` of
    positive mass; the share is 1/2 where the two are equal,
    ``x (1 - 1/V) = (n - 1) g(x / V)`` with ``x = c / s`` and
    ``g(u) = phi(u) - u (1 - Phi(u))``. The left side increases and the right
    decreases in ``x``: one root, found by bisection."""
    vocab_size = check_positive_int("vocab_size", vocab_size, minimum=2)
    sample_size = check_positive_int("sample_size", sample_size, minimum=2)
    if sample_size > vocab_size:
        raise ValueError(
            f"sample_size: expected at most vocab_size = {vocab_size}, got "
            f"{sample_size}"
        )

    def excess(x):  # (n - 1) g(x / V) - x (1 - 1/V), decreasing in x
        u = x / vocab_size
        phi = math.exp(-u * u / 2) / math.sqrt(2 * math.pi)
        g = phi - u * (1 - 0.5 * (1 + math.erf(u / math.sqrt(2))))
        return (sample_size - 1) * g - x * (1 - 1 / vocab_size)

    low, high = 0.0, float(sample_size)  # excess(n) < 0: g <= phi(0) < 1/2
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    return low


def eigenvalue_copying_score(ov: torch.Tensor) -> float:
    """Elhage et al.'s eigenvalue copying score of a square circuit ``ov (V, V)``:
    ``sum_i lambda_i / sum_i |lambda_i|``, in ``[-1, 1]``; 1 when every eigenvalue is
    positive (the circuit maps each token towards itself)."""
    check_tensor("ov", ov, 2)
    if ov.shape[0] != ov.shape[1]:
        raise ValueError(f"ov: expected a square (V, V) matrix, got {tuple(ov.shape)}")
    # LAPACK's eigenvalue routine aborts the whole process on a NaN entry
    check_finite("ov", ov)
    eig = torch.linalg.eigvals(ov)
    return (eig.sum().real / eig.abs().sum()).item()


def diagonal_accuracy(matrix: torch.Tensor, dim: int = -1) -> float:
    """Share of the lines of a square ``matrix`` whose largest entry is on the
    diagonal: rows (``dim=-1``, a QK circuit: does query ``a`` score key ``a``
    highest?) or columns (``dim=0``, an OV circuit: does attending to ``a`` raise
    ``a``'s logit most?)."""
    check_tensor("matrix", matrix, 2)
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix: expected a square matrix, got {tuple(matrix.shape)}")
    check_finite("matrix", matrix)
    if isinstance(dim, bool) or dim not in (0, 1, -1):
        raise ValueError(f"dim: expected 0 or -1, got {dim!r}")
    best = matrix.argmax(dim=dim)
    return (best == torch.arange(matrix.shape[0])).double().mean().item()


@torch.no_grad()
def _direct_logits(model, layer, head, tokens) -> tuple[torch.Tensor, torch.Tensor]:
    """The head's direct effect on the logits at every position, ``(B, T, V)``: its
    output through ``W_O``, the final LayerNorm's centring and gain and the
    unembedding (the division by the norm, a positive factor per position, left out),
    and its attention pattern ``(B, T, T)``."""
    model.eval()
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens)
    z = cache[f"blocks.{layer}.attn.hook_z"][:, head]  # (B, T, C/H)
    pattern = cache[f"blocks.{layer}.attn.hook_pattern"][:, head]  # (B, T, T)
    out = z @ _w_o(model, layer, head).T  # (B, T, C)
    out = out - out.mean(-1, keepdim=True)
    return (out * model.ln_f.weight) @ model.lm_head.weight.T, pattern


def copying_score(
    model: TokenTransformer, layer: int, head: int, tokens: torch.Tensor
) -> float:
    """Olsson et al.'s copying score of a head, read from its actual output, in
    ``[-1, 1]``.

    ``tokens (B, T)`` are sequences of distinct random tokens (Olsson et al.: 25
    tokens, averaged over 10 sequences). At each position ``t >= 1`` the head's
    direct effect on the logits is ``l`` (:func:`_direct_logits`), and the attended
    token is the token at the position the head attends to most (the book's reading
    of "the token being attended to"). With ``r = max(l - mean(l), 0)`` (the mean over
    the vocabulary), the share is ``s = r[attended] / sum_{v in the sequence} r[v]``,
    what the head raises the attended token's logit as a part of what it raises the
    logits of all tokens of the sequence; the score is the mean of ``2 s - 1``.
    """
    _check_head(model, layer, head)
    sample = _check_samples(tokens, model.config.vocab_size)
    if tokens.shape[1] < 2:
        raise ValueError(
            f"tokens: expected sequences of >= 2 tokens, got {tokens.shape[1]}"
        )
    logits, pattern = _direct_logits(model, layer, head, tokens)
    logits, pattern = logits[:, 1:], pattern[:, 1:]
    r = torch.relu(logits - logits.mean(-1, keepdim=True)).double()
    attended = tokens.gather(1, pattern.argmax(-1))  # (B, T-1)
    n = attended.shape[1]
    return _sample_share_score(
        r.reshape(-1, r.shape[-1]),
        attended.reshape(-1),
        sample.repeat_interleave(n, 0),
    )


def direct_logit_attribution(
    model: TokenTransformer, layer: int, head: int, tokens: torch.Tensor
) -> float:
    """How much a head's own output raises the correct next token, where the context
    can tell it: the mean over the positions ``t`` whose next token repeats an earlier
    one after an earlier copy of ``x_t`` of ``l[x_{t+1}] -
    mean(l)``, with ``l`` the head's direct effect on the logits at ``t``
    (:func:`_direct_logits`). ``tokens (B, T + 1)``: the model reads ``T`` tokens and
    the last one is only a target. An induction head raises the next token there; a
    head that copies the token it attends to, but attends elsewhere, does not.
    """
    _check_head(model, layer, head)
    check_tokens(tokens, model.config.vocab_size)
    if tokens.ndim != 2 or tokens.shape[1] < 3:
        raise ValueError(
            f"tokens: expected sequences (B, T + 1) with T >= 2, got "
            f"{tuple(tokens.shape)}"
        )
    inputs, nxt = tokens[:, :-1], tokens[:, 1:]
    # x_{t+1} can be read from the context: an earlier x_j = x_t was followed by it
    found = _earlier_successor(inputs, nxt)
    if not found.any():
        raise ValueError("tokens: expected some repeated pair (x_t, x_{t+1}), got none")
    logits, _ = _direct_logits(model, layer, head, inputs)
    centred = logits - logits.mean(-1, keepdim=True)
    gain = centred.gather(-1, nxt[..., None])[..., 0]  # (B, T)
    return gain[found].double().mean().item()


def _earlier_successor(inputs: torch.Tensor, nxt: torch.Tensor) -> torch.Tensor:
    """``(B, T)``: some ``j < t`` has ``x_j = x_t`` and ``x_{j+1} = x_{t+1}``."""
    same = inputs[:, :, None] == inputs[:, None, :]  # (B, t, j)
    follows = nxt[:, :, None] == nxt[:, None, :]
    earlier = torch.ones_like(same[0]).tril(-1)  # j < t
    return (same & follows & earlier).any(-1)
