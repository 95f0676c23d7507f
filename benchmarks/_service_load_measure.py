"""Measurements and report tables of benchmarks/service_load.py.

Logging, the load average, the CPU a phase used (the whole machine's and the
run's own processes', PostgreSQL backends included: `CpuMeter`,
`pg_backends`), latency percentiles, and the Markdown tables the script prints
(per configuration, and per database and load level).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable


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
