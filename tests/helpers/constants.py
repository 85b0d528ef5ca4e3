"""Constants the test modules share: the key secret, the frozen time, the data and sample
folders, and the contact the discover dataset holds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

SECRET = "test-secret"  # the app's KEY_SECRET
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)  # the frozen clock of the connector's tests
DATA = Path(__file__).resolve().parent.parent / "data"
PLATFORMS = DATA / "platforms"  # the platforms' samples, copied from the shared reference
OUTBOUND = PLATFORMS / "outbound"  # what the CRMs answer the adapters, from their docs
AVA = "ava.adams@lonestar-discover.com"  # in tests/data/discover_contacts.csv
CRM = "http://127.0.0.1:9"  # never contacted: the client's transport answers
