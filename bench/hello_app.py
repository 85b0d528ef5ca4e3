"""The service app plus two baseline routes, served as `contactdata serve` serves, for
bench/enrich.py: `/hello` answers a tiny JSON object; `/floor` does what every enrich call
must besides matching (authenticate, count the rate limits, parse the body, one write
transaction, answer a No Match result of every field), so its throughput is the most
enrich could reach with a matcher that took no time.

    .venv/bin/python bench/hello_app.py --db var/bench-full.db --port 8099 --workers 2
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from flask import Flask, Response, jsonify

from server import access, app, config, db, enrich, serve, wire


def create_app(settings: dict[str, Any]) -> Flask:
    """The service's app with `GET/POST /hello` answering a tiny JSON object."""
    service = app.create_app(settings)

    @service.route("/hello", methods=["GET", "POST"])
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    @service.post("/floor")
    def floor() -> Response:
        access.admit(access.key_from_headers("apikey"))
        given = enrich.parse_input(wire.json_body())
        with db.write(access.get_db()) as database:
            database.execute("CREATE TABLE IF NOT EXISTS bench_floor (id TEXT PRIMARY KEY)")
            database.execute("INSERT INTO bench_floor VALUES (?)", [str(uuid.uuid4())])
        return jsonify(enrich.build_result(given, None, None, str(uuid.uuid4())))

    return service


class _HelloGunicorn(serve._Gunicorn):
    """server/serve.py's gunicorn, loading the app with the hello route."""

    def load(self) -> Flask:
        return create_app(self._settings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    settings = config.load({"DB": options.db})
    _HelloGunicorn(
        settings, serve.gunicorn_options(options.host, options.port, options.workers)
    ).run()


if __name__ == "__main__":
    main()
