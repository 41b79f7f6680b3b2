"""The layer rule and the import graph, checked on the source.

- Layers: engines -> operations -> sqleval -> kernel -> storage, each importing only from below (errors
  and the package root from anywhere).
- No import cycle anywhere in `src/` (module level or inside functions, TYPE_CHECKING blocks included):
  what two modules share lives in a lower one.
- No module imports another module's `_private` name: what two modules share is public in the lower one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "deltakernel"

#: layer of a module (dotted name below `deltakernel`), by its first component; everything else is an engine
LAYERS = {"storage": 0, "kernel": 1, "sqleval": 2, "operations": 3}
ENGINE = 4
SHARED = {"errors", "__init__", "_lazy"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in SRC.rglob("*.py"):
        rel = p.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1] or ["__init__"]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _owner(dotted: str) -> str:
    """The module that defines `dotted` (a module, or a name inside one)."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rsplit(".", 1)[0] if "." in dotted else ""
    return dotted or "__init__"


def _import_from(name: str, path: Path) -> list[tuple[str, ast.ImportFrom | ast.Import]]:
    """(absolute module below `deltakernel`, node) for every deltakernel import in the module."""
    is_pkg = path.name == "__init__.py"
    package = [] if name == "__init__" else name.split(".") if is_pkg else name.split(".")[:-1]
    found: list[tuple[str, ast.ImportFrom | ast.Import]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                found.append((".".join([*base, *([node.module] if node.module else [])]), node))
            elif node.module == "deltakernel" or (node.module or "").startswith("deltakernel."):
                found.append((node.module[len("deltakernel"):].lstrip("."), node))
        elif isinstance(node, ast.Import):
            found.extend((a.name[len("deltakernel."):], node) for a in node.names
                         if a.name.startswith("deltakernel."))
    return found


def _imports(name: str, path: Path) -> set[str]:
    """The deltakernel modules `name` imports: `from pkg import module` is an edge to the module (the
    package itself runs first anyway), `from mod import name` an edge to the module defining it."""
    out: set[str] = set()
    for mod, node in _import_from(name, path):
        if isinstance(node, ast.Import):
            out.add(_owner(mod))
            continue
        for alias in node.names:
            sub = f"{mod}.{alias.name}" if mod else alias.name
            out.add(sub if sub in MODULES else _owner(mod))
    return out - {name}


GRAPH = {n: _imports(n, p) for n, p in MODULES.items()}


def _layer(mod: str) -> int:
    return LAYERS.get(mod.split(".")[0], ENGINE)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] in LAYERS))
def test_lower_layers_import_only_from_below(name: str) -> None:
    mine = _layer(name)
    bad = sorted(m for m in GRAPH[name] if m.split(".")[0] not in SHARED and _layer(m) > mine)
    assert not bad, f"{name} (layer {mine}) imports from a higher layer: {bad}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_anywhere() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles (strongly connected modules):\n" + "\n".join(map(str, cycles))


def test_no_cross_module_private_imports() -> None:
    bad = []
    for name, path in MODULES.items():
        for mod, node in _import_from(name, path):
            if isinstance(node, ast.ImportFrom):
                bad.extend(f"{name} <- {mod}.{a.name}" for a in node.names
                           if a.name.startswith("_") and not a.name.startswith("__"))
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)
