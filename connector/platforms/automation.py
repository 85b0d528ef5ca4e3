"""The automation platforms: they call the enrich URL and use its answer, and nothing is
written back to them. Marketo's webhooks send the connection's secret as a bearer token and
write every field of the answer (so empty ones are left out); Zapier, Make and n8n sign with
Standard Webhooks (or send the secret as a bearer token)."""

from __future__ import annotations

from connector.platforms.base import BearerToken, Platform, StandardWebhooks

PLATFORMS: tuple[Platform, ...] = (
    BearerToken(name="marketo", omit_empty=True),  # Response Mappings write all
    StandardWebhooks(name="zapier"),
    StandardWebhooks(name="make"),
    StandardWebhooks(name="n8n"),
)
