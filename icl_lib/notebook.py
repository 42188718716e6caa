"""What every chapter's setup cell calls once ``icl_lib`` is importable."""

from __future__ import annotations

import torch

from .plotting import use_book_style
from .train import get_device


def setup_notebook(seed: int = 0) -> torch.device:
    """Fix the global seed, apply the book's figure style and return the device (CUDA if present).

    Every experiment in the book still passes its own seed or generator; the global seed only
    makes incidental randomness (e.g. a default ``nn.Linear`` initialisation) repeatable.
    """
    torch.manual_seed(seed)
    use_book_style()
    return get_device()
