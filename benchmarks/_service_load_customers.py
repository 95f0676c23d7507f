"""Customers over HTTP for benchmarks/service_load.py: a burst of them, and the check of their bundles.

Each customer submits its record (waiting out a 429 with Retry-After and
submitting again, as the customer client does), polls its job until the
certificate is ready and fetches it; `Burst` collects what they saw (latency,
HTTP timings, 429s, errors, the bundles), and `verify_burst` checks every
bundle as a customer checks it, with the card alone.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from _service_load_measure import log

JOB_TIMEOUT = 600.0


@dataclass
class Burst:
    """What N customers saw: one entry per customer, one latency per HTTP request."""

    started: float = 0.0
    ready_at: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)  # first submit -> certificate ready (429 waits included)
    post_seconds: list[float] = field(default_factory=list)  # every POST decisions, whatever its answer
    posts_429: int = 0  # POST decisions answered 429 with Retry-After: backpressure, the customer came back
    get_job_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bundles: list[tuple[int, str]] = field(default_factory=list)  # (announced decision, bundle JSON)
    retried_jobs: int = 0  # certificates whose job needed more than one attempt (a worker lost its lease)
    timeout: float = JOB_TIMEOUT  # a customer gives up this long after its first submit


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


async def _submit(client, url: str, model_id: str, record: dict, burst: Burst, deadline: float):
    """POST decisions until accepted: a 429 with Retry-After is waited out and retried, as the customer
    client does (verifier_client.service_client.ServiceClient.submit); any other non-2xx is an error."""
    while True:
        t = time.perf_counter()
        r = await client.post(f"{url}/v1/models/{model_id}/decisions", json={"record": record})
        burst.post_seconds.append(time.perf_counter() - t)
        wait = _retry_after(r) if r.status_code == 429 else None
        if wait is None:
            return r
        burst.posts_429 += 1
        if time.perf_counter() + wait > deadline:
            return r
        await asyncio.sleep(wait)


async def _customer(client, url: str, model_id: str, record: dict, burst: Burst, poll: float,
                    gate: asyncio.Semaphore, done: list[int], total: int, label: str) -> None:
    async with gate:
        t0 = time.perf_counter()
        deadline = t0 + burst.timeout
        step = "POST decisions"
        try:
            r = await _submit(client, url, model_id, record, burst, deadline)
            if r.status_code not in (200, 202):
                burst.errors.append(f"POST decisions: HTTP {r.status_code}: {r.text[:200]}")
                return
            accepted = r.json()
            while True:
                await asyncio.sleep(poll)
                t = time.perf_counter()
                step = "GET job"
                r = await client.get(f"{url}{accepted['job_url']}", headers={"X-Job-Token": accepted["job_token"]})
                burst.get_job_seconds.append(time.perf_counter() - t)
                if r.status_code != 200:
                    burst.errors.append(f"GET job: HTTP {r.status_code}: {r.text[:200]}")
                    return
                job = r.json()
                if job["status"] == "succeeded":
                    ready = time.perf_counter()
                    break
                if job["status"] == "failed":
                    burst.errors.append(f"job {job['job_id']} failed: {job['error']}")
                    return
                if t > deadline:
                    burst.errors.append(f"job {job['job_id']} not finished after {burst.timeout:.0f} s")
                    return
            burst.ready_at.append(ready)
            burst.latency.append(ready - t0)
            burst.retried_jobs += job["attempts"] > 1
            step = "GET certificate"
            r = await client.get(f"{url}{job['certificate_url']}", headers={"X-Job-Token": accepted["job_token"]})
            if r.status_code != 200:
                burst.errors.append(f"GET certificate: HTTP {r.status_code}: {r.text[:200]}")
                return
            burst.bundles.append((accepted["decision"], r.text))
        except Exception as exc:  # a refused connection or a timeout is an error of the run, not a crash
            burst.errors.append(f"{step}: {type(exc).__name__}: {exc!r}")
        finally:
            done[0] += 1
            if total <= 20 or done[0] % 10 == 0 or done[0] == total:
                log(f"  {label}: {done[0]}/{total} customers done, {len(burst.errors)} errors, "
                    f"{burst.posts_429} POSTs answered 429 ({time.perf_counter() - burst.started:.1f} s)")


async def _burst(url: str, model_id: str, records: list[dict], concurrency: int, poll: float, label: str) -> Burst:
    import httpx

    # The last of N customers waits for the whole queue ahead of it: about a second a certificate.
    burst = Burst(started=time.perf_counter(), timeout=max(JOB_TIMEOUT, 6.0 * len(records)))
    gate = asyncio.Semaphore(concurrency)
    done = [0]
    # Idle connections are dropped after 1 s, well before uvicorn's 5 s keep-alive timeout: a pooled
    # connection reused just as the server closes it fails with a ReadError that says nothing of the service.
    limits = httpx.Limits(max_connections=max(10, concurrency), max_keepalive_connections=max(10, concurrency),
                          keepalive_expiry=1.0)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as client:
        await asyncio.gather(*(_customer(client, url, model_id, rec, burst, poll, gate, done, len(records), label)
                               for rec in records))
    return burst


def customers_burst(url: str, records: list[dict], concurrency: int, poll: float, label: str) -> Burst:
    from tests.service_fixtures import MODEL_DIRECTORY

    return asyncio.run(_burst(url, MODEL_DIRECTORY, records, concurrency, poll, label))


def verify_burst(url: str, burst: Burst) -> int:
    """Every bundle checked as a customer checks it: the card and the bundle only."""
    import httpx

    from commitments.bundle import CertificateBundle
    from commitments.card import ModelCard
    from tests.service_fixtures import MODEL_DIRECTORY
    from verifier_client.verify import verify_bundle

    card = ModelCard.from_json(httpx.get(f"{url}/v1/models/{MODEL_DIRECTORY}/card", timeout=30).text)
    refused = 0
    for decision, text in burst.bundles:
        bundle = CertificateBundle.model_validate_json(text)
        verdict = verify_bundle(bundle, card)
        if not verdict.valid or bundle.decision != decision:
            refused += 1
            burst.errors.append(f"bundle {bundle.certificate_id} refused: {verdict.reasons or 'decision differs'}")
    return refused
