"""What every chapter's setup cell calls once ``icl_lib`` is importable."""

from __future__ import annotations

import torch

from .plotting import use_book_style
from .train import get_device


def setup_notebook(seed: int = 0) -> torch.device:
    """Fix the global seed, use one CPU thread, apply the book's figure style; return the device.

    Every experiment in the book still passes its own seed or generator; the global seed only
    makes incidental randomness (e.g. a default ``nn.Linear`` initialisation) repeatable. The
    book's tensors are small, and two threads that contend for a shared 2-core CPU run such
    work several times slower than one. The device is CUDA where present, else the CPU.
    """
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    use_book_style()
    return get_device()
