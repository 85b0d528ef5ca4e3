"""connector/signal_settings.py: what a job change does per connection and kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from connector import connections, signal_settings, store
from tests.helpers.constants import NOW, SECRET
from tests.helpers.orgs import organization


def test_a_connection_marks_records_until_the_admin_chooses_otherwise(db_path: Path) -> None:
    db = store.connect(db_path)
    _, key = organization(db)
    with db.conn:
        added = connections.add(db, SECRET.encode(), NOW, name="n8n", platform="n8n", api_key=key)
    made_id = added.row["id"]
    row = store.connection(db, made_id)
    assert signal_settings.actions_for(row, "contacts") == ("mark",)
    assert signal_settings.credit_cap(row) == signal_settings.CHANGE_CREDIT_CAP
    with db.conn:
        assert signal_settings.set_actions(db, made_id, "contacts", ["new_contact", "task"])
        assert signal_settings.set_credit_cap(db, made_id, 50)
    row = store.connection(db, made_id)
    assert signal_settings.actions_for(row, "contacts") == ("task", "new_contact")
    assert signal_settings.actions_for(row, "companies") == ("mark",)
    assert signal_settings.credit_cap(row) == 50
    with pytest.raises(signal_settings.InvalidSignalSettings, match="'call'"):
        signal_settings.set_actions(db, made_id, "contacts", ["call"])
    assert not signal_settings.set_actions(db, "missing", "contacts", [])
