"""The package's import graph: no cycles, and no import that points up the layers.

Every module of `d3d` is parsed (ast, not imported), and every `import` / `from ... import` in it
counts, whether at module level or inside a function: a function-level import that closes a
circle is still a circle, only a later one. Layers, lowest first:

    base        d3d, d3d.errors, d3d.jsonl, d3d.plotting (anyone may import them)
    models      d3d.models
    inference   d3d.inference
    work        d3d.evaluation, d3d.training (they may use each other, never in a circle)
    serving     d3d.serving
    cli         d3d.cli (nothing imports the command line)

A module may import its own layer or any layer below it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import d3d

PACKAGE_DIR = Path(d3d.__file__).parent
LAYERS = {"models": 1, "inference": 2, "evaluation": 3, "training": 3, "serving": 4, "cli": 5}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is a module of the package (None: not ours)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Package modules that `name` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, up `level - 1` packages
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            resolved = resolve(target, modules)
            if resolved is not None and resolved != name:
                found.add(resolved)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_parser_sees_function_level_and_relative_imports(tmp_path):
    modules = {"d3d.a": tmp_path / "a.py", "d3d.b": tmp_path / "b.py", "d3d.c": tmp_path / "c.py"}
    modules["d3d.a"].write_text("def f():\n    from d3d.b import g\n    from . import c\n")
    assert imports_of("d3d.a", modules["d3d.a"], modules) == {"d3d.b", "d3d.c"}
    assert find_cycle({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == ["x", "y", "z", "x"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 50  # it really parsed the package
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_imports_point_down_the_layers():
    upward = [f"{src} -> {dst}" for src, dsts in import_graph().items() for dst in sorted(dsts) if layer(dst) > layer(src)]
    assert not upward, "upward imports:\n" + "\n".join(upward)
