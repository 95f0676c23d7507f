"""kill -9 in the middle of appends: the stored transparency log stays whole, on SQLite and PostgreSQL.

A child process (this module run with `python -m`) appends batches of 1-20
leaves, one transaction each, while a second thread signs checkpoints; it
is SIGKILLed at random moments and started again. After every kill the
store must hold leaves 0..size-1 with no gap, a head equal to the number of
leaves, exactly the perfect-subtree nodes the leaves give, a root equal to
the one recomputed from the leaves, and only checkpoints consistent with
the tree; a checkpoint signed after the restart must be consistent with the
last one signed before the kill.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from commitments.log import CertificateCommitted, DecisionRequested
from prover_service.service.database import ServiceDatabase, open_service_database
from prover_service.service.transparency_log import StoredCheckpoint, TransparencyLog
from tests.log_fixtures import subtree_hashes
from transparency import merkle, note
from transparency.checkpoint import Checkpoint

REPO = Path(__file__).resolve().parents[1]
ORIGIN = "crash.test/log"
KEY_ENV = "FAIRPROOF_CRASH_TEST_LOG_KEY"
KILLS = 4
READY = "ready"


# ------------------------------------------------------------------ the child: append until killed
def _leaves(rng: random.Random, count: int) -> list[DecisionRequested | CertificateCommitted]:
    """A decision and its certificate, as the service logs them, `count` leaves in all."""
    digest = hashlib.sha256(b"crash test card").hexdigest()
    leaves: list[DecisionRequested | CertificateCommitted] = []
    while len(leaves) < count:
        request_id = str(uuid.UUID(int=rng.getrandbits(128)))
        leaves.append(DecisionRequested(model_id="m", card_digest=digest, request_id=request_id, decision=1))
        leaves.append(CertificateCommitted(model_id="m", card_digest=digest, bucket="k4-f4", request_id=request_id,
                                           decision=1, status="certified", eps_numerator=rng.getrandbits(16),
                                           eps_scale_bits=16, capped=False,
                                           signals_commitment=rng.getrandbits(256).to_bytes(32, "big").hex()))
    return leaves[:count]


def _sign_checkpoints(log: TransparencyLog) -> None:
    """The server's part: sign a checkpoint whenever the tree has grown."""
    while True:
        log.checkpoint()
        time.sleep(0.01)


def child_main(url: str, seed: int) -> None:
    """Append batches of 1-20 leaves, one transaction each, until killed."""
    db = open_service_database(url)
    log = TransparencyLog(db, note.Signer.from_key(os.environ[KEY_ENV]))
    rng = random.Random(seed)
    log.checkpoint()
    threading.Thread(target=_sign_checkpoints, args=(log,), daemon=True).start()
    print(READY, flush=True)
    while True:
        with db.transaction() as session:
            log.append(session, _leaves(rng, rng.randint(1, 20)))


# ------------------------------------------------------------------ the parent
@contextlib.contextmanager
def _database_url(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'service.sqlite'}"
    else:
        from tests.service_fixtures import fresh_pg_database

        with fresh_pg_database() as url:
            yield url


def _start_child(url: str, key: str, seed: int, stderr: Path) -> subprocess.Popen:
    env = {**os.environ, KEY_ENV: key, "PYTHONPATH": str(REPO)}
    with open(stderr, "ab") as errors:  # a file, not a pipe: a chatty child must never block on it
        child = subprocess.Popen([sys.executable, "-m", "tests.test_transparency_crash", url, str(seed)], cwd=REPO,
                                 env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
    line = child.stdout.readline()  # blocks until the child has opened the log and signed once
    if line.strip() != READY:
        child.kill()
        raise AssertionError(f"the appender did not start: {line!r}\n{stderr.read_text()}")
    return child


def _kill(child: subprocess.Popen, stderr: Path) -> None:
    assert child.poll() is None, f"the appender died by itself:\n{stderr.read_text()}"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()


_recomputed_nodes = subtree_hashes


def _recomputed_root(nodes: dict[tuple[int, int], bytes], lo: int, hi: int) -> bytes:
    """MTH(D[lo:hi]) by the RFC 9162 2.1.1 split, reading perfect subtrees off `nodes`."""
    n = hi - lo
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n & (n - 1) == 0:
        return nodes[n.bit_length() - 1, lo // n]
    k = 1 << ((n - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _recomputed_root(nodes, lo, lo + k) + _recomputed_root(nodes, lo + k, hi)).digest()


def _opened(signed: str, verifier: note.Verifier) -> Checkpoint:
    return Checkpoint.parse(note.open(signed, [verifier]).text)


def check_log_is_whole(db: ServiceDatabase, log: TransparencyLog, verifier: note.Verifier) -> int:
    """Every invariant a crash must not break; returns the log's size."""
    with db.engine.connect() as conn:
        leaves = conn.execute(text("SELECT idx, leaf_hash, data FROM service_log_leaves ORDER BY idx")).all()
        head = conn.execute(text("SELECT size FROM service_log_head")).scalars().all()
        stored_nodes = {(r.level, r.idx): bytes(r.hash)
                        for r in conn.execute(text("SELECT level, idx, hash FROM service_log_nodes"))}
        checkpoints = conn.execute(text("SELECT size, root_hash, note FROM service_log_checkpoints")).all()
    size = len(leaves)
    assert [r.idx for r in leaves] == list(range(size)), "leaf indices have a gap or a duplicate"
    assert head == [size], f"head {head} for {size} leaves"
    leaf_hashes = [merkle.leaf_hash(r.data.encode("ascii")) for r in leaves]
    assert [bytes(r.leaf_hash) for r in leaves] == leaf_hashes
    nodes = _recomputed_nodes(leaf_hashes)
    assert stored_nodes == nodes, "the stored subtree nodes differ from those the leaves give"
    root = _recomputed_root(nodes, 0, size)
    assert log.root(size) == root
    assert checkpoints, "not even the first checkpoint was stored"
    for row in checkpoints:
        body = _opened(row.note, verifier)
        assert (body.origin, body.size, body.root_hash) == (ORIGIN, row.size, bytes(row.root_hash))
        assert body.root_hash == _recomputed_root(nodes, 0, body.size)
        if size:
            proof = [bytes.fromhex(h) for h in log.consistency(body.size, size).proof]
            merkle.verify_consistency(body.size, size, body.root_hash, root, proof)
    return size


def _newest_checkpoint(db: ServiceDatabase, log: TransparencyLog) -> StoredCheckpoint:
    with db.engine.connect() as conn:
        size = conn.execute(text("SELECT max(size) FROM service_log_checkpoints")).scalar()
    return log.stored_checkpoint(size)


def _restart_is_consistent(url: str, signer: note.Signer, before: StoredCheckpoint) -> StoredCheckpoint:
    """A log opened afresh signs a checkpoint consistent with the last one signed before the kill."""
    db = open_service_database(url)
    try:
        log = TransparencyLog(db, signer)
        after = log.checkpoint()
        old, new = _opened(before.note, signer.verifier()), _opened(after.note, signer.verifier())
        assert new.size >= old.size
        if new.size:
            proof = [bytes.fromhex(h) for h in log.consistency(old.size, new.size).proof]
            merkle.verify_consistency(old.size, new.size, old.root_hash, new.root_hash, proof)
        return after
    finally:
        db.dispose()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_sigkill_during_appends_leaves_a_whole_log(kind, tmp_path):
    rng = random.Random(20261124)
    skey, _ = note.generate_key(ORIGIN)
    signer = note.Signer.from_key(skey)
    with _database_url(kind, tmp_path) as url:
        open_service_database(url).dispose()  # migrate once, before any child runs
        sizes = []
        for kill in range(KILLS):
            child = _start_child(url, skey, seed=kill, stderr=tmp_path / "appender.log")
            time.sleep(rng.uniform(0.2, 1.2))
            _kill(child, tmp_path / "appender.log")
            db = open_service_database(url)
            try:
                log = TransparencyLog(db, signer)
                sizes.append(check_log_is_whole(db, log, signer.verifier()))
                before = _newest_checkpoint(db, log)
            finally:
                db.dispose()
            after = _restart_is_consistent(url, signer, before)
            assert after.size == sizes[-1]
        assert sizes == sorted(sizes) and sizes[0] > 0, sizes


if __name__ == "__main__":
    child_main(sys.argv[1], int(sys.argv[2]))
