"""Where a bucket's Groth16 keys come from: a phase-2 ceremony, or (said aloud) the bank alone.

A bucket's circuit is fixed by the public card and the bucket's shape
(`shape_from_card`), so anyone can rebuild its constraint system. Its keys
come from one of:

- a ceremony (circuits/snarkjs/ceremony.py): phase 1 from a public .ptau,
  phase-2 contributions by parties other than the bank, installed with
  `install_ceremony`, which verifies the whole chain first;
- `CeremonyKeySetup`: the same pipeline run by the bank on its own (a
  one-contribution ceremony) when a customer needs a bucket nobody has set
  up; the card lists the bank as the only contributor, so customers who
  require another contributor refuse it until a real ceremony replaces it;
- `SinglePartyKeySetup`: the bank draws every secret itself; the card says
  "single-party". Only for tests, benchmarks and local experiments.

The card records each bucket's setup (`commitments.card.SetupRecord`), and
the bucket's directory keeps the final .zkey so auditors can check it
(`fairproof audit-keys`).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from circuits.groth16 import ProvingKey, VerifyingKey, load_proving_key, r1cs_digest, save_proving_key, setup
from circuits.relation import R1CS
from circuits.snarkjs.ceremony import Ceremony, transcript_digest
from circuits.snarkjs.zkey_file import parse_zkey
from circuits.snarkjs.json_formats import verifying_key_from_json, verifying_key_to_json
from circuits.snarkjs.zkey_read import read_zkey
from commitments.card import CircuitBucket, ContributionRecord, ModelCard, SetupRecord
from fairness.slope_plans import DEFAULT_ALPHA_BITS
from fairness.errors import ModelError
from fairness.fixed_point import FixedPointModel
from fairness.spread import SpreadLens
from statement import StatementShape, statement_relation
from statement.adapter import statement_shape
from fairness.radius import Radius
from statement.group_counts import GroupCountsError, GroupCountsShape, group_counts_relation

from .workspace import write_atomically

Progress = Callable[[str], None]
SETUP_FILE = "setup.json"
ZKEY_FILE = "bucket.zkey"


def shape_from_card(card: ModelCard, bucket: CircuitBucket) -> StatementShape:
    """The statement shape a card's bucket names: what auditors and contributors rebuild the circuit from."""
    return StatementShape.from_json(card.statement_shape_json(bucket))


def card_shape(card: ModelCard, model: FixedPointModel, region_slots: int, farkas_slots: int, radius: str,
               per_slice: bool = False) -> StatementShape:
    """The shape of bucket (K, F, radius[, per slice]) of the model a card commits to, with the lenses
    the card proves: every bucket of one card proves the same lenses."""
    lens = SpreadLens(card.spread.favourable_class, card.spread.bucket_width) if card.spread else None
    shape = statement_shape(model, region_slots=region_slots, farkas_slots=farkas_slots,
                            eps_bits=card.eps_scale_bits, radius=radius, lens=lens)
    if card.persistence is not None:
        shape = dataclasses.replace(shape, persistence_columns=card.persistence.columns,
                                    favourable_class=card.persistence.favourable_class)
    shape = dataclasses.replace(shape, per_slice=True) if per_slice else shape
    # Optimised slopes (bound radius, persistence lens): a bucket the card publishes keeps the slopes its keys
    # were made for; a new one takes the default.
    published = next((b for b in card.circuits if b.bucket == shape.bucket), None)
    optimisable = shape.radius == Radius.BOUND or shape.persistence
    alpha_bits = published.shape.alpha_bits if published is not None else DEFAULT_ALPHA_BITS if optimisable else 0
    return dataclasses.replace(shape, alpha_bits=alpha_bits)


def parse_bucket(name: str) -> tuple[int, int, Radius]:
    """(K, F, radius) of a bucket name: "k<K>-f<F>" (fast radius), "k<K>-f<F>-exact",
    "k<K>-f<F>-exact-slice" (exact, one slice per proof: `is_per_slice_bucket`) or "k1-f1-bound"."""
    match = re.fullmatch(r"k([1-9][0-9]{0,5})-f([1-9][0-9]{0,5})(-exact(-slice)?|-bound)?", name)
    if not match:
        raise ModelError(f"{name!r} is not a bucket name (k<regions>-f<entries>, e.g. k4-f4, k4-f4-exact for the "
                         "exact-radius statement, k4-f4-exact-slice for its per-slice form, k1-f1-bound for the "
                         "bound radius)")
    suffix = match.group(3) or ""
    radius = Radius.BOUND if suffix == "-bound" else Radius.EXACT if suffix else Radius.FAST
    return int(match.group(1)), int(match.group(2)), radius


def is_per_slice_bucket(name: str) -> bool:
    """Whether a (well-formed) bucket name is a per-slice statement's."""
    parse_bucket(name)
    return name.endswith("-exact-slice")


def parse_bucket_name(name: str) -> tuple[int, int]:
    """(K, F) of a bucket name (either radius; `parse_bucket` also says which)."""
    k, f, _ = parse_bucket(name)
    return k, f


def ceremony_relation(ceremony: Ceremony) -> R1CS:
    """The statement's constraint system rebuilt from the shape the ceremony names (a certificate bucket's
    or an audit circuit's), checked against the ceremony's circuit: what a contributor must know before
    adding randomness."""
    audit = AUDIT_SHAPE_KEY in ceremony.state.metadata
    if audit:
        relation = group_counts_relation(ceremony_group_shape(ceremony))
    else:
        relation = statement_relation(ceremony_shape(ceremony))
    if r1cs_digest(relation) != ceremony.state.r1cs_digest:
        what = "group-counts statement" if audit else "fairness statement"
        raise ModelError(f"{ceremony.directory}: its circuit is not the {what} of the shape it names")
    return relation


AUDIT_SHAPE_KEY = "group_counts_shape"


def audit_ceremony_metadata(card: ModelCard, shape: GroupCountsShape) -> dict[str, Any]:
    return {"model_id": card.model_id, "commitment": card.commitment, "audit_circuit": shape.name,
            AUDIT_SHAPE_KEY: shape.to_json()}


def ceremony_group_shape(ceremony: Ceremony) -> GroupCountsShape:
    """The group-counts shape an audit circuit's ceremony directory says it is for."""
    try:
        return GroupCountsShape.from_json(ceremony.state.metadata[AUDIT_SHAPE_KEY])
    except (KeyError, TypeError, GroupCountsError) as exc:
        raise ModelError(f"{ceremony.directory} does not name a group-counts shape ({exc})") from None


def ceremony_metadata(card: ModelCard, shape: StatementShape) -> dict[str, Any]:
    return {"model_id": card.model_id, "commitment": card.commitment, "bucket": shape.bucket,
            "statement_shape": json.loads(json.dumps(shape.to_json()))}


def ceremony_shape(ceremony: Ceremony) -> StatementShape:
    """The statement shape a ceremony directory says it is for."""
    try:
        return StatementShape.from_json(ceremony.state.metadata["statement_shape"])
    except (KeyError, TypeError) as exc:
        raise ModelError(f"{ceremony.directory} does not name a statement shape ({exc})") from None


def setup_record(ceremony: Ceremony, backend: Any) -> SetupRecord:
    """The card's record of a verified ceremony's final key."""
    state = ceremony.state
    final = parse_zkey(ceremony.current_key_path.read_bytes(), backend)
    return SetupRecord(
        method="ceremony", phase1_digest=state.ptau_sha256, phase1_power=state.ptau_power,
        circuit_hash=state.circuit_hash,
        contributions=tuple(ContributionRecord(name=c.name, hash=c.hash, kind=c.kind) for c in state.contributors),
        transcript_digest=transcript_digest(final))


@dataclass(frozen=True)
class InstalledKeys:
    proving_key: ProvingKey
    verifying_key: VerifyingKey
    setup: SetupRecord


def keys_from_ceremony(ceremony: Ceremony, shape: StatementShape, r1cs: R1CS, backend: Any, *,
                       ptau: str | os.PathLike[str] | None = None, progress: Progress | None = None) -> InstalledKeys:
    """Verify a ceremony for `shape` end to end and read its final key."""
    if ceremony_shape(ceremony) != shape:
        raise ModelError(f"{ceremony.directory} is a ceremony for another circuit shape than bucket {shape.bucket} "
                         "of this model")
    if not ceremony.state.contributors:
        raise ModelError(f"{ceremony.directory} has no contribution yet: its key is degenerate")
    ceremony.verify(backend, ptau_path=ptau, r1cs=r1cs, progress=progress)
    pk, vk = read_zkey(ceremony.current_key_path, r1cs, backend)
    return InstalledKeys(pk, vk, setup_record(ceremony, backend))


def save_keys(directory: Path, shape_json: dict, installed: InstalledKeys, backend: Any) -> None:
    """A circuit's keys on disk: the proving key, verification_key.json, its shape and setup record, and
    the final .zkey of the bank's own ceremony (published for audits)."""
    save_proving_key(installed.proving_key, directory / "proving_key", backend)
    write_atomically(directory / "verification_key.json",
                     json.dumps(verifying_key_to_json(installed.verifying_key), indent=1))
    write_atomically(directory / "shape.json", json.dumps(shape_json, indent=1))
    write_atomically(directory / SETUP_FILE, installed.setup.model_dump_json(indent=1))
    ceremony_key = directory / "ceremony"
    if (ceremony_key / "ceremony.json").is_file():
        shutil.copyfile(Ceremony(ceremony_key).current_key_path, directory / ZKEY_FILE)


def install_ceremony_keys(directory: Path, shape_json: dict, installed: InstalledKeys, ceremony: Ceremony,
                          backend: Any) -> None:
    """A ceremony's keys into `directory` (unpublished keys of an earlier attempt replaced), with its final
    .zkey kept beside them for auditors."""
    if directory.exists():
        shutil.rmtree(directory)
    save_keys(directory, shape_json, installed, backend)
    shutil.copyfile(ceremony.current_key_path, directory / ZKEY_FILE)


def load_keys(directory: Path, backend: Any) -> tuple[ProvingKey, VerifyingKey, SetupRecord]:
    """What `save_keys` wrote. The bank's own key, saved by this code: file digests only, no per-point
    checks (see load_proving_key)."""
    pk = load_proving_key(directory / "proving_key", backend, check_points=False)
    vk = verifying_key_from_json(json.loads((directory / "verification_key.json").read_text()))
    setup_path = directory / SETUP_FILE
    record = (SetupRecord.model_validate_json(setup_path.read_text()) if setup_path.is_file()
              else SetupRecord(method="single-party"))
    return pk, vk, record


class KeySetup(Protocol):
    """Makes the keys of a bucket nobody has set up yet."""

    def __call__(self, card: ModelCard, shape: StatementShape, r1cs: R1CS, directory: Path, backend: Any,
                 progress: Progress) -> InstalledKeys: ...


@dataclass(frozen=True)
class CeremonyKeySetup:
    """A one-contribution ceremony run by the bank (see the module docstring)."""

    ptau: Path
    contributor: str = "bank"

    def __call__(self, card, shape, r1cs, directory, backend, progress) -> InstalledKeys:
        work = directory / "ceremony"
        if work.exists():  # an interrupted earlier attempt: start again from a clean directory
            shutil.rmtree(work)
        ceremony = Ceremony.init(work, r1cs, self.ptau, backend, label=f"{card.model_id} {shape.bucket}",
                                 metadata=ceremony_metadata(card, shape), progress=progress)
        receipt = ceremony.contribute(self.contributor, secrets.token_bytes(32), backend, progress=progress)
        progress(f"  contribution hash of {self.contributor!r}: {receipt.hash}")
        return keys_from_ceremony(ceremony, shape, r1cs, backend, progress=progress)


@dataclass(frozen=True)
class SinglePartyKeySetup:
    """The bank draws tau, alpha, beta, gamma, delta itself: whoever ran it can forge proofs."""

    def __call__(self, card, shape, r1cs, directory, backend, progress) -> InstalledKeys:
        def report(stage: str, done: int, total: int) -> None:
            progress(f"  setup: {stage} {done}/{total}")
        pk, vk = setup(r1cs, backend, progress=report)
        return InstalledKeys(pk, vk, SetupRecord(method="single-party"))


@dataclass(frozen=True)
class NoKeySetup:
    """Refuse: keys come only from ceremonies installed with `fairproof ceremony install`."""

    def __call__(self, card, shape, r1cs, directory, backend, progress) -> InstalledKeys:
        raise ModelError(f"bucket {shape.bucket} of model {card.model_id} has no keys yet: run a ceremony for it "
                         "(`fairproof ceremony init --model DIR --bucket "
                         f"{shape.bucket} --ptau FILE`), or give the bank's phase-1 file (--ptau / FAIRPROOF_PTAU) "
                         "so the bank can set it up with its own contribution")


class KeysNotReady(ModelError):
    """A customer's certificate needs a bucket nobody has set up: keys are set up by an admin job, never
    inside a customer's job (a setup takes minutes to tens of minutes and gigabytes)."""

    def __init__(self, shape: StatementShape):
        super().__init__(f"bucket {shape.bucket} has no keys yet")
        self.shape = shape


class DeferredKeySetup:
    """Refuse with `KeysNotReady`, so that the service can queue the bucket's setup and tell the customer."""

    def __call__(self, card, shape, r1cs, directory, backend, progress) -> InstalledKeys:
        raise KeysNotReady(shape)


def key_setup_for(ptau: str | os.PathLike[str] | None, single_party: bool = False,
                  contributor: str = "bank") -> KeySetup:
    """The key setup a command line or the service settings ask for."""
    if ptau is not None and single_party:
        raise ModelError("give either a phase-1 file (ceremony keys) or single-party setup, not both")
    if ptau is not None:
        path = Path(ptau)
        if not path.is_file():
            raise ModelError(f"phase-1 file {path} does not exist")
        return CeremonyKeySetup(path, contributor)
    return SinglePartyKeySetup() if single_party else NoKeySetup()
