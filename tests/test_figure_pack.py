"""tools/figure_pack.py on small executed notebooks: names, several drawings in one
cell, and the error for a labelled figure without its SVG."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import figure_pack  # noqa: E402

SVG = "<svg xmlns='http://www.w3.org/2000/svg'></svg>"


def _cell(outputs, name=None):
    metadata = {"mystnb": {"figure": {"name": name, "caption": "A caption."}}}
    return {
        "cell_type": "code",
        "metadata": metadata if name else {},
        "outputs": [
            {"output_type": "display_data", "data": data, "metadata": {}}
            for data in outputs
        ],
        "source": "",
    }


def _write(folder: Path, stem: str, cells) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / f"{stem}.ipynb").write_text(json.dumps(notebook))


def test_labelled_and_unlabelled_figures_are_exported_by_name(tmp_path):
    executed, out = tmp_path / "executed", tmp_path / "figures"
    _write(
        executed,
        "01_demo",
        [
            _cell([{"image/png": "x", "image/svg+xml": SVG}], name="fig-demo-a"),
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "## Explore it\n\ntext",
            },
            _cell([{"image/svg+xml": [SVG]}, {"image/svg+xml": SVG}]),  # a widget view
            _cell([{"text/plain": "3"}]),  # no drawing: nothing exported
            _cell([{"image/png": "x", "image/svg+xml": SVG}], name="fig-demo-b"),
        ],
    )
    counts = figure_pack.export(executed, out)
    assert counts == {"01_demo": 4}
    names = sorted(p.name for p in (out / "01_demo").glob("*.svg"))
    assert names == [
        "explore-it-1-1.svg",
        "explore-it-1-2.svg",
        "fig-demo-a.svg",
        "fig-demo-b.svg",
    ]
    assert (out / "01_demo" / "fig-demo-a.svg").read_text() == SVG
    index = (out / "index.html").read_text()
    assert "A caption." in index
    # the book's numbers: labelled figures counted in page order, per chapter
    assert "Fig. 1.1<br>" in index and "Fig. 1.2<br>" in index
    assert "<img src='01_demo/fig-demo-b.svg'" in index


def test_a_labelled_figure_without_its_svg_is_an_error(tmp_path):
    executed = tmp_path / "executed"
    _write(executed, "02_demo", [_cell([{"image/png": "x"}], name="fig-demo-b")])
    with pytest.raises(SystemExit, match="02_demo: fig-demo-b"):
        figure_pack.export(executed, tmp_path / "figures")


def test_no_executed_chapters_is_an_error(tmp_path):
    with pytest.raises(SystemExit, match="run make book first"):
        figure_pack.export(tmp_path / "nothing", tmp_path / "figures")
