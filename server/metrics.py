"""The Prometheus metrics of every process (the service's gunicorn workers, the connector's
worker): their definitions, the thin functions that count, and the exposition.

Labels hold only impersonal values from closed sets (a URL rule, a method the app routes, a
status, a grade, a tier, a platform's name): never an organization, a key, an e-mail, a raw
path or a method a client made up, so no request can add series without end. Under gunicorn the
workers write their counts to files in PROMETHEUS_MULTIPROC_DIR (`use_multiprocess_dir`, a
fresh directory per start) and a scrape of any worker sums them; a lone process (`contactdata
worker`) counts in memory and serves its own exposition (`serve_exposition`).
"""

from __future__ import annotations

import hmac
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, values
from prometheus_client import multiprocess as multiprocess_files
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
UNMATCHED = "unmatched"  # the route label of a request no URL rule matched
OTHER = "other"  # the method label of a method the app routes nowhere
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
STATUSES = frozenset(status.value for status in HTTPStatus)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


@dataclass(frozen=True)
class Definitions:
    """Every metric a process counts, on `registry` (read directly outside multiprocess mode)."""

    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    enrich_results: Counter
    credits: Counter
    rate_limit_refusals: Counter
    crm_requests: Counter
    token_renewals: Counter
    dead_letters: Counter


@cache
def definitions() -> Definitions:
    """The process's metrics, made at first use: after `use_multiprocess_dir`, if it is called."""
    registry = CollectorRegistry(auto_describe=True)

    def counter(name: str, doc: str, *labels: str) -> Counter:
        return Counter(f"contactdata_{name}", doc, labels, registry=registry)

    return Definitions(
        registry=registry,
        requests=counter("http_requests", "HTTP requests answered.", "route", "method", "status"),
        latency=Histogram(
            "contactdata_http_request_duration_seconds",
            "Seconds from a request's start to its answer.",
            ("route", "method"),
            registry=registry,
            buckets=LATENCY_BUCKETS,
        ),
        enrich_results=counter("enrich_results", "Enrich results.", "grade", "record_status"),
        credits=counter("credits_charged", "Credits charged for enrichments.", "tier"),
        rate_limit_refusals=counter(
            "rate_limit_refusals", "Requests refused with 429, by the limit.", "limit"
        ),
        crm_requests=counter("crm_requests", "Requests to CRMs.", "platform", "outcome"),
        token_renewals=counter("token_renewals", "OAuth access-token renewals.", "outcome"),
        dead_letters=counter("dead_letters", "Events given up on (dead letters)."),
    )


# --- counting (the hooks call these) -----------------------------------------------------------


def request_answered(route: str, method: str, status: int, seconds: float) -> None:
    """An HTTP request answered; `route` is the URL rule (or UNMATCHED), never the raw path,
    and the method and status are counted by `method_label` and `status_label`."""
    defined = definitions()
    method = method_label(method)
    defined.requests.labels(route, method, status_label(status)).inc()
    defined.latency.labels(route, method).observe(seconds)


def method_label(method: str) -> str:
    """The method, when it is one the app routes (METHODS); OTHER for any other."""
    return method if method in METHODS else OTHER


def status_label(status: int) -> str:
    """The status, when HTTP names it ("404"); its class ("4xx") otherwise."""
    return str(status) if status in STATUSES else status_class(status)


def enriched(grade: str, record_status: str, tier: str, credits: int) -> None:
    """One enrich result (grade "" is No Match) and what it cost."""
    defined = definitions()
    defined.enrich_results.labels(grade or "none", record_status).inc()
    if credits:
        defined.credits.labels(tier).inc(credits)


def rate_limited(limit: str) -> None:
    """A request refused by the limit named `limit` (qps, daily, discover)."""
    definitions().rate_limit_refusals.labels(limit).inc()


def crm_called(platform: str, outcome: str) -> None:
    """A request to a CRM and how it ended: "2xx"…"5xx", "timeout" or "error"."""
    definitions().crm_requests.labels(platform, outcome).inc()


def token_renewed(outcome: str) -> None:
    """An access-token renewal: "renewed", "refused" (for good), "failed" or "unsaved"."""
    definitions().token_renewals.labels(outcome).inc()


def dead_letter() -> None:
    """An event given up on."""
    definitions().dead_letters.inc()


def status_class(status: int) -> str:
    """ "2xx" for 200 and the like."""
    return f"{status // 100}xx"


# --- gauges read at scrape time -----------------------------------------------------------------


class CountsCollector(Collector):
    """A gauge by one label whose values `read` returns at each scrape (e.g. events by status)."""

    def __init__(self, name: str, doc: str, label: str, read: Callable[[], Mapping[str, int]]):
        self.name, self.doc, self.label, self.read = name, doc, label, read

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily(self.name, self.doc, labels=[self.label])
        for key, count in sorted(self.read().items()):
            gauge.add_metric([key], count)
        yield gauge


# --- multiprocess mode and the exposition -------------------------------------------------------


def use_multiprocess_dir(path: str) -> None:
    """Count in files under `path` from now on, in this process and those it forks (gunicorn's
    workers). prometheus_client chooses how to count when first imported: choose again."""
    os.environ[MULTIPROC_ENV] = path
    values.ValueClass = values.get_value_class()
    definitions.cache_clear()


def process_exited(pid: int) -> None:
    """gunicorn's child_exit hook: drop the live gauges of a worker that exited."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess_files.mark_process_dead(pid)


def exposition(collectors: Iterable[Collector] = ()) -> tuple[bytes, str]:
    """The text format of every metric (summed over gunicorn's workers in multiprocess mode)
    and of `collectors`, with its content type."""
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get(MULTIPROC_ENV):
        multiprocess_files.MultiProcessCollector(registry)
    else:
        registry.register(definitions().registry)  # type: ignore[arg-type]
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST


def bearer_ok(authorization: str | None, token: str) -> bool:
    """Whether an Authorization header carries `token` as a bearer token (constant time)."""
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


def split_bind(bind: str) -> tuple[str, int]:
    """ "host:port" as (host, port)."""
    host, _, port = bind.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


# --- a lone process's own exposition (the connector's worker) -----------------------------------


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *_: Any) -> None:
        pass


def serve_exposition(bind: str, token: str = "") -> WSGIServer:
    """Serve GET /metrics on `bind` ("host:port") on a thread; with `token`, only to callers
    that send it as a bearer token. Returns the server (shutdown() ends it)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        if token and not bearer_ok(environ.get("HTTP_AUTHORIZATION"), token):
            start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
            return [b"the metrics need the operator's bearer token\n"]
        body, content_type = exposition()
        start_response("200 OK", [("Content-Type", content_type)])
        return [body]

    host, port = split_bind(bind)
    server = make_server(host, port, app, _Server, _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
