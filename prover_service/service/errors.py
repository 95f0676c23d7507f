"""Failures the API reports to its caller, each with its HTTP status and a reason in words."""
from __future__ import annotations


class ServiceError(Exception):
    status_code = 500

    def __init__(self, detail: str):
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


class ConfigurationError(ServiceError):
    """The service's own settings are unusable (reported at start, never to a customer)."""
