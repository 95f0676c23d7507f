"""A model's bucket keys: found, loaded, set up, cached and installed on its card.

`KeyStore.keys(shape)` answers with a bucket's proving key, verifying key and
circuit, from the first place that has them:

1. memory (`HotKeys`, least recently used dropped first: the largest keys take
   gigabytes);
2. the model directory, without rebuilding the circuit, when the card already
   publishes this very shape and the saved circuit and verifying key hash to
   the card's digests (`_load_published`);
3. the model directory after rebuilding the circuit, or a new setup by the
   store's `KeySetup` when nobody has set the bucket up yet.

A bucket reaches the card only through `_install`, the store's one writer of
the card, under a lock shared by every process of the model: it refuses keys
that differ from the ones the card already publishes, and a card whose fields
do not describe the bucket's statement shape (an auditor rebuilds the circuit
from the card alone).
"""
from __future__ import annotations

import fcntl
import json
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from circuits.groth16 import ProvingKey, VerifyingKey, r1cs_digest, vk_digest
from circuits.relation import R1CS
from circuits.relation_arrays import ArrayR1CS
from circuits.snarkjs.ceremony import Ceremony
from circuits.snarkjs.json_formats import verifying_key_to_json
from commitments.card import BucketShape, CircuitBucket, ModelCard, SetupRecord
from fairness.errors import ModelError
from statement import StatementShape, statement_relation

from .bucket_keys import (InstalledKeys, KeySetup, KeysNotReady, install_ceremony_keys, keys_from_ceremony, load_keys,
                          save_keys)
from .workspace import ModelWorkspace

Progress = Callable[[str], None]

# A bucket's circuit in the prover's arrays, saved under its `r1cs_digest`.
RELATION_FILE = "relation.npz"
SETUP_LOCK = ".setup.lock"
DEFAULT_MAX_HOT_KEYS = 4


@dataclass(frozen=True)
class BucketKeys:
    shape: StatementShape
    r1cs: ArrayR1CS  # in arrays: every proof evaluates its rows in bulk
    proving_key: ProvingKey
    verifying_key: VerifyingKey


class HotKeys:
    """At most `limit` buckets' keys in memory, the least recently used dropped first."""

    def __init__(self, limit: int = DEFAULT_MAX_HOT_KEYS):
        if limit < 1:
            raise ModelError(f"max_hot_keys must be at least 1, not {limit}")
        self.limit = limit
        self._keys: OrderedDict[str, BucketKeys] = OrderedDict()

    def get(self, bucket: str) -> BucketKeys | None:
        keys = self._keys.get(bucket)
        if keys is not None:
            self._keys.move_to_end(bucket)
        return keys

    def put(self, keys: BucketKeys) -> BucketKeys:
        self._keys[keys.shape.bucket] = keys
        self._keys.move_to_end(keys.shape.bucket)
        while len(self._keys) > self.limit:
            self._keys.popitem(last=False)
        return keys

    def drop(self, bucket: str) -> None:
        self._keys.pop(bucket, None)

    def buckets(self) -> list[str]:
        """The buckets held, least recently used first."""
        return list(self._keys)


def published_bucket(card: ModelCard, shape: StatementShape) -> CircuitBucket | None:
    return next((b for b in card.circuits if b.bucket == shape.bucket), None)


def describes(card: ModelCard, bucket: CircuitBucket, shape: StatementShape) -> bool:
    """Whether the card's fields name this very statement shape for `bucket`."""
    return card.statement_shape_json(bucket) == json.loads(json.dumps(shape.to_json()))


def card_bucket(shape: StatementShape, r1cs: R1CS, vk: VerifyingKey, setup: SetupRecord) -> CircuitBucket:
    """The card's entry for a bucket: its shape, circuit and verifying key digests, and how it was set up."""
    return CircuitBucket(
        bucket=shape.bucket,
        shape=BucketShape(region_slots=shape.region_slots, farkas_slots=shape.farkas_slots,
                          eps_cap=shape.eps_cap, farkas_bits=shape.farkas_bits,
                          boundary_bits=shape.boundary_bits, weight_bits=shape.weight_bits,
                          bias_bits=shape.bias_bits, radius=shape.radius, per_slice=shape.per_slice,
                          alpha_bits=shape.alpha_bits),
        n_constraints=r1cs.n_constraints,
        n_public=r1cs.n_public,
        r1cs_digest=r1cs_digest(r1cs),
        verifying_key_digest=vk_digest(vk),
        verifying_key=verifying_key_to_json(vk),
        setup=setup,
    )


class KeyStore:
    """The bucket keys of one committed model (see the module's docstring).

    `missing_note(shape)`: words added when a bucket cannot be set up, saying what else the bank must set
    up (a hybrid prover needs the buckets of two statements)."""

    def __init__(self, workspace: ModelWorkspace, backend: object, key_setup: KeySetup, *,
                 progress: Progress, max_hot_keys: int = DEFAULT_MAX_HOT_KEYS,
                 missing_note: Callable[[StatementShape], str] = lambda shape: ""):
        self.workspace = workspace
        self.backend = backend
        self.key_setup = key_setup
        self.progress = progress
        self.hot = HotKeys(max_hot_keys)
        self.missing_note = missing_note
        self.card: ModelCard = workspace.card()

    def bucket_dir(self, shape: StatementShape) -> Path:
        # Keyed by the full shape digest: a recommitted model with other bounds gets new keys.
        return self.workspace.keys_dir(f"{shape.bucket}-{shape.digest()[:12]}")

    def keys(self, shape: StatementShape) -> BucketKeys:
        """The bucket's keys: from memory, from the model directory, or set up now by `key_setup`."""
        cached = self.hot.get(shape.bucket)
        if cached is not None:
            return cached
        directory = self.bucket_dir(shape)
        published = self._load_published(shape, directory)
        if published is not None:
            return self.hot.put(published)
        r1cs = statement_relation(shape)
        # Workers in other processes may need the same new bucket at once: one sets it up,
        # the others wait and load it; the card is rewritten under the same lock.
        with self._setup_lock():
            if _has_keys(directory):
                pk, vk, record = load_keys(directory, self.backend)
            else:
                if published_bucket(self.card, shape) is not None:
                    # The card already publishes this bucket's verifying key: new keys would not match it.
                    raise ModelError(f"the card publishes bucket {shape.bucket}, but its keys are missing from "
                                     f"{directory}: restore them from backup")
                self.progress(f"setting up keys for bucket {shape.bucket} ({r1cs.n_constraints} constraints)")
                installed = self._set_up(shape, r1cs, directory)
                pk, vk, record = installed.proving_key, installed.verifying_key, installed.setup
                save_keys(directory, shape.to_json(), installed, self.backend)
            self._install(card_bucket(shape, r1cs, vk, record), shape)
        relation = ArrayR1CS.from_r1cs(r1cs)
        try:
            relation.save(directory / RELATION_FILE, r1cs_digest(relation))
        except OSError as exc:  # a read-only model directory: the circuit is rebuilt on every load
            self.progress(f"could not save the circuit of bucket {shape.bucket} for faster loading: {exc}")
        return self.hot.put(BucketKeys(shape, relation, pk, vk))

    def install_ceremony(self, shape: StatementShape, ceremony: Ceremony, *, ptau: Path | None = None) -> BucketKeys:
        """Verify a finished ceremony for bucket `shape` (the caller has checked the ceremony is for it) and
        use its final key."""
        r1cs = statement_relation(shape)
        installed = keys_from_ceremony(ceremony, shape, r1cs, self.backend, ptau=ptau, progress=self.progress)
        with self._setup_lock():
            if published_bucket(self.card, shape) is not None:
                raise ModelError(f"the card already publishes bucket {shape.bucket}; installing other keys would "
                                 "change the card under issued certificates (recommit the model instead)")
            install_ceremony_keys(self.bucket_dir(shape), shape.to_json(), installed, ceremony, self.backend)
            self._install(card_bucket(shape, r1cs, installed.verifying_key, installed.setup), shape)
        self.hot.drop(shape.bucket)
        return self.keys(shape)

    # ------------------------------------------------------------------ inside
    def _setup_lock(self):
        return exclusive_lock(self.workspace.root / "keys" / SETUP_LOCK)

    def _set_up(self, shape: StatementShape, r1cs: R1CS, directory: Path) -> InstalledKeys:
        """The bucket's keys from `key_setup`; a setup that refuses says what else the bank must set up."""
        try:
            return self.key_setup(self.card, shape, r1cs, directory, self.backend, self.progress)
        except KeysNotReady:
            raise  # the service queues the bucket's setup itself
        except ModelError as exc:
            note = self.missing_note(shape)
            if not note:
                raise
            raise ModelError(f"{exc}{note}") from None

    def _load_published(self, shape: StatementShape, directory: Path) -> BucketKeys | None:
        """A published bucket straight from disk, without rebuilding its circuit (the slow part of loading a
        bucket): only when the card publishes this very shape, the saved relation hashes to the card's
        `r1cs_digest` and the verifying key on disk is the card's. Anything else (None) takes the path that
        rebuilds and says why."""
        published = published_bucket(self.card, shape)
        if published is None or not describes(self.card, published, shape):
            return None
        relation = ArrayR1CS.load(directory / RELATION_FILE, published.r1cs_digest)
        if relation is None or r1cs_digest(relation) != published.r1cs_digest or not _has_keys(directory):
            return None
        pk, vk, _ = load_keys(directory, self.backend)
        if vk_digest(vk) != published.verifying_key_digest:
            return None
        return BucketKeys(shape, relation, pk, vk)

    def _install(self, bucket: CircuitBucket, shape: StatementShape) -> None:
        """Put `bucket` on the card (the card's one writer; called under the setup lock)."""
        if not describes(self.card, bucket, shape):
            # An auditor rebuilds the circuit from the card: the card must name this very shape.
            raise ModelError(f"bucket {shape.bucket}: the card's model fields do not describe the statement shape")
        published = published_bucket(self.card, shape)
        if published is not None and published.verifying_key_digest != bucket.verifying_key_digest:
            raise ModelError(f"the keys of bucket {bucket.bucket} on disk do not match the verifying key the card "
                             "publishes: restore the published keys")
        on_disk = self.workspace.card()
        card = on_disk.with_bucket(bucket)
        if card != self.card or card.circuits != on_disk.circuits:
            self.workspace.save_card(card)
        self.card = card


def _has_keys(directory: Path) -> bool:
    return (directory / "verification_key.json").is_file() and (directory / "proving_key").is_dir()


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """An advisory lock on `path` across processes (POSIX flock), released on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
