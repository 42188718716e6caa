"""Chapter 9's diagram of the selective layer
(icl_lib.plotting.selective_layer_diagram): it names every part of the definition,
draws one channel as a key-value memory, and refuses what it cannot draw."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from icl_lib.plotting.selective_layer_diagram import (  # noqa: E402
    selective_layer_diagram,
)


def _texts(ax) -> str:
    return " ".join(t.get_text() for t in ax.texts) + " " + ax.get_title()


def test_the_layer_panel_names_every_part_of_the_definition():
    fig = selective_layer_diagram()
    layer, memory = fig.axes
    assert not layer.axison and not memory.axison  # a schematic, not a plot
    text = _texts(layer)
    for part in (
        "$u_t$",
        r"$\xi_t$",
        r"$\zeta_t$",
        "causal conv",
        "width 4",
        "SiLU",
        r"$\Delta_t$ (softplus)",
        "$B_t$",
        "$C_t$",
        r"e^{\Delta_t[\ell] A[\ell]}",  # the fade
        r"\Delta_t[\ell]\, \xi_t[\ell]\, B_t",  # the write
        r"C_t^\top h_t[\ell] + D[\ell]\, \xi_t[\ell]",  # the read-out
        r"W_{\mathrm{out}}(y_t \odot \mathrm{SiLU}(\zeta_t))",  # the gate
        "$E$ channels",
        r"\mathbb{R}^N",
    ):
        assert part in text, part
    plt.close(fig)


def test_the_layer_panel_names_the_value_as_the_definition_does():
    """The value a channel writes is Delta_t[l] xi_t[l], not xi_t[l] alone (the
    chapter's memory form and the right panel say so too)."""
    fig = selective_layer_diagram()
    text = _texts(fig.axes[0])
    assert r"the value written is $\Delta_t[\ell]\, \xi_t[\ell]$" in text
    assert "the value of channel" not in text
    plt.close(fig)


@pytest.mark.parametrize("n_tokens", [2, 4, 6])
def test_the_memory_panel_reads_the_channel_as_linear_attention(n_tokens):
    fig = selective_layer_diagram(n_tokens)
    memory = fig.axes[1]
    text = _texts(memory)
    # key, value and query of the chapter's key-value form
    assert r"v_s = \Delta_s[\ell]\,\xi_s[\ell]" in text
    assert r"\kappa_s = B_s" in text and r"\rho_t = C_t" in text
    assert r"C_t^\top h_t[\ell]" in text
    tokens = [t.get_text() for t in memory.texts if t.get_text().startswith("$u_")]
    assert tokens == [f"$u_{s}$" for s in range(1, n_tokens)] + ["$u_t$"]
    plt.close(fig)


@pytest.mark.parametrize("bad", [1, 7, 0, -1])
def test_the_diagram_refuses_sizes_it_cannot_draw(bad):
    with pytest.raises(ValueError, match="n_tokens: expected an int from 2 to 6"):
        selective_layer_diagram(bad)


@pytest.mark.parametrize("bad", [True, 3.0, "4", None])
def test_the_diagram_refuses_what_is_not_a_count(bad):
    with pytest.raises(ValueError, match="n_tokens"):
        selective_layer_diagram(bad)
