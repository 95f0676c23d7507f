"""The job runner's failure policy, with a prover that fails on purpose.

A failure of the bank's side is reported to the customer without internals
(no paths, no key names); an unexpected exception hands the job back to be
retried rather than failing it.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from circuits.errors import CircuitError
from fairness.errors import DataError
from prover_service.service.database import open_service_database
from prover_service.service.jobs import CERTIFICATE, JobLedger
from prover_service.service.runner import JobRunner
from prover_service.service.schema import ServedModel
from prover_service.service.transparency_log import TransparencyLog
from transparency import note


@dataclass
class _FailingProver:
    error: Exception

    def prove(self, query, on_stage, persistence_delta=None):
        on_stage("proving", 0.5)
        raise self.error


@dataclass
class _Loaded:
    commitment: str = "1"


class _Registry:
    def __init__(self, error: Exception):
        self.error = error

    def get(self, model_id):
        return _Loaded()

    def prover(self, model_id, radius=None):
        self.radius = radius
        return _FailingProver(self.error)


@pytest.fixture
def ledger(tmp_path):
    db = open_service_database(f"sqlite:///{tmp_path / 'service.sqlite'}")
    with db.transaction() as session:
        session.add(ServedModel(model_id="m", directory="m", commitment="1", card_digest="d" * 64))
    signer = note.Signer.from_key(note.generate_key("runner.test/log")[0])
    yield JobLedger(db, TransparencyLog(db, signer), lease_seconds=30)
    db.dispose()


def _run(ledger, error: Exception):
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    outcome = JobRunner(ledger, _Registry(error), "tester").run(job.id)
    return outcome, ledger.get(job.id)


def test_the_job_is_proved_in_the_radius_mode_its_request_names(ledger):
    """A request's mode reaches the registry's prover; a request naming none gets the service's (None here)."""
    for request, expected in (({"radius": "bound"}, "bound"), ({}, None)):
        registry = _Registry(DataError("stop here"))
        job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2], **request}, decision=0, card_digest="d" * 64)
        assert JobRunner(ledger, registry, "tester").run(job.id) == "failed"
        assert registry.radius == expected


def test_bank_side_failures_reach_the_customer_without_internals(ledger):
    outcome, job = _run(ledger, CircuitError("proving key in /srv/bank/secret/keys/k4-f4 is corrupt"))
    assert outcome == "failed" and job.status == "failed"
    assert "/srv/bank" not in job.error and "internal error" in job.error


def test_problems_with_the_record_are_explained(ledger):
    outcome, job = _run(ledger, DataError("feature 'age' = -3 lies outside the model's domain box"))
    assert outcome == "failed" and "outside the model's domain box" in job.error


def test_unexpected_errors_hand_the_job_back_for_a_retry(ledger):
    outcome, job = _run(ledger, ConnectionResetError("database went away"))
    assert outcome == "queued" and job.status == "queued" and job.attempts == 1
    assert ledger.resumable() == [job.id]


def test_an_exact_radius_the_card_cannot_prove_fails_the_job_with_the_reason(ledger):
    from prover_service.proving import ExactRadiusUnavailable

    outcome, job = _run(ledger, ExactRadiusUnavailable("model m proves exact radii only (its card publishes no "
                                                       "fast bucket) ... /srv/bank/keys"))
    assert outcome == "failed" and job.status == "failed" and job.attempts == 1
    assert "exact radii only" in job.error and "no exact-radius certificate" in job.error and "/srv" not in job.error


def test_a_missing_bucket_fails_the_customers_job_with_a_retry_hint_and_queues_one_setup(ledger):
    """Keys are never set up inside a customer's job: one admin job per bucket is queued instead."""
    from types import SimpleNamespace

    from prover_service.bucket_keys import KeysNotReady
    from prover_service.service.jobs import KEY_SETUP

    missing = KeysNotReady(SimpleNamespace(bucket="k16-f64", region_slots=16, farkas_slots=64, radius="fast",
                                          per_slice=False))

    first, job = _run(ledger, missing)
    assert first == "failed" and job.error.startswith("retry later: the keys of this certificate's circuit "
                                                      "(bucket k16-f64) are not set up yet")
    assert job.result["retry_after_seconds"] > 0
    setups = [j for j in (ledger.get(i) for i in ledger.resumable()) if j.kind == KEY_SETUP]
    assert len(setups) == 1 and setups[0].request == {"region_slots": 16, "farkas_slots": 64, "radius": "fast"}
    assert job.result["key_setup_job_id"] == setups[0].id
    # A second customer needing the same bucket while it is being set up queues nothing new.
    _, second = _run(ledger, missing)
    assert second.result["key_setup_job_id"] == setups[0].id
    assert [j.id for j in (ledger.get(i) for i in ledger.resumable()) if j.kind == KEY_SETUP] == [setups[0].id]


def test_a_prover_keeps_at_most_its_hot_keys_least_recently_used_first():
    from types import SimpleNamespace

    from prover_service.key_store import BucketKeys, HotKeys

    hot = HotKeys(2)  # a prover's key store holds its bucket keys in one of these
    keys = {name: BucketKeys(SimpleNamespace(bucket=name), None, None, None) for name in ("k4-f4", "k16-f4", "k16-f16")}
    hot.put(keys["k4-f4"])
    hot.put(keys["k16-f4"])
    assert hot.get("k4-f4") is keys["k4-f4"]  # k4-f4 used again
    hot.put(keys["k16-f16"])
    assert hot.buckets() == ["k4-f4", "k16-f16"]  # k16-f4, the least recently used, was dropped
    assert hot.get("k16-f4") is None


def test_a_key_cache_of_no_keys_is_refused():
    from fairness.errors import ModelError
    from prover_service.key_store import HotKeys

    with pytest.raises(ModelError, match="at least 1"):
        HotKeys(0)


# --- restarts and shutdown --------------------------------------------------------------------------

def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_worker_name_of_a_dead_process_on_this_host_is_orphaned():
    import os
    import socket

    from prover_service.service.runner import orphaned_on_this_host, worker_name

    host = socket.gethostname()
    assert orphaned_on_this_host(f"prover-0@{host}:{_dead_pid()}:abcdef")
    assert orphaned_on_this_host(f"worker@{host}:{os.getpid()}:abcdef")  # a predecessor with our pid
    assert not orphaned_on_this_host(f"worker@{host}:{os.getppid()}:abcdef")  # alive
    assert not orphaned_on_this_host(f"worker@another-host:{_dead_pid()}:abcdef")  # can't tell: wait the lease
    assert not orphaned_on_this_host("garbage") and not orphaned_on_this_host(worker_name("x").replace(":", ";"))


def test_a_restarted_service_resumes_its_predecessors_job_at_once(ledger):
    """kill -9 mid-proof: the job is RUNNING under a lease that has not run out; the restart takes it back."""
    import asyncio
    import socket
    import time

    from prover_service.service.dispatch import InProcessDispatcher

    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    assert ledger.claim(job.id, f"prover-0@{socket.gethostname()}:{_dead_pid()}:abcdef") is not None
    assert ledger.resumable() == []  # leased for another 30 s

    started = time.monotonic()
    dispatcher = InProcessDispatcher(ledger, _Registry(DataError("record refused")), workers=1)
    asyncio.run(dispatcher.start())
    while ledger.get(job.id).status in ("queued", "running") and time.monotonic() - started < 5:
        time.sleep(0.05)
    asyncio.run(dispatcher.stop())
    assert ledger.get(job.id).status == "failed" and time.monotonic() - started < 5  # taken up and run


def test_stopping_finishes_the_job_in_flight_and_leaves_the_queue_for_the_next_start(ledger):
    import asyncio
    import threading
    import time

    from prover_service.service.dispatch import InProcessDispatcher

    release = threading.Event()

    class _SlowProver:
        def prove(self, query, on_stage, persistence_delta=None):
            release.wait(5)
            raise DataError("done")

    class _SlowRegistry(_Registry):
        def prover(self, model_id, radius=None):
            return _SlowProver()

    jobs = [ledger.submit(CERTIFICATE, "m", {"query": [i]}, decision=0, card_digest="d" * 64) for i in range(25)]
    dispatcher = InProcessDispatcher(ledger, _SlowRegistry(None), workers=1)
    asyncio.run(dispatcher.start())
    while not any(ledger.get(j.id).status == "running" for j in jobs):
        time.sleep(0.02)
    threading.Timer(0.3, release.set).start()
    started = time.monotonic()
    asyncio.run(dispatcher.stop())
    assert time.monotonic() - started < 3
    statuses = [ledger.get(j.id).status for j in jobs]
    assert statuses.count("failed") == 1 and statuses.count("queued") == 24  # the rest wait for the restart
    assert len(ledger.resumable()) == 24


def test_a_proof_still_running_at_the_stop_deadline_is_handed_back_without_counting_the_attempt(ledger):
    import asyncio
    import threading
    import time

    from prover_service.service.dispatch import InProcessDispatcher

    never = threading.Event()

    class _StuckProver:
        def prove(self, query, on_stage, persistence_delta=None):
            on_stage("proving", 0.5)
            never.wait(30)
            raise DataError("too late")

    class _StuckRegistry(_Registry):
        def prover(self, model_id, radius=None):
            return _StuckProver()

    jobs = [ledger.submit(CERTIFICATE, "m", {"query": [i]}, decision=0, card_digest="d" * 64) for i in range(3)]
    dispatcher = InProcessDispatcher(ledger, _StuckRegistry(None), workers=1, stop_seconds=0.5)
    asyncio.run(dispatcher.start())
    while not any(ledger.get(j.id).status == "running" for j in jobs):
        time.sleep(0.02)
    started = time.monotonic()
    asyncio.run(dispatcher.stop())
    assert time.monotonic() - started < 2  # the deadline, not the proof, ended the stop
    views = [ledger.get(j.id) for j in jobs]
    assert [v.status for v in views] == ["queued"] * 3 and all(v.attempts == 0 for v in views)
    assert sorted(ledger.resumable()) == sorted(j.id for j in jobs)  # the next start takes them all up
    never.set()


@pytest.mark.parametrize("outage", ["database", "disk"])
def test_a_database_or_disk_outage_hands_the_job_back_keeping_its_attempts(ledger, monkeypatch, outage):
    import errno

    from sqlalchemy.exc import OperationalError

    from prover_service.service import runner

    monkeypatch.setattr(runner, "OUTAGE_PAUSE_SECONDS", 0.0)
    error = (OperationalError("INSERT", {}, ConnectionRefusedError("connection refused")) if outage == "database"
             else OSError(errno.ENOSPC, "No space left on device"))
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    for _ in range(ledger.max_attempts + 2):  # more outages than attempts: the job still waits for the next try
        assert JobRunner(ledger, _Registry(error), "tester").run(job.id) == "queued"
    view = ledger.get(job.id)
    assert view.status == "queued" and view.attempts == 0
    # Any other error counts: a job that keeps failing so gives up after its attempts.
    for _ in range(ledger.max_attempts):
        JobRunner(ledger, _Registry(RuntimeError("bug")), "tester").run(job.id)
    assert JobRunner(ledger, _Registry(RuntimeError("bug")), "tester").run(job.id) is None
    assert ledger.get(job.id).status == "failed"


def test_the_queue_caps_hold_for_submissions_arriving_together(ledger):
    from concurrent.futures import ThreadPoolExecutor

    from prover_service.service.jobs import QueueCaps, QueueFull

    def submit(i: int) -> str:
        try:
            ledger.submit(CERTIFICATE, "m", {"query": [i]}, decision=0, card_digest="d" * 64, caps=QueueCaps(3, 100))
            return "accepted"
        except QueueFull as exc:
            return exc.detail

    with ThreadPoolExecutor(max_workers=12) as pool:
        outcomes = list(pool.map(submit, range(12)))
    assert outcomes.count("accepted") == 3, outcomes
    assert outcomes.count("model m has 3 certificates waiting") == 9
    assert ledger.backlog(CERTIFICATE, "m") == 3 and ledger.log.size() == 3  # refused: no job, no log leaf


def test_a_job_offered_while_a_dead_workers_lease_runs_is_waited_for(tmp_path):
    """The queue offers a dead worker's job again before its lease ends: the next worker waits out the lease
    (at most one) and takes the job, instead of dropping it until a sweep queues it behind everything."""
    db = open_service_database(f"sqlite:///{tmp_path / 'service.sqlite'}")
    with db.transaction() as session:
        session.add(ServedModel(model_id="m", directory="m", commitment="1", card_digest="d" * 64))
    ledger = JobLedger(db, TransparencyLog(db, note.Signer.from_key(note.generate_key("runner.test/log")[0])),
                       lease_seconds=1)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    assert ledger.claim(job.id, "killed") is not None  # the worker dies holding it
    started = time.monotonic()
    outcome = JobRunner(ledger, _Registry(DataError("the record is not in the box")), "survivor").run(job.id)
    assert outcome == "failed" and ledger.get(job.id).attempts == 2  # taken and run, not dropped
    assert 0.5 < time.monotonic() - started < 5
    db.dispose()


def test_a_job_whose_worker_lives_is_left_to_it(tmp_path):
    db = open_service_database(f"sqlite:///{tmp_path / 'service.sqlite'}")
    with db.transaction() as session:
        session.add(ServedModel(model_id="m", directory="m", commitment="1", card_digest="d" * 64))
    ledger = JobLedger(db, TransparencyLog(db, note.Signer.from_key(note.generate_key("runner.test/log")[0])),
                       lease_seconds=1)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    assert ledger.claim(job.id, "alive") is not None
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(0.2):
            ledger.renew(job.id, "alive")

    beating = threading.Thread(target=beat)
    beating.start()
    try:
        assert JobRunner(ledger, _Registry(DataError("x")), "other").run(job.id) is None
        view = ledger.get(job.id)
        assert view.status == "running" and view.attempts == 1
    finally:
        stop.set()
        beating.join()
    db.dispose()


def _flaky_release(ledger, monkeypatch, failures: int) -> list[float]:
    """ledger.release failing `failures` times as a database outage does, then working; returns call times."""
    from sqlalchemy.exc import OperationalError

    calls: list[float] = []
    real = ledger.release

    def release(*args, **kwargs):
        calls.append(time.monotonic())
        if len(calls) <= failures:
            raise OperationalError("UPDATE", {}, ConnectionRefusedError("connection refused"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ledger, "release", release)
    return calls


def test_a_job_is_handed_back_as_soon_as_the_database_returns_however_long_it_was_gone(ledger, monkeypatch):
    from prover_service.service import runner

    monkeypatch.setattr(runner, "RELEASE_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(runner, "OUTAGE_PAUSE_SECONDS", 30.0)  # taken only when the database never went away
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    worker = JobRunner(ledger, _Registry(DataError("x")), "tester")
    assert ledger.claim(job.id, "tester") is not None
    calls = _flaky_release(ledger, monkeypatch, failures=200)  # far beyond any backoff's give-up
    started = time.monotonic()
    worker._release_after_outage(job.id, "OperationalError: connection refused")
    assert len(calls) == 201 and time.monotonic() - started < 15  # no pause after a real outage
    view = ledger.get(job.id)
    assert view.status == "queued" and view.attempts == 0  # refunded: the outage counts no attempt


def test_a_database_that_answers_at_once_gets_the_pause(ledger, monkeypatch):
    from prover_service.service import runner

    monkeypatch.setattr(runner, "OUTAGE_PAUSE_SECONDS", 0.5)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    assert ledger.claim(job.id, "tester") is not None
    started = time.monotonic()
    JobRunner(ledger, _Registry(DataError("x")), "tester")._release_after_outage(job.id, "a blip")
    assert time.monotonic() - started >= 0.5 and ledger.get(job.id).status == "queued"
