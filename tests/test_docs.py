"""The README's pointers into docs/ and the docs site's API reference (docs/hooks/openapi.py);
`make test` builds the site itself with `mkdocs build --strict`."""

import importlib.util
import re
from pathlib import Path
from types import ModuleType, SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def load_hook() -> ModuleType:
    """docs/hooks/openapi.py, as mkdocs loads it: a file, not a package's module."""
    spec = importlib.util.spec_from_file_location("openapi_hook", ROOT / "docs/hooks/openapi.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_keeps_the_two_command_quick_start() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.splitlines()] == [["make", "demo"], ["make", "test"]]


def test_every_link_of_the_readme_names_a_page_that_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)]+)\)", readme) if "://" not in t]
    assert len(targets) > 20
    assert [t for t in targets if not (ROOT / t.split("#")[0]).is_file()] == []


def test_the_reference_page_renders_every_operation_of_the_served_document() -> None:
    hook = load_hook()
    document = hook.build_document()
    hook.on_config(None)
    page = SimpleNamespace(file=SimpleNamespace(src_uri=hook.REFERENCE_PAGE))
    source = (ROOT / "docs" / hook.REFERENCE_PAGE).read_text()

    rendered = hook.on_page_markdown(source, page)

    assert hook.PLACEHOLDER not in rendered
    operations = [
        (m, p) for p, item in document["paths"].items() for m in item if m != "parameters"
    ]
    assert len(operations) > 10
    headings = re.sub(r"<[^>]+>", "", rendered)  # a path's parameters are spans of their own
    assert [(m, p) for m, p in operations if f"{m.upper()} {p}\n" not in headings] == []
