"""Online certification against the precompute store.

`Certifier` holds one model and one store; `certify(query)` runs
`fairness.certificate.certify` with a `StoreRegionOracle`, so every LP answer
GeoCert needs is read from the store (re-checked exactly) and anything missing
is computed with HiGHS and written back in one transaction after the query.
The certificate itself is built and checked by the plaintext layer; the store
only saves LP time, it never decides a cover (`fairness.checker` re-checks
every Farkas certificate and distance from the weights).

Queries are integers at the model's scale (`fairness.fixed_point.quantise_query`
turns a float model input into one); `query_from_index` and
`query_from_record` build them from a test-split row or a raw record.
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from commitments.record import NOT_A_RECORD, read_record_file
from fairness.certificate import CAP, CERTIFIED, COUNTEREXAMPLE, DEFAULT_EPS_BITS, EXACT, FAST, FLIP, Certificate
from fairness.certificate import certify as certify_plain
from fairness.errors import CertificationError, DataError
from fairness.fixed_point import DEFAULT_SCALE_BITS, FixedPointModel, IntVector, quantise_query, to_fixed_point
from offline_precompute.db import Database
from offline_precompute.oracle import OracleStats, StoreRegionOracle


@dataclass(frozen=True)
class CertifyResult:
    certificate: Certificate
    seconds: float
    stats: OracleStats  # store hits / computed misses / rejected rows of this query
    cached_rows: int  # rows written back to the store


class Certifier:
    """Certifies queries of one model from one store.

    With `keep_memo` the oracle keeps the rows it has read across queries (a
    long-running service); queries then run one at a time (a lock guards the
    shared oracle). Without it every query reads the store afresh with its own
    oracle, and concurrent queries run in parallel.
    """

    def __init__(self, db: Database, model: FixedPointModel, *, eps_bits: int = DEFAULT_EPS_BITS,
                 keep_memo: bool = False, cache_misses: bool = True, radius: str = FAST):
        self.db = db
        self.model = model
        self.eps_bits = eps_bits
        self.radius = radius
        self.keep_memo = keep_memo
        self.cache_misses = cache_misses
        self._oracle = StoreRegionOracle(db, model, cache_misses=cache_misses)
        self._lock = threading.Lock()

    @property
    def digest(self) -> str:
        return self._oracle.digest

    def certify(self, query: Sequence[int]) -> CertifyResult:
        if self.keep_memo:
            with self._lock:
                return self._certify(query, self._oracle)
        return self._certify(query, StoreRegionOracle(self.db, self.model, computer=self._oracle.computer,
                                                      cache_misses=self.cache_misses,
                                                      registered_digest=self._oracle.digest))

    def _certify(self, query: Sequence[int], oracle: StoreRegionOracle) -> CertifyResult:
        before = OracleStats(**oracle.stats.as_dict())
        t0 = time.perf_counter()
        try:
            cert = certify_plain(self.model, tuple(query), oracle, eps_bits=self.eps_bits, radius=self.radius)
        finally:
            written = oracle.flush()  # cache what was computed, even if certification failed
        seconds = time.perf_counter() - t0
        after = oracle.stats
        stats = OracleStats(after.hits - before.hits, after.misses - before.misses,
                            after.rejected - before.rejected, after.loads - before.loads)
        return CertifyResult(cert, seconds, stats, written)


def certify(db: Database, model: FixedPointModel, query: Sequence[int], *,
            eps_bits: int = DEFAULT_EPS_BITS, radius: str = FAST) -> CertifyResult:
    """One query through the store (computing and caching whatever is missing)."""
    return Certifier(db, model, eps_bits=eps_bits, radius=radius).certify(query)


# ---------------------------------------------------------------- inputs

def load_fixed_point(model_dir: str | os.PathLike[str], scale_bits: int = DEFAULT_SCALE_BITS):
    """(artifact, fixed-point model) of a model artifact directory."""
    from fairness.errors import ModelError
    from fairness.model import load_artifact

    path = Path(model_dir)
    if not path.is_dir():
        raise ModelError(f"model directory {path} does not exist")
    if scale_bits < 1 or scale_bits > 64:
        raise ModelError(f"scale bits must lie in 1..64, got {scale_bits}")
    artifact = load_artifact(path)
    return artifact, to_fixed_point(artifact, scale_bits)


def test_inputs(artifact, data_dir: str | os.PathLike[str] | None = None):
    """(X_test, y_test) of the artifact's dataset, split as it was for training.

    A model imported under the bank's own schema has no shipped dataset: its
    customers are the rows of a CSV (`data_dir` names the file; by default the
    file its import was checked on), every row in order, through the schema.
    """
    from fairness.datasets import load_dataset
    from fairness.schema import FeatureSchema
    from fairness.schema_csv import read_csv

    if isinstance(artifact.preprocessor, FeatureSchema):
        source = data_dir or (artifact.training or {}).get("data")
        if source is None or not Path(source).is_file():
            raise DataError(f"model {artifact.dataset!r} was imported under its own schema: give its customers' "
                            "data as a CSV file (--data FILE.csv)")
        table = read_csv(artifact.preprocessor, source)
        return table.X, table.y

    names = [f.name for f in artifact.sensitive]
    split_seed = int(artifact.training.get("split_seed", 0)) if artifact.training else 0
    ds = load_dataset(artifact.dataset, data_dir, sensitive=names, seed=split_seed)
    return ds.X_test, ds.y_test


def query_from_index(artifact, model: FixedPointModel, index: int,
                     data_dir: str | os.PathLike[str] | None = None) -> IntVector:
    X, _ = test_inputs(artifact, data_dir)
    if not 0 <= index < len(X):
        raise DataError(f"test index {index} out of range: the {artifact.dataset} test split has {len(X)} rows "
                        "(an imported model's data: its CSV rows, from 0)")
    return quantise_query(model, [float(v) for v in X[index]])


def query_from_record(artifact, model: FixedPointModel, data: Any) -> IntVector:
    """A query from a customer's record: an object of raw attribute values (attribute name -> value,
    preprocessed like the training data). The customer has their raw attributes, not model inputs: a
    list is refused with the sentence every reader of a record uses (commitments.record)."""
    if not isinstance(data, dict):
        raise DataError(NOT_A_RECORD)
    x = artifact.preprocessor.transform_record(data)  # a schema checks its raw domain here
    query = quantise_query(model, [float(v) for v in x], check_box=False)
    _check_raw_domain(artifact, model, data, query)
    return quantise_query(model, [float(v) for v in x])


def _check_raw_domain(artifact, model: FixedPointModel, record: dict, query: IntVector) -> None:
    """A shipped dataset's record outside the box, refused in the record's own units (not a column index)."""
    pre = artifact.preprocessor
    if not hasattr(pre, "means"):
        return
    unit = 1 << model.scale_bits
    for i, (v, lo, hi) in enumerate(zip(query, model.box_lower, model.box_upper)):
        if not lo <= v <= hi and i not in model.sensitive_columns:
            name = pre.feature_names[i]
            low, high = pre.means[i] + pre.stds[i] * lo / unit, pre.means[i] + pre.stds[i] * hi / unit
            raise DataError(f"{name} = {record[name]!r} is outside the model's domain [{low:.6g}, {high:.6g}]")


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The customer's record file, read exactly as `fairproof-verify --record` reads it."""
    return read_record_file(str(path))


# ---------------------------------------------------------------- reporting

def _decimal(value: Fraction, digits: int = 6) -> str:
    return f"{float(value):.{digits}f}"


def certificate_summary(cert: Certificate, model: FixedPointModel, class_labels: Sequence[str] | None = None) -> list[str]:
    """Human-readable lines: decision, eps (decimal and its dyadic value), covering sizes, traversal, flip."""
    label = class_labels[cert.decision] if class_labels and cert.decision < len(class_labels) else str(cert.decision)
    lines = [f"decision: class {cert.decision} ({label})"]
    eps = cert.eps_value
    # "exact" names the exact radius only: whatever the radius, eps itself is the dyadic value E/2^t
    lines.append(f"eps: {_decimal(eps)} (value {cert.eps}/2^{cert.eps_bits} = {eps.numerator}/{eps.denominator})"
                 + (" [cap: the whole box]" if cert.attainment is not None and cert.attainment.kind == "cap" else ""))
    if cert.status == CERTIFIED:
        names = "+".join(f.name for f in model.sensitive)
        for sc in cert.slices:
            labels = _value_labels(model, sc.slice_values)
            lines.append(f"  slice {names}={'/'.join(labels)}: covering set {len(sc.regions)} regions, "
                         f"{sc.traversal_steps} traversal steps")
        lines.append(f"regions per slice {list(cert.regions_per_slice)}, traversal steps {list(cert.traversal_steps)}, "
                     f"Farkas certificates {cert.farkas_count}")
        a = cert.attainment
        if a is not None and a.kind == "counterexample":
            lines.append(f"exact radius: class {a.row} at least ties the decision at a point of slice "
                         f"{a.slice_index} closer than {_decimal(Fraction(cert.eps + 1, 1 << cert.eps_bits))}"
                         + ("" if cert.min_distance_sq is None
                            else f" (at distance {math.sqrt(cert.min_distance_sq):.6f})"))
        elif a is not None and a.kind != "cap":
            lines.append(f"attained by a {a.kind} row in slice {a.slice_index} (fast radius: a lower bound)")
    else:
        f = cert.flip
        assert f is not None
        parts = [f"{feat.name}={label}" for feat, label in zip(model.sensitive, _value_labels(model, f.slice_values))]
        lines.append(f"counterfactual flip: setting {', '.join(parts)} (slice {f.slice_index}) "
                     f"{'ties' if f.tie else 'changes'} the decision, so eps = 0")
    return lines


def _value_labels(model: FixedPointModel, slice_values: Sequence[int]) -> list[str]:
    """Each attribute's label in a slice (its integers, for values that are none of its points)."""
    points = model.slice_points(slice_values)
    return [f.label_of(p) if p in f.points else "/".join(str(v) for v in p) for f, p in zip(model.sensitive, points)]


@dataclass(frozen=True)
class TimedCertificate:
    """A certificate from `certify_within`, with what the store did for it."""

    certificate: Certificate
    seconds: float
    hits: int
    misses: int
    rejected: int
    cached_rows: int
    model_digest: str


# Signals a forked child must take itself rather than pass on to its parent (see `_own_signals`).
CHILD_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _own_signals() -> None:
    """A forked child shares its parent's signal wakeup fd: in the service, the asyncio loop's. A SIGTERM sent
    to the child (`terminate()` at the deadline) would then be read by the parent's loop as its own, and stop
    the worker. The child drops the wakeup fd and takes the default actions, then lets the signals blocked
    across the fork (`certify_within`) arrive."""
    signal.set_wakeup_fd(-1)
    for number in CHILD_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, CHILD_SIGNALS)


def _certify_in_child(store_url: str, model: FixedPointModel, query, eps_bits: int, radius: str) -> tuple:
    from offline_precompute.db import open_database

    db = open_database(store_url)
    try:
        certifier = Certifier(db, model, eps_bits=eps_bits, radius=radius)
        result = certifier.certify(query)
        s = result.stats
        return (result.certificate.to_json(), result.seconds, s.hits, s.misses, s.rejected, result.cached_rows,
                certifier.digest)
    finally:
        db.dispose()


def _answer_parent(conn, fn: Callable[..., Any], args: tuple, delay: float = 0.0) -> None:
    """In the child: after `delay` seconds, fn(*args), or the error it raised, sent to the parent."""
    _own_signals()
    try:
        if delay > 0:
            time.sleep(delay)
        conn.send(fn(*args))
    except Exception as exc:  # the parent raises it: a bad store or record is an error, not an overrun budget
        conn.send(_sendable(exc))
    finally:
        conn.close()


def _sendable(exc: Exception) -> Exception:
    """`exc` if it crosses a pipe intact (pickles), else its words in a CertificationError."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return CertificationError(f"a computation in a child process failed: {type(exc).__name__}: {exc}")


class ForkedCall:
    """fn(*args) in a forked child process, started at once (after `delay` seconds of sleep in the child:
    a call closed before then costs no CPU); its answer read through a pipe until a deadline, and the child
    stopped (SIGTERM) when the call is closed, whether it answered or not. The child takes its own signals
    (`_own_signals`), so a stop never reaches the parent's event loop."""

    def __init__(self, fn: Callable[..., Any], *args: Any, delay: float = 0.0):
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self._receiver, sender = ctx.Pipe(duplex=False)
        self._child = ctx.Process(target=_answer_parent, args=(sender, fn, args, delay), daemon=True)
        # Blocked in this thread across the fork, so that the child holds any such signal until it owns them.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, CHILD_SIGNALS)
        try:
            self._child.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self.started = time.monotonic()
        sender.close()

    def answer(self, deadline: float) -> tuple[bool, Any]:
        """(True, the answer) if it arrives by `deadline` (time.monotonic()), else (False, None); (False, None)
        too if the child died without one. The child's error is raised here."""
        if not self._receiver.poll(max(0.0, deadline - time.monotonic())):
            return False, None
        try:
            value = self._receiver.recv()
        except EOFError:
            return False, None
        if isinstance(value, Exception):
            raise value
        return True, value

    def close(self) -> None:
        if self._child.is_alive():
            self._child.terminate()
        self._child.join()
        self._receiver.close()

    def __enter__(self) -> "ForkedCall":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def certify_within(store_url: str, model: FixedPointModel, query: Sequence[int], budget: float, *,
                   eps_bits: int = DEFAULT_EPS_BITS, radius: str = EXACT) -> TimedCertificate | None:
    """Region enumeration of one query in a child process, stopped at `budget` seconds: the certificate if
    it finished, None past the deadline (or if the child died). The child's error, if it raised one (a
    store URL it cannot open, say), is raised here. For the hybrid mode, which falls back to the bound
    radius."""
    with ForkedCall(_certify_in_child, store_url, model, tuple(query), eps_bits, radius) as child:
        arrived, answer = child.answer(child.started + budget)
    if not arrived:
        return None
    cert, seconds, hits, misses, rejected, cached, digest = answer
    return TimedCertificate(Certificate.from_json(cert), seconds, hits, misses, rejected, cached, digest)


def exact_within(store_url: str, model: FixedPointModel, query: Sequence[int], budget: float, *,
                 eps_bits: int = DEFAULT_EPS_BITS) -> TimedCertificate | None:
    """What the hybrid mode keeps of region enumeration: the exact answer for `query` when enumeration
    finishes within `budget` seconds and gives one: a radius made exact (a counterexample, or the cap), or a
    flip (the true radius is 0). None otherwise: past the deadline, or a fast certificate (no counterexample
    could be exhibited), which the hybrid mode replaces with the bound radius."""
    found = certify_within(store_url, model, query, budget, eps_bits=eps_bits, radius=EXACT)
    if found is None or not (found.certificate.status == FLIP or is_exact_radius(found.certificate)):
        return None
    return found


def is_exact_radius(certificate: Certificate) -> bool:
    """A certified radius the exact statement proves as it is: minimal by a counterexample, or the cap."""
    return (certificate.status == CERTIFIED and certificate.attainment is not None
            and certificate.attainment.kind in (CAP, COUNTEREXAMPLE))
