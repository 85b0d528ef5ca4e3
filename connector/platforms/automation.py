"""The automation platforms: they call the enrich URL and use its answer, and nothing is
written back to them. Marketo's webhooks send the connection's secret as a bearer token and
write every field of the answer (so empty ones are left out); Zapier, Make and n8n sign with
Standard Webhooks (or send the secret as a bearer token), may send up to 100 records in one
request as a JSON array (each answered on its own, so one bad record costs the others nothing),
and read the transaction, its credits and their record's id in the answer's body. Each one's
installation steps, naming the keys a body sends (`{keys}`) and a body to paste (`{example}`,
a contact of this database)."""

from __future__ import annotations

from connector.platforms.base import BearerToken, Platform, StandardWebhooks

BATCH = 100  # records one request may carry as a JSON array
BEARER = "Bearer <the connection's secret, ending in {hint}>"
KEYS = (
    "the record's fields under these keys: {keys} (the enrich API's own names, such as "
    "contactEmail and companyName, work too)"
)
EXAMPLE = "This body, pasted as it is, enriches a contact of this database: {example}"
ANSWER = (
    "The answer is the enriched fields (keys as the mapping's output names them) with "
    "recordId, smarteTransactionId and creditsDeducted, for the next steps."
)
BATCHED = (
    "The answer to an array is an array in the same order, one entry per record: status, "
    "recordId, smarteTransactionId, creditsDeducted, and data (the enriched fields) or error "
    "(a record without an identifier is an error entry, charged nothing; the others are "
    "enriched all the same)."
)
RETRIES = (
    "Retries: send an Idempotency-Key header whose value is the same whenever the same request "
    "is sent again, such as the record's id (for an array, one naming its records), never a "
    "run's id: a copy within 24 hours gets the first answer, with Idempotent-Replayed: true, "
    "and is charged nothing. A sender that can sign with Standard Webhooks (webhook-id, "
    "webhook-timestamp, webhook-signature) with the secret may do so instead of the "
    "Authorization header: a copy with the same webhook-id is answered once."
)

PLATFORMS: tuple[Platform, ...] = (
    BearerToken(
        name="marketo",
        title="Marketo",
        omit_empty=True,  # Response Mappings write all
        vendor_names=True,
        install=(
            "In Marketo, open Admin > Webhooks and choose New Webhook: URL {enrich}, Request "
            "Type POST, Request Token Encoding JSON, and as Template a JSON object with "
            + KEYS
            + ", lead tokens for the values, as mappings/marketo.yaml's header shows. "
            + EXAMPLE,
            "Set Custom Header: Authorization, " + BEARER + ".",
            "Edit Response Mappings: the answer's keys (jobTitle, company, ...) to lead "
            "fields; call the webhook from a trigger campaign's flow (Call Webhook).",
        ),
    ),
    StandardWebhooks(
        name="zapier",
        title="Zapier",
        vendor_names=True,
        batch_limit=BATCH,
        meta_in_body=True,
        install=(
            "In the Zap, add a Webhooks by Zapier action, event POST: URL {enrich}, Payload "
            "Type json, and as Data one row per field, " + KEYS + ". " + EXAMPLE,
            "Headers: Authorization, " + BEARER + ". " + ANSWER,
            "To enrich several records (line items) in one request, use the Custom Request "
            "event instead: Method POST, the same URL and header, Data a JSON array of up to "
            f"{BATCH} objects like the example. " + BATCHED,
            RETRIES,
        ),
    ),
    StandardWebhooks(
        name="make",
        title="Make",
        vendor_names=True,
        batch_limit=BATCH,
        meta_in_body=True,
        install=(
            'In the scenario, add an HTTP "Make a request" module: URL {enrich}, Method POST, '
            "a header Authorization, " + BEARER + ", Body type Raw, Content type JSON "
            "(application/json), Parse response Yes, and as Request content a JSON object with "
            + KEYS
            + ". "
            + EXAMPLE,
            ANSWER + " A record sent alone without an identifier answers 400: give the "
            "module an error handler (Ignore or Resume) so the scenario goes on.",
            "To enrich many records in one request: aggregate up to "
            f"{BATCH} bundles into a JSON array (JSON > Aggregate to JSON) and send it as "
            "Request content; split the answer with an Iterator. " + BATCHED,
            RETRIES,
        ),
    ),
    StandardWebhooks(
        name="n8n",
        title="n8n",
        vendor_names=True,
        batch_limit=BATCH,
        meta_in_body=True,
        install=(
            "In the workflow, add an HTTP Request node: Method POST, URL {enrich}; Send Headers "
            "on, Specify Headers Using Fields Below, Name Authorization, Value "
            + BEARER
            + "; Send Body on, Body Content Type JSON, Specify Body Using JSON, and as JSON an "
            "object with "
            + KEYS
            + ". "
            + EXAMPLE
            + " To send each item's own values, switch JSON to Expression and write them in "
            'place of the example\'s, as "email": "{{{{ $json.email }}}}".',
            ANSWER + " A record sent alone without an identifier answers 400: set the node's "
            "Settings > On Error to Continue (using error output), so the other items go on and "
            "the refused one comes out of the error output with its error.",
            "To enrich all the input items in one request, turn the node's Settings > Execute "
            "Once on and set JSON, as an Expression, to {{{{ $input.all().map(item => item.json) "
            "}}}} (items with the keys above, up to "
            + f"{BATCH}; a Loop Over Items node with Batch Size {BATCH} for more). "
            "With Options > Response > Include Response Headers and Status off, n8n makes an "
            "item of each entry of the answer, its enriched fields under data. " + BATCHED,
            RETRIES + " In n8n: a header Idempotency-Key, value {{{{ $json.record_id }}}}.",
        ),
    ),
)
