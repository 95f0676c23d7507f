"""The customers of benchmarks/chaos.py: each posts its record and polls its job as the customer client does.

A 429 or a 503 with Retry-After is waited out and asked again with the same
Idempotency-Key, a lost answer (connection refused, reset, timed out) is asked
again with the same key; then the customer fetches its certificate bundle.
`Customer` is what one customer saw, `Tally` what all of them saw of HTTP.
"""
from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field

from _chaos_common import log

# ------------------------------------------------------------------ what the customers saw
@dataclass
class Customer:
    index: int
    record: dict
    key: str = field(default_factory=lambda: secrets.token_urlsafe(24))  # the Idempotency-Key
    job_ids: set[str] = field(default_factory=set)  # every job id an answer named (more than one: duplicated)
    job_id: str | None = None
    token: str | None = None
    decision: int | None = None
    submitted_at: float | None = None
    accepted_at: float | None = None
    completed_at: float | None = None  # monotonic, when the customer saw `succeeded`
    status: str = "not submitted"
    attempts: int | None = None
    certificate_id: str | None = None
    bundle: str | None = None
    error: str | None = None


@dataclass
class Tally:
    """Every HTTP answer the customers got (or did not get)."""

    requests: int = 0
    codes: Counter = field(default_factory=Counter)
    r503: list[tuple[float, str, str]] = field(default_factory=list)  # (mono, what, detail): 503 with Retry-After
    s5xx: list[tuple[float, str, int, str]] = field(default_factory=list)  # any other 5xx (mono, what, code, body)
    transport: list[tuple[float, str, str]] = field(default_factory=list)  # no answer: (mono, what, error)
    r429: int = 0
    other_4xx: list[tuple[float, str, int, str]] = field(default_factory=list)
    completed: int = 0


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


async def _call(client, tally: Tally, what: str, method: str, url: str, **kwargs):
    """One request; the answer counted. None if no answer came (refused, reset, timed out)."""
    import httpx

    tally.requests += 1
    try:
        r = await client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        tally.transport.append((time.monotonic(), what, f"{type(exc).__name__}: {exc!r}"[:200]))
        return None
    tally.codes[r.status_code] += 1
    if r.status_code == 503 and _retry_after(r) is not None:
        tally.r503.append((time.monotonic(), what, r.text[:160]))
    elif r.status_code >= 500:
        tally.s5xx.append((time.monotonic(), what, r.status_code, r.text[:300]))
    elif r.status_code == 429:
        tally.r429 += 1
    elif r.status_code >= 400:
        tally.other_4xx.append((time.monotonic(), what, r.status_code, r.text[:300]))
    return r


async def _wait_after(r) -> float | None:
    """How long to wait before asking again, or None if asking again will not help."""
    if r is None:
        return 1.0  # no answer: ask again (with the same Idempotency-Key)
    if r.status_code in (429, 503) and _retry_after(r) is not None:
        return min(_retry_after(r), 30.0)
    if r.status_code >= 500:
        return 1.0
    return None


async def run_customer(client, url: str, model_id: str, c: Customer, tally: Tally, poll: float, deadline: float,
                       on_done) -> None:
    """Post the record until accepted, poll the job until done, fetch the certificate: as the customer client."""
    c.submitted_at = time.monotonic()
    c.status = "submitting"
    headers = {"Idempotency-Key": c.key}
    try:
        while True:
            r = await _call(client, tally, "POST decisions", "POST", f"{url}/v1/models/{model_id}/decisions",
                            json={"record": c.record}, headers=headers)
            if r is not None and r.status_code in (200, 202):
                body = r.json()
                c.job_ids.add(body["job_id"])
                c.job_id, c.token, c.decision = body["job_id"], body["job_token"], body["decision"]
                c.accepted_at, c.status = time.monotonic(), "accepted"
                break
            wait = await _wait_after(r)
            if wait is None:
                c.status, c.error = "refused", f"POST decisions: HTTP {r.status_code}: {r.text[:200]}"
                return
            if time.monotonic() + wait - c.submitted_at > deadline:
                c.status, c.error = "not accepted", f"not accepted within {deadline:.0f} s"
                return
            await asyncio.sleep(wait)
        token = {"X-Job-Token": c.token}
        job = None
        while True:
            await asyncio.sleep(poll)
            r = await _call(client, tally, "GET job", "GET", f"{url}/v1/jobs/{c.job_id}", headers=token)
            if r is not None and r.status_code == 200:
                job = r.json()
                if job["status"] == "succeeded":
                    c.completed_at, c.status, c.attempts = time.monotonic(), "succeeded", job["attempts"]
                    c.certificate_id = job["certificate_url"].rsplit("/", 1)[1]
                    tally.completed += 1
                    on_done()
                    break
                if job["status"] == "failed":
                    c.status, c.error, c.attempts = "failed", f"job failed: {job['error']}", job["attempts"]
                    return
            elif await _wait_after(r) is None:
                c.status, c.error = "job unreadable", f"GET job: HTTP {r.status_code}: {r.text[:200]}"
                return
            else:
                wait = await _wait_after(r)
                await asyncio.sleep(max(0.0, wait - poll))
            if time.monotonic() - c.accepted_at > deadline:
                c.status = "unfinished"
                c.error = f"not done {deadline:.0f} s after acceptance (last seen: {job and job['status']})"
                return
        while True:
            r = await _call(client, tally, "GET certificate", "GET", f"{url}{job['certificate_url']}", headers=token)
            if r is not None and r.status_code == 200:
                c.bundle = r.text
                return
            wait = await _wait_after(r)
            if wait is None or time.monotonic() - c.accepted_at > deadline:
                c.error = f"certificate not fetched: {r and r.status_code}"
                return
            await asyncio.sleep(wait)
    except Exception as exc:  # a bug of the benchmark or an unreadable answer: recorded, never a crash
        c.error = f"{type(exc).__name__}: {exc!r}"[:300]


def http_client(concurrency: int):
    import httpx

    # Idle connections dropped after 1 s, well before uvicorn's 5 s keep-alive (see service_load.py).
    limits = httpx.Limits(max_connections=max(10, concurrency + 2), max_keepalive_connections=max(10, concurrency),
                          keepalive_expiry=1.0)
    return httpx.AsyncClient(timeout=30.0, limits=limits)


async def customers_load(url: str, model_id: str, customers: list[Customer], concurrency: int, poll: float,
                         deadline: float, tally: Tally, label: str, progress_every: int = 5,
                         completed_event: tuple[int, asyncio.Event] | None = None) -> None:
    gate = asyncio.Semaphore(concurrency)
    started = time.monotonic()

    def on_done() -> None:
        if completed_event and tally.completed >= completed_event[0]:
            completed_event[1].set()
        if tally.completed % progress_every == 0 or tally.completed == len(customers):
            log(f"  {label}: {tally.completed}/{len(customers)} certificates ({time.monotonic() - started:.1f} s; "
                f"{tally.requests} requests, {len(tally.r503)} answered 503, {len(tally.s5xx)} other 5xx, "
                f"{len(tally.transport)} without answer)")

    async def one(c: Customer) -> None:
        async with gate:
            await run_customer(client, url, model_id, c, tally, poll, deadline, on_done)

    async with http_client(concurrency) as client:
        await asyncio.gather(*(one(c) for c in customers))
