"""Platform subscriptions kept alive. Zoho CRM's notification channels expire (a week at
most), so each Zoho connection's channel is enabled, or renewed, by the scheduled
renew_subscriptions job (every 12 hours, see connector/scheduler.py), each time for
CHANNEL_LIFETIME: several renewals in a row can fail before a channel lapses. Renewing is an
update of the same channel (by its id, made from the connection's), so running it more often
does no harm.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlite_utils import Database

from connector import connections, outbound, sealing, store
from connector.adapters.base import Permanent, Retriable
from connector.adapters.zoho import Zoho

CHANNEL_LIFETIME = timedelta(days=6)  # under Zoho's week, which it replaces with an hour
log = logging.getLogger(__name__)
Row = dict[str, Any]


def renew(
    db: Database, secret: bytes, client: httpx.Client, public_url: str, now: datetime
) -> dict[str, str]:
    """Enable or renew every Zoho connection's channel: connection id -> the expiry Zoho
    confirmed, or "failed: " and why (the next run tries again)."""
    done: dict[str, str] = {}
    for link in store.connections(db):
        if link["platform"] != "zoho":
            continue
        try:
            expiry = _watch(db, link, secret, client, public_url, now)
        except (Permanent, Retriable, outbound.UnsafeUrl, sealing.UnsealError) as error:
            reason = getattr(error, "reason", str(error))
            log.warning("zoho channel of connection %s not renewed: %s", link["id"], reason)
            done[link["id"]] = f"failed: {reason}"
        else:
            until = expiry.isoformat(timespec="seconds")
            done[link["id"]] = f"channel {connections.channel_id(link)} until {until}"
    return done


def _watch(
    db: Database, link: Row, secret: bytes, client: httpx.Client, public_url: str, now: datetime
) -> datetime:
    """Ask Zoho to watch the connection's Contacts until now + CHANNEL_LIFETIME."""
    base_url = outbound.check_crm_url(link["crm_base_url"])
    token = connections.crm_token(secret, link)
    notify_url = connections.urls(link, public_url)["eventsUrl"] or ""
    channel_token = sealing.unseal(secret, link["secret_sealed"])
    zoho = Zoho(base_url, token, client)
    zoho.auth = connections.crm_auth(db, secret, link, lambda: now)
    return zoho.watch(
        connections.channel_id(link), notify_url, channel_token, now + CHANNEL_LIFETIME
    )
