"""Shared fixtures: a fresh app on a throwaway database, and its test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

from server import db
from server.http.app import create_app


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "test.db"


@pytest.fixture
def database(db_path: Path) -> Iterator[Database]:
    connection = db.connect(db_path)
    yield connection
    connection.close()


@pytest.fixture
def app(db_path: Path) -> Flask:
    return create_app({"DB": str(db_path), "KEY_SECRET": "test-secret"})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="session")
def enrich_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The enrich tests' dataset (tests/data/enrich_*.csv) imported once; tests copy it."""
    from tests.test_enrich import build_dataset

    return build_dataset(tmp_path_factory.mktemp("enrich-dataset"))
