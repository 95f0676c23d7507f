"""Failures the API reports to its caller, each with its HTTP status and a reason in words."""
from __future__ import annotations

import errno


MAX_DETAIL_CHARS = 1000  # a reason is a sentence; whatever a client sent is not echoed at any length


# errno values of a full or failing disk: answered 503 with Retry-After, and a job they interrupt keeps its attempt.
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}


class ServiceError(Exception):
    """A failure answered with `status_code` and `{"detail": reason}`; with `retry_after` (seconds) also a
    Retry-After header. `description` is what the API description says of the status."""

    status_code = 500
    description = "internal error"
    retry_after: int | None = None

    def __init__(self, detail: str):
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[:MAX_DETAIL_CHARS] + "..."
        super().__init__(detail)
        self.detail = detail


class MalformedBody(ServiceError):
    """A request body that cannot be read as JSON text at all (before any field is looked at)."""

    status_code = 400
    description = "the request body is not UTF-8 text, or is nested too deeply"


class UnknownOption(ServiceError):
    """A request names an option the service does not offer (a radius mode): the reason lists those it does."""

    status_code = 400
    description = "the request names an option the service does not offer; the reason lists those it does"


class Unauthorized(ServiceError):
    status_code = 401
    description = "a key is missing or wrong"


class Forbidden(ServiceError):
    status_code = 403
    description = "refused whatever the key"


class NotFound(ServiceError):
    status_code = 404
    description = "no such resource (the reason names it)"


class Conflict(ServiceError):
    status_code = 409
    description = "the request conflicts with what the service holds"


class TooLarge(ServiceError):
    """Answered by `limits.BodySizeLimit` before the body is read; here for the API description."""

    status_code = 413
    description = "the request body is larger than the service accepts (FAIRPROOF_MAX_BODY_BYTES)"


class BadRequest(ServiceError):
    status_code = 422
    description = "the request is refused: a value does not fit the description, or the reason says why not"


class TooManyRequests(ServiceError):
    """Backpressure: the queue is full; the client should come back after `retry_after` seconds."""

    status_code = 429
    description = "too many requests waiting; come back after Retry-After seconds"

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = retry_after


# Outages (database down, disk full, a model being republished) are answered 503 with this Retry-After.
OUTAGE_RETRY_SECONDS = 5


class Unavailable(ServiceError):
    """Briefly unavailable (a database or disk outage, a model being republished): retry after `retry_after`."""

    status_code = 503
    description = "briefly unavailable (database, storage or model); retry after Retry-After seconds"

    def __init__(self, detail: str, retry_after: int = OUTAGE_RETRY_SECONDS):
        super().__init__(detail)
        self.retry_after = retry_after


class ConfigurationError(ServiceError):
    """The service's own settings are unusable (reported at start, never to a customer)."""


# ------------------------------------------------------------------ outages versus bad input
def _chain(exc: BaseException):
    """The exception and its causes (a driver's error wrapped by SQLAlchemy or procrastinate)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_outage(exc: BaseException) -> bool:
    """The database or the disk is unavailable (not the request, not the job): a 503 with Retry-After to a
    client, a retry after a pause to a worker. Connection and operational errors (server gone, refused
    connection, pool timeout, disk full, too many connections, shutdown in progress) are outages; data
    errors, integrity errors and programming errors are not."""
    import sqlite3

    import psycopg
    from sqlalchemy import exc as sa

    for e in _chain(exc):
        if isinstance(e, sa.DBAPIError):
            if e.connection_invalidated:
                return True
            if isinstance(e, (sa.OperationalError, sa.InterfaceError)):
                return True
            if e.orig is not None and e.orig is not e and is_outage(e.orig):
                return True
            return False
        if isinstance(e, (sa.TimeoutError, sa.DisconnectionError)):
            return True
        if isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError, sqlite3.OperationalError,
                          sqlite3.InterfaceError)):
            return True
        if isinstance(e, OSError) and e.errno in STORAGE_ERRNOS:
            return True
        if isinstance(e, (psycopg.Error, sqlite3.Error)):
            return False
    return False


def outage_reason(exc: BaseException) -> str:
    """One line naming an outage: the innermost driver error's class and first line."""
    inner = exc
    for e in _chain(exc):
        inner = e
    text = str(inner).strip().splitlines()
    return f"{type(inner).__name__}: {text[0][:200]}" if text else type(inner).__name__
