"""CRM adapters by platform: a plain dict of the adapter classes, and `adapter_for` to build
one over the caller's HTTP client."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from connector.adapters.base import Adapter, Permanent
from connector.adapters.dynamics import Dynamics
from connector.adapters.hubspot import HubSpot
from connector.adapters.pipedrive import Pipedrive
from connector.adapters.salesforce import Salesforce
from connector.adapters.zoho import Zoho

ADAPTERS: dict[str, Callable[[str, str, httpx.Client], Adapter]] = {
    "hubspot": HubSpot,
    "salesforce": Salesforce,
    "pipedrive": Pipedrive,
    "zoho": Zoho,
    "dynamics": Dynamics,
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
    if platform not in ADAPTERS:
        raise Permanent(f"no CRM adapter for {platform!r}: one of {', '.join(ADAPTERS)}")
    adapter = ADAPTERS[platform](base_url, token, client)
    adapter.auth = auth
    return adapter
