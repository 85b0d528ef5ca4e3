"""Every connector module can be the first one a process imports. Some import one another in
a circle (store → oauth → platforms, whose registry loads hubspot → store), which holds only
while no module uses another's names at import time; this finds the day one does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import connector

ROOT = Path(connector.__file__).parent.parent
FIRST_IMPORT = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "connector" or m.startswith("connector.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")
print("\\n".join(failed))
"""


def test_each_connector_module_imports_first() -> None:
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / "connector").rglob("*.py")
    )
    assert "connector.store" in modules and "connector.platforms.hubspot" in modules
    ran = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORT, *modules],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    assert ran.stdout.strip() == "", ran.stdout
