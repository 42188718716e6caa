"""The published site (tools/site_versions.py) and the student notebooks
(tools/student_notebooks.py): one folder per version with both editions, a switcher's
index for each, and notebooks without solutions for the student edition's Colab
buttons."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import site_versions  # noqa: E402
import student_notebooks  # noqa: E402


def _edition(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "index.html").write_text("<html></html>")


def test_the_site_index_lists_latest_then_releases_newest_first(tmp_path):
    for version in ("latest", "v1.0.0", "v1.0.1", "v1.10.0", "v1.2.0"):
        _edition(tmp_path / version)
        _edition(tmp_path / version / "student")
    (tmp_path / "stray").mkdir()
    found = site_versions.write_index(tmp_path)
    assert found == ["latest", "v1.10.0", "v1.2.0", "v1.0.1", "v1.0.0"]
    full = json.loads((tmp_path / "v1.0.0" / "versions.json").read_text())
    assert full[0] == {"name": "latest", "path": "../latest/"}
    assert {"name": "v1.0.0", "path": "./"} in full
    student = json.loads(
        (tmp_path / "latest" / "student" / "versions.json").read_text()
    )
    assert student[1] == {"name": "v1.10.0", "path": "../../v1.10.0/student/"}
    front = (tmp_path / "index.html").read_text()
    assert front.index("latest") < front.index("v1.10.0") < front.index("v1.0.0")
    assert 'href="v1.0.1/student/">student edition' in front
    assert (tmp_path / ".nojekyll").exists()


def test_a_version_without_a_student_edition_is_not_offered_to_students(tmp_path):
    _edition(tmp_path / "latest")
    _edition(tmp_path / "latest" / "student")
    _edition(tmp_path / "v0.1.0")
    site_versions.write_index(tmp_path)
    student = json.loads(
        (tmp_path / "latest" / "student" / "versions.json").read_text()
    )
    assert [entry["name"] for entry in student] == ["latest"]


def test_an_empty_or_missing_site_is_refused(tmp_path):
    with pytest.raises(ValueError, match="site: expected a latest/"):
        site_versions.write_index(tmp_path)
    with pytest.raises(FileNotFoundError, match="site: expected a folder"):
        site_versions.write_index(tmp_path / "nope")


def test_a_solution_block_is_dropped_with_what_it_nests():
    text = (
        "Before.\n\n```{exercise}\n:label: ex-a\n\nDo it.\n```\n\n"
        "```{solution} ex-a\n:class: dropdown\n\nThe answer:\n\n"
        "```python\nx = 1\n```\n\n"
        "More of the answer.\n```\n\nAfter.\n"
    )
    kept = student_notebooks.without_solutions(text)
    assert "Do it." in kept and "Before." in kept and "After." in kept
    assert "answer" not in kept and "x = 1" not in kept


def test_an_unclosed_solution_is_refused():
    with pytest.raises(ValueError, match="not closed"):
        student_notebooks.without_solutions("```{solution} ex-a\nThe answer.\n")


def test_the_student_notebooks_hold_every_exercise_and_no_solution(tmp_path):
    written = student_notebooks.write_all(tmp_path)
    assert len(written) == len(list((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")))
    for path in written:
        source = (ROOT / "chapters" / path.name).read_text()
        notebook = json.loads(path.read_text())
        student = "\n".join("".join(cell["source"]) for cell in notebook["cells"])
        assert student.count("{exercise}") == source.count("{exercise}") > 0
        assert "{solution}" not in student
        # every line of every solution's code (indented in the book's solutions) is gone
        text = (ROOT / "chapters" / path.with_suffix(".md").name).read_text()
        bodies = re.findall(r"```\{solution\}.*?\n```", text, re.S)
        assert len(bodies) == source.count("{solution}")
        code = [
            line
            for body in bodies
            for line in body.split("\n")
            if line.startswith("    ") and len(line.strip()) > 25
        ]
        assert code, f"{path.name}: no solution code to look for"
        shown = [line.strip() for line in code if line in student.split("\n")]
        assert not shown, f"{path.name}: solution code in the notebook: {shown[:2]}"
