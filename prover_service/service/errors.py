"""Failures the API reports to its caller, each with its HTTP status and a reason in words."""
from __future__ import annotations

import errno


MAX_DETAIL_CHARS = 1000  # a reason is a sentence; whatever a client sent is not echoed at any length


# errno values of a full or failing disk: answered 503 with Retry-After, and a job they interrupt keeps its attempt.
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}


class ServiceError(Exception):
    status_code = 500

    def __init__(self, detail: str):
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[:MAX_DETAIL_CHARS] + "..."
        super().__init__(detail)
        self.detail = detail


class BadRequest(ServiceError):
    status_code = 422


class Forbidden(ServiceError):
    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    status_code = 409


class Unauthorized(ServiceError):
    status_code = 401


class Unavailable(ServiceError):
    status_code = 503


class TooManyRequests(ServiceError):
    """Backpressure: the queue is full; the client should come back after `retry_after` seconds."""

    status_code = 429

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = retry_after


class ConfigurationError(ServiceError):
    """The service's own settings are unusable (reported at start, never to a customer)."""
