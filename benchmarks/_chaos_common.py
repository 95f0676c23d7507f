"""What every part of benchmarks/chaos.py shares: compose's settings, the run's clock and its log."""
from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
