"""Log lines: plain text, or with CONTACTDATA_LOG_FORMAT=json one JSON object per line (time,
level, logger, message, the request id), and the request id of the request being answered."""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime

FORMATS = ("text", "json")
REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the request id is the record's own (gunicorn's access log
    sets it) or that of the request this thread is answering."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or REQUEST_ID.get(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


# Libraries that log the personal data they are given (nameparser's HumanName logs each name
# it parses at DEBUG): held at WARNING whatever the level, so no log holds a person's name.
QUIET = ("HumanName",)


def configure(level: str, log_format: str) -> None:
    """Log at `level` to standard error, as text or JSON (`log_format`, one of FORMATS)."""
    if log_format not in FORMATS:
        raise ValueError(f"CONTACTDATA_LOG_FORMAT must be one of {', '.join(FORMATS)}")
    logging.basicConfig(level=level)
    for name in QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    if log_format == "json":
        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonFormatter())
