"""The tests' own layout: test modules share helpers through tests/helpers/ (and conftest.py,
tests/servers.py), never by importing one another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
BENCH = TESTS.parent / "bench"


def _test_modules_imported(path: Path) -> list[str]:
    """The test modules `path` imports, each as "line: module"."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module = node.module or ""
            names = (
                [module] if _is_test_module(module) else [f"{module}.{a.name}" for a in node.names]
            )
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if _is_test_module(name)]
    return found


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 2 and parts[0] == "tests" and parts[1].startswith("test_")


def test_no_test_module_imports_another() -> None:
    importers = sorted(TESTS.glob("test_*.py")) + sorted(TESTS.glob("conftest.py"))
    importers += sorted((TESTS / "helpers").glob("*.py")) + sorted(BENCH.glob("*.py"))
    wrong = {p.name: found for p in importers if (found := _test_modules_imported(p))}
    assert wrong == {}


def test_the_check_sees_each_form_of_import(tmp_path: Path) -> None:
    module = tmp_path / "test_example.py"
    module.write_text(
        "import tests.test_a\nfrom tests.test_b import x\nfrom tests import test_c\n"
        "from tests import servers\nfrom tests.helpers.clock import Clock\n"
    )
    found = _test_modules_imported(module)
    assert found == ["1: tests.test_a", "2: tests.test_b", "3: tests.test_c"]
