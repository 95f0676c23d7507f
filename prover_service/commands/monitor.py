"""`fairproof monitor`: follow a bank's transparency log as an auditor.

    fairproof monitor --url URL [--state DIR] [--log-key VKEY] [--plots DIR]

Each run checks the newest checkpoint against the one kept from the last run
(rollback, fork, consistency), downloads only the new entries, checks that
they hash to the signed root, audits every card, decision, certificate and
attestation in them, and prints a table per model (verifier_client/monitor/
says what is checked). The state lives in DIR (default
~/.local/state/fairproof/monitor/<service>, one per service URL:
localhost and 127.0.0.1 are one service), with report.json and, after a
violation, the signed checkpoints involved under evidence/. With matplotlib
installed, eps histograms are written to --plots (default DIR).

The log belongs to the service: the state pins the log's origin and key (on
first use, the ones the service names, or --log-key). A service that later
names another origin or key, in /v1/log/key or in its checkpoint (a bank
serving a fresh private log from the same URL), is a VIOLATION naming both
origins, never a first use; so is a service serving another log than the
one an explicit --state pins. A default state directory of the old layout
(~/.local/state/fairproof/monitor/<origin>) is copied to the service's on
its first run, so nothing kept there is lost.

Exit status 0 when the log is consistent (FLAG lines name re-committed
models), 1 when a violation was found (one "VIOLATION:" line each; the kept
checkpoint does not advance), 2 on unusable input or an unreachable service.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "fairproof monitor"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "monitor",
        help="audit a bank's transparency log: consistency, cards, decisions and certificates",
        description="Follow the service's transparency log: verify the newest checkpoint against the last one "
                    "kept, download the new entries, check them against the signed root and report per model "
                    "the cards, attestations, decision requests, certificates, flips and certified radii. The "
                    "log's origin and key are pinned per service: a service naming another one later is a "
                    "violation.",
    )
    p.add_argument("--url", required=True, help="the bank's service, e.g. https://bank.example")
    p.add_argument("--state", type=Path, metavar="DIR",
                   help="state directory, which pins the service's log origin and key (default "
                        "~/.local/state/fairproof/monitor/<service>, one per service URL)")
    p.add_argument("--log-key", metavar="VKEY",
                   help="the log's verifier key (default: the pinned one; on first use, the one the service names, "
                        "which must be this one when given)")
    p.add_argument("--plots", type=Path, metavar="DIR", help="where to write eps histograms (default: the state dir)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per HTTP request (default 30)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(handler=run)


def _error(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace, transport=None) -> int:
    from verifier_client.monitor import (MAX_ENTRIES_PER_PAGE, MonitorError, PlotsUnavailable,
                                         adopt_legacy_state_dir, default_state_dir, fetch_log_key, monitor,
                                         parse_log_key, render_report, write_plots)
    from verifier_client.service_client import ServiceClient, ServiceError

    try:
        with ServiceClient(args.url, timeout=args.timeout, transport=transport) as client:
            served = None
            state_dir = args.state
            if state_dir is None:
                state_dir = default_state_dir(client.base_url)
                if not state_dir.exists():  # the first run for the service: is there a state of the old layout?
                    origin = parse_log_key(args.log_key).name if args.log_key else (served := fetch_log_key(client)).name
                    adopted = adopt_legacy_state_dir(client.base_url, origin)
                    if adopted is not None:
                        print(f"{PROG}: adopted the state of {adopted} (old layout) in {state_dir}", file=sys.stderr)

            def progress(done: int, total: int) -> None:
                if not args.quiet and total > MAX_ENTRIES_PER_PAGE:  # one page needs no progress
                    print(f"  downloaded {done}/{total} new entries", file=sys.stderr, flush=True)

            result = monitor(client, state_dir, log_key=args.log_key, served_key=served, progress=progress)
    except ServiceError as exc:
        return _error(f"service error: {exc}")
    except MonitorError as exc:
        return _error(str(exc))
    except OSError as exc:
        return _error(f"cannot use the state directory: {exc.strerror or exc}")

    if result.key_first_use:
        print(f"{PROG}: pinned the log key {result.state.log_key} on first use", file=sys.stderr)
    sys.stdout.write(render_report(result.report, result.new_flags))
    if result.evidence is not None:
        print(f"{PROG}: evidence kept in {result.evidence}", file=sys.stderr)
    try:
        for path in write_plots(result.state, args.plots or Path(state_dir)):
            print(f"{PROG}: wrote {path}", file=sys.stderr)
    except PlotsUnavailable as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"{PROG}: cannot write plots: {exc.strerror or exc}", file=sys.stderr)
    return result.exit_status
