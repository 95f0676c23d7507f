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
benchmarks/results/service_load.json and prints a table. The customers over
HTTP are in benchmarks/_service_load_customers.py, the CPU meter, percentiles
and tables in benchmarks/_service_load_measure.py.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from verifier_client.service_client import DEFAULT_POLL_INTERVAL  # noqa: E402  (after the path)
from _service_load_customers import JOB_TIMEOUT, customers_burst, verify_burst  # noqa: E402
from _service_load_measure import (CpuMeter, levels_table, load_average, log, percentiles,  # noqa: E402
                                   pg_backends, table)

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = ("procrastinate", "inprocess")
SERVICE_WORKERS = 2
WARMUP_POOL = 40  # records after the measured ones, to pick warm-up customers from


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
