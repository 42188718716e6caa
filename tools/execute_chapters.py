"""Execute the book's notebooks in parallel into the build's execution cache.

    python tools/execute_chapters.py            # one process per core (`make book`)
    python tools/execute_chapters.py --jobs 1   # one at a time
    python tools/execute_chapters.py chapters/status.md --cache /tmp/cache  # one page

Jupyter Book executes the notebooks of a build one after another, and each chapter's
kernel computes on one thread (``icl_lib.notebook.setup_notebook``), so on a machine
of two cores half of it waits. This command executes every page of ``_toc.yml`` that has
code cells and no current entry in ``_build/.jupyter_cache``, ``--jobs`` at a time, the
longest first (by its last recorded execution time), and stores each result in the cache
just as myst-nb would. The build that follows finds every page in the cache and executes
nothing; a page that this command could not execute is left out of the cache, so the
build executes it again and reports its error as usual.

A page is read as myst-nb reads it (``read_myst_markdown_notebook``), and the cache
matches a page by its code cells and kernel, so what is cached here is what the build
would have executed: the same code, in the page's folder, under the same environment
(``make book`` sets ``ICL_STATIC_WIDGETS`` and ``ICL_FIGURE_PACK`` for both).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution
from myst_nb.core.read import read_myst_markdown_notebook
from myst_parser.config.main import MdParserConfig

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"


def book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def toc_pages() -> list[Path]:
    """The source of every page of ``_toc.yml``, in the book's order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [entry["file"] for entry in part.get("chapters", [])]
    return [ROOT / f"{name}.md" for name in files]


def read_page(path: Path, md_config: MdParserConfig):
    """The page as the notebook that myst-nb executes."""
    return read_myst_markdown_notebook(
        path.read_text(), config=md_config, add_source_map=True, path=str(path)
    )


def has_code(notebook) -> bool:
    return any(cell.cell_type == "code" for cell in notebook.cells)


def execute(path: str, notebook, timeout: int):
    """Run one page in its folder (a worker process): ``(path, notebook, seconds,
    error)``, ``error`` the traceback or ``None``."""
    result = single_nb_execution(
        notebook,
        cwd=str(Path(path).parent),
        timeout=timeout,
        allow_errors=False,
        meta_override=True,
    )
    return path, notebook, result.time, result.exc_string if result.err else None


def last_seconds(cache, path: Path) -> float:
    """The page's execution time in its latest cache record (inf if none: unknown
    pages go first)."""
    records = [r for r in cache.list_cache_records() if r.uri == str(path)]
    if not records:
        return float("inf")
    latest = max(records, key=lambda r: r.created)
    return float(latest.data.get("execution_seconds") or float("inf"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "pages",
        nargs="*",
        type=Path,
        help="sources of pages of _toc.yml (default: all of them)",
    )
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help=f"the cache (default: {CACHE})"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="pages executed at once (default: one per core)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(
            f"--jobs: expected a positive number of processes, got {args.jobs}"
        )
    config = book_config()
    if config["execute"]["execute_notebooks"] != "cache":
        print("execute_notebooks is not 'cache': nothing to prepare")
        return 0
    md_config = MdParserConfig(
        enable_extensions=set(config["parse"]["myst_enable_extensions"])
    )
    timeout = int(config["execute"]["timeout"])
    pages = toc_pages()
    if args.pages:
        chosen = [path.resolve() for path in args.pages]
        unknown = [str(path) for path in chosen if path not in pages]
        if unknown:
            parser.error(f"pages: expected sources of pages of _toc.yml, got {unknown}")
        pages = chosen
    cache = get_cache(str(args.cache))
    todo = []
    for path in pages:
        notebook = read_page(path, md_config)
        if not has_code(notebook):
            continue
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            todo.append((path, notebook))
    if not todo:
        print("execute_chapters: every page is in the cache")
        return 0
    todo.sort(key=lambda item: last_seconds(cache, item[0]), reverse=True)
    print(f"execute_chapters: {len(todo)} pages, {args.jobs} at a time")
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(execute, str(path), notebook, timeout)
            for path, notebook in todo
        ]
        for future in as_completed(futures):
            path, notebook, seconds, error = future.result()
            name = Path(path).relative_to(ROOT)
            if error is not None:
                failed.append(name)
                print(
                    f"  {name}: FAILED after {seconds:.1f} s\n{error}", file=sys.stderr
                )
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(notebook, path, data={"execution_seconds": seconds}),
                check_validity=False,
                overwrite=True,
            )
            print(f"  {name}: {seconds:.1f} s")
    print(f"execute_chapters: {time.perf_counter() - start:.0f} s in all")
    if failed:
        print(
            f"execute_chapters: {len(failed)} failed ({', '.join(map(str, failed))}); "
            "the build executes them again and reports the error",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
