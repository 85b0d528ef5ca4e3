"""The automation platforms: they call the enrich URL and use its answer, and nothing is
written back to them. Marketo's webhooks send the connection's secret as a bearer token and
write every field of the answer (so empty ones are left out); Zapier, Make and n8n sign with
Standard Webhooks (or send the secret as a bearer token). Each one's installation steps."""

from __future__ import annotations

from connector.platforms.base import BearerToken, Platform, StandardWebhooks

BEARER_HEADER = "Authorization: Bearer <the connection's secret, ending in {hint}>"
SIGNED = (
    "The answer's fields (keys as the mapping's output names them) are there for the next "
    "steps. A sender that can sign with Standard Webhooks (webhook-id, webhook-timestamp, "
    "webhook-signature) with the secret may do so instead of the header."
)

PLATFORMS: tuple[Platform, ...] = (
    BearerToken(
        name="marketo",
        omit_empty=True,  # Response Mappings write all
        install=(
            "In Marketo, open Admin > Webhooks and choose New Webhook: URL {enrich}, Request "
            "Type POST, Request Token Encoding JSON, the template from mappings/marketo.yaml's "
            "header.",
            "Set Custom Header: " + BEARER_HEADER + ".",
            "Edit Response Mappings: the answer's keys (jobTitle, company, ...) to lead "
            "fields; call the webhook from a trigger campaign's flow (Call Webhook).",
        ),
    ),
    StandardWebhooks(
        name="zapier",
        install=(
            "In the Zap, add a Webhooks by Zapier action, event POST: URL {enrich}, Payload "
            "Type json, Data the record's fields (keys as the mapping's input names them).",
            "Headers: " + BEARER_HEADER + ".",
            SIGNED,
        ),
    ),
    StandardWebhooks(
        name="make",
        install=(
            'In the scenario, add an HTTP "Make a request" module: URL {enrich}, Method POST, '
            "Body type Raw, Content type JSON, the record's fields (keys as the mapping's input "
            "names them), Parse response on.",
            "Headers: " + BEARER_HEADER + ".",
            SIGNED,
        ),
    ),
    StandardWebhooks(
        name="n8n",
        install=(
            "In the workflow, add an HTTP Request node: Method POST, URL {enrich}, Send Body "
            "JSON with the record's fields (keys as the mapping's input names them).",
            "Send Headers: " + BEARER_HEADER + ".",
            SIGNED,
        ),
    ),
)
