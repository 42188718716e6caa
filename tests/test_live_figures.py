"""The explorers of the static site (icl_lib.live_figures, _ext/live_figures.py): the
grid of each control, the frames, the HTML the page shows, and the extension that moves
the frames into files or drops them from the student edition and the print build."""

from __future__ import annotations

import base64
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from docutils import nodes

from icl_lib import live_figures
from icl_lib.live_figures import LiveFigure, control_grids, frame_png
from icl_lib.widgets import explore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import live_figures as live_ext  # noqa: E402  (the Sphinx extension)


def view(sigma, k):
    """Error against the context size"""
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(np.arange(10), sigma * np.exp(-np.arange(10) / (k + 1)))
    ax.set_title(f"{sigma} {k}")
    return fig


CONTROLS = {
    "sigma": widgets.FloatSlider(
        value=0.5, min=0.0, max=1.5, step=0.1, description="σ"
    ),
    "k": widgets.IntSlider(value=5, min=0, max=39, description="k"),
}


def test_grids_are_coarsened_within_the_budget_and_start_at_the_widgets_view():
    grids = control_grids(CONTROLS, max_stops=12, max_frames=36)
    assert [g.label for g in grids] == ["σ", "k"]
    assert np.prod([len(g.values) for g in grids]) <= 36
    sigma, k = grids
    assert sigma.values[0] == 0.0 and sigma.values[-1] == 1.5  # both ends
    assert k.values[0] == 0 and k.values[-1] == 39
    assert sigma.values[sigma.start] == 0.5 and k.values[k.start] == 5  # the first view
    assert list(sigma.values) == sorted(sigma.values)
    assert "0.30000000000000004" not in sigma.labels  # stops are rounded to the step


def test_small_controls_keep_every_value_and_options_keep_their_order():
    grids = control_grids(
        {
            "m": widgets.SelectionSlider(options=[2, 32, 4096], value=32),
            "tasks": widgets.ToggleButtons(options=["pool", "fresh"], value="fresh"),
        }
    )
    assert grids[0].values == (2, 32, 4096) and grids[0].start == 1
    assert grids[1].values == ("pool", "fresh") and grids[1].start == 1
    log = control_grids(
        {"t": widgets.FloatLogSlider(value=0.03, base=10, min=-3, max=1, step=0.05)}
    )[0]
    assert len(log.values) == 12 and log.values[0] == pytest.approx(1e-3)
    assert log.values[log.start] == pytest.approx(0.03)
    tuple_grid = control_grids({"k": (0, 10)})[0]  # what interactive accepts
    assert (
        tuple_grid.values == tuple(range(11))
        and tuple_grid.values[tuple_grid.start] == 5
    )


def test_bad_controls_are_named():
    with pytest.raises(ValueError, match="controls: expected at least one"):
        control_grids({})
    with pytest.raises(TypeError, match="k: expected an ipywidgets control"):
        control_grids({"k": object()})
    with pytest.raises(
        TypeError, match="name: expected an ipywidgets slider.*got Text"
    ):
        control_grids({"name": widgets.Text("a")})
    with pytest.raises(ValueError, match="controls: 3 controls need at least 8 frames"):
        control_grids({"a": (0, 9), "b": (0, 9), "c": (0, 9)}, max_frames=6)
    with pytest.raises(TypeError, match="plot: expected a callable"):
        LiveFigure("not a function", CONTROLS)


def test_each_frame_is_the_inline_backends_drawing_of_its_values():
    from matplotlib_inline.backend_inline import InlineBackend

    # the widget's redraw displays the figure through the inline backend, which writes
    # PNGs with these options: a frame written with the same ones is the same image
    assert InlineBackend.instance().print_figure_kwargs == {"bbox_inches": "tight"}
    live = LiveFigure(view, CONTROLS, max_frames=6)
    assert len(live.frames) == len(live.alts) == 6
    for values, png in live.frames:
        assert png == frame_png(view, values)
    assert len({png for _, png in live.frames}) == 6  # each value draws its own figure
    assert len(set(live.alts)) == 6
    assert live.frames[live.start][0] == {"sigma": 0.5, "k": 5}
    assert live.alts[live.start] == "Error against the context size, at σ = 0.5, k = 5"
    assert plt.get_fignums() == []  # every frame's figure is closed
    assert repr(live).startswith(
        "<LiveFigure: Error against the context size; 6 frames over σ (2) x k (3), "
    )


def test_a_heavy_figure_gets_a_coarser_grid_not_a_heavier_page():
    light = LiveFigure(view, CONTROLS)
    size = len(light.frames[light.start][1])
    heavy = LiveFigure(view, CONTROLS, max_bytes=10 * size)  # room for about 8 frames
    assert len(light.frames) == 36 and 2 <= len(heavy.frames) <= 8
    assert sum(len(p) for p in heavy.frames_by_value().values()) <= 10 * size * 1.2
    assert heavy.frames[heavy.start][0] == {"sigma": 0.5, "k": 5}  # still opens there
    with pytest.raises(ValueError, match="max_bytes: expected an int >= 1"):
        LiveFigure(view, CONTROLS, max_bytes=0)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.script = [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_data(self, data):
        if getattr(self, "_in_script", False):
            self.script = data


def test_the_html_block_shows_the_first_view_and_carries_every_frame():
    live = LiveFigure(view, CONTROLS, max_frames=6)
    page = _Page()
    page.feed(live._repr_html_())
    imgs = [a for t, a in page.tags if t == "img"]
    ranges = [a for t, a in page.tags if t == "input"]
    assert len(imgs) == 1 and imgs[0]["alt"] == live.alts[live.start]
    start_png = base64.b64decode(imgs[0]["src"].split(",", 1)[1])
    assert start_png == live.frames[live.start][1]
    assert [int(r["max"]) + 1 for r in ranges] == [len(g.values) for g in live.grids]
    assert [int(r["value"]) for r in ranges] == [g.start for g in live.grids]
    assert ranges[0]["aria-valuetext"] == "σ = 0.5"
    data = json.loads(page.script)
    assert [f["alt"] for f in data["frames"]] == live.alts
    # row-major: the last control varies fastest, as live_figures.js indexes them
    stops = [len(g.values) for g in live.grids]
    for index, (values, png) in enumerate(live.frames):
        i, j = np.unravel_index(index, stops)
        assert values == {
            "sigma": live.grids[0].values[i],
            "k": live.grids[1].values[j],
        }
        assert base64.b64decode(data["frames"][index]["src"].split(",", 1)[1]) == png


def test_explore_draws_frames_only_in_the_book_build(monkeypatch):
    monkeypatch.setenv("ICL_STATIC_WIDGETS", "1")
    monkeypatch.delenv("ICL_LIVE_FIGURES", raising=False)
    assert explore(view, **CONTROLS) is None
    monkeypatch.setenv("ICL_LIVE_FIGURES", "1")
    live = explore(view, **CONTROLS)
    assert isinstance(live, LiveFigure)
    assert len(live.frames) <= live_figures.MAX_FRAMES


class _App:
    def __init__(self, outdir, builder="html", edition="full"):
        self.outdir = str(outdir)
        self.builder = type("B", (), {"name": builder})()
        self.config = type("C", (), {"icl_edition": edition})()


def _doctree(live):
    doc = nodes.document(None, None)
    cell = nodes.container(classes=["cell"])
    output = nodes.container(classes=["cell_output"])
    output += nodes.raw("", live._repr_html_(), format="html")
    cell += nodes.literal_block("", "explore(view, ...)")
    cell += output
    doc += cell
    return doc


def test_the_extension_moves_frames_into_files_on_the_full_site(tmp_path):
    live = LiveFigure(view, CONTROLS, max_frames=4)
    doc = _doctree(live)
    live_ext.frames_to_files(_App(tmp_path), doc, "chapters/01_overview")
    text = next(iter(doc.findall(nodes.raw))).astext()
    assert "data:image" not in text
    urls = re.findall(r"\.\./_images/live/[0-9a-f]{20}\.png", text)
    assert len(set(urls)) == 4
    files = sorted((tmp_path / "_images" / "live").iterdir())
    assert sorted(f.read_bytes() for f in files) == sorted(p for _, p in live.frames)


@pytest.mark.parametrize(
    ("builder", "edition"), [("html", "student"), ("singlehtml", "full")]
)
def test_the_extension_drops_explorers_where_static_figures_stand_in(
    tmp_path, builder, edition
):
    doc = _doctree(LiveFigure(view, CONTROLS, max_frames=4))
    live_ext.frames_to_files(_App(tmp_path, builder, edition), doc, "chapters/x")
    assert not list(doc.findall(nodes.raw))
    assert not [
        n for n in doc.findall(nodes.container) if "cell_output" in n["classes"]
    ]
    assert list(doc.findall(nodes.literal_block))  # the code stays
    assert not (tmp_path / "_images").exists()
