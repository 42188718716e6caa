"""Run every chapter as a reader opening it on Colab would, and fail on any error.

What Colab has, rebuilt offline: a fresh virtual environment with only the package's
declared dependencies (``pyproject.toml``) and a notebook runner, at Colab-like versions
(the latest numpy and matplotlib, ipywidgets 7.x; torch pinned to the CPU wheel of
``requirements.txt``, which installs offline here), no Sphinx and no myst-nb, no
``icl_lib``, and a stand-in ``google.colab`` module imported at kernel start-up. Each
chapter's ``.ipynb`` in ``_toc.yml`` then runs top to bottom with its own setup cell,
which clones the repository and installs ``icl_lib``: the clone comes from a bare copy
of the current commit (a file URL in place of the repository's URL, into a temporary
folder in place of ``/content``). ``icl_lib`` is uninstalled between chapters, as each
notebook opens in a fresh Colab runtime.

    python tools/colab_check.py            # make colab-check; prints each chapter's
    time python tools/colab_check.py --keep DIR # reuse (or create) the environment in
    DIR
    python tools/colab_check.py --record data/colab_times.json   # and keep the times

Each chapter's time is what a reader waits on a fresh runtime: the setup cell's clone
and install of ``icl_lib``, then every cell. ``--record`` writes them, with the date and
the machine, for the instructor page (a Colab runtime's own CPU differs).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parent.parent
COLAB_DIR = "/content/icl-book"  # where the setup cell clones the book on Colab
# Runs inside the check's environment: one notebook, top to bottom, in a fresh kernel.
RUNNER = """
import sys, nbformat
from nbclient import NotebookClient
notebook = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(notebook, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": sys.argv[2]}}).execute()
"""


def chapters() -> list[Path]:
    """The chapters of ``_toc.yml`` that are notebooks (a committed ``.ipynb`` pair)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


def requirements() -> list[str]:
    """The package's dependencies, ipywidgets held at 7.x and torch at the pinned CPU
    wheel."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = (ROOT / "requirements.txt").read_text()
    torch = re.search(r"^torch==\S+", pins, re.M).group(0)
    deps = [
        d for d in project["dependencies"] if not d.startswith(("torch", "ipywidgets"))
    ]
    return [*deps, torch, "ipywidgets>=7.6,<8", "nbclient", "nbformat", "ipykernel"]


def make_environment(folder: Path) -> Path:
    """A virtual environment in ``folder`` with :func:`requirements`; returns its
    python."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, *requirements()], check=True)
    # The stand-in google.colab, imported at start-up as on Colab (sitecustomize runs
    # first).
    fake = folder / "colab_stand_in"
    (fake / "google" / "colab").mkdir(parents=True, exist_ok=True)
    (fake / "google" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "__init__.py").write_text(
        '"""A stand-in for Colab."""\n'
    )
    (fake / "sitecustomize.py").write_text("import google.colab  # noqa: F401\n")
    return python


def bare_clone(folder: Path, branch: str) -> Path:
    """A bare clone of the current commit whose ``branch`` points at it (the setup
    cell's ref)."""
    repo = folder / "icl-book.git"
    if repo.exists():
        subprocess.run(["rm", "-rf", str(repo)], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(ROOT), str(repo)], check=True)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        ["git", "-C", str(repo), "update-ref", f"refs/heads/{branch}", head], check=True
    )
    return repo


def run_chapter(
    python: Path, notebook: Path, repo: Path, work: Path, url: str
) -> float:
    """Run one chapter as on Colab; returns its wall time in seconds."""
    text = notebook.read_text()
    if url not in text or COLAB_DIR not in text:
        raise SystemExit(
            f"{notebook.name}: its setup cell does not clone {url} into {COLAB_DIR}"
        )
    book = work / "content" / "icl-book"
    subprocess.run(["rm", "-rf", str(book)], check=True)
    book.parent.mkdir(parents=True, exist_ok=True)
    copy = work / notebook.name
    copy.write_text(text.replace(url, repo.as_uri()).replace(COLAB_DIR, str(book)))
    subprocess.run(
        [str(python), "-m", "pip", "uninstall", "-q", "-y", "icl_lib"],
        check=False,
        capture_output=True,
    )
    # Nothing of the book's own environment leaks in: its venv, its path, its icl_lib.
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{python.parent}:/usr/local/bin:/usr/bin:/bin"
    env["PYTHONPATH"] = str(python.parent.parent / "colab_stand_in")
    env["ICL_STATIC_WIDGETS"] = "1"  # headless: no live widgets (icl_lib.runtime)
    start = time.perf_counter()
    result = subprocess.run(
        [str(python), "-c", RUNNER, str(copy), str(work)],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        print(result.stdout[-4000:], result.stderr[-8000:], sep="\n")
        raise SystemExit(
            f"{notebook.name}: failed on the Colab path after {seconds:.0f} s"
        )
    return seconds


def record_times(path: Path, times: dict[str, float]) -> None:
    """Write each chapter's seconds on the Colab path, with the date and the machine."""
    path.write_text(
        json.dumps(
            {
                "description": "Seconds each chapter takes on the Colab path "
                "(tools/colab_check.py): a fresh environment with the package's "
                "dependencies, the setup cell's clone and install of icl_lib, then "
                "every cell, one chapter at a time on the machine named below.",
                "date": datetime.date.today().isoformat(),
                "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, "
                f"Python {platform.python_version()}",
                "seconds": times,
            },
            indent=1,
        )
        + "\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="folder of a reusable environment")
    parser.add_argument("--record", type=Path, help="write the times to this JSON file")
    args = parser.parse_args(argv)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        python = make_environment(args.keep or work / "venv")
        print(f"colab-check: environment ready in {time.perf_counter() - start:.0f} s")
        repo = bare_clone(work, config["branch"])
        total, times = 0.0, {}
        for notebook in chapters():
            seconds = run_chapter(python, notebook, repo, work, config["url"])
            total += seconds
            times[notebook.stem] = round(seconds, 1)
            print(f"colab-check: {notebook.stem:24s} {seconds:6.1f} s  ok", flush=True)
        if args.record:
            record_times(args.record, times)
        print(
            f"colab-check: {len(chapters())} chapters ran on the Colab path in "
            f"{total:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
