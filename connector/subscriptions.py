"""Platform subscriptions kept alive. Zoho CRM's notification channels expire (a week at
most), so each Zoho connection's channel is enabled when first seen and renewed every day,
each time for CHANNEL_LIFETIME: a day of renewals can fail before the channel lapses.

The worker calls `Renewals.run_due` between rounds; which connections were renewed when is
kept in memory, so a restarted worker renews every channel once more, which Zoho takes as
an update of the same channel (by its id, made from the connection's).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlite_utils import Database

from connector import connections, outbound, sealing, store
from connector.adapters.base import Permanent, Retriable
from connector.adapters.zoho import Zoho

RENEW_EVERY = timedelta(days=1)
RETRY_AFTER = timedelta(minutes=15)  # after a failed renewal
CHANNEL_LIFETIME = timedelta(days=6)  # under Zoho's week, which it replaces with an hour
log = logging.getLogger(__name__)
Row = dict[str, Any]


@dataclass
class Renewals:
    """When each Zoho connection's channel is next due, and the last outcome of each."""

    secret: bytes
    client: httpx.Client
    public_url: str
    due: dict[str, datetime] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)

    def run_due(self, db: Database, now: datetime) -> dict[str, str]:
        """Enable or renew the channels due at `now`: connection id -> the expiry Zoho
        confirmed, or why it failed (tried again after RETRY_AFTER)."""
        done: dict[str, str] = {}
        for link in store.connections(db):
            if link["platform"] != "zoho" or self.due.get(link["id"], now) > now:
                continue
            try:
                expiry = self._watch(link, now)
            except (Permanent, Retriable, outbound.UnsafeUrl, sealing.UnsealError) as error:
                reason = getattr(error, "reason", str(error))
                log.warning("zoho channel of connection %s not renewed: %s", link["id"], reason)
                done[link["id"]] = f"failed: {reason}"
                self.due[link["id"]] = now + RETRY_AFTER
            else:
                until = expiry.isoformat(timespec="seconds")
                done[link["id"]] = f"channel {connections.channel_id(link)} until {until}"
                self.due[link["id"]] = min(now + RENEW_EVERY, expiry - RENEW_EVERY / 2)
        self.outcomes.update(done)
        return done

    def _watch(self, link: Row, now: datetime) -> datetime:
        base_url = outbound.check_crm_url(link["crm_base_url"])
        token = sealing.unseal(self.secret, link["crm_token_sealed"])
        notify_url = connections.urls(link, self.public_url)["eventsUrl"] or ""
        channel_token = sealing.unseal(self.secret, link["secret_sealed"])
        zoho = Zoho(base_url, token, self.client)
        return zoho.watch(
            connections.channel_id(link), notify_url, channel_token, now + CHANNEL_LIFETIME
        )
