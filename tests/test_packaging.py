"""A non-editable install ships, and imports, every module of ``icl_lib``."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in (ROOT / "icl_lib").rglob("*.py")
)


@pytest.mark.slow
def test_a_built_wheel_installs_and_imports_every_module(tmp_path):
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT / "icl_lib",
        source / "icl_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-q", "-w", str(tmp_path), str(source)], check=True)
    (wheel,) = tmp_path.glob("icl_lib-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith(("tests/", "tools/", "data/"))]
    site = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target"]
    subprocess.run([*install, str(site), str(wheel)], check=True)
    # From outside the repository, with only the installed copy on the path.
    script = (
        "import importlib, sys\n"
        f"for name in {MODULES!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({str(site)!r}), module.__file__\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True)


def test_the_citation_file_names_the_package_version():
    """CITATION.cff and the changelog page follow the version a release is cut from."""
    import tomllib
    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert citation["version"] == version
    assert (
        citation["title"] == yaml.safe_load((ROOT / "_config.yml").read_text())["title"]
    )
    changelog = (ROOT / "chapters" / "changelog.md").read_text()
    assert "## Errata" in changelog
