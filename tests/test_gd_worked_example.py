"""Chapter 2's worked example (d = 2, N = 3): the numbers its text computes by hand;
and the formula behind its Monte Carlo check of the best step's population loss.

The chapter draws the prompt matrix Z before and after two constructed layers and asks
the reader to check every entry; the text types them as fractions. If the library's
construction, token layout or sign convention changed, the page would silently teach
wrong numbers: this test (and a hidden assert in the chapter) fails instead.
"""

import torch

from icl_lib import learners
from icl_lib.prompts import token_matrix
from icl_lib.theory import gd_construction as constructions

F64 = torch.float64
XS = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], dtype=F64)  # (1, N, d)
YS = XS @ torch.tensor([2.0, -1.0], dtype=F64)  # w = (2, -1): labels 2, -1, 1
XQ = torch.tensor([[1.0, -1.0]], dtype=F64)  # true label 3
ETA = 1.5  # eta / N = 1/2


def _token_matrices():
    layer = constructions.gd_products(2, ETA, 3)
    model = constructions.lsa_with_products(2, [layer, layer])
    with torch.no_grad():
        _, Zs = model.forward_tokens(token_matrix(XS, YS, XQ), return_all=True)
    return Zs


def test_every_label_becomes_its_residual_and_the_query_minus_the_prediction():
    Zs = _token_matrices()
    hand = [
        [2.0, -1.0, 1.0, 0.0],  # before: the labels, the query's slot empty
        [0.5, -1.0, -0.5, -1.5],  # after one layer: W1 = (3/2, 0)
        [0.5, -0.25, 0.25, -2.25],  # after two: W2 = (3/2, -3/4)
    ]
    for Z, row in zip(Zs, hand, strict=True):
        assert torch.equal(Z[0, :, -1], torch.tensor(row, dtype=F64))
        assert torch.equal(Z[0, :, :2], Zs[0][0, :, :2])  # the inputs never move


def test_the_query_slot_is_minus_what_gradient_descent_predicts():
    Zs = _token_matrices()
    for K in (1, 2):
        assert torch.allclose(-Zs[K][0, -1, -1], learners.gd(XS, YS, XQ, ETA, K)[0])
    assert learners.gd(XS, YS, XQ, ETA, 1).item() == 1.5
    assert learners.gd(XS, YS, XQ, ETA, 2).item() == 2.25


def test_one_steps_loss_given_the_inputs_is_the_formula_the_chapter_averages():
    """The chapter's Monte Carlo check of the best step's population loss averages the
    task w ~ N(0, I) and the query (E x_q x_q^T = v I) exactly: given the context
    inputs X, half the expected squared error of one step of size eta from 0 is
    v ||eta X^T X / N - I||_F^2 / 2. Brute force over sampled tasks and queries."""
    gen = torch.Generator().manual_seed(0)
    n, d, eta, v = 10, 10, 6.0, 1 / 12
    X = torch.rand(n, d, generator=gen, dtype=F64) - 0.5
    A = eta * X.T @ X / n - torch.eye(d, dtype=F64)
    formula = v * float((A**2).sum()) / 2
    w = torch.randn(200_000, d, generator=gen, dtype=F64)
    xq = torch.rand(200_000, d, generator=gen, dtype=F64) - 0.5
    pred = eta / n * torch.einsum("bd,ed,ef,bf->b", xq, X, X, w)  # x_q^T X^T X w
    sq = 0.5 * (pred - (w * xq).sum(-1)) ** 2
    se = float(sq.std()) / sq.numel() ** 0.5
    assert abs(float(sq.mean()) - formula) < 4 * se
