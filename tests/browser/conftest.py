"""Fixtures of the browser suite: one local server and one headless Chromium per session."""

from __future__ import annotations

import pytest

from sitecheck import SITE, Site


@pytest.fixture(scope="session")
def site():
    if not (SITE / "index.html").exists():
        pytest.fail(f"no built site at {SITE}: run `make book` first", pytrace=False)
    s = Site()
    yield s
    s.close()
