import os
import stat
from pathlib import Path

import pytest

from server import config


def test_environment_overrides_defaults_and_overrides_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTDATA_DB", "/tmp/from-env.db")
    monkeypatch.setenv("CONTACTDATA_PORT", "9999")
    settings = config.load()
    assert settings["DB"] == "/tmp/from-env.db" and settings["PORT"] == 9999
    assert config.load({"DB": "override.db"})["DB"] == "override.db"


def test_key_secret_from_settings_or_a_private_file_beside_the_db(tmp_path: Path) -> None:
    assert config.key_secret({"KEY_SECRET": "abc", "DB": "x"}) == b"abc"
    settings = {"KEY_SECRET": "", "DB": str(tmp_path / "a.db")}
    first = config.key_secret(settings)
    assert len(first) == 64 and config.key_secret(settings) == first
    mode = stat.S_IMODE(os.stat(tmp_path / "a.db.secret").st_mode)
    assert mode == 0o600


def test_no_proxy_is_trusted_unless_the_environment_says_how_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CONTACTDATA_TRUSTED_PROXIES", raising=False)
    assert config.load()["TRUSTED_PROXIES"] == 0
    monkeypatch.setenv("CONTACTDATA_TRUSTED_PROXIES", "2")
    assert config.load()["TRUSTED_PROXIES"] == 2


@pytest.mark.parametrize(
    ("host", "public_url"),
    [
        ("127.0.0.1", "http://127.0.0.1:9123"),
        ("0.0.0.0", "http://127.0.0.1:9123"),
        ("::", "http://127.0.0.1:9123"),
        ("::1", "http://[::1]:9123"),
        ("hooks.internal", "http://hooks.internal:9123"),
    ],
)
def test_a_server_is_public_at_its_host_and_port_unless_the_environment_says(
    host: str, public_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTACTDATA_PUBLIC_URL", raising=False)
    assert config.load_served({"DB": "x.db"}, host, 9123)["PUBLIC_URL"] == public_url
    monkeypatch.setenv("CONTACTDATA_PUBLIC_URL", "https://hooks.acme.example")
    assert config.load_served({}, host, 9123)["PUBLIC_URL"] == "https://hooks.acme.example"
