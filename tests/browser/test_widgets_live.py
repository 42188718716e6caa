"""The interactive cells work live in a kernel (locally; on Colab the same notebook
runs).

On the website a widget cell shows the explorer's frames drawn at build time
(``test_explorers_on_site`` moves its sliders in the browser). Here each chapter runs in
a real kernel up to and including its first ``explore(...)`` cell, with nbclient as the
front end: nbclient keeps the widgets' models like a browser does, captures what the
``interactive``'s Output widget displays and syncs it back to the kernel. Probe cells
then move the first control to another value and check that the Output widget's figure
is redrawn (a different PNG) for the new value, and that it is, byte for byte, the frame
the static site draws for that value (``icl_lib.live_figures.frame_png``).
"""

from __future__ import annotations

import json

import pytest
from sitecheck import ROOT, toc_chapters

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHAPTERS = [c for c in toc_chapters() if (ROOT / (c + ".md")).exists()]

PROBE_BEFORE = """\
import ipywidgets as _iw
# The explore(...) cell's value: the newest entry of IPython's output cache (not `_`,
# which IPython stops updating once a chapter assigns `_` itself).
_probe_widget = Out[max(Out)] if Out else None
assert isinstance(_probe_widget, _iw.interactive), (
    f"the explore(...) cell returned {type(_probe_widget).__name__}, expected an "
    "ipywidgets.interactive")
_probe_controls = [c for c in _probe_widget.children if isinstance(c, _iw.ValueWidget)]
_probe_before = [o.get("data", {}).get("image/png") for o in _probe_widget.out.outputs]
"""

PROBE_MOVE = """\
_probe_control = _probe_controls[0]
_probe_old = _probe_control.value
if getattr(_probe_control, "options", None):
    _labels = [o[1] if isinstance(o, tuple) else o for o in _probe_control.options]
    _probe_control.value = next(v for v in _labels if v != _probe_old)
elif isinstance(_probe_old, bool):
    _probe_control.value = not _probe_old
elif hasattr(_probe_control, "max"):
    _probe_high = _probe_old != _probe_control.max
    _probe_control.value = _probe_control.max if _probe_high else _probe_control.min
"""

PROBE_AFTER = """\
import base64 as _b64
import json as _json
from icl_lib.live_figures import frame_png as _frame_png
_probe_after = [o.get("data", {}).get("image/png") for o in _probe_widget.out.outputs]
# the static site's frame for these values: the same function, the same PNG writer
_probe_png = _frame_png(_probe_widget.plot, dict(_probe_widget.kwargs))
_probe_frame = _b64.b64encode(_probe_png).decode()
print(_json.dumps({
    "control": f"{type(_probe_control).__name__} {_probe_control.description!r}",
    "old": repr(_probe_old), "new": repr(_probe_control.value),
    "figures_before": sum(bool(p) for p in _probe_before),
    "figures_after": sum(bool(p) for p in _probe_after),
    "redrawn": _probe_before != _probe_after,
    "site_frame_is_the_widgets": any(
        p is not None and "".join(p.split()) == _probe_frame for p in _probe_after
    ),
}))
"""


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_widget_redraws_when_a_control_moves(chapter, tmp_path, monkeypatch):
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    notebook = jupytext.read(ROOT / (chapter + ".md"))
    code = [c for c in notebook.cells if c.cell_type == "code"]
    first = next((i for i, c in enumerate(code) if "explore(" in c.source), None)
    assert first is not None, (
        f"{chapter}: no interactive cell (icl_lib.widgets.explore)"
    )

    run = nbformat.v4.new_notebook(metadata=notebook.metadata)
    run.cells = [nbformat.v4.new_code_cell(c.source) for c in code[: first + 1]]
    run.cells += [
        nbformat.v4.new_code_cell(p) for p in (PROBE_BEFORE, PROBE_MOVE, PROBE_AFTER)
    ]
    monkeypatch.setenv(
        "ICL_CLAIMS_DIR", str(tmp_path)
    )  # leave the book's _build/claims alone
    NotebookClient(
        run,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str((ROOT / chapter).parent)}},
    ).execute()

    printed = "".join(
        o.get("text", "")
        for o in run.cells[-1].outputs
        if o.get("output_type") == "stream"
    )
    result = json.loads(printed.strip().splitlines()[-1])
    print(f"{chapter}: {result}")  # shown with -rP
    assert result["old"] != result["new"], (
        f"{chapter}: could not move {result['control']}: {result}"
    )
    assert result["figures_before"] >= 1, (
        f"{chapter}: the widget showed no figure at first: {result}"
    )
    assert result["figures_after"] >= 1, (
        f"{chapter}: the widget showed no figure after the move: {result}"
    )
    assert result["redrawn"], (
        f"{chapter}: moving {result['control']} did not redraw the figure: {result}"
    )
    assert result["site_frame_is_the_widgets"], (
        f"{chapter}: the static site's frame for {result['new']} is not the figure the "
        f"widget drew for it (icl_lib.live_figures.frame_png): {result}"
    )
