"""Where the book keeps its files: the repository root and the committed ``data/`` folder."""

from __future__ import annotations

from pathlib import Path

# icl_lib/ sits at the repository root (an editable install, or a clone on Colab).
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
