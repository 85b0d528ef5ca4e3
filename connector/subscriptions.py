"""Platform subscriptions kept alive, for every platform that keeps a notification channel
(`Platform.subscribes`). Zoho CRM's notification channels expire (a week at
most from API v4, a day before; an expiry asked beyond it gets Zoho's one-hour default), so
the scheduled renew_subscriptions job (hourly, see connector/scheduler.py) looks at each Zoho
connection's channel: one whose confirmed expiry is more than RENEW_BEFORE away is left as it
is; the others are renewed (updated) for CHANNEL_LIFETIME, or enabled again when they lapsed
or were never enabled, and the expiry Zoho confirms is stored for the next run. A failed
renewal is tried again at each run until the channel lapses, then it is enabled again.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlite_utils import Database

import server
from connector import connections, outbound, store
from connector.platforms import PLATFORMS
from connector.platforms.base import Permanent, Retriable

CHANNEL_LIFETIME = timedelta(days=6)  # asked for: under Zoho's week, which it replaces with an hour
RENEW_BEFORE = timedelta(days=1)  # a channel is renewed once its expiry is this close
NOT_DUE = ": not due"  # how a channel left as it is ends its outcome
log = logging.getLogger(__name__)
Row = dict[str, Any]


def renew(
    db: Database, secret: bytes, client: httpx.Client, public_url: str, now: datetime
) -> dict[str, str]:
    """Enable or renew every channel (Zoho's) that is due: connection id -> the
    expiry Zoho confirmed, the one it holds and NOT_DUE, or "failed: " and why (the next run
    tries again)."""
    return {
        link["id"]: _renewed(db, link, secret, client, public_url, now)
        for link in store.connections(db)
        if PLATFORMS[link["platform"]].subscribes
    }


def _renewed(
    db: Database, link: Row, secret: bytes, client: httpx.Client, public_url: str, now: datetime
) -> str:
    """One connection's channel renewed (or enabled) if due, its new expiry stored: what
    became of it."""
    expires = _confirmed(link)
    channel = f"channel {PLATFORMS[link['platform']].channel_id(link)} until"
    if expires is not None and expires - now > RENEW_BEFORE:
        return f"{channel} {expires.isoformat(timespec='seconds')}{NOT_DUE}"
    lapsed = expires is None or expires <= now
    try:
        expiry = enable(db, link, secret, client, public_url, now, lapsed)
    except (Permanent, Retriable, outbound.UnsafeUrl, store.UnsealError) as error:
        reason = getattr(error, "reason", str(error))
        log.warning("channel of connection %s not renewed: %s", link["id"], reason)
        return f"failed: {reason}"
    return f"{channel} {expiry.isoformat(timespec='seconds')}"


def enable(
    db: Database,
    link: Row,
    secret: bytes,
    client: httpx.Client,
    public_url: str,
    now: datetime,
    lapsed: bool = True,
) -> datetime:
    """Enable (or renew) the connection's channel now, for CHANNEL_LIFETIME, the expiry the
    platform confirms stored and returned (connector/webhook_setup.py calls it when the CRM
    is connected); raises what `_watch` raises."""
    expiry = _watch(db, link, secret, client, public_url, now, lapsed)
    with server.write(db):
        store.save_channel_expiry(db, link["id"], server.iso(expiry))
    return expiry


def _confirmed(link: Row) -> datetime | None:
    """The expiry Zoho last confirmed for the connection's channel; None before the first."""
    stored = link["zoho_channel_expires_at"]
    return datetime.fromisoformat(stored) if stored else None


def _watch(
    db: Database,
    link: Row,
    secret: bytes,
    client: httpx.Client,
    public_url: str,
    now: datetime,
    lapsed: bool,
) -> datetime:
    """Ask the platform to keep the connection's channel until now + CHANNEL_LIFETIME: the
    expiry it confirms."""
    base_url = outbound.check_crm_url(link["crm_base_url"])
    token = store.crm_token(secret, link)
    notify_url = connections.urls(link, public_url)["eventsUrl"] or ""
    channel_token = store.unseal(secret, link["secret_sealed"])
    auth = store.crm_auth(db, secret, link, lambda: now)
    platform = PLATFORMS[link["platform"]]
    adapter = platform.adapter(base_url, token, client, auth)
    return platform.subscribe(
        adapter, link, notify_url, channel_token, now + CHANNEL_LIFETIME, lapsed
    )
