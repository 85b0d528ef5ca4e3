"""connector/answers.py: an enrich URL's answer shaped for its platform, on literal data."""

from __future__ import annotations

import json

from connector import answers, mappings
from connector.platforms import PLATFORMS
from server import InvalidParameter, ServiceError
from server.enrich import Failure, Outcome
from server.errors import MissingIdentifier

N8N = mappings.load_current(mappings.DIRECTORY / "n8n.yaml")


def test_a_copy_says_it_cost_nothing_in_its_body_too() -> None:
    single = json.dumps({"email": "a@x.com", "creditsDeducted": 1})
    batch = json.dumps([{"status": 200, "creditsDeducted": 1}, {"status": 400, "error": {}}])
    assert json.loads(answers.charged_nothing(single)) == {"email": "a@x.com", "creditsDeducted": 0}
    assert json.loads(answers.charged_nothing(batch)) == [
        {"status": 200, "creditsDeducted": 0}, {"status": 400, "error": {}}
    ]  # fmt: skip
    assert answers.charged_nothing("not json") == "not json"


def test_a_batch_entry_carries_its_record_transaction_and_credits() -> None:
    delivered = Outcome("t-1", {"recordStatus": "Active", "conEmail": "A@X.COM"}, 1)
    entry = answers.entry(PLATFORMS["n8n"], N8N, {"record_id": "r1"}, delivered)
    own = {k: v for k, v in entry.items() if k != "data"}
    assert own == {"status": 200, "recordId": "r1", "smarteTransactionId": "t-1",
                   "creditsDeducted": 1}  # fmt: skip
    assert entry["data"]["record_status"] == "Active" and entry["data"]["email"] == "a@x.com"
    refused = answers.entry(PLATFORMS["n8n"], N8N, "r2", Failure("t-2", InvalidParameter("no")))
    assert refused == {
        "status": 400, "recordId": None, "smarteTransactionId": "t-2", "creditsDeducted": 0,
        "error": {"code": "invalid_parameter", "message": "no", "status": 400},
    }  # fmt: skip


def test_only_a_missing_identifier_is_told_again_and_only_to_senders_of_fields() -> None:
    missing = MissingIdentifier("contactEmail, companyName, ...")
    told = answers.in_senders_words(PLATFORMS["n8n"], N8N, missing)
    assert told.code == "missing_identifier" and told.message.startswith("At least one")
    assert "send email, company, website" in told.message
    other: ServiceError = InvalidParameter("conEmail must be a string, not a number.")
    assert answers.in_senders_words(PLATFORMS["n8n"], N8N, other) is other
    assert answers.in_senders_words(PLATFORMS["hubspot"], N8N, missing) is missing
