"""The service app plus baseline routes, served as `contactdata serve` serves, for the
benchmarks: `/hello` answers a tiny JSON object; `/floor` does what every enrich call must
besides matching (authenticate, count the rate limits, parse the body, one write
transaction, answer a No Match result of every field), so its throughput is the most
enrich could reach with a matcher that took no time; `/discover-floor` likewise does what a
discover call must besides finding the people (authenticate, count the rate limits, parse
and check the body, show the people of a page and send them), showing the same people (read
once per process) every time.

    .venv/bin/python bench/hello_app.py --db var/bench-full.db --port 8099 --workers 2
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from flask import Flask, Response, jsonify

from server import auth, config, discover, enrich
from server.http import access, app, body, serve
from server.storage import db, store


def create_app(settings: dict[str, Any]) -> Flask:
    """The service's app with `GET/POST /hello` answering a tiny JSON object."""
    service = app.create_app(settings)

    @service.route("/hello", methods=["GET", "POST"])
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    @service.post("/floor")
    def floor() -> Response:
        access.admit(access.key_from_headers("apikey"))
        given = enrich.parse_input(body.json_body())
        with db.write(access.get_db()) as database:
            database.execute("CREATE TABLE IF NOT EXISTS bench_floor (id TEXT PRIMARY KEY)")
            database.execute("INSERT INTO bench_floor VALUES (?)", [str(uuid.uuid4())])
        return jsonify(enrich.build_result(given, None, None, str(uuid.uuid4())))

    page: list[dict[str, Any]] = []  # the people of the first page asked for, per process

    @service.post("/discover-floor")
    def discover_floor() -> dict[str, Any]:
        caller = access.admit(access.key_from_headers("Api-Key"), discover=True)
        auth.require_active_organization(caller)
        request = body.parse(discover.DiscoverRequest)
        if not page:
            page.extend(_people(access.get_db(), request))
        people = [discover.contact_fields(row, dials=True, miles=row["miles"]) for row in page]
        data = {"company_guid": request.company_guid, "total_count": len(people)}
        return {"message": "Contacts fetched successfully", "data": {**data, "contacts": people}}

    return service


def _people(database: db.Database, request: discover.DiscoverRequest) -> list[dict[str, Any]]:
    """The people of the request's page, with their distances, as discover reads them."""
    wanted = discover.plan_of(database, request).wanted
    offset = (request.page_number - 1) * request.page_size
    _, found = store.people_page(database, wanted, offset, request.page_size)
    rows = store.people_details(database, wanted.company_guid, [guid for guid, _ in found])
    by_guid = {row["contact_guid"]: row for row in rows}
    return [{**by_guid[guid], "miles": miles} for guid, miles in found]


class _HelloGunicorn(serve._Gunicorn):
    """server/http/serve.py's gunicorn, loading the app with the hello route."""

    def load(self) -> Flask:
        service = create_app(self._settings)
        serve.warm_up()
        return service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    settings = config.load({"DB": options.db})
    _HelloGunicorn(
        settings,
        serve.gunicorn_options(options.host, options.port, options.workers, options.threads),
    ).run()


if __name__ == "__main__":
    main()
