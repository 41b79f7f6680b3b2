"""The layer rule, checked on the source: engines -> operations -> kernel -> storage, each importing only
from below (errors from anywhere), and no import cycle between modules of the engine layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "deltakernel"

#: layer of a module (dotted name below `deltakernel`), by its first component
LAYERS = {"storage": 0, "kernel": 1, "operations": 2}
SHARED = {"errors", "__init__"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in SRC.rglob("*.py"):
        rel = p.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1] or ["__init__"]
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every deltakernel module `name` imports (at module level or inside functions)."""
    is_pkg = path.name == "__init__.py"
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                mod = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("deltakernel"):
                mod = node.module[len("deltakernel"):].lstrip(".")
            else:
                continue
            found.add(mod)
            for alias in node.names:  # `from pkg import module`
                found.add(f"{mod}.{alias.name}" if mod else alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("deltakernel."):
                    found.add(alias.name[len("deltakernel."):])
    return found


def _layer(mod: str) -> int:
    return LAYERS.get(mod.split(".")[0], 3)  # everything else is an engine / connector


MODULES = _modules()


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] in LAYERS))
def test_lower_layers_import_only_from_below(name: str) -> None:
    mine = _layer(name)
    bad = sorted(m for m in _imports(name, MODULES[name])
                 if m.split(".")[0] not in SHARED and m in MODULES and _layer(m) > mine)
    assert not bad, f"{name} (layer {mine}) imports from a higher layer: {bad}"


def test_no_import_cycle_through_the_engine_layer() -> None:
    engine = {n for n in MODULES if _layer(n) == 3 and n.split(".")[0] not in SHARED}
    graph = {n: {m for m in _imports(n, MODULES[n]) if m in engine and m != n} for n in engine}
    # a package imports its own submodules; only edges between different top-level engines form cycles
    top = {n: n.split(".")[0] for n in engine}
    edges = {(top[a], top[b]) for a, targets in graph.items() for b in targets if top[a] != top[b]}
    cycles = sorted((a, b) for a, b in edges if (b, a) in edges and a < b)
    assert not cycles, f"import cycles between engine modules: {cycles}"
