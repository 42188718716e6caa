"""The chapters' setup and glue work wherever the package is installed."""

import numpy as np
import pytest
import torch

from icl_lib import notebook


def test_glue_outside_a_book_build_keeps_and_shows_the_value(monkeypatch, capsys):
    monkeypatch.setattr(notebook, "_myst_glue", None)  # as on Colab: no myst-nb
    shown = []
    monkeypatch.setattr(notebook, "_show", shown.append)
    notebook.glue("answer", 0.25, display=False)
    notebook.glue("shown", 1.5)
    assert notebook.GLUED["answer"] == 0.25 and shown == [1.5]
    with pytest.raises(ValueError, match="name: expected a non-empty string"):
        notebook.glue("", 1.0)


def test_glue_in_a_book_build_is_myst_nbs(monkeypatch):
    calls = []
    monkeypatch.setattr(notebook, "_myst_glue", lambda *a, **k: calls.append((a, k)))
    notebook.glue("x", 2.0, display=False)
    assert calls == [(("x", 2.0), {"display": False})]
    # A numpy scalar reaches myst-nb as a Python number: its repr would not format.
    notebook.glue("y", np.float64(0.5), display=False)
    assert calls[-1][0] == ("y", 0.5) and type(calls[-1][0][1]) is float


def test_setup_notebook_fixes_seed_and_threads():
    threads = torch.get_num_threads()
    try:
        device = notebook.setup_notebook(seed=3)
        first = torch.rand(1)
        notebook.setup_notebook(seed=3)
        assert torch.equal(first, torch.rand(1)) and torch.get_num_threads() == 1
        assert device.type in ("cpu", "cuda")
    finally:
        torch.set_num_threads(threads)


def test_explore_is_live_in_a_kernel_and_draws_once_headless(monkeypatch):
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from icl_lib.widgets import explore

    calls = []

    def view(sigma, k, name):
        calls.append((sigma, k, name))
        return plt.figure()

    controls = {
        "sigma": widgets.FloatSlider(value=0.5, min=0.0, max=1.0),
        "k": (0, 10),
        "name": ["a", "b"],
    }
    monkeypatch.setenv("ICL_STATIC_WIDGETS", "1")
    open_before = set(plt.get_fignums())
    assert explore(view, **controls) is None
    assert calls == [(0.5, 5, "a")]  # the initial view, drawn once
    assert set(plt.get_fignums()) == open_before  # and closed
    monkeypatch.delenv("ICL_STATIC_WIDGETS")
    live = explore(view, **controls)
    assert isinstance(live, widgets.interactive)
    with pytest.raises(ValueError, match="controls: expected at least one"):
        explore(view)
    plt.close("all")


def test_setup_notebook_headless_gives_widgets_inert_comms(monkeypatch):
    import comm

    monkeypatch.setattr(comm, "create_comm", comm.create_comm)  # restored afterwards
    monkeypatch.setenv("ICL_STATIC_WIDGETS", "1")
    notebook.setup_notebook(seed=0)
    assert comm.create_comm is comm.DummyComm


def test_number_table_formats_numbers_and_refuses_ragged_rows():
    table = notebook.number_table(
        ["model", "loss", "steps"],
        {"two layers": [np.float64(0.38605), 4000], "<one>": [1.0, "all"]},
        digits=3,
    ).data
    assert "<th>model</th><th>loss</th><th>steps</th>" in table
    assert "<td>two layers</td><td>0.386</td><td>4000</td>" in table
    assert "<td>&lt;one&gt;</td><td>1.000</td><td>all</td>" in table  # escaped
    with pytest.raises(ValueError, match=r"rows\['a'\]: expected 2 cells, got 1"):
        notebook.number_table(["x", "y", "z"], {"a": [1.0]})
    with pytest.raises(ValueError, match="columns: expected at least two"):
        notebook.number_table(["x"], {"a": []})
    with pytest.raises(ValueError, match="digits: expected an int >= 0"):
        notebook.number_table(["x", "y"], {"a": [1.0]}, digits=-1)


@pytest.mark.parametrize("display", [False, True])
@pytest.mark.parametrize("value", [0.25, 3, "a pass", np.float64(0.5).item()])
def test_the_book_glue_writes_the_output_myst_nb_reads(value, display):
    """icl_lib writes glue outputs itself (importing myst_nb.ext.glue costs each
    chapter seconds); they must be exactly the outputs of myst-nb's own glue."""
    pytest.importorskip("myst_nb")
    from IPython.utils.capture import capture_output
    from myst_nb.ext.glue import GLUE_PREFIX
    from myst_nb.ext.glue import glue as myst_glue

    assert notebook.GLUE_MIME_PREFIX == GLUE_PREFIX
    with capture_output():  # the first capture of a process sets up the display hook
        myst_glue("warm-up", 0, False)
    with capture_output() as ours:
        notebook._book_glue("name", value, display)
    with capture_output() as theirs:
        myst_glue("name", value, display)
    assert len(ours.outputs) == len(theirs.outputs) == 1
    assert ours.outputs[0].data == theirs.outputs[0].data
    assert ours.outputs[0].metadata == theirs.outputs[0].metadata


def test_multiple_text_reads_a_training_budget():
    assert notebook.multiple_text(2.44) == "2.4"
    assert notebook.multiple_text(37.4) == "37"
    assert notebook.multiple_text(986.0) == "10³"
    assert notebook.multiple_text(325.0) == "3 × 10²"
    assert notebook.multiple_text(9.6e5) == "10⁶"
    assert notebook.multiple_text(1.7e6) == "more than 10⁶"
    assert notebook.multiple_text(float("inf")) == "never, at this slope"
    with pytest.raises(ValueError, match="factor: expected a positive"):
        notebook.multiple_text(0.0)


def test_trend_summary_groups_runs_by_what_their_ends_say():
    reached = {"end": 1.0, "reached": 300, "slope": -0.5, "factor": 1.0}
    stopped = {"end": 2.0, "reached": None, "slope": 0.01, "factor": float("inf")}
    slow = {"end": 3.0, "reached": None, "slope": -0.1, "factor": 3.2e5}
    slower = {"end": 3.0, "reached": None, "slope": -0.05, "factor": 3e9}
    text = notebook.trend_summary(
        {"the first ratio": reached, "the KL": stopped, "a": slow, "b": slower},
        "the mark",
    )
    assert text == (
        "The first ratio reaches the mark. The KL has stopped falling. A and b still "
        "fall; at the log-log slopes of the table, the mark is at least 3 × 10⁵ times "
        "the training away."
    )
    one = notebook.trend_summary({"the ratio": slow})
    assert one == (
        "The ratio still falls; at the log-log slope of the table, the goal is about "
        "3 × 10⁵ times the training away."
    )
    # one run over two stretches: the range spans both; stopped only over both
    two = notebook.trend_summary({"the ratio": [slow, stopped]})
    assert two == one
    assert "stopped" in notebook.trend_summary({"the KL": [stopped, stopped]})
    # on training_budget's own results: a power law, a curve below its goal, a flat one
    from icl_lib.analysis.curves import training_budget

    steps = list(range(100, 10_001, 100))
    falling = {"step": steps, "loss": [3.0 * s**-0.5 for s in steps]}
    flat = {"step": steps, "loss": [1.0] * len(steps)}
    assert notebook.trend_summary(
        {
            "a": training_budget(falling, 3.0 * 40_000**-0.5),
            "b": training_budget(falling, 1.0),
            "c": training_budget(flat, 0.5),
        }
    ) == (
        "B reaches the goal. C has stopped falling. A still falls; at the log-log "
        "slope of the table, the goal is about 4.0 times the training away."
    )
    with pytest.raises(ValueError, match="budgets: expected a non-empty dict"):
        notebook.trend_summary({})
    with pytest.raises(TypeError, match="budget: expected training_budget's dict"):
        notebook.trend_summary({"x": {"end": 1.0}})


def test_number_table_displays_itself_once_wherever_it_stands_in_its_cell():
    """Chapter 7's trained-block table was not its cell's last expression and never
    rendered; a table now shows itself when made, and showing it again adds nothing."""
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown = []
    original = shell.display_pub.publish
    shell.display_pub.publish = lambda data, **kw: shown.append(data)
    try:
        for cell in (
            "t = number_table(['a', 'b'], {'x': [1.0]})\ny = 2",  # not last: shown
            "number_table(['a', 'b'], {'x': [2.0]})",  # last expression: once
            "display(number_table(['a', 'b'], {'x': [3.0]}))",  # wrapped: once
        ):
            shell.run_cell(
                "from IPython.display import display\n"
                "from icl_lib.notebook import number_table\n" + cell,
                store_history=False,
            )
    finally:
        shell.display_pub.publish = original
    html = [d["text/html"] for d in shown if "text/html" in d]
    assert len(html) == 3
    assert [t.count("number-table") for t in html] == [1, 1, 1]
    assert "1.00" in html[0] and "2.00" in html[1] and "3.00" in html[2]
    assert IPython is not None


def test_number_table_refuses_a_huge_precision_by_name():
    """Issue 42: Python's own "precision too big" for digits=10**12."""
    with pytest.raises(ValueError, match="^digits: expected an int <= "):
        notebook.number_table(["x", "y"], {"a": [1.0]}, digits=10**12)


@pytest.mark.parametrize(
    "x, digits, text",
    [
        (3.6e-15, 2, "3.6 × 10⁻¹⁵"),
        (1.33e-14, 1, "10⁻¹⁴"),
        (9.96e-5, 2, "1.0 × 10⁻⁴"),
        (0.0, 2, "0"),
        (-0.0, 2, "0"),  # never a signed zero
        (np.float64(0.00406), 2, "0.0041"),
        (torch.tensor(0.5), 2, "0.5"),
        (-2.4e-3, 2, "-0.0024"),
        (12345.0, 3, "1.23 × 10⁴"),
    ],
)
def test_scientific_text_writes_no_exponent_notation(x, digits, text):
    assert notebook.scientific_text(x, digits) == text


def test_scientific_text_refuses_what_is_not_a_finite_number():
    with pytest.raises(TypeError, match="^x: expected a real number"):
        notebook.scientific_text("0.1")
    with pytest.raises(ValueError, match="^x: expected a finite number"):
        notebook.scientific_text(float("nan"))
    with pytest.raises(ValueError, match="^digits: expected"):
        notebook.scientific_text(0.1, 0)
