"""Chapter 9's linear associative memory: the recall proposition's bound, the
worst-case test it rests on, and training that reaches it below the key dimension."""

import itertools

import matplotlib.pyplot as plt
import pytest
import torch

from icl_lib import plotting
from icl_lib.analysis.recall import guaranteed_recall, sign_recall_accuracy
from icl_lib.models.associative_memory import (
    AssociativeMemory,
    train_associative_memories,
)

F64 = torch.float64


def _always_right(M: torch.Tensor) -> float:
    """Brute force: the fraction of queries right for all 2^P sign vectors."""
    P = M.shape[0]
    right = torch.ones(P, dtype=torch.bool)
    for v in itertools.product((-1.0, 1.0), repeat=P):
        v = torch.tensor(v, dtype=F64)
        right &= v * (v @ M) > 0
    return right.double().mean().item()


@pytest.mark.parametrize("seed", range(6))
def test_guaranteed_recall_is_the_worst_case_over_all_values(seed):
    gen = torch.Generator().manual_seed(seed)
    P = 6
    # near-identity crosstalk, so that some columns are dominant and some are not
    M = torch.eye(P, dtype=F64) + 0.3 * torch.randn(P, P, generator=gen, dtype=F64)
    assert guaranteed_recall(M) == pytest.approx(_always_right(M), abs=1e-12)


@pytest.mark.parametrize(("N", "P"), [(1, 2), (2, 5), (3, 4), (3, 9), (5, 7)])
def test_no_matrix_state_recalls_more_pairs_for_sure_than_its_key_dimension(N, P):
    """Proposition prop-recall in sign form: at most N of the P queries are right
    for every choice of the values, whatever the keys and queries; here the queries
    are chosen as the dual basis of N keys, which reaches the bound."""
    gen = torch.Generator().manual_seed(N * 10 + P)
    for trial in range(50):
        keys = torch.randn(N, P, generator=gen, dtype=F64)
        queries = torch.randn(N, P, generator=gen, dtype=F64)
        if trial % 2:  # the best case: queries dual to the first N keys
            queries[:, :N] = torch.linalg.inv(keys[:, :N]).T
            keys[:, N:] *= 1e-3
        M = keys.T @ queries
        assert guaranteed_recall(M) <= min(1.0, N / P) + 1e-12
    assert guaranteed_recall(M) == pytest.approx(N / P)


def test_training_recalls_every_pair_up_to_the_key_dimension_and_fewer_beyond():
    memories = train_associative_memories(
        [(4, 2), (4, 4), (4, 8)], steps=400, batch_size=128
    )
    below, at, beyond = memories
    assert guaranteed_recall(below.crosstalk) == 1.0
    assert guaranteed_recall(at.crosstalk) == 1.0
    assert sign_recall_accuracy(at) == 1.0
    assert guaranteed_recall(beyond.crosstalk) <= 0.5
    # P = 2N: far below exact recall, far above a coin flip
    assert 0.7 < sign_recall_accuracy(beyond) < 0.9


def test_memories_trained_together_train_as_if_alone():
    """Stacking pads with zeros that stay zero: adding a memory of the same padded
    size at the end of the list leaves the others' results unchanged."""
    sizes = [(2, 3), (6, 10)]
    alone = train_associative_memories(sizes, steps=50, batch_size=16)
    together = train_associative_memories([*sizes, (3, 10)], steps=50, batch_size=16)
    for a, b in zip(alone, together, strict=False):
        torch.testing.assert_close(a.keys, b.keys, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(a.queries, b.queries, rtol=1e-5, atol=1e-6)
    # and a different seed gives a different memory
    other = train_associative_memories(sizes, steps=50, batch_size=16, seed=1)
    assert not torch.allclose(alone[0].keys, other[0].keys)


def test_the_read_out_is_the_sum_over_stored_pairs():
    gen = torch.Generator().manual_seed(0)
    memory = AssociativeMemory(
        torch.randn(3, 4, generator=gen, dtype=F64),
        torch.randn(3, 4, generator=gen, dtype=F64),
    )
    values = torch.randn(5, 4, generator=gen, dtype=F64)
    state = torch.einsum("bs,ns->bn", values, memory.keys)  # S = sum_s v_s kappa_s^T
    torch.testing.assert_close(memory.read(values), state @ memory.queries)
    assert (memory.state_dim, memory.n_pairs) == (3, 4)


def test_the_capacity_figure_draws_the_bound_and_the_wall():
    fig = plotting.recall_capacity({4: [0.5, 1, 2]}, {4: [1, 1, 0.5]}, {4: [1, 1, 0.8]})
    labels = [line.get_label() for ax in fig.axes for line in ax.get_lines()]
    assert "bound $\\min(1, N / P)$" in labels
    assert "$N$ pairs exact, the rest guessed" in labels
    plt.close(fig)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match=r"sizes\[0\]: expected a \(state_dim"):
        train_associative_memories([(4,)])
    with pytest.raises(ValueError, match="sizes: expected at least one"):
        train_associative_memories([])
    with pytest.raises(TypeError, match=r"sizes\[0\] n_pairs: expected an int"):
        train_associative_memories([(4, 2.5)])
    with pytest.raises(ValueError, match="lr: expected a number > 0"):
        train_associative_memories([(4, 2)], lr=0.0)
    with pytest.raises(ValueError, match="crosstalk: expected a square"):
        guaranteed_recall(torch.zeros(2, 3, dtype=F64))
    with pytest.raises(ValueError, match="crosstalk: expected finite values"):
        guaranteed_recall(torch.full((2, 2), float("nan"), dtype=F64))
    with pytest.raises(TypeError, match="memory: expected an AssociativeMemory"):
        sign_recall_accuracy(torch.eye(3))
    memory = AssociativeMemory(torch.eye(3, dtype=F64), torch.eye(3, dtype=F64))
    with pytest.raises(ValueError, match="values: expected 3 columns"):
        memory.read(torch.ones(2, 4))
    with pytest.raises(ValueError, match="ratios, guaranteed, accuracy"):
        plotting.recall_capacity({4: [1]}, {8: [1]}, {4: [1]})


def test_sign_recall_accuracy_is_exact_for_few_pairs():
    gen = torch.Generator().manual_seed(3)
    memory = AssociativeMemory(
        torch.randn(3, 5, generator=gen, dtype=F64),
        torch.randn(3, 5, generator=gen, dtype=F64),
    )
    right = 0
    for v in itertools.product((-1.0, 1.0), repeat=5):
        v = torch.tensor(v, dtype=F64)
        right += int((v * (v @ memory.crosstalk) > 0).sum())
    assert sign_recall_accuracy(memory) == pytest.approx(right / (32 * 5), abs=1e-15)
    # with fewer prompts than sign vectors it estimates, close to the exact value
    assert abs(sign_recall_accuracy(memory, n_prompts=31) - right / 160) < 0.2


def test_reading_non_finite_values_fails_by_name():
    memory = AssociativeMemory(
        torch.eye(3, dtype=torch.float64)[:, :2],
        torch.eye(3, dtype=torch.float64)[:, :2],
    )
    with pytest.raises(ValueError, match="values: expected finite values"):
        memory.read(torch.tensor([[float("nan"), 1.0]]))
