"""The deployment of docker-compose.yml, run natively, under chaos: a worker killed, PostgreSQL stopped, its disk full.

Per scenario, from scratch: a private PostgreSQL server (initdb into a temporary directory, a free port; its data
files on a small tmpfs, its write-ahead log beside it, as tests/service_fixtures.private_postgres lays it out), the
German (4,2) model's precompute store in that database (FAIRPROOF_STORE_URL, as compose sets it), then the API
(`fairproof serve --queue procrastinate`, FAIRPROOF_WORKERS=0, its log key on the database's disk) and two
`fairproof worker --heartbeat-file` processes, with compose's settings (lease 3 s, 3 attempts, grace 25 s). The
model is registered over the admin API and every worker warmed up (each bucket the customers need, one customer
per worker).

Then N customers (at most C at once) each post their record with an Idempotency-Key and poll their job until it
is done, as the customer client does: a 429 or a 503 with Retry-After is waited out and asked again with the same
key, a lost answer (connection refused, reset, timed out) is asked again with the same key; then they fetch their
certificate bundle. While they do, once K certificates are done, the scenario's fault is injected:

  baseline        nothing
  kill-worker     SIGKILL of one worker while it proves a job; nothing restarts it
  pg-stop-10s     `pg_ctl stop -m fast`, 10 s, `pg_ctl start`
  pg-stop-90s     the same for 90 s
  disk-full-30s   the database's disk (its data files and the API's state directory) filled for 30 s, then freed

No process is restarted by the benchmark: the API and the workers must ride the fault out. Measured per scenario:
HTTP requests, 5xx answers (a 503 with Retry-After counted apart, and whether it came outside the outage),
transport errors, accepted and completed decisions, lost (accepted, never succeeded within the deadline),
duplicated (a request with more than one job, decision_requested leaf, certificate_committed leaf or stored
certificate: from the customers' answers, the database and `/v1/log/entries`), bundles verified with
`verify_bundle` (against the served card, decision as announced, request id = job), readiness (`/v1/ready`,
polled every 0.1 s) back after the database returned or the disk was freed, and the first certificate
completed after that (the certificate's creation time in the database against the machine's clock). At the end:
the processes still running, and compose's healthcheck of each surviving worker (`fairproof worker-alive`).

    FAIRPROOF_DATA_DIR=/work/shared/datasets .venv/bin/python benchmarks/chaos.py \
        [--customers 30] [--concurrency 10] [--scenarios baseline,kill-worker,pg-stop-10s,pg-stop-90s,disk-full-30s]
        [--workdir DIR]   # keeps (and reuses) the committed model and the logs there

Needs root (or the `postgres` user with runuser) and the PostgreSQL server binaries under /usr/lib/postgresql,
as the outage tests do; the full-disk scenario needs a tmpfs mount (CAP_SYS_ADMIN), else it is reported not run.
Writes benchmarks/results/chaos.json and prints a table; progress goes to stderr.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS = ("baseline", "kill-worker", "pg-stop-10s", "pg-stop-90s", "disk-full-30s")
WORKERS = 2
READY_POLL_SECONDS = 0.1
# docker-compose.yml's settings for the API and the workers (x-fairproof-environment).
COMPOSE_ENV = {
    "FAIRPROOF_QUEUE": "procrastinate",
    "FAIRPROOF_WORKERS": "0",
    "FAIRPROOF_RADIUS": "fast",
    "FAIRPROOF_MAX_BODY_BYTES": "65536",
    "FAIRPROOF_LEASE_SECONDS": "3",
    "FAIRPROOF_SHUTDOWN_GRACE_SECONDS": "25",
    "FAIRPROOF_MAX_ATTEMPTS": "3",
    "FAIRPROOF_LOG_LEVEL": "INFO",
    # Every customer of the benchmark comes from 127.0.0.1: the per-client limit (60 a minute) would answer
    # their retries 429; behind a proxy the operator's guide (docs/guides/operations.md) sets it to 0 too.
    "FAIRPROOF_RATE_LIMIT_PER_MINUTE": "0",
    "FAIRPROOF_SINGLE_PARTY_SETUP": "false",  # compose does not set it; every bucket the customers need has keys
}

T0 = time.monotonic()


def log(msg: str) -> None:
    stamp = datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp} +{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def clock() -> dict[str, float]:
    """Now, on both clocks: monotonic (intervals) and the machine's wall clock (against database timestamps)."""
    return {"mono": time.monotonic(), "wall": time.time()}


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


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


# ------------------------------------------------------------------ the deployment
@dataclass
class Deployment:
    pg: Any  # tests.service_fixtures.PrivatePostgres
    db_url: str
    api: Any  # ServiceProcess
    workers: list
    heartbeats: list[Path]
    state_dir: Path

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def processes(self) -> list:
        return [self.api, *self.workers]


def _precompute_store(models: Path, db_url: str) -> None:
    """The model's regions in the deployment's database (compose's FAIRPROOF_STORE_URL is the same database)."""
    from offline_precompute.db import open_database
    from offline_precompute.enumerate import precompute
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace
    from tests.service_fixtures import MODEL_DIRECTORY

    db = open_database(db_url)
    try:
        precompute(db, Prover(ModelWorkspace.open(models / MODEL_DIRECTORY), db, key_setup=SinglePartyKeySetup()).model)
    finally:
        db.dispose()


@contextmanager
def deployment(models: Path, logs: Path, name: str, disk_mb: int) -> Iterator[Deployment]:
    """A private PostgreSQL server, its database with the precompute store, the API and two workers, the model
    registered; everything stopped and removed on exit."""
    import httpx

    from tests.service_fixtures import ServiceProcess, free_port, private_postgres, register_model, service_env

    with private_postgres(disk_mb=disk_mb) as pg, ExitStack() as stack:
        db_url = pg.create_database("fairproof")
        _precompute_store(models, db_url)
        state_dir = pg.disk / "service"  # the API's own state (its log key, its readiness probe): the same disk
        state_dir.mkdir()
        env = service_env(models, db_url, **COMPOSE_ENV, FAIRPROOF_STORE_URL=db_url)
        port = free_port()
        api = ServiceProcess(["serve", "--host", "127.0.0.1", "--port", str(port), "--queue", "procrastinate"],
                             {**env, "FAIRPROOF_LOG_KEY_FILE": str(state_dir / "log.key")}, logs / f"{name}-serve.log",
                             port)
        heartbeats = [logs / f"{name}-worker{i}.alive" for i in range(1, WORKERS + 1)]
        workers = [ServiceProcess(["worker", "--heartbeat-file", str(hb)], env, logs / f"{name}-worker{i}.log")
                   for i, hb in enumerate(heartbeats, 1)]
        for p in (api, *workers):
            stack.callback(p.stop)  # SIGTERM (the kill -9'd one is gone already)
        api.start(timeout=120)
        register_model(api.url)
        for w in workers:
            w.start()
        deadline = time.monotonic() + 120
        while True:  # both workers beating in the queue (readiness names them)
            words = httpx.get(f"{api.url}/v1/ready", timeout=10).json()["checks"].get("workers", "")
            if f"{WORKERS} live worker" in words:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers not live after 120 s: {words}\n{workers[0].log_tail()}")
            for w in workers:
                if w.process.poll() is not None:
                    raise RuntimeError(f"a worker exited at start:\n{w.log_tail()}")
            time.sleep(0.5)
        yield Deployment(pg, db_url, api, workers, heartbeats, state_dir)


def warm_up(dep: Deployment, rounds: list[list[dict]], model_id: str, poll: float) -> None:
    """Each bucket's keys loaded in every worker: per bucket, one customer per worker at once."""
    for i, records in enumerate(rounds, 1):
        tally = Tally()
        customers = [Customer(-1, r) for r in records]
        asyncio.run(customers_load(dep.url, model_id, customers, len(customers), poll, 300.0, tally,
                                   f"warm-up {i}/{len(rounds)}", progress_every=100))
        bad = [c.error for c in customers if c.status != "succeeded" or c.error]
        if bad:
            raise RuntimeError(f"warm-up failed: {bad[:3]}")


def _engine(db_url: str):
    from sqlalchemy import create_engine

    return create_engine(db_url, pool_pre_ping=True, pool_size=1, max_overflow=1,
                         connect_args={"connect_timeout": 3})


# ------------------------------------------------------------------ faults
def _running_job_of(engine, pid: int) -> tuple[str, str] | None:
    """(job id, stage) of a certificate job the worker with this pid holds, if any."""
    from sqlalchemy import text

    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, stage, lease_owner FROM service_jobs WHERE status = 'running' "
                                 "AND kind = 'certificate'")).all()
    for job_id, stage, owner in rows:
        if owner and f":{pid}:" in owner:
            return job_id, stage
    return None


async def inject(scenario: str, dep: Deployment, args, events: dict, trigger: asyncio.Event) -> None:
    """Wait for the trigger (K certificates done), then the scenario's fault; always undone in the end."""
    await trigger.wait()
    if scenario == "baseline":
        return
    if scenario == "kill-worker":
        engine = _engine(dep.db_url)
        victim = dep.workers[0]
        try:
            # SIGKILL mid-proof: wait (at most 30 s) until the worker holds a job past being claimed.
            deadline = time.monotonic() + 30
            held = None
            while time.monotonic() < deadline:
                held = await asyncio.to_thread(_running_job_of, engine, victim.process.pid)
                if held and held[1] != "claimed by a worker":
                    break
                await asyncio.sleep(0.05)
            events["fault"] = clock()
            victim.process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(victim.process.wait, 30)
            events["killed"] = {"pid": victim.process.pid, "job_id": held and held[0], "stage": held and held[1]}
            log(f"  kill -9 worker 1 (pid {victim.process.pid}) holding job {held and held[0]} ({held and held[1]})")
            events["recovered"] = events["fault"]
        finally:
            engine.dispose()
        return
    if scenario.startswith("pg-stop-"):
        seconds = args.short_outage if scenario == "pg-stop-10s" else args.long_outage
        events["fault"] = clock()
        log(f"  pg_ctl stop -m fast ({seconds:g} s outage)")
        try:
            await asyncio.to_thread(dep.pg.stop, "fast")
            events["fault_done"] = clock()
            await asyncio.sleep(seconds)
        finally:
            events["recover_begin"] = clock()
            await asyncio.to_thread(dep.pg.start)
            events["recovered"] = clock()
        log(f"  pg_ctl start returned ({events['recovered']['mono'] - events['fault_done']['mono']:.1f} s after "
            f"the stop; stop took {events['fault_done']['mono'] - events['fault']['mono']:.1f} s)")
        return
    if scenario == "disk-full-30s":
        from tests.service_fixtures import fill_disk

        ballast = dep.pg.disk / "ballast"
        events["fault"] = clock()
        try:
            written = await asyncio.to_thread(fill_disk, ballast)
            events["fault_done"] = clock()
            free = shutil.disk_usage(dep.pg.disk).free
            log(f"  the database's disk filled ({written / 2**20:.0f} MB ballast, {free} bytes free); "
                f"holding {args.disk_seconds:g} s")
            events["ballast_bytes"] = written
            await asyncio.sleep(args.disk_seconds)
        finally:
            events["recover_begin"] = clock()
            ballast.unlink(missing_ok=True)
            events["recovered"] = clock()
        log("  ballast removed: the disk has room again")
        return
    raise ValueError(scenario)


async def ready_monitor(url: str, samples: list, stop: asyncio.Event) -> None:
    """/v1/ready every 0.1 s: (sent, answered, status or None, checks)."""
    import httpx

    async with httpx.AsyncClient(timeout=5.0) as client:
        while not stop.is_set():
            sent = time.monotonic()
            try:
                r = await client.get(f"{url}/v1/ready")
                checks = r.json().get("checks", {}) if r.status_code in (200, 503) else {}
                samples.append((sent, time.monotonic(), r.status_code, checks))
            except Exception as exc:
                samples.append((sent, time.monotonic(), None, {"error": type(exc).__name__}))
            await asyncio.sleep(READY_POLL_SECONDS)


async def load_with_chaos(scenario: str, dep: Deployment, customers: list[Customer], args, model_id: str,
                          tally: Tally, events: dict, ready_samples: list) -> None:
    trigger = asyncio.Event()
    stop = asyncio.Event()
    monitor = asyncio.create_task(ready_monitor(dep.url, ready_samples, stop))
    chaos = asyncio.create_task(inject(scenario, dep, args, events, trigger))
    events["load_start"] = clock()

    async def the_load() -> None:
        try:
            await customers_load(dep.url, model_id, customers, args.concurrency, args.poll_interval, args.deadline,
                                 tally, scenario, completed_event=(args.trigger_after, trigger))
        finally:
            events["load_end"] = clock()
            trigger.set()  # a load that ended before the trigger: the fault comes now, and is undone

    async def ticker() -> None:  # progress while nothing completes (an outage)
        while True:
            await asyncio.sleep(10)
            last = ready_samples[-1][2] if ready_samples else None
            log(f"  {scenario}: {tally.completed}/{len(customers)} certificates, {tally.requests} requests, "
                f"{len(tally.r503)} answered 503, {len(tally.s5xx)} other 5xx, {len(tally.transport)} without "
                f"answer; /v1/ready {last}")

    tick = asyncio.create_task(ticker())
    try:
        load = asyncio.create_task(the_load())
        done, _ = await asyncio.wait({load, chaos}, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()  # a fault that failed to be injected (or undone) ends the scenario here
        await load
        await chaos
        # Readiness after the fault: keep polling until it answers 200 again (at most 120 s).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (ready_samples and ready_samples[-1][2] == 200
                                                    and ready_samples[-1][0] > events.get("recovered", {})
                                                    .get("mono", 0)):
            await asyncio.sleep(0.2)
    finally:
        tick.cancel()
        stop.set()
        if not chaos.done():
            trigger.set()
            await asyncio.gather(chaos, return_exceptions=True)
        await monitor


# ------------------------------------------------------------------ after the load: what the service holds
def _db_facts(db_url: str, job_ids: list[str]) -> dict:
    from sqlalchemy import text

    engine = _engine(db_url)
    try:
        with engine.connect() as conn:
            jobs = conn.execute(text("SELECT id, status, attempts, idempotency_hash FROM service_jobs "
                                     "WHERE kind = 'certificate'")).all()
            certs = conn.execute(text("SELECT job_id, created_at FROM service_certificates")).all()
            queue = dict(conn.execute(text("SELECT status::text, count(*) FROM procrastinate_jobs "
                                           "GROUP BY status")).all())
    finally:
        engine.dispose()
    per_job = Counter(job_id for job_id, _ in certs)
    return {
        "jobs": {j: (s, a) for j, s, a, _ in jobs},
        "certificate_rows": per_job,
        "certificate_times": {job_id: at.timestamp() for job_id, at in certs},
        "queue": queue,
    }


def _log_leaves(url: str) -> list:
    from commitments.log import parse_leaf
    from verifier_client.service_client import ServiceClient

    with ServiceClient(url) as client:
        size = int(client.checkpoint().checkpoint.splitlines()[1])
        leaves, start = [], 0
        while start < size:
            page = client.entries(start, size).entries
            leaves.extend(parse_leaf(e.data.encode()) for e in page if e.data is not None)
            start += len(page)
    return leaves


def _verify(url: str, model_id: str, customers: list[Customer]) -> tuple[int, list[str]]:
    import httpx

    from commitments.bundle import CertificateBundle
    from commitments.card import ModelCard
    from verifier_client.verify import verify_bundle

    card = ModelCard.from_json(httpx.get(f"{url}/v1/models/{model_id}/card", timeout=30).text)
    verified, refused = 0, []
    for c in customers:
        if c.bundle is None:
            continue
        bundle = CertificateBundle.model_validate_json(c.bundle)
        verdict = verify_bundle(bundle, card)
        if verdict.valid and bundle.decision == c.decision and bundle.request_id == c.job_id:
            verified += 1
        else:
            refused.append(f"customer {c.index}: {verdict.reasons or 'decision or request id differs'}")
    return verified, refused


def _log_lines(path: Path) -> dict:
    counts = Counter()
    samples: list[str] = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            if line.startswith("Traceback"):
                counts["traceback (not JSON)"] += 1
            continue
        level = entry.get("level", "")
        counts[level] += 1
        if level in ("error", "critical") and len(samples) < 5:
            samples.append(f"{entry.get('msg', '')[:160]}" + (f" | {entry['exc'].splitlines()[-1][:200]}"
                                                                 if entry.get("exc") else ""))
    return {"levels": dict(counts), "error_samples": samples}


def _log_events(path: Path, since_wall: float, words: str) -> list[tuple[float, str]]:
    """(seconds after `since_wall`, message) of the process's log lines at or after it whose line holds `words`."""
    found = []
    for line in path.read_text(errors="replace").splitlines():
        if words not in line:
            continue
        try:
            entry = json.loads(line)
            at = datetime.fromisoformat(entry["ts"]).timestamp()
        except (ValueError, KeyError):
            continue
        if at >= since_wall:
            found.append((round(at - since_wall, 2), entry.get("msg", "")[:140]))
    return found


def _first_after(times: list[float], at: float | None) -> float | None:
    if at is None:
        return None
    later = [t for t in times if t >= at]
    return round(min(later) - at, 2) if later else None


def analyse(scenario: str, dep: Deployment, customers: list[Customer], tally: Tally, events: dict,
            ready_samples: list, warm_job_ids: set[str], model_id: str, logs: Path) -> dict:
    accepted = [c for c in customers if c.job_id is not None]
    succeeded = [c for c in customers if c.status == "succeeded"]
    facts = _db_facts(dep.db_url, [c.job_id for c in accepted])
    leaves = _log_leaves(dep.url)
    requested = Counter(leaf.request_id for leaf in leaves if leaf.kind == "decision_requested")
    committed = Counter(leaf.request_id for leaf in leaves if leaf.kind == "certificate_committed")
    duplicated: dict[str, list[int]] = {"jobs per request": [], "decision_requested leaves": [],
                                        "certificate_committed leaves": [], "stored certificates": []}
    for c in accepted:
        if len(c.job_ids) > 1:
            duplicated["jobs per request"].append(c.index)
        if requested[c.job_id] > 1:
            duplicated["decision_requested leaves"].append(c.index)
        if committed[c.job_id] > 1:
            duplicated["certificate_committed leaves"].append(c.index)
        if facts["certificate_rows"][c.job_id] > 1:
            duplicated["stored certificates"].append(c.index)
    dup_customers = sorted({i for v in duplicated.values() for i in v})
    known = {j for c in accepted for j in c.job_ids} | warm_job_ids
    stray_jobs = sorted(set(facts["jobs"]) - known)  # jobs nobody was answered: a request recorded twice
    stray_leaves = sorted(set(requested) - known)
    verified, refused = _verify(dep.url, model_id, customers)
    # Lost: accepted, and not succeeded within the deadline (as the ledger says at the end, too).
    lost = [c.index for c in accepted if c.status != "succeeded"]
    unfinished_in_db = sorted(j for c in accepted for j in [c.job_id] if facts["jobs"].get(j, ("?",))[0] != "succeeded")

    fault = events.get("fault")
    recovered = events.get("recovered")
    cert_times = [facts["certificate_times"][c.job_id] for c in accepted if c.job_id in facts["certificate_times"]]
    result: dict[str, Any] = {
        "customers": len(customers), "accepted": len(accepted), "completed": len(succeeded),
        "requests": tally.requests, "answers": {str(k): v for k, v in sorted(tally.codes.items())},
        "answered_503_with_retry_after": len(tally.r503), "answered_429": tally.r429,
        "answered_5xx_other": len(tally.s5xx), "s5xx_samples": [list(s) for s in tally.s5xx[:5]],
        "no_answer": len(tally.transport), "no_answer_samples": [list(t) for t in tally.transport[:5]],
        "answered_4xx_other": len(tally.other_4xx), "other_4xx_samples": [list(s) for s in tally.other_4xx[:5]],
        "lost": len(lost), "lost_customers": lost, "unfinished_in_ledger": unfinished_in_db,
        "customer_errors": [f"{c.index}: {c.error}" for c in customers if c.error][:10],
        "duplicated": len(dup_customers) + len(stray_jobs), "duplicated_detail": duplicated,
        "stray_jobs": stray_jobs, "stray_decision_leaves": stray_leaves,
        "verified": verified, "bundles": sum(c.bundle is not None for c in customers), "refused": refused,
        "jobs_retried": sum((c.attempts or 0) > 1 for c in customers),
        "queue_rows_at_end": facts["queue"],
        "load_seconds": round(events["load_end"]["mono"] - events["load_start"]["mono"], 1),
    }
    if fault is not None:
        t_fault = fault["mono"]
        result["fault_at_seconds_into_load"] = round(t_fault - events["load_start"]["mono"], 1)
        result["completed_before_fault"] = sum(1 for c in succeeded if c.completed_at < t_fault)
        if "fault_done" in events:
            result["fault_applied_seconds"] = round(events["fault_done"]["mono"] - t_fault, 2)
        if scenario != "kill-worker":
            result["outage_seconds"] = round(recovered["mono"] - events.get("fault_done", fault)["mono"], 1)
        # 503s inside the outage (from the fault until readiness is back) and outside it.
        back = [s for s in ready_samples if s[0] >= recovered["mono"] and s[2] == 200]
        ready_back_mono = back[0][1] if back else None
        end = ready_back_mono if ready_back_mono is not None else float("inf")
        result["answered_503_outside_outage"] = sum(1 for t, _, _ in tally.r503 if not t_fault <= t <= end + 1.0)
        during = [s for s in ready_samples if t_fault <= s[0] <= (recovered["mono"] if recovered else end)]
        not_ready = [s for s in ready_samples if s[2] != 200 and s[0] >= t_fault]
        result["ready_during_fault"] = dict(Counter(str(s[2]) for s in during))
        result["ready_first_not_200_after_fault"] = round(not_ready[0][1] - t_fault, 2) if not_ready else None
        result["ready_checks_during_fault"] = sorted({json.dumps(s[3], sort_keys=True) for s in not_ready})[:4]
        if scenario == "kill-worker":
            result["ready_after_seconds"] = None
            result["ready_not_200_samples"] = len(not_ready)
            result["first_completion_after_seconds"] = _first_after(cert_times, fault["wall"])
            killed = events.get("killed", {})
            job = killed.get("job_id")
            result["killed"] = killed
            if job is not None:
                result["killed_job_completed_after_seconds"] = (
                    round(facts["certificate_times"][job] - fault["wall"], 2) if job in facts["certificate_times"]
                    else None)
                result["killed_job_status"] = facts["jobs"].get(job)
                # What the surviving worker did with it (seconds after the kill): the queue's redelivery, the
                # ledger's claim.
                result["killed_job_log"] = [e for w in dep.workers[1:] for e in _log_events(w.log_path, fault["wall"], job)]
        else:
            result["ready_after_seconds"] = round(ready_back_mono - recovered["mono"], 2) if ready_back_mono else None
            result["first_completion_after_seconds"] = _first_after(cert_times, recovered["wall"])
            result["completed_during_fault"] = sum(1 for t in cert_times
                                                   if fault["wall"] <= t < recovered["wall"])
            # Per worker, from its log: its first job claimed after the recovery (seconds), and the job it had
            # interrupted, if any, handed back ("ended with status" of the queue job that held it).
            result["worker_first_claim_after_recovery_seconds"] = {
                f"worker{i}": next((t for t, _ in _log_events(w.log_path, recovered["wall"], '"job claimed"')), None)
                for i, w in enumerate(dep.workers, 1)}
    else:
        result["answered_503_outside_outage"] = len(tally.r503)
        result["ready_not_200_samples"] = sum(1 for s in ready_samples if s[2] != 200)
    # No process restarted: which are still running, and compose's healthcheck of each worker.
    alive = {}
    for name, p in [("api", dep.api), *[(f"worker{i}", w) for i, w in enumerate(dep.workers, 1)]]:
        alive[name] = p.process.poll() is None
    result["processes_running_at_end"] = alive
    health = {}
    for i, (w, hb) in enumerate(zip(dep.workers, dep.heartbeats), 1):
        done = subprocess.run([sys.executable, "-m", "prover_service.cli", "worker-alive", str(hb), "--max-age", "60"],
                              cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        health[f"worker{i}"] = "healthy" if done.returncode == 0 else f"unhealthy: {done.stderr.strip()[:120]}"
        try:  # a worker killed less than --max-age ago still passes: its file has not aged enough yet
            health[f"worker{i}_heartbeat_age_seconds"] = round(time.time() - hb.stat().st_mtime, 1)
        except OSError:
            health[f"worker{i}_heartbeat_age_seconds"] = None
    result["worker_healthcheck_at_end"] = health
    result["process_logs"] = {p.log_path.name: _log_lines(p.log_path) for p in dep.processes}
    result["events"] = {k: v for k, v in events.items()}
    return result


# ------------------------------------------------------------------ one scenario
def run_scenario(scenario: str, models: Path, records: list[dict], warmup: list[list[dict]], args,
                 logs: Path) -> dict:
    import pytest

    from tests.service_fixtures import MODEL_DIRECTORY

    log(f"scenario {scenario}: a private PostgreSQL server, the API and {WORKERS} workers")
    started = clock()
    load_before = load_average()
    try:
        with deployment(models, logs, scenario, args.disk_mb) as dep:
            log(f"  deployment up in {time.monotonic() - started['mono']:.1f} s (API {dep.url}); warming up")
            warm = [r for rs in warmup for r in rs]
            warm_ids_before = set()
            warm_up(dep, warmup, MODEL_DIRECTORY, args.poll_interval)
            from sqlalchemy import text
            engine = _engine(dep.db_url)
            try:
                with engine.connect() as conn:
                    warm_ids_before = set(conn.scalars(text("SELECT id FROM service_jobs")))
            finally:
                engine.dispose()
            log(f"  warmed up ({len(warm)} certificates); {len(records)} customers, at most {args.concurrency} "
                f"at once; the fault after {args.trigger_after} certificates")
            customers = [Customer(i, r) for i, r in enumerate(records)]
            tally, events, ready_samples = Tally(), {}, []
            try:
                asyncio.run(load_with_chaos(scenario, dep, customers, args, MODEL_DIRECTORY, tally, events,
                                            ready_samples))
            finally:
                # Whatever happened, the database is up and its disk has room before the analysis.
                if not dep.pg.running():
                    dep.pg.start()
                (dep.pg.disk / "ballast").unlink(missing_ok=True)
            log(f"  load done in {events['load_end']['mono'] - events['load_start']['mono']:.1f} s; checking the "
                f"ledger, the log and every bundle")
            result = analyse(scenario, dep, customers, tally, events, ready_samples, warm_ids_before,
                             MODEL_DIRECTORY, logs)
    except pytest.skip.Exception as exc:
        log(f"  {scenario}: not run: {exc.msg}")
        return {"run": False, "reason": exc.msg}
    result["run"] = True
    result["seconds"] = round(time.monotonic() - started["mono"], 1)
    result["load_average_before"] = load_before
    result["load_average_after"] = load_average()
    log(f"  {scenario}: {result['accepted']} accepted, {result['completed']} completed, 5xx {result['answered_5xx_other']}, "
        f"503 {result['answered_503_with_retry_after']}, lost {result['lost']}, duplicated {result['duplicated']}, "
        f"verified {result['verified']}; ready after {result.get('ready_after_seconds')}, first completion after "
        f"{result.get('first_completion_after_seconds')} ({result['seconds']:.0f} s)")
    return result


# ------------------------------------------------------------------ report
def _fmt(v, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def table(scenarios: dict) -> str:
    rows = ["| scenario | requests | accepted / completed | 5xx | 503 (Retry-After) | lost | duplicated "
            "| ready after (s) | first completion after (s) | verified |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in scenarios.items():
        if not r.get("run"):
            rows.append(f"| {name} | not run: {r.get('reason', '')[:120]} | | | | | | | | |")
            continue
        first = _fmt(r.get("first_completion_after_seconds"))
        if name == "kill-worker" and r.get("killed", {}).get("job_id"):
            first += f" (killed job: {_fmt(r.get('killed_job_completed_after_seconds'))})"
        s503 = str(r["answered_503_with_retry_after"])
        if r.get("answered_503_outside_outage"):
            s503 += f" ({r['answered_503_outside_outage']} outside the outage)"
        five = str(r["answered_5xx_other"]) + (f" (+{r['no_answer']} no answer)" if r["no_answer"] else "")
        rows.append(f"| {name} | {r['requests']} | {r['accepted']} / {r['completed']} | {five} | {s503} | "
                    f"{r['lost']} | {r['duplicated']} | {_fmt(r.get('ready_after_seconds'), '.2f')} | {first} | "
                    f"{r['verified']} / {r['bundles']} |")
    return "\n".join(rows)


def environment() -> dict:
    def run(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    from tests.service_fixtures import postgres_bin_dir

    bin_dir = postgres_bin_dir()
    import importlib.metadata as md

    return {
        "date": run("date", "-Iseconds"), "cores": os.cpu_count(), "load_average_start": load_average(),
        "python": platform.python_version(), "machine": platform.machine(), "kernel": platform.release(),
        "postgresql": run(str(bin_dir / "postgres"), "--version") if bin_dir else None,
        "procrastinate": md.version("procrastinate"), "git_head": run("git", "rev-parse", "--short", "HEAD"),
        "git_tree_modified_files": len(run("git", "status", "--short").splitlines()),
        "memory_mb": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--customers", type=int, default=30, help="customers per scenario (default 30)")
    ap.add_argument("--concurrency", type=int, default=10, help="customers in flight at once (default 10)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"default {','.join(SCENARIOS)}")
    ap.add_argument("--trigger-after", type=int, default=5, metavar="K",
                    help="inject the fault once K certificates are done (default 5)")
    ap.add_argument("--short-outage", type=float, default=10.0, help="pg-stop-10s: seconds stopped (default 10)")
    ap.add_argument("--long-outage", type=float, default=90.0, help="pg-stop-90s: seconds stopped (default 90)")
    ap.add_argument("--disk-seconds", type=float, default=30.0, help="disk-full-30s: seconds full (default 30)")
    ap.add_argument("--disk-mb", type=int, default=128, help="the database's tmpfs, MB (default 128)")
    ap.add_argument("--deadline", type=float, default=300.0,
                    help="a customer gives up this long after acceptance (then its job counts as lost; default 300)")
    ap.add_argument("--poll-interval", type=float, default=0.5, help="seconds between job polls (default 0.5)")
    ap.add_argument("--workdir", type=Path, default=None, help="keep (and reuse) the model and the logs here")
    ap.add_argument("--output", type=Path, default=RESULTS / "chaos.json")
    args = ap.parse_args(argv)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown or not scenarios:
        ap.error(f"unknown scenarios {sorted(unknown)}; choose among {', '.join(SCENARIOS)}")
    if args.customers < 1 or args.concurrency < 1 or not 1 <= args.trigger_after <= args.customers:
        ap.error("--customers and --concurrency must be >= 1, --trigger-after within 1..customers")

    import pytest  # the service fixtures report a missing server or dataset as a pytest skip

    from service_load import plan_customers, prepare_models

    started = clock()
    env = environment()
    log(f"chaos: {env['cores']} cores, load average {env['load_average_start']}, {env['postgresql']}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fairproof-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    logs = workdir / "logs" / datetime.now().strftime("%Y%m%d-%H%M%S")
    logs.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "command": "benchmarks/chaos.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "environment": env, "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "deployment": {"api": "fairproof serve --queue procrastinate", "workers": WORKERS, "settings": COMPOSE_ENV,
                       "database": "private PostgreSQL server per scenario, data files on a tmpfs of "
                                   f"{args.disk_mb} MB, write-ahead log beside it; the store in the same database",
                       "model": "german (4,2) fair"},
        "scenarios": {},
    }
    try:
        models = prepare_models(workdir, args.customers)
        records, warmup = plan_customers(models, args.customers, WORKERS)
    except pytest.skip.Exception as exc:
        log(f"chaos: cannot run: {exc.msg}")
        return 2
    for scenario in scenarios:
        result["scenarios"][scenario] = run_scenario(scenario, models, records, warmup, args, logs)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1, default=str))  # what is measured so far
    result["environment"]["load_average_end"] = load_average()
    result["environment"]["date_end"] = datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")
    result["runtime_seconds"] = round(time.monotonic() - started["mono"], 1)
    result["table"] = table(result["scenarios"])
    args.output.write_text(json.dumps(result, indent=1, default=str))
    if args.workdir is None:
        shutil.rmtree(workdir / "models", ignore_errors=True)
        shutil.rmtree(workdir / "cache", ignore_errors=True)
    print(result["table"])
    print(f"\n{env['cores']} cores; load average {env['load_average_start']} at the start, "
          f"{result['environment']['load_average_end']} at the end; {result['runtime_seconds']:.0f} s in all")
    print(f"logs: {logs}; JSON: {args.output}")
    def failed(name: str, r: dict) -> bool:
        killed = {"worker1"} if name == "kill-worker" else set()
        exited = [p for p, up in r["processes_running_at_end"].items() if not up and p not in killed]
        return bool(r["answered_5xx_other"] or r["lost"] or r["duplicated"] or r["verified"] != r["completed"]
                    or r.get("answered_503_outside_outage") or exited)

    bad = [n for n, r in result["scenarios"].items() if r.get("run") and failed(n, r)]
    for n in bad:
        print(f"{n}: see the JSON ({', '.join(result['scenarios'][n]['customer_errors'][:3])})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
