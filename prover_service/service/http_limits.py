"""Bounds on what one HTTP client can hold: time to send a request, and connections open at once.

uvicorn closes an idle keep-alive connection, but a client that opens a connection and then sends its
request a byte at a time (headers or body) would hold it, and a worker's attention, for as long as it
likes. `bounded_protocol` gives uvicorn's HTTP/1.1 protocol one deadline per request: from the moment the
connection opens (or the previous response ends) the whole request, headers and body, must arrive within
`read_timeout_seconds`; otherwise the client is answered 408 Request Timeout, if nothing was answered yet,
and the connection is closed. uvicorn's own `limit_concurrency` (`max_connections`) answers 503 to a
request arriving while that many connections are open.

Behind a reverse proxy (as a bank deploys it: nginx or a cloud load balancer terminating TLS), set the
proxy's own client timeouts (nginx `client_header_timeout`, `client_body_timeout`, `limit_conn`) at or
below these, so that slow clients are cut off at the edge; these bounds still hold for the proxy's
connections and for anyone who reaches the service directly.
"""
from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

TIMEOUT_BODY = b"the request was not received in time\n"
TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
                    b"content-length: " + str(len(TIMEOUT_BODY)).encode() + b"\r\n\r\n" + TIMEOUT_BODY)


class BoundedH11Protocol(H11Protocol):
    """H11Protocol with a deadline for each request (see the module docstring); `read_timeout` is set by
    `bounded_protocol`."""

    read_timeout: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._read_deadline: asyncio.TimerHandle | None = None
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._disarm()  # the whole request is in: the deadline is met

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets a deadline of its own

    def _arm(self) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(self.read_timeout, self._too_slow)

    def _disarm(self) -> None:
        deadline = getattr(self, "_read_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._read_deadline = None

    def _too_slow(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing():
            return
        started = self.conn.their_state is not h11.IDLE or bool(self.conn.trailing_data[0])
        answered = self.cycle is not None and self.cycle.response_started
        if started and not answered:
            # Written as bytes, not through h11: it cannot answer a request whose headers never came.
            self.transport.write(TIMEOUT_RESPONSE)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the application stops waiting for a body that will not come
            self.cycle.message_event.set()
        self.transport.close()


def bounded_protocol(read_timeout: float) -> type[H11Protocol]:
    """uvicorn's `http=` protocol class with this deadline per request."""
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"read_timeout": float(read_timeout)})
