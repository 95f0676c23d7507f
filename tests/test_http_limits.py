"""Bounded connections on the real server (`fairproof serve`, uvicorn): a client that trickles its request
is answered 408 and cut off; connections beyond the limit are answered 503; honest clients are served.

The service runs as a child process on loopback with an empty models directory and SQLite: these bounds
are the HTTP layer's, before any model is involved.
"""
from __future__ import annotations

import socket
import time

import httpx
import pytest

from service_fixtures import serve

READ_TIMEOUT = 1.5


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("http-limits")
    (tmp_path / "models").mkdir()
    proc = serve(tmp_path / "models", f"sqlite:///{tmp_path / 'service.sqlite'}", tmp_path / "serve.log",
                 FAIRPROOF_READ_TIMEOUT_SECONDS=str(READ_TIMEOUT), FAIRPROOF_MAX_CONNECTIONS="4").start()
    yield proc
    proc.stop()


def _connect(service) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", service.port), timeout=10)
    return sock


def _read_all(sock: socket.socket, timeout: float = 10.0) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    sock.settimeout(timeout)
    start, data = time.monotonic(), b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data, time.monotonic() - start
        data += chunk


def _read_response(sock: socket.socket) -> bytes:
    """One whole response (headers, then a body of its content-length), however the packets fall."""
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_a_client_trickling_its_headers_is_answered_408_and_cut_off(service):
    sock = _connect(service)
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
    data, waited = _read_all(sock)
    assert data.startswith(b"HTTP/1.1 408") and waited < READ_TIMEOUT + 3
    sock.close()
    # The twin: the whole request at once is served, and so is a second one on the same connection.
    sock = _connect(service)
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _read_response(sock).startswith(b"HTTP/1.1 200")
    time.sleep(READ_TIMEOUT / 2)
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data, _ = _read_all(sock)
    assert data.startswith(b"HTTP/1.1 200")


def test_a_client_trickling_its_body_is_answered_408_and_cut_off(service):
    sock = _connect(service)
    sock.sendall(b"POST /v1/models/m/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"record\"")
    data, waited = _read_all(sock)
    assert data.startswith(b"HTTP/1.1 408") and waited < READ_TIMEOUT + 3
    # The twin: the same body sent whole gets the service's own answer (an unknown model), not a timeout.
    answer = httpx.post(f"{service.url}/v1/models/m/decisions", json={"record": {}}, timeout=10)
    assert answer.status_code == 404


def test_an_idle_connection_never_holds_the_server_past_the_deadline(service):
    sock = _connect(service)  # opens and says nothing
    data, waited = _read_all(sock)
    assert waited < READ_TIMEOUT + 3  # closed (keep-alive or the deadline, whichever first)
    assert data in (b"",) or data.startswith(b"HTTP/1.1 408")


def test_connections_beyond_the_limit_are_answered_503(service):
    held = [_connect(service) for _ in range(4)]
    for sock in held:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")  # partial: each holds its connection
    time.sleep(0.3)
    answer = httpx.get(f"{service.url}/v1/health", timeout=10)
    assert answer.status_code == 503
    for sock in held:
        sock.close()
    time.sleep(0.5)
    assert httpx.get(f"{service.url}/v1/health", timeout=10).status_code == 200  # the twin, once they are gone
