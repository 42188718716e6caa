"""The explorers of the static site (icl_lib.live_figures): every chapter's sliders
move with the keyboard and swap the picture and its alt text for the frame drawn at
build time for the new values, offline, within the page-weight budget. (That each frame
is the widget's own drawing for its values is checked in a kernel, test_widgets_live.)
"""

from __future__ import annotations

import re

import pytest
from sitecheck import SITE, chapter_pages

pytestmark = pytest.mark.browser

CHAPTERS = chapter_pages()
BUDGET = 1.5 * 2**20  # bytes of frames a chapter page may add (the 1.5 MB)


def _explorers(site, chapter):
    live = site.report(chapter).live
    assert live, f"{chapter}: no explorer on the page (icl_lib.widgets.explore)"
    return live


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_slider_moves_with_the_keyboard_and_swaps_the_frame(site, chapter):
    for box in _explorers(site, chapter):
        frames, controls = box["frames"], box["controls"]
        assert len(box["moves"]) == len(controls) >= 1
        for move in box["moves"]:
            before, after, k = move["before"], move["after"], move["control"]
            where = f"{chapter}, explorer {box['index']}, slider {controls[k]['label']}"
            assert move["focused"], f"{where}: the slider cannot take the focus"
            assert after["frame"] != before["frame"], (
                f"{where}: the arrow key moved nothing"
            )
            assert after["loaded"], f"{where}: the new frame's picture did not load"
            assert after["src"] != before["src"], f"{where}: the picture did not change"
            assert after["alt"] != before["alt"], (
                f"{where}: the alt text did not change"
            )
            assert after["alt"] == frames[int(after["frame"])]["alt"], (
                f"{where}: the alt text is not the new frame's"
            )
            shown = after["outputs"][k]
            assert shown != before["outputs"][k] and shown in controls[k]["labels"]
            assert after["valuetexts"][k] == f"{controls[k]['label']} = {shown}", (
                f"{where}: a screen reader would not hear the new value"
            )
            assert shown in after["alt"], f"{where}: the alt text does not say {shown}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_frames_are_local_files_within_the_budget(site, chapter):
    page = (SITE / chapter).read_text(encoding="utf-8")
    for box in _explorers(site, chapter):
        srcs = [f["src"] for f in box["frames"]]
        assert all(
            re.fullmatch(r"(\.\./)*_images/live/[0-9a-f]{20}\.png", s) for s in srcs
        ), f"{chapter}: a frame is not a file of the site: {srcs[:2]}"
        # (stops may share a file: a figure that does not change, e.g. a clipped range,
        # is stored once)
        assert len(set(srcs)) > 1, f"{chapter}: every stop shows the same frame"
        assert all(size > 0 for size in box["bytes"]), f"{chapter}: an empty frame"
        assert len({f["alt"] for f in box["frames"]}) == len(srcs), (
            f"{chapter}: two frames share an alt text"
        )
    live = site.report(chapter).live
    added = sum(
        size
        for box in live
        for size in dict(
            zip([f["src"] for f in box["frames"]], box["bytes"], strict=True)
        ).values()
    )
    frames = sum(len(box["frames"]) for box in live)
    print(f"{chapter}: {frames} frames, {added / 2**20:.2f} MiB")  # shown with -rP
    assert added <= BUDGET, f"{chapter}: the explorers add {added / 2**20:.2f} MiB"
    assert (
        "data:image/png" not in page.split('class="icl-live-figure"', 1)[-1][:200_000]
    ), f"{chapter}: frames embedded in the page instead of loaded from files"
