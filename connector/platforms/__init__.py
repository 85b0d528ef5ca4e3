"""The platforms by name: a plain dict of their declarations (connector/platforms/base.py), one
module per platform saying everything about it, and `adapter_for` to build a CRM's adapter
over the caller's HTTP client."""

from __future__ import annotations

import httpx

from connector.adapters.base import Adapter, Permanent
from connector.platforms import automation, dynamics, hubspot, pipedrive, salesforce, zoho
from connector.platforms.base import Platform

PLATFORMS: dict[str, Platform] = {
    platform.name: platform
    for platform in (
        hubspot.PLATFORM,
        salesforce.PLATFORM,
        pipedrive.PLATFORM,
        zoho.PLATFORM,
        dynamics.PLATFORM,
        *automation.PLATFORMS,
    )
}


def adapter_for(
    platform: str,
    base_url: str,
    token: str,
    client: httpx.Client,
    auth: httpx.Auth | None = None,
) -> Adapter:
    """The adapter for `platform`, calling `base_url` with `token` over `client` (or with the
    token `auth` renews); Permanent for a platform nothing is written back to."""
    declared = PLATFORMS.get(platform)
    if declared is None or not declared.crm:
        crms = ", ".join(name for name, p in PLATFORMS.items() if p.crm)
        raise Permanent(f"no CRM adapter for {platform!r}: one of {crms}")
    adapter = declared.adapter(base_url, token, client)
    adapter.auth = auth
    return adapter
