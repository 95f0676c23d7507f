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
Writes benchmarks/results/chaos.json and prints a table; progress goes to stderr. The parts beside this script:
benchmarks/_chaos_common.py (compose's settings, clock, log), _chaos_customers.py (the customers),
_chaos_deployment.py (database, API and workers) and _chaos_analysis.py (what the service holds afterwards).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _chaos_analysis import analyse  # noqa: E402
from _chaos_common import (COMPOSE_ENV, READY_POLL_SECONDS, WORKERS, clock, load_average,  # noqa: E402
                           log)
from _chaos_customers import Customer, Tally, customers_load  # noqa: E402
from _chaos_deployment import Deployment, _engine, deployment, warm_up  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS = ("baseline", "kill-worker", "pg-stop-10s", "pg-stop-90s", "disk-full-30s")


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
