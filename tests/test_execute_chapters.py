"""tools/execute_chapters.py: a page it executes is found in the cache exactly as
myst-nb looks it up during the build (so the build executes nothing again), a second
run executes nothing, and a bad page or job count is refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import execute_chapters  # noqa: E402

STATUS = ROOT / "chapters" / "status.md"  # one short code cell


def _myst_nb_view(path: Path):
    """The page as myst-nb's Sphinx parser builds it before looking up the cache."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    config = execute_chapters.book_config()
    md = MdParserConfig(
        enable_extensions=set(config["parse"]["myst_enable_extensions"])
    )
    content = path.read_text()
    reader = create_nb_reader(str(path), md, NbParserConfig(), content)
    return reader.read(content)


@pytest.mark.slow
def test_an_executed_page_is_a_cache_hit_for_the_build(tmp_path, capsys):
    cache_dir = tmp_path / "cache"
    assert execute_chapters.main([str(STATUS), "--cache", str(cache_dir)]) == 0
    assert "status.md" in capsys.readouterr().out
    cache = get_cache(str(cache_dir))
    record = cache.match_cache_notebook(_myst_nb_view(STATUS))  # KeyError if missed
    assert record.data["execution_seconds"] > 0
    _, merged = cache.merge_match_into_notebook(_myst_nb_view(STATUS))
    outputs = [o for c in merged.cells if c.cell_type == "code" for o in c.outputs]
    assert any("torch threads" in o.get("text", "") for o in outputs)
    assert execute_chapters.main([str(STATUS), "--cache", str(cache_dir)]) == 0
    assert "every page is in the cache" in capsys.readouterr().out


def test_every_notebook_page_of_the_toc_is_considered():
    pages = {path.name for path in execute_chapters.toc_pages()}
    assert {"intro.md", "01_overview.md", "09_frontiers.md", "status.md"} <= pages
    assert all(path.exists() for path in execute_chapters.toc_pages())


def test_bad_pages_and_job_counts_are_refused_by_name(tmp_path, capsys):
    with pytest.raises(SystemExit):
        execute_chapters.main([str(ROOT / "README.md"), "--cache", str(tmp_path)])
    assert "pages: expected sources of pages of _toc.yml" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        execute_chapters.main(["--jobs", "0", "--cache", str(tmp_path)])
    assert "--jobs: expected a positive number" in capsys.readouterr().err
