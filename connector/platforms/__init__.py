"""The platforms by name: a plain dict of their declarations (connector/platforms/base.py),
one module per platform saying everything about it."""

from __future__ import annotations

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
