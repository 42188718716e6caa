"""The library's architecture: subpackages by role, imports only downward, no cycles."""

import ast
from pathlib import Path

import pytest

import icl_lib

ROOT = Path(icl_lib.__file__).parent

# Lower layers never import higher ones (DESIGN.md section 4).
LAYERS = {
    "_format": -1,  # numbers as text; imports nothing of the library
    "_checks": 0,
    "runtime": 0,
    "claims": 0,
    "prompts": 1,
    "kernels": 1,
    "plotting": 1,
    "live_figures": 1,  # an explorer's frames for the static site
    "widgets": 2,  # the live explorer, or its frames in the book build
    "tasks": 2,
    "learners": 3,
    "models": 3,
    "theory": 4,
    "analysis": 4,
    "training": 5,
    "presets": 6,
    "notebook": 7,
    "exercises": 7,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.parent / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports(path: Path):
    """``(imported icl_lib module, line, inside a function)`` for every import in
    ``path``."""
    tree = ast.parse(path.read_text())
    package = (
        module_name(path)
        if path.name == "__init__.py"
        else module_name(path).rpartition(".")[0]
    )
    functions = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    nested = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "icl_lib" and is_module(name):
                yield name, node.lineno, id(node) in nested


MODULES = sorted(ROOT.rglob("*.py"))


def top(name: str) -> str:
    return name.split(".")[1] if name.count(".") else ""


def test_every_top_level_module_has_a_layer():
    names = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in MODULES} - {
        "__init__"
    }
    assert names == set(LAYERS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_downward_and_sit_at_the_top(path):
    importer = module_name(path)
    for target, line, in_function in imports(path):
        if target == "icl_lib":
            continue
        assert not in_function, f"{importer}:{line} imports {target} inside a function"
        if top(importer) and top(target) != top(importer):
            assert LAYERS[top(target)] < LAYERS[top(importer)], (
                f"{importer}:{line} imports {target}, which is not in a lower layer"
            )


def test_no_import_cycle():
    graph = {
        module_name(p): {t for t, _, _ in imports(p)} - {module_name(p), "icl_lib"}
        for p in MODULES
    }
    graph = {m: {t for t in deps if t in graph} for m, deps in graph.items()}
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in graph[node]:
            # a package importing its own submodules (its __init__) is not a cycle
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == "open":
                pytest.fail(f"import cycle: {' -> '.join(stack + [nxt])}")
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for module in graph:
        if module not in state:
            visit(module, [module])
