"""The constructed memory of chapter 9's recall exercise (icl_lib.models.frame_memory):
a unit-norm tight frame is one, its recall matches the exercise's exact and bounded
values, and what it cannot build is refused by name."""

import math

import pytest
import torch

from icl_lib.analysis.recall import guaranteed_recall, sign_recall_accuracy
from icl_lib.models.frame_memory import (
    frame_memory,
    frame_recall_accuracy,
    unit_norm_tight_frame,
)

# the grid of chapter 9's Experiment 1: N and P = r N
GRID = [(N, int(r * N)) for N in (4, 8, 16) for r in (0.5, 1, 1.25, 1.5, 2, 3)]


@pytest.mark.parametrize(("N", "P"), GRID)
def test_the_keys_are_unit_and_tight_or_orthonormal(N, P):
    keys = unit_norm_tight_frame(N, P, seed=3)
    assert keys.shape == (N, P) and keys.dtype == torch.float64
    assert torch.allclose(keys.norm(dim=0), torch.ones(P, dtype=torch.float64))
    if P <= N:
        assert torch.allclose(keys.T @ keys, torch.eye(P, dtype=torch.float64))
    else:
        frame = keys @ keys.T
        assert torch.allclose(frame, (P / N) * torch.eye(N, dtype=torch.float64))


def test_the_frames_are_random_and_reproducible():
    a, b = unit_norm_tight_frame(8, 12, seed=0), unit_norm_tight_frame(8, 12, seed=1)
    assert not torch.allclose(a, b)
    assert torch.equal(a, unit_norm_tight_frame(8, 12, seed=0))


@pytest.mark.parametrize("N", [2, 4, 8])
def test_n_plus_one_keys_are_the_simplex_and_fail_with_probability_two_to_minus_n(N):
    keys = unit_norm_tight_frame(N, N + 1, seed=N)
    gram = keys.T @ keys
    off = gram[~torch.eye(N + 1, dtype=torch.bool)]
    assert torch.allclose(off.abs(), torch.full_like(off, 1 / N))  # equal angles
    # exact: a query fails only when the other N values all oppose its own, a tie
    assert frame_recall_accuracy(N, N + 1, frames=2) == pytest.approx(1 - 2.0**-N)


@pytest.mark.parametrize(("N", "P"), [(8, 10), (8, 12), (16, 24), (16, 48)])
def test_the_accuracy_beats_hoeffdings_bound(N, P):
    bound = 1 - math.exp(-N / (2 * (P - N)))
    assert frame_recall_accuracy(N, P, frames=2) >= bound


@pytest.mark.parametrize(("N", "P"), [(4, 2), (8, 8), (16, 8)])
def test_up_to_n_pairs_every_pair_is_recalled_for_every_choice_of_the_values(N, P):
    memory = frame_memory(N, P, seed=5)
    assert guaranteed_recall(memory.crosstalk) == 1.0
    assert frame_recall_accuracy(N, P) == 1.0


def test_it_counts_as_the_trained_memories_are_counted():
    # a generic frame (no ties) is scored as sign_recall_accuracy scores a memory
    memory = frame_memory(8, 12, seed=0)
    assert frame_recall_accuracy(8, 12, frames=1, seed=0) == pytest.approx(
        sign_recall_accuracy(memory)
    )
    # above 2^P = n_prompts the values are sampled
    sampled = frame_recall_accuracy(8, 16, frames=1, n_prompts=4096, seed=0)
    assert 0.5 < sampled < 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"state_dim": 0, "n_pairs": 2}, "state_dim"),
        ({"state_dim": 4, "n_pairs": 0}, "n_pairs"),
        ({"state_dim": 4.0, "n_pairs": 2}, "state_dim"),
        ({"state_dim": 4, "n_pairs": True}, "n_pairs"),
        ({"state_dim": 1024, "n_pairs": 1024}, "n_pairs"),
        ({"state_dim": 4, "n_pairs": 6, "seed": -1}, "seed"),
    ],
)
def test_what_it_cannot_build_is_refused_by_name(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        unit_norm_tight_frame(**kwargs)


def test_a_frame_that_does_not_converge_says_so():
    with pytest.raises(RuntimeError, match="max_iter"):
        unit_norm_tight_frame(8, 12, tol=1e-300, max_iter=3)


def test_accuracy_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="frames"):
        frame_recall_accuracy(4, 6, frames=0)
    with pytest.raises(ValueError, match="n_prompts"):
        frame_recall_accuracy(4, 6, n_prompts=0)
