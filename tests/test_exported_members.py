"""The server's public face (HTTPX's test_exported_members.py): every name server/__init__.py
lists exists, and the connector imports the server only through those names."""

from __future__ import annotations

import ast
from pathlib import Path

import server

CONNECTOR = Path(__file__).resolve().parent.parent / "connector"


def test_every_name_in_all_is_exported() -> None:
    missing = [name for name in server.__all__ if not hasattr(server, name)]
    assert missing == []


def _uses_of_the_server(path: Path) -> list[str]:
    """How a module reaches into the server other than by `import server`, `from server import
    <exported>` and `server.<exported>`: each as "line: what"."""
    tree = ast.parse(path.read_text(), str(path))
    wrong: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("server.")]
            wrong += [f"{node.lineno}: import {name}" for name in names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "server":
            if node.module != "server":
                wrong.append(f"{node.lineno}: from {node.module} import ...")
                continue
            wrong += [f"{node.lineno}: from server import {a.name}" for a in node.names
                      if a.name not in server.__all__]  # fmt: skip
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "server"
            and node.attr not in server.__all__
        ):
            wrong.append(f"{node.lineno}: server.{node.attr}")
    return wrong


def test_the_connector_uses_only_the_servers_exported_names() -> None:
    modules = sorted(CONNECTOR.rglob("*.py"))
    assert len(modules) > 20
    wrong = {
        str(p.relative_to(CONNECTOR)): found for p in modules if (found := _uses_of_the_server(p))
    }
    assert wrong == {}


def test_the_scan_catches_private_reaches(tmp_path: Path) -> None:
    """The scan itself: a module reaching past the list is caught, each way."""
    sample = tmp_path / "reaching.py"
    sample.write_text(
        "import server\nimport server.cli\nfrom server.cli import _DB\nfrom server import _DB\n"
        "server.cli._DB\nserver.now()\n"
    )
    assert sorted(_uses_of_the_server(sample)) == [
        "2: import server.cli", "3: from server.cli import ...", "4: from server import _DB",
        "5: server.cli",
    ]  # fmt: skip
