"""Request size limit as plain ASGI middleware: refuse early, never buffer an oversized body."""
from __future__ import annotations

import json
import re
from typing import Sequence

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(HTTPException):
    """An HTTPException, so that a framework reading the body mid-request renders it as 413."""

    def __init__(self, max_bytes: int):
        super().__init__(413, f"request body larger than {max_bytes} bytes")


class BodySizeLimit:
    """At most `max_bytes` a request body; a request matching one of `larger` ((method, path pattern,
    limit): an endpoint whose documents are bigger by nature) gets that limit instead."""

    def __init__(self, app: ASGIApp, max_bytes: int, larger: Sequence[tuple[str, re.Pattern[str], int]] = ()):
        self.app = app
        self.max_bytes = max_bytes
        self.larger = tuple(larger)

    def limit(self, scope: Scope) -> int:
        for method, path, max_bytes in self.larger:
            if scope.get("method") == method and path.fullmatch(scope.get("path", "")):
                return max_bytes
        return self.max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self.limit(scope)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > max_bytes
            except ValueError:
                await _reply(send, 400, "malformed Content-Length header")
                return
            if too_big:
                await _reply(send, 413, f"request body larger than {max_bytes} bytes")
                return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > max_bytes:
                    raise BodyTooLarge(max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _reply(send, 413, f"request body larger than {max_bytes} bytes")


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class ClientRateLimit:
    """Per-client token buckets: `per_minute` requests a minute, bursts up to that many.

    Keyed by the peer address the server sees, so behind a reverse proxy every customer is the
    proxy: there, limit per client at the proxy and set FAIRPROOF_RATE_LIMIT_PER_MINUTE=0. Buckets
    of clients idle for a minute are forgotten, so memory follows the active clients only.
    """

    def __init__(self, per_minute: int, clock=None):
        import threading
        import time

        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0  # tokens a second
        self._clock = clock or time.monotonic
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, client: str) -> float | None:
        """None if the request may go ahead, else the seconds until it may."""
        now = self._clock()
        with self._lock:
            if len(self._buckets) > 10_000:
                self._forget_idle(now)
            tokens, at = self._buckets.get(client, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                return None
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        idle = [c for c, (_, at) in self._buckets.items() if now - at > 60.0]
        for client in idle:
            del self._buckets[client]
