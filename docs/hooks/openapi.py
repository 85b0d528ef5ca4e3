"""The API reference page: the service's own /openapi.json, built from the app at docs build time
and rendered to Markdown (neoteroi-mkdocs's renderer), so nothing is fetched to build or view it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from openapidocs.mk.v3 import OpenAPIV3DocumentationHandler

REFERENCE_PAGE = "api/reference.md"
DOCUMENT_PATH = "api/openapi.json"
PLACEHOLDER = "<!-- the OpenAPI document, rendered at build time -->"
_document: dict[str, Any] = {}


def build_document() -> dict[str, Any]:
    """What `GET /openapi.json` answers, from an app on a throwaway database."""
    from connector.app import create_app

    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"DB": str(Path(folder) / "docs.db"), "KEY_SECRET": "docs-build"})
        return app.test_client().get("/openapi.json").get_json()


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Build the document once a build."""
    _document.clear()
    _document.update(build_document())
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Publish the document beside its page, for download and for other tools."""
    text = json.dumps(_document, indent=2) + "\n"
    files.append(File.generated(config, DOCUMENT_PATH, content=text))
    return files


def on_page_markdown(markdown: str, page: Page, **_: Any) -> str:
    """Put the rendered document where the reference page holds its place."""
    if page.file.src_uri != REFERENCE_PAGE:
        return markdown
    assert PLACEHOLDER in markdown, f"{REFERENCE_PAGE} lost its placeholder"
    rendered = OpenAPIV3DocumentationHandler(_document, style="MKDOCS").write()
    return markdown.replace(PLACEHOLDER, rendered)
