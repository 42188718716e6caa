"""Chapter hygiene: in the toc, pairs in sync and output-free, the setup cell from the
template."""

import ast
import importlib.metadata
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import sync_chapters  # noqa: E402

CHAPTERS = sync_chapters.notebook_chapters()


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [c["file"] for c in part["chapters"]]
    return files


def test_there_are_chapters():
    assert CHAPTERS, "no chapters/NN_*.md found"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_is_in_the_toc(path):
    assert f"chapters/{path.stem}" in toc_files()


def test_every_toc_entry_exists():
    for entry in toc_files():
        assert (ROOT / f"{entry}.md").exists(), (
            f"_toc.yml lists {entry}, which has no .md"
        )


def test_setup_cells_match_the_template():
    assert sync_chapters.main(["--check"]) == 0


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_pair_is_in_sync_and_output_free(path, tmp_path):
    committed = path.with_suffix(".ipynb")
    assert committed.exists(), f"{committed.name} is missing: run `make sync`"
    shutil.copy(path, tmp_path / path.name)
    shutil.copy(committed, tmp_path / committed.name)
    sync_chapters.pair([tmp_path / path.name])
    fresh = json.loads((tmp_path / committed.name).read_text())
    old = json.loads(committed.read_text())
    assert [c["source"] for c in fresh["cells"]] == [
        c["source"] for c in old["cells"]
    ], f"{committed.name} is out of sync with {path.name}: run `make sync`"
    for cell in old["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                f"{committed.name} has outputs"
            )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_anatomy(path):
    text = path.read_text()
    for needle in (
        "kernelspec:",
        "{exercise}",
        "{solution}",
        "claims.save()",
        "claims.table()",
        "## Summary",
    ):
        assert needle in text, f"{path.name} lacks {needle!r}"
    assert "TODO" not in text and "TBD" not in text


def _declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0].lower()
        for dep in project["dependencies"]
    }


def code_cells(path: Path) -> list[str]:
    """The code of a chapter's cells, without their metadata (``:tags:`` lines or a
    ``---`` YAML block)."""
    cells = []
    for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", path.read_text(), re.S):
        if cell.startswith("---\n"):
            cell = cell[cell.index("\n---\n", 3) + 5 :]
        cells.append(
            "\n".join(line for line in cell.splitlines() if not line.startswith(":"))
        )
    return cells


def _top_level_imports(path: Path) -> set[str]:
    code = "\n".join(code_cells(path))
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapters_import_only_what_the_package_installs(path):
    """A chapter runs wherever icl_lib is installed (Colab has no Sphinx or myst-nb)."""
    declared = _declared_distributions()
    providers = importlib.metadata.packages_distributions()
    for name in sorted(_top_level_imports(path)):
        if name in sys.stdlib_module_names or name == "icl_lib":
            continue
        dists = {d.lower() for d in providers.get(name, [])}
        assert dists & declared, (
            f"{path.name} imports {name!r}: not in the standard library, icl_lib or "
            f"the dependencies declared in pyproject.toml ({sorted(declared)})"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_readme_links_every_chapter_to_colab(path):
    repository = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    repo = repository["url"].removeprefix("https://github.com/")
    link = (
        f"https://colab.research.google.com/github/{repo}/blob/{repository['branch']}"
        f"/chapters/{path.stem}.ipynb"
    )
    assert link in (ROOT / "README.md").read_text(), (
        f"README.md has no Colab link {link}"
    )


def _known_names() -> set[str]:
    """Every identifier the library, the chapters' code and the preset registry
    define or use: what an exercise may ask a reader to call."""
    from icl_lib.presets import PRESETS

    names = set(PRESETS) | {"icl_lib"}
    sources = [p.read_text() for p in (ROOT / "icl_lib").rglob("*.py")]
    sources += [p.read_text() for p in (ROOT / "tests").glob("test_*.py")]
    for chapter in CHAPTERS:
        sources += code_cells(chapter)
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.update(node.name.split("."))
    return names


# Names an exercise asks the reader to define (chapter 8: a concept and its covariance).
# variables a solution tells the reader to make
READER_VARIABLES = {"theta", "Gamma_theta"}


def _exercise_code_spans(path: Path) -> list[list[str]]:
    """The inline code of each of a chapter's exercises and solutions, without role
    targets (``{prf:ref}`x```, ``{glue:text}`x```) and file paths."""
    blocks = re.findall(r"```\{(?:exercise|solution)\}.*?\n```", path.read_text(), re.S)
    return [
        [span for span in re.findall(r"(?<![}`])`([^`\n]+)`", block) if "/" not in span]
        for block in blocks
    ]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_name_an_exercise_mentions_exists(path):
    """An exercise that tells a reader to call ``train_lsa`` when the library has no
    such function sends them to an error: every identifier in an exercise's inline
    code must be one the library, a chapter or the preset registry defines."""
    known = _known_names() | READER_VARIABLES
    missing = []
    for spans in _exercise_code_spans(path):
        trees = []
        for span in spans:
            try:
                trees.append((span, ast.parse(span)))
            except SyntaxError:
                continue  # prose in code font, e.g. a formula
        defined = {  # a name the exercise itself assigns, e.g. `cm = ...`
            node.id
            for _, tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        }
        for span, tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id in defined:
                    continue
                if isinstance(node, ast.Name) and node.id not in known:
                    missing.append(f"{node.id} (in `{span}`)")
                elif isinstance(node, ast.Attribute) and node.attr not in known:
                    missing.append(f"{node.attr} (in `{span}`)")
    assert not missing, f"{path.name}: exercises mention unknown names {missing}"
