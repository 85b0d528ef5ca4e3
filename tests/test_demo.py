import json
import os
import stat
from pathlib import Path

from server import demo, keys, store
from server.db import connect


def test_demo_builds_once_makes_one_org_per_tier_and_prints_how_to_call_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "var" / "demo.db"
    demo.ensure_database(path, companies=20, contacts=200, seed=3)
    built = path.stat().st_mtime_ns
    demo.ensure_database(path, companies=20, contacts=200, seed=3)
    assert path.stat().st_mtime_ns == built
    assert not (tmp_path / "var" / "demo.db.partial").exists()
    assert store.counts(connect(path))["companies"] == 20

    orgs = demo.ensure_organizations(path)
    assert [o["tier"] for o in orgs] == ["enterprise_standard", "enterprise_plus", "pro"]
    assert all(keys.is_well_formed(o["adminApiKey"]) for o in orgs)
    assert demo.ensure_organizations(path) == orgs
    keys_file = Path(f"{path}.keys.json")
    assert stat.S_IMODE(os.stat(keys_file).st_mode) == 0o600
    assert json.loads(keys_file.read_text()) == orgs

    text = "\n".join(demo.instructions(path, orgs, "127.0.0.1", 8080))
    sample = store.sample_employment(connect(path))
    assert sample is not None
    assert sample["email"] in text and sample["company_guid"] in text
    assert "curl http://127.0.0.1:8080/healthz" in text
    for org in orgs:
        assert f"'Api-Key: {org['adminApiKey']}'" in text
        assert f"'API_KEY: {org['adminApiKey']}'" in text
