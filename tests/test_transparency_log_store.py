"""The transparency log as stored in the service database, on SQLite and on PostgreSQL.

Every root and proof the store serves is compared with a naive in-memory
transcription of RFC 9162 2.1 written here (recursive MTH, PATH and PROOF
over the leaf hashes, sharing no code with `transparency.merkle`) and checked
with merkle.verify_*; concurrent appenders leave no gap and no duplicate;
the stored leaves, nodes and checkpoints refuse UPDATE and DELETE; every
checkpoint is signed, parses and is consistent with every later one.
"""
from __future__ import annotations

import contextlib
import hashlib
import random
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from commitments.log import (CardPublished, CertificateCommitted, CertificateIssued, DecisionRequested, LogEntry,
                             leaf_bytes)
from prover_service.service.database import ServiceDatabase, open_service_database
from prover_service.service.errors import BadRequest, NotFound
from prover_service.service.transparency_log import LogCorrupt, TransparencyLog
from tests.service_fixtures import fresh_pg_database
from tests.log_fixtures import subtree_hashes
from transparency import merkle, note
from transparency.checkpoint import Checkpoint

ORIGIN = "store.test/log"
Leaf = CardPublished | DecisionRequested | CertificateCommitted | CertificateIssued


# ------------------------------------------------------------------ fixtures
@contextlib.contextmanager
def _database_url(kind: str, tmp_path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'service.sqlite'}"
    else:
        with fresh_pg_database() as url:
            yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path) -> Iterator[ServiceDatabase]:
    with _database_url(request.param, tmp_path) as url:
        database = open_service_database(url)
        yield database
        database.dispose()


@pytest.fixture(scope="module")
def signer() -> note.Signer:
    return note.Signer.from_key(note.generate_key(ORIGIN)[0])


@pytest.fixture
def log(db, signer) -> TransparencyLog:
    return TransparencyLog(db, signer)


# ------------------------------------------------------------------ leaves
def make_leaf(i: int) -> Leaf:
    """The i-th leaf of a test log: the three kinds in turn, each with distinct content."""
    request_id = str(uuid.UUID(int=i + 1))
    digest = hashlib.sha256(b"card %d" % (i // 3)).hexdigest()
    if i % 3 == 0:
        return CardPublished(model_id="m", commitment=str(1000 + i), card_digest=digest)
    if i % 3 == 1:
        return DecisionRequested(model_id="m", card_digest=digest, request_id=request_id, decision=i % 2)
    return CertificateCommitted(model_id="m", card_digest=digest, bucket="k4-f4", request_id=request_id, decision=i % 2,
                                status="certified", eps_numerator=i, eps_scale_bits=16, capped=False,
                                signals_commitment=hashlib.sha256(b"signals %d" % i).hexdigest())


def old_certificate(i: int) -> CertificateIssued:
    """The certificate leaf the service appended before salted leaves: its public signals (a query) in clear."""
    return CertificateIssued(model_id="m", card_digest=hashlib.sha256(b"card %d" % (i // 3)).hexdigest(),
                             bucket="k4-f4", public_signals=(str(i), "1", "424242"), request_id=str(uuid.UUID(int=i + 1)))


def append_batch(db: ServiceDatabase, log: TransparencyLog, leaves: Sequence[Leaf]) -> list[int]:
    with db.transaction() as session:
        return log.append(session, leaves)


# ------------------------------------------------------------------ RFC 9162 2.1, transcribed
class NaiveTree:
    """MTH, PATH and PROOF of RFC 9162 2.1.1, 2.1.3.1 and 2.1.4.1, recursively over the leaf hashes.

    MTH of a range never changes once its leaves exist, so it is memoised by
    range; that keeps checking every size of a few hundred leaves quick.
    """

    def __init__(self) -> None:
        self.leaves: list[bytes] = []
        self._memo: dict[tuple[int, int], bytes] = {}

    def append(self, data: bytes) -> None:
        self.leaves.append(hashlib.sha256(b"\x00" + data).digest())

    @staticmethod
    def _split(n: int) -> int:
        """k: the largest power of two smaller than n (n >= 2)."""
        k = 1
        while k * 2 < n:
            k *= 2
        return k

    def mth(self, lo: int, hi: int) -> bytes:
        if hi == lo:
            return hashlib.sha256(b"").digest()
        if hi - lo == 1:
            return self.leaves[lo]
        if (lo, hi) not in self._memo:
            k = self._split(hi - lo)
            self._memo[lo, hi] = hashlib.sha256(b"\x01" + self.mth(lo, lo + k) + self.mth(lo + k, hi)).digest()
        return self._memo[lo, hi]

    def path(self, m: int, lo: int, hi: int) -> list[bytes]:
        """PATH(m, D[lo:hi]) with m counted from lo."""
        if hi - lo == 1:
            return []
        k = self._split(hi - lo)
        if m < k:
            return self.path(m, lo, lo + k) + [self.mth(lo + k, hi)]
        return self.path(m - k, lo + k, hi) + [self.mth(lo, lo + k)]

    def proof(self, m: int, n: int) -> list[bytes]:
        """PROOF(m, D[0:n]); empty for m == 0 and m == n."""
        return [] if m in (0, n) else self._subproof(m, 0, n, True)

    def _subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        if m == hi - lo:
            return [] if whole else [self.mth(lo, hi)]
        k = self._split(hi - lo)
        if m <= k:
            return self._subproof(m, lo, lo + k, whole) + [self.mth(lo + k, hi)]
        return self._subproof(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]


def stored_rows(db: ServiceDatabase, table: str, columns: str) -> list[tuple]:
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT {columns} FROM {table}"))]


expected_nodes = subtree_hashes


# ------------------------------------------------------------------ roots and proofs
def _check_at_size(log: TransparencyLog, tree: NaiveTree, size: int) -> None:
    """At `size`: the root, every leaf's inclusion proof and the consistency proof from every smaller size."""
    root = log.root(size)
    assert root == tree.mth(0, size)
    for index in range(size):
        proof = [bytes.fromhex(h) for h in log.inclusion(index, size).proof]
        assert proof == tree.path(index, 0, size), (index, size)
        merkle.verify_inclusion(tree.leaves[index], index, size, proof, root)
    for old in range(size + 1):
        proof = [bytes.fromhex(h) for h in log.consistency(old, size).proof]
        assert proof == tree.proof(old, size), (old, size)
        merkle.verify_consistency(old, size, tree.mth(0, old), root, proof)


@pytest.mark.parametrize("seed", [1, 2])
def test_batches_of_random_sizes_give_the_rfc_roots_and_proofs_at_every_size(db, log, seed):
    rng = random.Random(seed)
    tree = NaiveTree()
    assert log.size() == 0 and log.root(0) == merkle.EMPTY_ROOT
    while len(tree.leaves) < 70:
        start = len(tree.leaves)
        leaves = [make_leaf(i) for i in range(start, start + rng.randint(1, 17))]
        assert append_batch(db, log, leaves) == list(range(start, start + len(leaves)))
        for leaf in leaves:
            tree.append(leaf_bytes(leaf))
        assert log.size() == len(tree.leaves)
        _check_at_size(log, tree, len(tree.leaves))
    # Sizes between the batches were never the head: the stored nodes still give them.
    for size in range(1, len(tree.leaves) + 1):
        assert log.root(size) == tree.mth(0, size)
        index = rng.randrange(size)
        assert [bytes.fromhex(h) for h in log.inclusion(index, size).proof] == tree.path(index, 0, size)
        old = rng.randint(0, size)
        assert [bytes.fromhex(h) for h in log.consistency(old, size).proof] == tree.proof(old, size)


def test_large_batches_cross_many_subtree_boundaries(db, log):
    """Batches far larger than the frontier: a 300-leaf batch completes subtrees up to level 8 at once."""
    tree = NaiveTree()
    for count in (5, 300, 211, 1, 507):
        start = len(tree.leaves)
        leaves = [make_leaf(i) for i in range(start, start + count)]
        append_batch(db, log, leaves)
        for leaf in leaves:
            tree.append(leaf_bytes(leaf))
        size = len(tree.leaves)
        assert log.root(size) == tree.mth(0, size)
        for index in (0, start, size // 2, size - 1):
            assert [bytes.fromhex(h) for h in log.inclusion(index, size).proof] == tree.path(index, 0, size)
        for old in (1, start, size - 1):
            assert [bytes.fromhex(h) for h in log.consistency(old, size).proof] == tree.proof(old, size)
    hashes = stored_rows(db, "service_log_leaves", "leaf_hash")
    assert sorted(bytes(h) for (h,) in hashes) == sorted(tree.leaves)
    nodes = {(lv, ix): bytes(h) for lv, ix, h in stored_rows(db, "service_log_nodes", "level, idx, hash")}
    assert nodes == expected_nodes(tree.leaves)


def test_a_stored_proof_fails_against_another_root_or_another_leaf(db, log):
    tree = NaiveTree()
    leaves = [make_leaf(i) for i in range(23)]
    append_batch(db, log, leaves)
    for leaf in leaves:
        tree.append(leaf_bytes(leaf))
    root13, root23 = log.root(13), log.root(23)
    proof = [bytes.fromhex(h) for h in log.inclusion(6, 23).proof]
    merkle.verify_inclusion(tree.leaves[6], 6, 23, proof, root23)
    with pytest.raises(merkle.InvalidProof):
        merkle.verify_inclusion(tree.leaves[6], 6, 23, proof, root13)  # another root
    with pytest.raises(merkle.InvalidProof):
        merkle.verify_inclusion(tree.leaves[7], 6, 23, proof, root23)  # another leaf at that index
    with pytest.raises(merkle.InvalidProof):
        merkle.verify_inclusion(tree.leaves[6], 7, 23, proof, root23)  # the leaf claimed at another index
    consistency = [bytes.fromhex(h) for h in log.consistency(13, 23).proof]
    merkle.verify_consistency(13, 23, root13, root23, consistency)
    with pytest.raises(merkle.InvalidProof):
        merkle.verify_consistency(13, 23, log.root(12), root23, consistency)  # another old root
    with pytest.raises(merkle.InvalidProof):
        merkle.verify_consistency(13, 23, root13, log.root(22), consistency)  # another new root


def test_find_gives_the_first_index_of_a_leaf_hash_within_the_tree_size(db, log):
    leaves = [make_leaf(0), make_leaf(1), make_leaf(0), make_leaf(2)]  # leaf 0's hash twice
    append_batch(db, log, leaves)
    first = merkle.leaf_hash(leaf_bytes(leaves[0]))
    assert log.find(first, 4) == 0
    assert log.find(merkle.leaf_hash(leaf_bytes(leaves[3])), 4) == 3
    with pytest.raises(NotFound):
        log.find(merkle.leaf_hash(leaf_bytes(leaves[3])), 3)  # not in the tree of 3 leaves
    with pytest.raises(NotFound):
        log.find(merkle.leaf_hash(leaf_bytes(make_leaf(9))), 4)


# ------------------------------------------------------------------ concurrent appenders
THREADS, PER_THREAD, ROLLBACKS = 8, 50, 3


class _Rollback(Exception):
    """Raised inside a transaction after appending, so that it rolls back."""


def _appender(db: ServiceDatabase, log: TransparencyLog, thread: int, committed: dict[int, bytes],
              rolled_back: list[bytes], failures: list[Exception], lock: threading.Lock) -> None:
    try:
        for j in range(PER_THREAD + ROLLBACKS):
            leaf = make_leaf(thread * 1000 + j)
            data = leaf_bytes(leaf)
            if j % 17 == 5 and j // 17 < ROLLBACKS:  # a few transactions that append, then fail
                with contextlib.suppress(_Rollback), db.transaction() as session:
                    log.append(session, [leaf])
                    raise _Rollback
                with lock:
                    rolled_back.append(data)
                continue
            (index,) = append_batch(db, log, [leaf])
            with lock:
                assert index not in committed, f"index {index} handed out twice"
                committed[index] = data
    except Exception as exc:  # reported by the test thread
        failures.append(exc)


def test_concurrent_appenders_leave_no_gap_and_no_duplicate(db, log):
    committed: dict[int, bytes] = {}
    rolled_back: list[bytes] = []
    failures: list[Exception] = []
    lock = threading.Lock()
    threads = [threading.Thread(target=_appender, args=(db, log, t, committed, rolled_back, failures, lock))
               for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    n = THREADS * PER_THREAD
    assert len(rolled_back) == THREADS * ROLLBACKS
    assert sorted(committed) == list(range(n))
    assert log.size() == n
    rows = sorted(stored_rows(db, "service_log_leaves", "idx, data, leaf_hash"))
    assert [r[0] for r in rows] == list(range(n))  # no gap, no duplicate
    assert {r[0]: r[1].encode() for r in rows} == committed  # each leaf at the index its appender was given
    assert not set(rolled_back) & {r[1].encode() for r in rows}
    leaf_hashes = [bytes(r[2]) for r in rows]
    assert leaf_hashes == [merkle.leaf_hash(committed[i]) for i in range(n)]
    nodes = {(lv, ix): bytes(h) for lv, ix, h in stored_rows(db, "service_log_nodes", "level, idx, hash")}
    assert nodes == expected_nodes(leaf_hashes)  # rolled-back appends left no node behind
    tree = NaiveTree()
    for i in range(n):
        tree.append(committed[i])
    assert log.root(n) == tree.mth(0, n)


# ------------------------------------------------------------------ append-only
APPEND_ONLY = {
    "service_log_leaves": ("UPDATE service_log_leaves SET kind = 'forged' WHERE idx = 0",
                           "DELETE FROM service_log_leaves WHERE idx = 1"),
    "service_log_nodes": (("UPDATE service_log_nodes SET hash = (SELECT hash FROM service_log_nodes "
                           "WHERE level = 0 AND idx = 1) WHERE level = 0 AND idx = 0"),
                          "DELETE FROM service_log_nodes WHERE level = 1"),
    "service_log_checkpoints": ("UPDATE service_log_checkpoints SET note = 'forged'",
                                "DELETE FROM service_log_checkpoints"),
    "service_log_cosignatures": ("UPDATE service_log_cosignatures SET line = 'forged'",
                                 "DELETE FROM service_log_cosignatures"),
}


def _snapshot(db: ServiceDatabase, table: str) -> list[tuple]:
    return sorted(stored_rows(db, table, "*"), key=repr)


@pytest.mark.parametrize("table", sorted(APPEND_ONLY))
def test_the_logs_tables_refuse_update_and_delete(db, log, table):
    append_batch(db, log, [make_leaf(i) for i in range(5)])
    log.checkpoint()
    with db.engine.begin() as conn:  # a cosignature row to attack (the log only stores verified ones)
        conn.execute(text("INSERT INTO service_log_cosignatures (size, witness, line, created_at) "
                          "VALUES (5, 'w', 'x', CURRENT_TIMESTAMP)"))
    before = _snapshot(db, table)
    statements = list(APPEND_ONLY[table])
    if db.backend == "postgresql":
        statements.append(f"TRUNCATE {table} CASCADE")  # CASCADE: past the cosignatures' foreign key
    for statement in statements:
        with pytest.raises(DBAPIError, match="append-only"), db.engine.begin() as conn:
            conn.execute(text(statement))
    assert _snapshot(db, table) == before


# ------------------------------------------------------------------ checkpoints
def _open_checkpoint(signed: str, signer: note.Signer) -> Checkpoint:
    """The checkpoint in a signed note, refused unless the log's key signed it."""
    return Checkpoint.parse(note.open(signed, [signer.verifier()]).text)


def test_the_empty_log_checkpoint_has_the_rfc_empty_root(log, signer):
    stored = log.checkpoint()
    body = _open_checkpoint(stored.note, signer)
    assert (stored.size, body.size, body.origin) == (0, 0, ORIGIN)
    assert stored.root_hash == body.root_hash == hashlib.sha256(b"").digest() == merkle.EMPTY_ROOT


def test_one_signed_checkpoint_per_size_each_consistent_with_the_later_ones(db, log, signer):
    other = note.Signer.from_key(note.generate_key(ORIGIN)[0])  # same name, another key
    sizes = [0]
    log.checkpoint()
    for count in (1, 1, 2, 5, 8, 13, 1):
        append_batch(db, log, [make_leaf(sizes[-1] + i) for i in range(count)])
        first, again = log.checkpoint(), log.checkpoint()  # the second call finds the tree unchanged
        assert first == again
        sizes.append(first.size)
    assert sizes == [0, 1, 2, 4, 9, 17, 30, 31]
    rows = stored_rows(db, "service_log_checkpoints", "size, root_hash, note")
    assert sorted(r[0] for r in rows) == sizes  # one row per size
    opened = {}
    for size, root_hash, signed in rows:
        body = _open_checkpoint(signed, signer)
        with pytest.raises(note.NoteError):
            note.open(signed, [other.verifier()])
        assert (body.size, body.root_hash, bytes(root_hash)) == (size, log.root(size), log.root(size))
        assert log.stored_checkpoint(size).note == signed
        opened[size] = body
    for old in sizes:
        for new in sizes:
            if old <= new and new > 0:
                proof = [bytes.fromhex(h) for h in log.consistency(old, new).proof]
                merkle.verify_consistency(old, new, opened[old].root_hash, opened[new].root_hash, proof)
    with pytest.raises(NotFound):
        log.stored_checkpoint(3)
    with pytest.raises(LogCorrupt):
        log.checkpoint(at_least=32)  # the log has 31 leaves: it never appended a 32nd


def test_concurrent_checkpoints_of_one_size_store_one_row(db, log):
    append_batch(db, log, [make_leaf(i) for i in range(7)])
    results, failures = [], []

    def sign() -> None:
        try:
            results.append(log.checkpoint())
        except Exception as exc:  # reported by the test thread
            failures.append(exc)

    threads = [threading.Thread(target=sign) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert len({r.note for r in results}) == 1 and results[0].size == 7
    assert [r[0] for r in stored_rows(db, "service_log_checkpoints", "size")] == [7]


# ------------------------------------------------------------------ refused requests
def test_entries_refuse_ranges_outside_the_log_and_pages_stop_at_1000(db, log):
    leaves = [make_leaf(i) for i in range(1003)]
    append_batch(db, log, leaves)
    for start, end in ((0, 0), (5, 5), (6, 5), (-1, 3), (0, 1004), (1003, 1004), (2000, 2001)):
        with pytest.raises(BadRequest):
            log.entries(start, end)
    assert [e.data for e in log.entries(1000, 1003)] == [leaf_bytes(x).decode() for x in leaves[1000:]]
    page = log.entries(2, 1003)
    assert [e.index for e in page] == list(range(2, 1002))  # one page: at most 1000 entries
    assert all(e.data == leaf_bytes(leaves[e.index]).decode() for e in page)


def test_old_certificate_leaves_are_served_redacted_and_every_other_leaf_in_full(db, log):
    leaves = [make_leaf(0), make_leaf(1), old_certificate(2), make_leaf(3), make_leaf(4), make_leaf(5)]
    append_batch(db, log, leaves)
    entries = log.entries(0, len(leaves))
    old = entries[2]
    assert old == LogEntry(index=2, leaf_hash=merkle.leaf_hash(leaf_bytes(leaves[2])).hex(), redacted="certificate_issued")
    assert "424242" not in old.model_dump_json()  # the hash and the kind, not the signals
    assert [e.data for i, e in enumerate(entries) if i != 2] == [leaf_bytes(x).decode() for i, x in enumerate(leaves)
                                                                   if i != 2]  # twin: the others in full
    # The stored tree is unchanged: the redacted leaf's hash is the one in the tree, its inclusion provable.
    hashes = [bytes.fromhex(e.leaf_hash) if e.data is None else merkle.leaf_hash(e.data.encode()) for e in entries]
    naive = NaiveTree()
    naive.leaves = hashes
    assert naive.mth(0, len(hashes)) == log.root(len(leaves))
    assert log.find(hashes[2], len(leaves)) == 2
    merkle.verify_inclusion(hashes[2], 2, len(leaves), [bytes.fromhex(h) for h in log.inclusion(2, len(leaves)).proof],
                            log.root(len(leaves)))


def test_proofs_refuse_sizes_beyond_the_log(db, log):
    append_batch(db, log, [make_leaf(i) for i in range(9)])
    for index, size in ((0, 10), (0, 0), (9, 9), (-1, 5), (5, 5)):
        with pytest.raises(BadRequest):
            log.inclusion(index, size)
    for old, new in ((0, 10), (9, 10), (5, 4), (-1, 3), (0, 0)):
        with pytest.raises(BadRequest):
            log.consistency(old, new)
    assert log.consistency(0, 9).proof == () and log.consistency(9, 9).proof == ()
    assert len(log.inclusion(8, 9).proof) == 1


# ------------------------------------------------------------------ node lookups use the primary key


def _node_lookups(db: ServiceDatabase, action: Callable[[], object]) -> list[tuple[str, object]]:
    """The SELECTs on service_log_nodes that `action` sends, as the driver receives them."""
    seen: list[tuple[str, object]] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "service_log_nodes" in statement:
            seen.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        action()
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    return seen


def _full_scans(db: ServiceDatabase, statement: str, parameters: object) -> list[str]:
    """The plan lines that read all of service_log_nodes (PostgreSQL: with sequential scans priced out)."""
    with db.engine.begin() as conn:
        if db.backend == "sqlite":
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            return [line for line in plan if re.match(r"SCAN (TABLE )?service_log_nodes\b", line)]
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a tiny table is otherwise always scanned
        plan = [row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement, parameters)]
        return [line for line in plan if "Seq Scan on service_log_nodes" in line]


def test_node_lookups_search_the_primary_key_instead_of_scanning(db, log):
    """Appends, roots and proofs must stay O(log n) lookups however large the log grows."""
    append_batch(db, log, [make_leaf(i) for i in range(37)])
    lookups = _node_lookups(db, lambda: (append_batch(db, log, [make_leaf(37)]), log.root(38),
                                         log.inclusion(5, 38), log.consistency(11, 38)))
    assert len(lookups) == 4
    scans = {statement: _full_scans(db, statement, parameters) for statement, parameters in lookups}
    assert not any(scans.values()), scans
