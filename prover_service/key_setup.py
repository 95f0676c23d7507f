"""Offline key setup for the circuit buckets the first customers will need.

Which bucket a query needs depends on its covering sets, so the bank certifies
the first N customers of the test split (plaintext only, no proof, with the
prover's radius) and sets up the keys of every bucket they land in, smallest
first: exact buckets for an exact-radius prover, and for a hybrid or bound one also the bound radius's
bucket, which any customer may need. A customer whose exact
certification falls back to a fast certificate that the card would not prove
(`ExactRadiusUnavailable`) is reported and skipped.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

from offline_precompute.certify import query_from_index, test_inputs
from statement import StatementShape, statement_relation

from .bucket_keys import NoKeySetup
from .proving import ExactRadiusUnavailable, Prover


@dataclass(frozen=True)
class BucketSetup:
    bucket: str
    n_constraints: int
    seconds: float  # 0 when the keys already existed
    status: str = "ready"  # "ready", or "needs a ceremony" when no key setup was configured


def setup_keys_for_test_customers(prover: Prover, n_customers: int, data_dir: str | os.PathLike[str] | None = None,
                                  say: Callable[[str], None] = lambda _: None) -> list[BucketSetup]:
    artifact = prover.workspace.artifact
    X, _ = test_inputs(artifact, data_dir)
    needed: dict[str, StatementShape] = {}
    for index in range(min(n_customers, len(X))):
        certificate = prover.certify(query_from_index(artifact, prover.model, index, data_dir))
        try:
            shapes = prover.shapes_for_certificate(certificate)
        except ExactRadiusUnavailable as exc:
            say(f"test customer {index}: no bucket: {exc}")
            continue
        for shape in shapes:
            needed.setdefault(shape.bucket, shape)
    for shape in prover.standing_shapes():  # the bound bucket of a hybrid prover, whoever its first customers are
        needed.setdefault(shape.bucket, shape)
    for shape in prover.buckets.sized_families():  # sizes hybrid reads online, learnt now
        prover.statement_sizes.line(shape)
    say(f"buckets needed by the first {n_customers} test customers: {', '.join(sorted(needed))}")
    done = []
    for name, shape in sorted(needed.items(), key=lambda kv: (kv[1].region_slots, kv[1].farkas_slots, kv[1].radius)):
        fresh = not prover.bucket_dir(shape).is_dir()
        if fresh and isinstance(prover.key_setup, NoKeySetup):
            # Nobody may set keys up here: name the ceremony to run instead of failing the whole job.
            say(f"bucket {name} needs a ceremony: fairproof ceremony init --model {prover.workspace.root} "
                f"--bucket {name} --ptau PHASE1.ptau --out DIR")
            done.append(BucketSetup(name, statement_relation(shape).n_constraints, 0.0, "needs a ceremony"))
            continue
        start = time.perf_counter()
        keys = prover.keys(shape)
        done.append(BucketSetup(name, keys.r1cs.n_constraints, time.perf_counter() - start if fresh else 0.0))
    return done
