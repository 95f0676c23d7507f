"""Many customers at once against one prover service with two workers, beside direct proving.

One committed German (4,2) model (built as the service tests build it), then,
in the same run:

  direct         Prover.prove in this process, one query after another, no HTTP
  direct x2      two prover processes side by side, each on half the records (the machine's proving ceiling)
  procrastinate  `fairproof serve --queue procrastinate` + two `fairproof worker` processes, fresh PostgreSQL
  inprocess      `fairproof serve` with FAIRPROOF_WORKERS=2 (worker threads), fresh PostgreSQL (or SQLite)

Each service configuration starts from a fresh database, registers the model
over the admin API, warms up (per circuit bucket the measured customers need,
one customer per worker at once, so every worker has loaded the model and
each bucket's proving key, as the direct prover has), then N customers submit
their record at once (at most --concurrency in flight) and poll their job
until the certificate is ready, as the customer client does. Reported per
configuration: throughput (certificates/s over the whole burst), latency from
submit to certificate ready (p50/p90/p99; resolution: the poll interval),
HTTP latency of POST decisions and GET job, errors (any non-2xx answer, failed
or timed-out job, a decision other than the one announced, or a bundle that
`verify_bundle` refuses), and service throughput over direct throughput, both
sequential and with as many prover processes as the service has workers: a
ratio near 1 to the latter means the service's throughput is bounded by
proving, not by HTTP, the ledger or the queue. On a shared machine the CPU
the run's own processes used (including the PostgreSQL backends of its
database) is measured too: certificates per CPU-second compares the
configurations even when other work took cores away from some of them
(the customers' own CPU is left out of it: for the service it counts the
service and worker processes and their database backends).

    FAIRPROOF_DATA_DIR=/work/shared/datasets .venv/bin/python benchmarks/service_load.py \
        [--customers 16] [--concurrency 16] [--configs procrastinate,inprocess] [--workdir DIR]

With --levels (say 10,50,200) the run is about load instead: at each level L,
L customers (or --customers N, at most L in flight) against `fairproof serve`
with two worker threads and the service's default queue caps, once on SQLite
and once on PostgreSQL (--databases), each from a fresh database and a fresh
warmed-up service. No direct baselines. Reported per database and level:
submit -> certificate latency p50/p95/p99, certificates/s over the burst,
POST decisions latency, and the share of POSTs answered 429. A 429 with
Retry-After is backpressure, not an error: the customer waits Retry-After and
submits again, as the customer client does (its latency includes the wait);
any other non-2xx answer is an error. More customers than the dataset's 200
test records reuse records in turn.

    FAIRPROOF_DATA_DIR=/work/shared/datasets .venv/bin/python benchmarks/service_load.py \
        --levels 10,50,200 [--customers N] [--databases sqlite,postgres] [--workdir DIR]
    # smoke check: --levels 2 --customers 2

Needs the PostgreSQL server of the tests (FAIRPROOF_TEST_PG_URL). Writes
benchmarks/results/service_load.json and prints a table.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from verifier_client.service_client import DEFAULT_POLL_INTERVAL  # noqa: E402  (after the path)

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = ("procrastinate", "inprocess")
SERVICE_WORKERS = 2
JOB_TIMEOUT = 600.0
WARMUP_POOL = 40  # records after the measured ones, to pick warm-up customers from


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


class CpuMeter:
    """CPU used over a phase, in cores: by the whole machine, and by this run's own processes.

    This run's processes are this one (the customers, or the direct prover),
    the service and worker processes, and the PostgreSQL backends serving its
    database. The difference is what other work on the machine took meanwhile
    (the load average cannot tell, since this run's own workers raise it too).
    The proving side is everything but the customers: for the service, its
    processes and its database backends.
    """

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, pids: list[int], more_pids: Callable[[], list[int]] = lambda: [], *,
                 self_proves: bool = False):
        self.pids, self.more_pids, self.self_proves = [os.getpid(), *pids], more_pids, self_proves

    @staticmethod
    def _machine_busy() -> int:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields[:8]) - idle

    def _ticks(self) -> dict[int, int]:
        ticks = {}
        for pid in set(self.pids) | set(self.more_pids()):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime of the process (all its threads)
        return ticks

    def __enter__(self) -> "CpuMeter":
        self.t0, self.busy0, self.ticks0 = time.perf_counter(), self._machine_busy(), self._ticks()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self.t0
        busy = (self._machine_busy() - self.busy0) / self.TICK / wall
        # A process first seen at the end (a new database connection) counts from its start.
        spent = {pid: t - self.ticks0.get(pid, 0) for pid, t in self._ticks().items()}
        used = sum(spent.values())
        customers = 0 if self.self_proves else spent.get(os.getpid(), 0)
        ours = used / self.TICK / wall
        self.result = {"machine_cores": round(busy, 2), "this_run_cores": round(ours, 2),
                       "other_work_cores": round(max(0.0, busy - ours), 2),
                       "this_run_cpu_seconds": round(used / self.TICK, 2),
                       "customers_cpu_seconds": round(customers / self.TICK, 2),
                       "proving_side_cpu_seconds": round((used - customers) / self.TICK, 2)}


def pg_backends(database_url: str) -> Callable[[], list[int]]:
    """The pids of the PostgreSQL backends connected to this database (the server runs on this machine)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from tests.store_fixtures import PG_URL

    if make_url(database_url).get_backend_name() != "postgresql":
        return lambda: []
    name = make_url(database_url).database
    engine = create_engine(PG_URL, isolation_level="AUTOCOMMIT", pool_size=1)

    def pids() -> list[int]:
        with engine.connect() as conn:
            return list(conn.scalars(text("SELECT pid FROM pg_stat_activity WHERE datname = :d"), {"d": name}))

    return pids


def percentiles(values: list[float], scale: float = 1.0) -> dict[str, float | None]:
    import numpy as np

    if not values:
        return {"p50": None, "p90": None, "p95": None, "p99": None, "max": None}
    arr = np.asarray(values) * scale
    return ({f"p{q}": round(float(np.percentile(arr, q)), 4) for q in (50, 90, 95, 99)}
            | {"max": round(float(arr.max()), 4)})


# ------------------------------------------------------------------ the model
def prepare_models(workdir: Path, n_records: int) -> Path:
    """The committed model directory, with keys for every bucket the first n_records customers need."""
    from prover_service.key_setup import setup_keys_for_test_customers
    from tests.service_fixtures import MODEL_DIRECTORY, build_models_dir

    models = workdir / "models"
    if (models / MODEL_DIRECTORY / "card.json").is_file():
        log(f"reusing the committed model in {models}")
        with open_prover(models) as prover:
            setup_keys_for_test_customers(prover, n_records)
        return models
    log(f"building a committed German (4,2) model in {workdir} (train or reuse, commit, precompute, keys for "
        f"{n_records} customers)")
    start = time.perf_counter()
    models = build_models_dir(workdir, key_customers=n_records)
    log(f"  model ready in {time.perf_counter() - start:.1f} s")
    return models


# ------------------------------------------------------------------ direct proving
@contextmanager
def open_prover(models: Path) -> Iterator:
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace
    from tests.service_fixtures import MODEL_DIRECTORY

    workspace = ModelWorkspace.open(models / MODEL_DIRECTORY)
    db = open_database(resolve_store_url(None, workspace.root))
    try:
        yield Prover(workspace, db, key_setup=SinglePartyKeySetup())
    finally:
        db.dispose()


def _query(prover, record: dict):
    from offline_precompute.certify import query_from_record

    return query_from_record(prover.workspace.artifact, prover.model, record)


def plan_customers(models: Path, customers: int, workers: int) -> tuple[list[dict], list[list[dict]]]:
    """The measured records, and warm-up rounds: per circuit bucket they need, one record per worker.

    More customers than the dataset has test records (200 for German) reuse
    records in turn: the same record asked again is another customer's job
    and certificate. A round's records are submitted together, so each idle
    worker takes one of them and loads that bucket's keys before the measured
    burst (a worker loads a bucket's proving key on its first job in that bucket).
    """
    from statement.adapter import bucket_sizes
    from tests.service_fixtures import customer_records

    pool = customer_records(customers + WARMUP_POOL)
    distinct = min(customers, len(pool))
    with open_prover(models) as prover:
        def bucket(record: dict) -> str:
            k, f = bucket_sizes(prover.certify(_query(prover, record)))
            return f"k{k}-f{f}"

        named = [(bucket(r), r) for r in pool]
    measured = [named[i % distinct] for i in range(customers)]
    spare = named[distinct:]
    rounds = []
    for name in sorted({b for b, _ in measured}):
        # Spare records first; a measured record only if too few spare ones land in this bucket.
        candidates = [r for b, r in spare + named[:distinct] if b == name]
        rounds.append(candidates[:workers])
    return [r for _, r in measured], rounds


def direct_baseline(models: Path, records: list[dict], warmup: list[dict]) -> dict:
    """Sequential Prover.prove in this process on the same records, keys already in memory."""
    from verifier_client.verify import verify_bundle

    with open_prover(models) as prover:
        log(f"direct: warming up ({len(warmup)} proofs, every published bucket's keys loaded)")
        for bucket in prover.card.circuits:
            prover.keys(prover.shape_for(bucket.shape.region_slots, bucket.shape.farkas_slots, bucket.shape.radius))
        for rec in warmup:
            prover.prove(_query(prover, rec))
        queries = [_query(prover, rec) for rec in records]
        load_before = load_average()
        proved, online = [], []
        with CpuMeter([], self_proves=True) as cpu:
            start = time.perf_counter()
            for i, query in enumerate(queries, 1):
                t = time.perf_counter()
                proved.append(prover.prove(query))
                online.append(time.perf_counter() - t)
                log(f"  direct: {i}/{len(queries)} proved ({time.perf_counter() - start:.1f} s)")
            elapsed = time.perf_counter() - start
        card = prover.card
        refused = sum(not verify_bundle(p.bundle, card).valid for p in proved)
    buckets: dict[str, int] = {}
    for p in proved:
        buckets[p.bundle.bucket] = buckets.get(p.bundle.bucket, 0) + 1
    return {
        "certificates": len(proved), "errors": refused, "seconds": round(elapsed, 3),
        "throughput": round(len(proved) / elapsed, 4), "prove_seconds": percentiles(online), "buckets": buckets,
        "load_average": {"before": load_before, "after": load_average()}, "cpu": cpu.result,
    }


def _parallel_share(models: str, records: list[dict], warmup: list[dict], barrier, out) -> None:
    """One process of the parallel baseline: warm up, wait for the others, prove its share."""
    with open_prover(Path(models)) as prover:
        for bucket in prover.card.circuits:
            prover.keys(prover.shape_for(bucket.shape.region_slots, bucket.shape.farkas_slots, bucket.shape.radius))
        for rec in warmup:
            prover.prove(_query(prover, rec))
        queries = [_query(prover, rec) for rec in records]
        barrier.wait()
        for query in queries:
            prover.prove(query)
            out.put(time.time())


def direct_parallel(models: Path, records: list[dict], warmup: list[dict], processes: int) -> dict:
    """The proving ceiling of the machine: `processes` provers side by side, each on its share of the records."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(processes + 1), ctx.Queue()
    shares = [records[i::processes] for i in range(processes)]
    children = [ctx.Process(target=_parallel_share, args=(str(models), share, warmup, barrier, out))
                for share in shares]
    for child in children:
        child.start()
    log(f"direct x{processes}: {processes} prover processes warming up")
    barrier.wait(timeout=600)
    load_before = load_average()
    with CpuMeter([c.pid for c in children]) as cpu:
        start = time.time()
        finished = []
        for _ in records:
            finished.append(out.get(timeout=JOB_TIMEOUT))
            log(f"  direct x{processes}: {len(finished)}/{len(records)} proved ({time.time() - start:.1f} s)")
    for child in children:
        child.join(timeout=60)
    elapsed = max(finished) - start
    return {"processes": processes, "certificates": len(finished), "seconds": round(elapsed, 3),
            "throughput": round(len(finished) / elapsed, 4), "errors": sum(c.exitcode != 0 for c in children),
            "load_average": {"before": load_before, "after": load_average()}, "cpu": cpu.result}


# ------------------------------------------------------------------ customers over HTTP
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


# ------------------------------------------------------------------ the service configurations
@contextmanager
def service_database(kind: str, workdir: Path, config: str) -> Iterator[str]:
    from tests.service_fixtures import fresh_pg_database

    if kind == "sqlite":
        path = Path(tempfile.mkdtemp(prefix=f"{config}-", dir=workdir)) / "service.sqlite"
        yield f"sqlite:///{path}"
    else:
        with fresh_pg_database() as url:
            yield url


def run_service(config: str, models: Path, records: list[dict], warmup: list[list[dict]], args, logs: Path, *,
                database: str | None = None, concurrency: int | None = None, label: str | None = None) -> dict:
    """One service configuration from a fresh database: start, register, warm up, the measured burst."""
    from tests.service_fixtures import register_model, serve, worker

    database = "postgres" if config == "procrastinate" else (database or args.inprocess_database)
    concurrency = concurrency or args.concurrency
    label = label or config
    # The database is left (and dropped) only after every process has stopped.
    with service_database(database, args.workdir, label.replace(" ", "-")) as url, ExitStack() as stack:
        if config == "procrastinate":
            service = serve(models, url, logs / f"{label}-serve.log", FAIRPROOF_QUEUE="procrastinate")
            processes = [service] + [worker(models, url, logs / f"{label}-worker{i}.log")
                                     for i in range(SERVICE_WORKERS)]
        else:
            caps = {"FAIRPROOF_MAX_QUEUED_PER_MODEL": str(args.max_queued_per_model)} \
                if getattr(args, "max_queued_per_model", None) else {}
            service = serve(models, url, logs / f"{label.replace(' ', '-')}-serve.log", FAIRPROOF_QUEUE="inprocess",
                            FAIRPROOF_WORKERS=str(SERVICE_WORKERS), **caps)
            processes = [service]
        for p in processes:
            stack.callback(p.stop)
        log(f"{label}: starting the service ({database}) and {SERVICE_WORKERS} workers")
        service.start()
        for p in processes[1:]:
            p.start()
        register_model(service.url)
        for i, round_records in enumerate(warmup, 1):
            warm = customers_burst(service.url, round_records, len(round_records), args.poll_interval,
                                   f"{label} warm-up {i}/{len(warmup)}")
            if warm.errors:
                raise RuntimeError(f"{label}: warm-up failed: {warm.errors[:3]}")
        load_before = load_average()
        with CpuMeter([p.process.pid for p in processes if p.process], pg_backends(url)) as cpu:
            burst = customers_burst(service.url, records, concurrency, args.poll_interval, label)
        load_after = load_average()
        verify_burst(service.url, burst)
        exited = [p.args[0] for p in processes if p.process and p.process.poll() is not None]
        if exited:
            burst.errors.append(f"processes exited during the run: {exited}")
    ok = len(burst.ready_at)
    span = (max(burst.ready_at) - burst.started) if burst.ready_at else float("nan")
    posts = len(burst.post_seconds)
    return {
        "database": database, "workers": SERVICE_WORKERS, "customers": len(records), "concurrency": concurrency,
        "certificates": ok, "errors": len(burst.errors),
        "error_samples": burst.errors[:5], "seconds": round(span, 3), "throughput": round(ok / span, 4),
        "latency_seconds": percentiles(burst.latency), "post_decisions_ms": percentiles(burst.post_seconds, 1000),
        # Backpressure, not errors: a 429 carries Retry-After and the customer comes back then.
        "post_requests": posts, "posts_429": burst.posts_429, "share_429": round(burst.posts_429 / max(1, posts), 4),
        "retried_jobs": burst.retried_jobs,
        "get_job_ms": percentiles(burst.get_job_seconds, 1000), "get_job_requests": len(burst.get_job_seconds),
        "load_average": {"before": load_before, "after": load_after}, "cpu": cpu.result,
    }


# ------------------------------------------------------------------ report
def _cpu(phase: dict) -> str:
    return f"{phase['cpu']['this_run_cores']:.2f} ({phase['cpu']['other_work_cores']:.2f})"


def per_cpu_second(phase: dict) -> float:
    """Certificates per CPU-second of the proving side: a figure other work on the machine barely moves."""
    return phase["certificates"] / max(1e-9, phase["cpu"]["proving_side_cpu_seconds"])


def table(result: dict) -> str:
    direct, parallel = result["direct"], result["direct_parallel"]
    fmt = lambda d, k, f: "-" if d[k] is None else format(d[k], f)  # noqa: E731
    rows = ["| configuration | certificates | errors | throughput (cert/s) | / direct sequential | / direct parallel "
            "| cert per CPU-s (proving side) | submit -> ready p50 / p95 / p99 (s) | POST decisions p50 / p99 (ms) "
            "| GET job p50 / p99 (ms) | CPU cores: this run (other work) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    p = direct["prove_seconds"]
    ratio = parallel["throughput"] / direct["throughput"]
    rows.append(f"| direct Prover.prove, sequential | {direct['certificates']} | {direct['errors']} | "
                f"{direct['throughput']:.3f} | 1.00 | {1 / ratio:.2f} | {per_cpu_second(direct):.3f} | "
                f"{p['p50']:.2f} / {p['p95']:.2f} / {p['p99']:.2f} (one proof) | - | - | {_cpu(direct)} |")
    rows.append(f"| direct, {parallel['processes']} prover processes | {parallel['certificates']} | "
                f"{parallel['errors']} | {parallel['throughput']:.3f} | {ratio:.2f} | 1.00 | "
                f"{per_cpu_second(parallel):.3f} | - | - | - | {_cpu(parallel)} |")
    for name, r in result["service"].items():
        lat, post, get = r["latency_seconds"], r["post_decisions_ms"], r["get_job_ms"]
        rows.append(f"| service, {name} ({r['database']}, {r['workers']} workers) | {r['certificates']} | "
                    f"{r['errors']} | {r['throughput']:.3f} | {r['ratio_to_direct']:.2f} | "
                    f"{r['ratio_to_direct_parallel']:.2f} | {per_cpu_second(r):.3f} | "
                    f"{fmt(lat, 'p50', '.2f')} / {fmt(lat, 'p95', '.2f')} / {fmt(lat, 'p99', '.2f')} | "
                    f"{fmt(post, 'p50', '.1f')} / {fmt(post, 'p99', '.1f')} | "
                    f"{fmt(get, 'p50', '.1f')} / {fmt(get, 'p99', '.1f')} | {_cpu(r)} |")
    return "\n".join(rows)


def levels_table(result: dict) -> str:
    """One row per database and level: latency percentiles, certificates/s, and the share of POSTs answered 429."""
    def trio(d: dict, scale: str) -> str:
        return " / ".join("-" if d[k] is None else format(d[k], scale) for k in ("p50", "p95", "p99"))

    rows = ["| database | concurrent customers | customers | certificates | errors | certificates/s "
            "| submit -> ready p50 / p95 / p99 (s) | POSTs | answered 429 | POST decisions p50 / p95 / p99 (ms) "
            "| jobs retried | CPU cores: this run (other work) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for database, levels in result["levels"].items():
        for level, r in levels.items():
            rows.append(f"| {database} | {level} | {r['customers']} | {r['certificates']} | {r['errors']} | "
                        f"{r['throughput']:.3f} | {trio(r['latency_seconds'], '.2f')} | {r['post_requests']} | "
                        f"{r['posts_429']} ({100 * r['share_429']:.1f} %) | {trio(r['post_decisions_ms'], '.0f')} | "
                        f"{r['retried_jobs']} | {_cpu(r)} |")
    return "\n".join(rows)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("every level must be at least 1")
    return values


def run_levels(args, logs: Path) -> dict:
    """`--levels`: the in-process service (two worker threads) at each level of concurrent customers, on each
    database, a fresh database and service per run; no direct baselines."""
    from prover_service.service.settings import Settings

    defaults = Settings()
    counts = {level: args.customers or level for level in args.levels}
    models = prepare_models(args.workdir, max(counts.values()))
    result = {
        "mode": "levels", "levels_run": args.levels, "databases": args.databases,
        "customers_per_level": args.customers or "the level", "poll_interval": args.poll_interval,
        "model": "german (4,2) fair", "service": {"queue": "inprocess", "workers": SERVICE_WORKERS,
                                                  "max_queued_jobs": defaults.max_queued_jobs,
                                                  "max_queued_per_model": args.max_queued_per_model
                                                  or defaults.max_queued_per_model,
                                                  "rate_limit_per_minute": 0},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_start": load_average()},
        "levels": {database: {} for database in args.databases},
    }
    for level in args.levels:
        records, warmup = plan_customers(models, counts[level], SERVICE_WORKERS)
        log(f"level {level}: {len(records)} customers, at most {level} at once; warm-up rounds "
            f"(one record per worker and bucket): {', '.join(str(len(r)) for r in warmup)}")
        for database in args.databases:
            result["levels"][database][str(level)] = run_service(
                "inprocess", models, records, warmup, args, logs, database=database, concurrency=level,
                label=f"{database} x{level}")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--customers", type=int, default=None,
                    help="customers per configuration (default 16); with --levels, customers per level "
                         "(default: as many as the level)")
    ap.add_argument("--concurrency", type=int, default=None,
                    help="customers in flight at once (default: all of them; with --levels, the level)")
    ap.add_argument("--levels", type=_int_list, default=None, metavar="N,N,...",
                    help="levels of concurrent customers, e.g. 10,50,200: the in-process service on each of "
                         "--databases at each level, reported with latency percentiles, certificates/s and the "
                         "share of POSTs answered 429 (no direct baselines)")
    ap.add_argument("--databases", default="sqlite,postgres",
                    help="with --levels: the service databases (default sqlite,postgres)")
    ap.add_argument("--max-queued-per-model", type=int, default=None, metavar="N",
                    help="with --levels: the service's queue cap per model (default: the service's default)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"service configurations (default {','.join(CONFIGS)})")
    ap.add_argument("--inprocess-database", choices=("postgres", "sqlite"), default="postgres",
                    help="database of the in-process configuration (default postgres)")
    ap.add_argument("--poll-interval", type=float, default=DEFAULT_POLL_INTERVAL,
                    help=f"seconds between a customer's job polls (default: the customer client's, {DEFAULT_POLL_INTERVAL})")
    ap.add_argument("--workdir", type=Path, default=None, help="keep (and reuse) the model here")
    args = ap.parse_args(argv)
    args.databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    if set(args.databases) - {"sqlite", "postgres"} or not args.databases:
        ap.error("--databases takes sqlite, postgres or both")
    if args.levels is None:
        args.customers = args.customers or 16
        args.concurrency = args.concurrency or args.customers
    elif args.concurrency is not None:
        ap.error("with --levels the concurrency is the level")
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = set(configs) - set(CONFIGS)
    if unknown or (args.customers is not None and args.customers < 1) or (args.concurrency or 1) < 1:
        ap.error(f"unknown configurations {sorted(unknown)}" if unknown else "--customers/--concurrency must be >= 1")

    import pytest  # the service fixtures report a missing server or dataset as a pytest skip

    with ExitStack() as stack:
        if args.workdir is None:
            args.workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fairproof-load-")))
        args.workdir.mkdir(parents=True, exist_ok=True)
        logs = args.workdir / "logs"
        logs.mkdir(exist_ok=True)
        if args.levels is not None:
            try:
                result = run_levels(args, logs)
            except pytest.skip.Exception as exc:
                log(f"service_load: cannot run: {exc.msg}")
                return 2
            return report_levels(result, logs)
        try:
            models = prepare_models(args.workdir, args.customers)
            records, warmup = plan_customers(models, args.customers, SERVICE_WORKERS)
            log(f"{len(records)} customers; warm-up rounds (one record per worker and bucket): "
                f"{', '.join(str(len(r)) for r in warmup)}")
            result = {
                "customers": args.customers, "concurrency": args.concurrency,
                "warmup_customers": sum(len(r) for r in warmup),
                "poll_interval": args.poll_interval, "model": "german (4,2) fair",
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                            "load_average_start": load_average()},
                "direct": direct_baseline(models, records, [r for rs in warmup for r in rs]),
                "direct_parallel": direct_parallel(models, records, [r for rs in warmup for r in rs],
                                                   SERVICE_WORKERS),
                "service": {},
            }
            for config in configs:
                r = run_service(config, models, records, warmup, args, logs)
                r["ratio_to_direct"] = round(r["throughput"] / result["direct"]["throughput"], 3)
                r["ratio_to_direct_parallel"] = round(r["throughput"] / result["direct_parallel"]["throughput"], 3)
                result["service"][config] = r
        except pytest.skip.Exception as exc:
            log(f"service_load: cannot run: {exc.msg}")
            return 2
        result["machine"]["load_average_end"] = load_average()
        phases = [result["direct"], result["direct_parallel"], *result["service"].values()]
        # Shared: a loaded machine before the run, or other work taking half a core or more during a phase.
        result["machine"]["shared"] = (result["machine"]["load_average_start"] > 1.5
                                       or any(ph["cpu"]["other_work_cores"] >= 0.5 for ph in phases))
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "service_load.json").write_text(json.dumps(result, indent=1))
        print(table(result))
        print(f"\n{os.cpu_count()} cores; load average {result['machine']['load_average_start']:.2f} at the start, "
              f"{result['machine']['load_average_end']:.2f} at the end; other work on the machine per phase (cores): "
              f"{', '.join(str(ph['cpu']['other_work_cores']) for ph in phases)}"
              f"{' (machine shared)' if result['machine']['shared'] else ''}")
        print(f"logs: {logs}; JSON: {RESULTS / 'service_load.json'}")
        errors = result["direct"]["errors"] + result["direct_parallel"]["errors"] + sum(r["errors"] for r in result["service"].values())
        for name, r in result["service"].items():
            for sample in r["error_samples"]:
                print(f"{name}: {sample}")
        return 1 if errors else 0


def report_levels(result: dict, logs: Path) -> int:
    result["machine"]["load_average_end"] = load_average()
    runs = [r for levels in result["levels"].values() for r in levels.values()]
    result["machine"]["shared"] = (result["machine"]["load_average_start"] > 1.5
                                   or any(r["cpu"]["other_work_cores"] >= 0.5 for r in runs))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "service_load.json").write_text(json.dumps(result, indent=1))
    print(levels_table(result))
    print(f"\n{os.cpu_count()} cores; load average {result['machine']['load_average_start']:.2f} at the start, "
          f"{result['machine']['load_average_end']:.2f} at the end; other work on the machine per run (cores): "
          f"{', '.join(str(r['cpu']['other_work_cores']) for r in runs)}"
          f"{' (machine shared)' if result['machine']['shared'] else ''}")
    print(f"queue caps: {result['service']['max_queued_per_model']} certificates per model, "
          f"{result['service']['max_queued_jobs']} in all; a 429 carries Retry-After, the customer waits and "
          f"submits again (counted apart from errors)")
    print(f"logs: {logs}; JSON: {RESULTS / 'service_load.json'}")
    for database, levels in result["levels"].items():
        for level, r in levels.items():
            for sample in r["error_samples"]:
                print(f"{database} x{level}: {sample}")
    return 1 if any(r["errors"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
