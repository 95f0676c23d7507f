"""The transparency log in the service database: appends, proofs at a million leaves, checkpoints.

All through `TransparencyLog` (prover_service/service/transparency_log.py),
in one run, against peers measured in the same run:

  appends       leaves/s on PostgreSQL and SQLite, 1, 100 and 1000 leaves per
                transaction, each configuration on a fresh database; peer: the
                same leaf rows (same columns and indexes, same session and
                batching) with no head row and no subtree nodes
  growth        a PostgreSQL log grown to --leaves leaves in big batches
                (progress on stderr); the same leaves go into pymerkle's
                in-memory tree, whose root must equal the stored one
  proofs        at that size: inclusion and consistency proof latency (p50/p95
                over --samples random leaves and old sizes; each stored proof
                verified with transparency.merkle), against pymerkle's
                InmemoryTree (inclusion paths compared hash by hash), checkpoint
                signing latency, proof sizes against log2 n
  sqlite        a SQLite log at --sqlite-leaves / 10 and --sqlite-leaves leaves:
                inclusion and one-leaf append latency, to show how the node
                lookup scales there

    .venv/bin/python benchmarks/transparency_log.py [--leaves 1000000] [--quick]

Needs the PostgreSQL server of the tests (FAIRPROOF_TEST_PG_URL) and, for
the proof peer, `pip install pymerkle`. Targets: >= 2,000 leaves/s on
PostgreSQL with 100 or more leaves per transaction; inclusion proofs < 20 ms
at p50 and p95 at a million leaves. Writes
benchmarks/results/transparency_log.json and prints a table.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import (BigInteger, Column, DateTime, Index, LargeBinary, MetaData, String, Table, Text,
                        insert, text)

from commitments.log import CertificateCommitted, DecisionRequested, leaf_bytes
from prover_service.service.database import ServiceDatabase, open_service_database
from prover_service.service.schema import utcnow
from prover_service.service.transparency_log import TransparencyLog
from transparency import merkle, note

RESULTS = Path(__file__).resolve().parent / "results" / "transparency_log.json"
BATCHES = (1, 100, 1000)
TARGET_LEAVES_PER_S = 2000.0
TARGET_INCLUSION_MS = 20.0
Leaf = DecisionRequested | CertificateCommitted


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ leaves and databases
_CARD = hashlib.sha256(b"benchmark card").hexdigest()


def make_leaves(start: int, count: int) -> list[Leaf]:
    """Leaves as the service writes them: a decision, then its certificate (certificate_committed: its claims
    and the salted commitment to its signals)."""
    leaves: list[Leaf] = []
    for i in range(start, start + count):
        request_id = str(uuid.UUID(int=(i // 2) + 1))
        if i % 2 == 0:
            leaves.append(DecisionRequested(model_id="german-4x2-fair", card_digest=_CARD, request_id=request_id,
                                            decision=i % 3 % 2))
        else:
            leaves.append(CertificateCommitted(
                model_id="german-4x2-fair", card_digest=_CARD, bucket="k4-f4", request_id=request_id,
                decision=i % 3 % 2, status="certified", eps_numerator=i % 4096, eps_scale_bits=16, capped=False,
                signals_commitment=hashlib.sha256(b"signals %d" % i).hexdigest()))
    return leaves


@contextlib.contextmanager
def fresh_database(backend: str) -> Iterator[ServiceDatabase]:
    """A migrated, empty service database on `backend`, dropped afterwards."""
    if backend == "postgres":
        from tests.service_fixtures import fresh_pg_database

        with fresh_pg_database() as url:
            db = open_service_database(url)
            try:
                yield db
            finally:
                db.dispose()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            db = open_service_database(f"sqlite:///{tmp}/service.sqlite")
            try:
                yield db
            finally:
                db.dispose()


def new_log(db: ServiceDatabase) -> TransparencyLog:
    return TransparencyLog(db, note.Signer.from_key(note.generate_key("bench.example/log")[0]))


def percentiles_ms(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"p50_ms": round(at(0.5) * 1e3, 3), "p95_ms": round(at(0.95) * 1e3, 3),
            "max_ms": round(ordered[-1] * 1e3, 3), "n": len(ordered)}


def timed(action: Callable[..., object], *args: object) -> tuple[float, object]:
    """Seconds `action(*args)` took, and what it returned."""
    start = time.perf_counter()
    value = action(*args)
    return time.perf_counter() - start, value


# ------------------------------------------------------------------ appends
_NAIVE = MetaData()
NAIVE_LEAVES = Table(
    "bench_naive_leaves", _NAIVE,
    Column("idx", BigInteger, primary_key=True, autoincrement=False),
    Column("leaf_hash", LargeBinary(32), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("model_id", String(128), nullable=False),
    Column("data", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_bench_naive_leaves_leaf_hash", "leaf_hash"),
    Index("ix_bench_naive_leaves_model_id", "model_id"),
)


class NaiveLog:
    """The peer: one row per leaf, as service_log_leaves stores it, and nothing else (no head, no nodes)."""

    def __init__(self, db: ServiceDatabase) -> None:
        self.db, self.size = db, 0
        _NAIVE.create_all(db.engine)

    def append(self, leaves: Sequence[Leaf]) -> None:
        rows = []
        for index, leaf in enumerate(leaves, self.size):
            data = leaf_bytes(leaf)
            rows.append({"idx": index, "leaf_hash": merkle.leaf_hash(data), "kind": leaf.kind,
                         "model_id": leaf.model_id, "data": data.decode("ascii"), "created_at": utcnow()})
        with self.db.transaction() as session:
            session.execute(insert(NAIVE_LEAVES), rows)
        self.size += len(leaves)


def append_rate(append: Callable[[Sequence[Leaf]], object], batch: int, transactions: int) -> dict:
    """Leaves/s and ms per transaction over `transactions` appends of `batch` leaves (leaves built beforehand)."""
    batches = [make_leaves(t * batch, batch) for t in range(transactions)]
    append(batches[0])  # connect, warm the statement caches
    elapsed = 0.0
    for leaves in batches[1:]:
        elapsed += timed(append, leaves)[0]
    count = (transactions - 1) * batch
    return {"leaves": count, "seconds": round(elapsed, 3), "leaves_per_s": round(count / elapsed, 1),
            "ms_per_transaction": round(elapsed / (transactions - 1) * 1e3, 3)}


def stored_append(db: ServiceDatabase, tlog: TransparencyLog) -> Callable[[Sequence[Leaf]], object]:
    def append(leaves: Sequence[Leaf]) -> None:
        with db.transaction() as session:
            tlog.append(session, leaves)
    return append


def measure_appends(backend: str, transactions: dict[int, int]) -> list[dict]:
    rows = []
    for batch in BATCHES:
        with fresh_database(backend) as db:
            ours = append_rate(stored_append(db, new_log(db)), batch, transactions[batch])
        with fresh_database(backend) as db:
            naive = append_rate(NaiveLog(db).append, batch, transactions[batch])
        row = {"backend": backend, "batch": batch, "log": ours, "naive": naive,
               "ratio_log_over_naive": round(ours["leaves_per_s"] / naive["leaves_per_s"], 3)}
        log(f"  {backend} batch {batch}: {ours['leaves_per_s']:.0f} leaves/s (naive {naive['leaves_per_s']:.0f})")
        rows.append(row)
    return rows


# ------------------------------------------------------------------ growth and proofs at size n
class Grown:
    """A stored log of n leaves, the same leaves in pymerkle's tree (if installed), and their leaf hashes."""

    def __init__(self, db: ServiceDatabase, tlog: TransparencyLog, peer, leaf_hashes: list[bytes], stats: dict):
        self.db, self.log, self.peer, self.leaf_hashes, self.stats = db, tlog, peer, leaf_hashes, stats

    @property
    def size(self) -> int:
        return len(self.leaf_hashes)


def pymerkle_tree():
    """pymerkle's in-memory tree (RFC 9162 hashing: 0x00/0x01 prefixes, SHA-256), or None if not installed."""
    try:
        from pymerkle import InmemoryTree
    except ImportError:
        log("pymerkle is not installed (pip install pymerkle): no proof peer")
        return None
    return InmemoryTree(algorithm="sha256")


def grow(db: ServiceDatabase, n: int, batch: int) -> Grown:
    """Append n leaves in batches, timing the store and the peer apart from building the leaves."""
    tlog, peer, leaf_hashes = new_log(db), pymerkle_tree(), []
    store_s = peer_s = 0.0
    chunks, chunk_start, chunk_s = [], 0, 0.0
    started = time.perf_counter()
    while len(leaf_hashes) < n:
        leaves = make_leaves(len(leaf_hashes), min(batch, n - len(leaf_hashes)))
        data = [leaf_bytes(leaf) for leaf in leaves]
        dt = timed(stored_append(db, tlog), leaves)[0]
        store_s, chunk_s = store_s + dt, chunk_s + dt
        if peer is not None:
            peer_s += timed(peer.append_entries, data)[0]
        leaf_hashes.extend(merkle.leaf_hash(d) for d in data)
        if len(leaf_hashes) - chunk_start >= max(n // 10, batch) or len(leaf_hashes) == n:
            chunks.append(round((len(leaf_hashes) - chunk_start) / chunk_s, 1))
            log(f"  grown to {len(leaf_hashes):,} leaves ({chunks[-1]:.0f} leaves/s in the store lately, "
                f"{time.perf_counter() - started:.0f} s)")
            chunk_start, chunk_s = len(leaf_hashes), 0.0
    stats = {"leaves": n, "batch": batch, "store_seconds": round(store_s, 1),
             "store_leaves_per_s": round(n / store_s, 1), "store_leaves_per_s_per_tenth": chunks,
             "pymerkle_seconds": round(peer_s, 1) if peer is not None else None,
             "pymerkle_leaves_per_s": round(n / peer_s, 1) if peer is not None else None}
    return Grown(db, tlog, peer, leaf_hashes, stats)


def check_roots(grown: Grown) -> dict:
    """The stored root, the root recomputed from the leaf hashes and pymerkle's must be one."""
    accumulator = merkle.MerkleAccumulator()
    for h in grown.leaf_hashes:
        accumulator.append(h)
    stored = grown.log.root(grown.size)
    assert stored == accumulator.root(), "the stored root differs from the one recomputed from the leaves"
    if grown.peer is not None:
        assert grown.peer.get_root() == stored, "pymerkle's root differs from the stored one"
    return {"root": stored.hex(), "pymerkle_agrees": grown.peer is not None}


def inclusion_latency(grown: Grown, samples: int, rng: random.Random) -> dict:
    n, root = grown.size, grown.log.root(grown.size)
    indices = [rng.randrange(n) for _ in range(samples)]
    ours, peer, verify, lengths, json_bytes = [], [], [], [], []
    for index in indices:
        dt, served = timed(grown.log.inclusion, index, n)
        ours.append(dt)
        proof = [bytes.fromhex(h) for h in served.proof]
        verify.append(timed(merkle.verify_inclusion, grown.leaf_hashes[index], index, n, proof, root)[0])
        lengths.append(len(proof))
        json_bytes.append(len(served.model_dump_json()))
        if grown.peer is not None:
            dt, theirs = timed(grown.peer.prove_inclusion, index + 1, n)
            peer.append(dt)
            # pymerkle's path starts with the leaf's own hash; the rest is the RFC 9162 audit path.
            assert list(theirs.path[1:]) == proof and theirs.path[0] == grown.leaf_hashes[index]
    return {"log": percentiles_ms(ours), "pymerkle": percentiles_ms(peer) if peer else None,
            "verify_ms_p50": round(statistics.median(verify) * 1e3, 4),
            "hashes": {"min": min(lengths), "mean": round(statistics.mean(lengths), 2), "max": max(lengths)},
            "json_bytes_mean": round(statistics.mean(json_bytes))}


def consistency_latency(grown: Grown, samples: int, rng: random.Random) -> dict:
    n, new_root = grown.size, grown.log.root(grown.size)
    olds = [rng.randrange(1, n) for _ in range(samples)]
    ours, peer, lengths = [], [], []
    for old in olds:
        dt, served = timed(grown.log.consistency, old, n)
        ours.append(dt)
        proof = [bytes.fromhex(h) for h in served.proof]
        merkle.verify_consistency(old, n, grown.log.root(old), new_root, proof)
        lengths.append(len(proof))
        if grown.peer is not None:
            peer.append(timed(grown.peer.prove_consistency, old, n)[0])  # its own proof format
    return {"log": percentiles_ms(ours), "pymerkle": percentiles_ms(peer) if peer else None,
            "hashes": {"min": min(lengths), "mean": round(statistics.mean(lengths), 2), "max": max(lengths)}}


def checkpoint_latency(grown: Grown, reps: int) -> dict:
    """A new checkpoint per rep: one more leaf (not timed), then checkpoint() signs and stores it."""
    append, signing, roots = stored_append(grown.db, grown.log), [], []
    signer = grown.log.signer
    for rep in range(reps):
        append(make_leaves(grown.size + rep, 1))
        signing.append(timed(grown.log.checkpoint)[0])
    size = grown.log.size()
    for _ in range(reps):
        roots.append(timed(grown.log.root, size)[0])
    body = f"{grown.log.origin}\n{size}\n{'A' * 43}=\n"
    sign_only = [timed(note.sign, body, [signer])[0] for _ in range(reps)]
    return {"checkpoint": percentiles_ms(signing), "root_only": percentiles_ms(roots),
            "ed25519_sign_only": percentiles_ms(sign_only), "size_after": size}


def pg_table_bytes(db: ServiceDatabase) -> dict[str, int]:
    with db.engine.connect() as conn:
        return {table: int(conn.execute(text("SELECT pg_total_relation_size(CAST(:t AS regclass))"),
                                        {"t": table}).scalar())
                for table in ("service_log_leaves", "service_log_nodes")}


def measure_at_size(n: int, batch: int, samples: int, rng: random.Random) -> dict:
    with fresh_database("postgres") as db:
        grown = grow(db, n, batch)
        log("  checking roots, then proofs")
        result = {"growth": grown.stats, "roots": check_roots(grown), "log2_n": round(math.log2(n), 2),
                  "inclusion": inclusion_latency(grown, samples, rng),
                  "consistency": consistency_latency(grown, samples, rng),
                  "table_bytes": pg_table_bytes(db)}
        result["checkpoint"] = checkpoint_latency(grown, reps=50)
        return result


# ------------------------------------------------------------------ SQLite at size
def sqlite_at_sizes(sizes: Sequence[int], samples: int, rng: random.Random) -> list[dict]:
    """Inclusion and one-leaf append latency of a SQLite log as it grows."""
    rows = []
    with fresh_database("sqlite") as db:
        tlog = new_log(db)
        append = stored_append(db, tlog)
        for target in sizes:
            while (size := tlog.size()) < target:
                append(make_leaves(size, min(10_000, target - size)))
            inclusion = [timed(tlog.inclusion, rng.randrange(target), target)[0] for _ in range(samples)]
            one_leaf = [timed(append, make_leaves(tlog.size(), 1))[0] for _ in range(min(samples, 30))]
            rows.append({"leaves": target, "inclusion": percentiles_ms(inclusion),
                         "one_leaf_append": percentiles_ms(one_leaf)})
            log(f"  sqlite at {target:,}: inclusion p50 {rows[-1]['inclusion']['p50_ms']} ms")
    return rows


# ------------------------------------------------------------------ report
def machine() -> dict:
    from sqlalchemy import create_engine

    from tests.store_fixtures import PG_URL

    engine = create_engine(PG_URL)
    with engine.connect() as conn:
        pg_version = conn.execute(text("SHOW server_version")).scalar()
    engine.dispose()
    from importlib.metadata import PackageNotFoundError, version

    try:
        pymerkle_version = version("pymerkle")
    except PackageNotFoundError:
        pymerkle_version = None
    return {"cpus": os.cpu_count(), "machine": platform.platform(), "python": platform.python_version(),
            "postgresql": pg_version, "sqlite": sqlite3.sqlite_version, "pymerkle": pymerkle_version}


def print_table(result: dict) -> None:
    print("\nappends (leaves/s; peer: the leaf rows alone)")
    print(f"{'backend':<9} {'batch':>5} {'log':>9} {'ms/tx':>8} {'naive':>9} {'log/naive':>9}")
    for row in result["appends"]:
        print(f"{row['backend']:<9} {row['batch']:>5} {row['log']['leaves_per_s']:>9.0f} "
              f"{row['log']['ms_per_transaction']:>8.2f} {row['naive']['leaves_per_s']:>9.0f} "
              f"{row['ratio_log_over_naive']:>9.2f}")
    at = result["at_size"]
    n = at["growth"]["leaves"]
    print(f"\nPostgreSQL log of {n:,} leaves (log2 n = {at['log2_n']}); grown at "
          f"{at['growth']['store_leaves_per_s']:.0f} leaves/s in batches of {at['growth']['batch']:,}")
    print(f"{'operation':<24} {'p50 ms':>8} {'p95 ms':>8} {'pymerkle p50':>13} {'p95':>8} {'hashes (mean/max)':>18}")
    for name in ("inclusion", "consistency"):
        row, peer = at[name], at[name]["pymerkle"] or {}
        print(f"{name + ' proof':<24} {row['log']['p50_ms']:>8.2f} {row['log']['p95_ms']:>8.2f} "
              f"{peer.get('p50_ms', float('nan')):>13.3f} {peer.get('p95_ms', float('nan')):>8.3f} "
              f"{row['hashes']['mean']:>11} / {row['hashes']['max']}")
    cp = at["checkpoint"]
    print(f"{'checkpoint (sign+store)':<24} {cp['checkpoint']['p50_ms']:>8.2f} {cp['checkpoint']['p95_ms']:>8.2f}")
    print(f"{'  of which root':<24} {cp['root_only']['p50_ms']:>8.2f} {cp['root_only']['p95_ms']:>8.2f}")
    print(f"{'  of which Ed25519':<24} {cp['ed25519_sign_only']['p50_ms']:>8.3f} "
          f"{cp['ed25519_sign_only']['p95_ms']:>8.3f}")
    print("\nSQLite log as it grows")
    for row in result["sqlite_at_size"]:
        print(f"  {row['leaves']:>9,} leaves: inclusion p50 {row['inclusion']['p50_ms']:.2f} ms, "
              f"p95 {row['inclusion']['p95_ms']:.2f} ms; one-leaf append p50 {row['one_leaf_append']['p50_ms']:.2f} ms")
    print("\ntargets: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in result["targets"].items()))


def targets(result: dict) -> dict[str, bool]:
    batched = [r for r in result["appends"] if r["backend"] == "postgres" and r["batch"] >= 100]
    inclusion = result["at_size"]["inclusion"]["log"]
    return {"postgres batched >= 2000 leaves/s": all(r["log"]["leaves_per_s"] >= TARGET_LEAVES_PER_S
                                                     for r in batched),
            "inclusion p95 < 20 ms": inclusion["p95_ms"] < TARGET_INCLUSION_MS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=1_000_000, help="size of the PostgreSQL log for proofs")
    parser.add_argument("--grow-batch", type=int, default=10_000, help="leaves per transaction while growing")
    parser.add_argument("--samples", type=int, default=300, help="random leaves / old sizes per proof latency")
    parser.add_argument("--sqlite-leaves", type=int, default=100_000, help="largest SQLite log measured")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every part")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    transactions = {1: 300, 100: 40, 1000: 10}
    if args.quick:
        args.leaves, args.grow_batch, args.samples, args.sqlite_leaves = 20_000, 2_000, 50, 5_000
        transactions = {1: 30, 100: 5, 1000: 3}
    rng = random.Random(args.seed)
    result: dict = {"args": vars(args), "machine": machine(), "load_average_before": os.getloadavg()}
    started = time.perf_counter()
    log("appends")
    result["appends"] = [row for backend in ("postgres", "sqlite") for row in measure_appends(backend, transactions)]
    log(f"growing a PostgreSQL log to {args.leaves:,} leaves")
    result["at_size"] = measure_at_size(args.leaves, args.grow_batch, args.samples, rng)
    log("SQLite")
    result["sqlite_at_size"] = sqlite_at_sizes([args.sqlite_leaves // 10, args.sqlite_leaves], 100, rng)
    result["targets"] = targets(result)
    result["load_average_after"] = os.getloadavg()
    result["seconds"] = round(time.perf_counter() - started, 1)
    print_table(result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = RESULTS.with_name("transparency_log_quick.json") if args.quick else RESULTS
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
