"""Running the app under gunicorn, the production server: sync workers, or with `threads`
above 1 gthread workers, each serving that many requests at once."""

from __future__ import annotations

import importlib
import logging
import re
import tempfile
from collections.abc import Mapping
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from server import logs, metrics
from server.storage import pg

DEFAULT_FACTORY = "server.http.app:create_app"
_QUERY = re.compile(r"\?[^\s'\"]*")  # a URL's query, up to white space or a quote


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    """gunicorn configured from a dict, loading the app in each worker from `factory`
    ("module:function"; the connector serves its own app, which includes the service)."""

    def __init__(
        self, settings: dict[str, Any], options: dict[str, Any], factory: str = DEFAULT_FACTORY
    ) -> None:
        self._settings = settings
        self._options = options
        self._factory = factory
        super().__init__()

    def load_config(self) -> None:
        for name, value in self._options.items():
            self.cfg.set(name, value)
        pg.size_pools(self.cfg.threads)  # in the arbiter, before the workers fork

    def load(self) -> Flask:
        module, name = self._factory.split(":")
        create_app = getattr(importlib.import_module(module), name)
        app: Flask = create_app(self._settings)
        warm_up()
        return app


def warm_up() -> None:
    """Build the lookup tables requests use now, in each worker as it starts, so that no
    caller's first request waits for them (places: 0.3 s loaded from disk, 4 s built)."""
    from server import normalize, places

    places.warm_up()
    normalize.registrable_domain("example.com")


class MaskingLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger with every query value left out, of the access log's request line and
    of the error log's messages (a failed request's URI, an unreadable request line):
    connections take their secret in the URL (Salesforce `?key=`, Dynamics `?code=`), and a
    log is read by more people, and kept longer, than the secrets it would hold."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.error_log.addFilter(_mask_queries)

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> Any:
        atoms = super().atoms(resp, req, environ, request_time)
        target = masked_target(environ["RAW_URI"])
        atoms["r"] = f"{environ['REQUEST_METHOD']} {target} {environ['SERVER_PROTOCOL']}"
        atoms["q"] = target.partition("?")[2]
        return atoms


class JsonMaskingLogger(MaskingLogger):
    """MaskingLogger writing one JSON object per line (CONTACTDATA_LOG_FORMAT=json); an access
    line carries the request id the answer's X-Request-Id header gave."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.access_log.addFilter(_request_id_of_access)
        for handler in (*self.error_log.handlers, *self.access_log.handlers):
            handler.setFormatter(logs.JsonFormatter())


def _request_id_of_access(record: logging.LogRecord) -> bool:
    """Give an access log record the request id among its atoms."""
    atoms = record.args
    if isinstance(atoms, Mapping):
        record.request_id = atoms.get("{x-request-id}o") or None
    return True


def _mask_queries(record: logging.LogRecord) -> bool:
    """Rewrite a log record's message with the query of every URL in it masked."""
    message = record.getMessage()
    if "?" in message:
        record.msg = _QUERY.sub(lambda found: masked_target(found.group()), message)
        record.args = ()
    return True


def masked_target(target: str) -> str:
    """The request target with each query parameter's value replaced by `***`; names are
    kept, but not a parameter without a value (`?s3cret`), which may be a secret itself."""
    path, mark, query = target.partition("?")
    items = (item.partition("=") for item in query.split("&") if item)
    return path + mark + "&".join(f"{name}=***" if equals else "***" for name, equals, _ in items)


def gunicorn_options(host: str, port: int, workers: int, threads: int = 1) -> dict[str, Any]:
    """The server's settings: `workers` processes of `threads` threads each.

    Threads (gunicorn's gthread workers) suit PostgreSQL, where a request waits on round trips
    to the database: a few processes keep many requests in flight, each process's memory
    warm in the CPU's caches, where as many sync workers would take turns on the cores
    (bench/cluster.py). Each thread has its own connection (server/storage/db.py `database`).

    `header_map = dangerous`: real clients send the key as `API_KEY` and `Admin_Api_Key`
    (contract §1), which gunicorn otherwise drops. The cost is that `Api-Key` and `API_KEY`
    land in the same environ name; a request carrying both gets them joined with a comma,
    which no key value contains, so it is refused rather than confused.
    """
    return {
        "bind": f"{host}:{port}",
        "workers": workers,
        "worker_class": "gthread" if threads > 1 else "sync",
        "threads": threads,
        "header_map": "dangerous",
        "timeout": 30,
        "graceful_timeout": 10,
        # One shared socket in $HOME would make two servers on one machine fight over it.
        "control_socket_disable": True,
        "accesslog": "-",
        "logger_class": MaskingLogger,
        "errorlog": "-",
        "access_log_format": '%(h)s "%(r)s" %(s)s %(b)s %(M)sms id=%({x-request-id}o)s',
        "worker_exit": _worker_exit,
    }


def serve(
    settings: dict[str, Any],
    host: str,
    port: int,
    workers: int,
    factory: str = DEFAULT_FACTORY,
    threads: int = 1,
) -> None:
    """Serve the app `factory` makes until stopped; with metrics on, the workers count in a
    fresh directory of files that a scrape of any worker sums, removed at the end."""
    options = gunicorn_options(host, port, workers, threads)
    if settings.get("LOG_FORMAT") == "json":
        options["logger_class"] = JsonMaskingLogger
    if not (settings.get("METRICS_TOKEN") or settings.get("METRICS_BIND")):
        _Gunicorn(settings, options, factory).run()
        return
    with tempfile.TemporaryDirectory(prefix="contactdata-metrics-") as counts:
        metrics.use_multiprocess_dir(counts)
        _Gunicorn(settings, {**options, **metrics_options(settings, options)}, factory).run()


def metrics_options(settings: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """gunicorn's settings for metrics: the metrics address (if any) beside the service's, and
    the files of a worker that exited kept (its counts) but its live gauges dropped."""
    binds = [options["bind"], *([settings["METRICS_BIND"]] if settings["METRICS_BIND"] else [])]
    return {"bind": binds, "child_exit": _child_exit}


def _worker_exit(_arbiter: Any, _worker: Any) -> None:
    """In a worker as it exits: close its PostgreSQL connections (a Terminate message each,
    not a dropped socket)."""
    pg.close_pools()


def _child_exit(_arbiter: Any, worker: Any) -> None:
    metrics.process_exited(worker.pid)
