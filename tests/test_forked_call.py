"""A call in a forked child (offline_precompute.certify.ForkedCall): the hybrid prover's region enumeration and
bound search each run in one, stopped at a deadline or as soon as their answer is no longer wanted."""
from __future__ import annotations

import os
import time

import pytest

from fairness.errors import CertificationError
from offline_precompute.certify import ForkedCall


class Unpicklable(Exception):
    def __init__(self, message, handle):
        super().__init__(message)
        self.handle = handle

    def __reduce__(self):
        raise TypeError("cannot cross a pipe")


def _raise_unpicklable():
    raise Unpicklable("bad", lambda: None)


def test_the_answer_arrives_from_the_child():
    with ForkedCall(pow, 2, 10) as call:
        assert call.answer(time.monotonic() + 30) == (True, 1024)


def test_the_childs_error_is_raised_in_the_parent():
    with ForkedCall(int, "not a number") as call, pytest.raises(ValueError, match="not a number"):
        call.answer(time.monotonic() + 30)


def test_an_error_that_cannot_cross_the_pipe_arrives_in_words():
    with ForkedCall(_raise_unpicklable) as call, pytest.raises(CertificationError, match="Unpicklable: bad"):
        call.answer(time.monotonic() + 30)


def test_past_the_deadline_nothing_arrives_and_closing_stops_the_child():
    call = ForkedCall(time.sleep, 30)
    start = time.monotonic()
    assert call.answer(start + 0.2) == (False, None)
    call.close()
    assert time.monotonic() - start < 5 and not call._child.is_alive()


def test_a_child_that_dies_without_an_answer_gives_none():
    with ForkedCall(os._exit, 3) as call:
        assert call.answer(time.monotonic() + 30) == (False, None)


def _touch(path: str) -> str:
    with open(path, "w") as fh:
        fh.write("ran")
    return path


def test_a_call_closed_within_its_delay_never_runs(tmp_path):
    """The hybrid prover's bound search sleeps a grace first: closed before it ends, the function never runs
    (no CPU spent); the twin, waited for, runs after the delay and answers."""
    marker = tmp_path / "ran"
    start = time.monotonic()
    with ForkedCall(_touch, str(marker), delay=5.0) as call:
        assert call.answer(start + 0.2) == (False, None)
    time.sleep(0.2)
    assert not marker.exists() and time.monotonic() - start < 3
    with ForkedCall(_touch, str(marker), delay=0.3) as call:
        assert call.answer(time.monotonic() + 30) == (True, str(marker))
    assert marker.read_text() == "ran" and time.monotonic() - start >= 0.5
