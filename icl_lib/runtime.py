"""Where the book's files are, which device it computes on, and where its randomness
comes from.

The lowest layer of :mod:`icl_lib` with :mod:`icl_lib._checks`: every other module may
import it, it imports nothing of the library but the argument checks.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

# icl_lib/ sits at the repository root (an editable install, or a clone on Colab).
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_ENV = "ICL_DATA_DIR"  # where the checkpoints are, for any other install


def find_data_dir() -> Path:
    """Where the checkpoints live: ``$ICL_DATA_DIR``; else ``data/`` beside
    ``icl_lib/`` in a clone (an editable install, Colab); else, for a package
    installed into site-packages, the ``data/`` of the book checkout that contains the
    working directory; else ``./data``. Never a folder inside site-packages."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser().resolve()
    if (REPO_ROOT / "data").is_dir() and (REPO_ROOT / "pyproject.toml").exists():
        return REPO_ROOT / "data"
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "data").is_dir() and (folder / "_config.yml").exists():
            return folder / "data"
    return Path.cwd() / "data"


DATA_DIR = find_data_dir()


def get_device() -> torch.device:
    """CUDA where present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_generator(seed, name: str = "seed") -> torch.Generator:
    """A CPU ``torch.Generator`` from a seed, an int in ``[0, 2**64)`` (numpy's rule:
    torch would wrap a negative one silently), or the generator itself if one is
    given. ``name`` is the argument an error names."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected the argument's name (str), got {name!r}")
    if isinstance(seed, torch.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(
            f"{name}: expected an int or a torch.Generator, got {type(seed).__name__}"
        )
    seed = int(seed)  # numpy's integers too
    if not 0 <= seed < 2**64:
        raise ValueError(f"{name}: expected an int in [0, 2**64), got {seed}")
    return torch.Generator().manual_seed(seed)


STATIC_WIDGETS = "ICL_STATIC_WIDGETS"  # "1": headless execution, no live widgets


FIGURE_PACK = "ICL_FIGURE_PACK"  # "1": figures drawn as SVG too (tools/figure_pack.py)


def figure_pack() -> bool:
    """Whether this kernel also draws every figure as SVG: ``make book`` sets
    ``ICL_FIGURE_PACK=1``, and ``tools/figure_pack.py`` exports the SVGs of the executed
    chapters for slides (the site shows the PNGs)."""
    return os.environ.get(FIGURE_PACK) == "1"


def static_widgets() -> bool:
    """Whether this kernel runs headless: the book build, the Colab check and the
    tests set ``ICL_STATIC_WIDGETS=1``, and no reader will move a slider.

    There :func:`icl_lib.notebook.setup_notebook` gives widgets inert comms and
    :func:`icl_lib.widgets.explore` draws its initial view once instead of a live
    widget. A cell that opens widget comms can make the notebook client miss the
    cell's reply and wait out its whole timeout (jupyter/nbclient#312; seen here as a
    300 s stall of the widget cell, once in a few builds).
    """
    return os.environ.get(STATIC_WIDGETS) == "1"
