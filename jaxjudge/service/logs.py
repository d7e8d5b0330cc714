"""Log lines an operator can read and a log pipeline can parse.

Every record of `jaxjudge serve` and `jaxjudge worker` (uvicorn's and Procrastinate's
included) starts with a UTC timestamp and a level, its further lines indented: plain text by
default, one JSON object per line with JAXJUDGE_LOG_FORMAT=json (python-json-logger). Every
record written while a grade is in progress in that thread carries the submission id and the
attempt (`grading()`), so one grep follows a submission through claims, redeliveries and the
store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_grade: ContextVar[tuple[str, int] | None] = ContextVar("jaxjudge_grade", default=None)

PLAIN_FORMAT = "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s%(grade)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"
JSON_FIELDS = "%(levelname)s %(name)s %(message)s"  # and "time": ISO 8601, UTC, milliseconds


@contextmanager
def grading(submission_id: str, attempt: int) -> Iterator[None]:
    """Tag every log line of this thread (or task) with the grade in progress."""
    token = _grade.set((submission_id, attempt))
    try:
        yield
    finally:
        _grade.reset(token)


class _GradeFields(logging.Filter):
    """Adds `submission` and `attempt` (JSON fields) and `grade` (the plain suffix)."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = _grade.get()
        if current is not None:
            record.submission, record.attempt = current
            record.grade = f" [submission {current[0]} attempt {current[1]}]"
        return True


class _PlainFormatter(logging.Formatter):
    """The plain format, with every line after a record's first indented (a traceback, a
    driver's multi-line message): a line that starts with a timestamp starts a record, which
    is the multiline rule of every log shipper."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\n", "\n    ")


def _formatter(fmt: str) -> logging.Formatter:
    formatter: logging.Formatter
    if fmt == "json":
        from pythonjsonlogger.json import JsonFormatter

        formatter = JsonFormatter(
            JSON_FIELDS,
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",
            reserved_attrs=[*_RESERVED, "grade"],
        )
    else:
        formatter = _PlainFormatter(PLAIN_FORMAT, DATE_FORMAT, defaults={"grade": ""})
    formatter.converter = time.gmtime
    return formatter


# The LogRecord attributes that are not "extra" fields (python-json-logger's own list).
_RESERVED = [*logging.makeLogRecord({}).__dict__, "message", "asctime", "taskName"]


def configure_logging(level: str, fmt: str = "plain") -> None:
    """One stderr handler on the root logger, for every library's loggers: uvicorn's
    (started with `log_config=None`) and Procrastinate's propagate to it."""
    handler = logging.StreamHandler()
    handler.addFilter(_GradeFields())
    handler.setFormatter(_formatter(fmt))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers = []
        logging.getLogger(name).propagate = True
