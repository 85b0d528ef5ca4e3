"""The server's modules import one another in layers: no circle of imports passes through the
configuration or a storage module, counting the imports inside functions as well as those at
the top (a function-level import that dodges a circle still ties the two modules)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import server

ROOT = Path(server.__file__).resolve().parent.parent
# The modules no circle may pass through: the configuration and every storage module.
BOTTOM = ("server.config", "server.storage")
# What describing the schema never needs: the store, and the pure cores its rebuilds use.
ABOVE_THE_SCHEMA = {"server.storage.store", "server.normalize", "server.facets", "server.places"}


def module_names(package: Path) -> dict[str, Path]:
    """Every module of `package` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


def imported(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules among `known` that module `name` (at `path`) imports, anywhere in it."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {_known_prefix(alias.name, known) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}".rstrip(".")
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.add(whole if whole in known else _known_prefix(base, known))
    return found - {"", name}


def _known_prefix(dotted: str, known: set[str]) -> str:
    """The longest leading part of `dotted` that is a known module ("" if none)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return ""


def graph() -> dict[str, set[str]]:
    """Each server module and the server modules it imports."""
    modules = module_names(ROOT / "server")
    return {name: imported(name, path, modules) for name, path in modules.items()}


def circle_through(start: str, edges: dict[str, set[str]]) -> list[str]:
    """A circle of imports from `start` back to it, as the modules on it ([] if none)."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(edges.get(module, ())):
                if target == start:
                    return [*paths[module], start]
                if target not in paths:
                    paths[target] = [*paths[module], target]
                    following.append(target)
        frontier = following
    return []


def test_no_circle_of_imports_passes_through_the_configuration_or_the_storage() -> None:
    edges = graph()
    bottom = [m for m in edges if m in BOTTOM or m.startswith(f"{BOTTOM[1]}.")]
    assert "server.storage.store" in bottom and "server.config" in bottom
    circles = {m: found for m in bottom if (found := circle_through(m, edges))}
    assert circles == {}


def reachable(start: str, edges: dict[str, set[str]]) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    frontier = [start]
    while frontier:
        module = frontier.pop()
        for target in edges.get(module, ()):
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def test_the_migrations_reach_neither_the_store_nor_what_its_rebuilds_compute_with() -> None:
    edges = graph()
    for module in ("server.storage.migrations", "server.storage.schema"):
        assert reachable(module, edges) & ABOVE_THE_SCHEMA == set(), module


def test_the_graph_sees_each_form_of_import(tmp_path: Path) -> None:
    """Module-level and function-level imports, `from package import module`, relative ones."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("a", "b", "c", "d"):
        (package / f"{name}.py").write_text("")
    source = (
        "import pkg.b\nfrom pkg import c\n\ndef later():\n    from .d import thing\n    import os\n"
    )
    (package / "a.py").write_text(source)
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"}
    assert imported("pkg.a", package / "a.py", known) == {"pkg.b", "pkg.c", "pkg.d"}
    assert circle_through("x", {"x": {"y"}, "y": {"z"}, "z": {"x"}}) == ["x", "y", "z", "x"]
    assert circle_through("x", {"x": {"y"}, "y": {"z"}, "z": set()}) == []
    assert reachable("x", {"x": {"y"}, "y": {"z"}, "z": set()}) == {"y", "z"}
