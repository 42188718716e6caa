"""Write the student notebooks: ``python tools/student_notebooks.py OUT``.

Each chapter's notebook (``chapters/NN_*.ipynb``) without the solutions of its
exercises, into ``OUT/chapters/``. ``make book-student`` writes them into the student
edition's site (``notebooks/``), which the published branch serves and the edition's
Colab buttons open (``_ext/edition.py``), so that a student who launches a chapter
gets the exercises and their checks but no solution.

A solution is a ``{solution}`` block of a markdown cell (sphinx-exercise's syntax); the
block is dropped up to its closing fence, and a fence opened inside it is matched first.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(`{3,}|:{3,})(.*)$")


def without_solutions(markdown: str) -> str:
    """``markdown`` with every ``{solution}`` block removed."""
    kept, depth, opened = [], 0, []
    for line in markdown.splitlines(keepends=True):
        fence = FENCE.match(line.strip())
        if depth == 0:
            if fence and fence.group(2).strip().startswith("{solution}"):
                depth, opened = 1, [fence.group(1)]
                continue
            kept.append(line)
            continue
        if fence and fence.group(2).strip():  # a block opened inside the solution
            opened.append(fence.group(1))
            depth += 1
        elif fence and fence.group(1) == opened[-1]:
            opened.pop()
            depth -= 1
    if depth:
        raise ValueError("markdown: a {solution} block is not closed")
    return re.sub(r"\n{3,}", "\n\n", "".join(kept))


def student_notebook(notebook: dict) -> dict:
    """A copy of the notebook ``notebook`` (nbformat 4, as a dict) without solutions."""
    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = without_solutions("".join(cell["source"]))
            if not source.strip():
                continue
            cell = {**cell, "source": source.splitlines(keepends=True)}
        cells.append(cell)
    return {**notebook, "cells": cells}


def write_all(out: Path, root: Path = ROOT) -> list[Path]:
    """Write the student notebook of every chapter under ``out/chapters``."""
    written = []
    for source in sorted((root / "chapters").glob("[0-9][0-9]_*.ipynb")):
        notebook = json.loads(source.read_text(encoding="utf-8"))
        target = out / "chapters" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            json.dumps(student_notebook(notebook), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        written.append(target)
    if not written:
        raise FileNotFoundError(f"{root / 'chapters'}: no chapter notebook")
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write chapters/ into")
    print(len(write_all(parser.parse_args().out)), "student notebooks")
