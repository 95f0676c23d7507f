"""Proofs an auditor can publish: the committed model's decision counts per group on a public dataset.

`audit_dataset(workspace, ...)` writes the public dataset (rows of model inputs
at the card's scale, a favourable-label bit each) from the model's dataset;
`GroupCountsProver` sets up the audit circuit's keys once (a one-contribution
ceremony from the bank's phase-1 file, or single-party for tests; both said on
the card), publishes them on the card as an audit circuit, and proves
statement.group_counts on any dataset of that many rows.
"""
from __future__ import annotations

import secrets
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from circuits.backends import get_backend
from circuits.builder import ConstraintSystem
from circuits.groth16 import proof_to_bytes, r1cs_digest, setup, vk_digest
from circuits.relation_arrays import ArrayR1CS
from circuits.snarkjs.ceremony import Ceremony
from circuits.snarkjs.json_formats import proof_to_json, public_to_json, verifying_key_to_json
from circuits.snarkjs.zkey_read import read_zkey
from commitments.audit import AuditDataset, GroupCounts, GroupCountsBundle
from commitments.card import AuditCircuit, SetupRecord
from fairness.errors import ModelError
from statement.adapter import model_commitment, parameter_bits, statement_shape
from statement.group_counts import (GroupCountsError, GroupCountsPublic, GroupCountsShape, GroupCountsWitness,
                                    build_group_counts, dataset_digest, group_counts_relation, plain_counts)
from statement.proof_system import Groth16, RelationKey

from .bucket_keys import (InstalledKeys, audit_ceremony_metadata, ceremony_group_shape, install_ceremony_keys, load_keys,
                          save_keys, setup_record)
from .progress import StageBar
from .key_store import exclusive_lock
from .workspace import ModelWorkspace

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def audit_dataset(workspace: ModelWorkspace, rows: int | None = None, favourable_class: int | None = None,
                  data_dir: str | None = None, data=None) -> tuple[AuditDataset, int]:
    """(the public audit dataset of the model's dataset, every split, in order: the first `rows` rows inside
    the domain box; how many rows outside it were left out). `data`: other rows instead (model inputs `X`,
    class indices `y`, a `source` naming them), e.g. the bank's CSV read through an imported model's schema."""
    from fairness.datasets import load_dataset
    from fairness.errors import DataError
    from fairness.fixed_point import quantise_query

    import numpy as np

    artifact, card, model = workspace.artifact, workspace.card(), workspace.fixed_point()
    f = _favourable(card, favourable_class)
    if data is not None:
        X, y, source = data.X, data.y, data.source
    else:
        names = [s.name for s in artifact.sensitive]
        split_seed = int(artifact.training.get("split_seed", 0)) if artifact.training else 0
        try:
            ds = load_dataset(artifact.dataset, data_dir, sensitive=names, seed=split_seed)
        except (KeyError, ValueError) as exc:
            raise ModelError(f"model {card.model_id}: its dataset {artifact.dataset!r} cannot be loaded ({exc})") from None
        X = np.concatenate([ds.X_train, ds.X_test])
        y = np.concatenate([ds.y_train, ds.y_test])
        source = f"{artifact.dataset} (training and test splits, in order)"
    kept, labels, outside = [], [], 0
    for x, label in zip(X, y):
        if rows is not None and len(kept) == rows:
            break
        try:
            kept.append(tuple(quantise_query(model, [float(v) for v in x])))
        except DataError:
            outside += 1
            continue
        labels.append(int(int(label) == f))
    if rows is not None and len(kept) < rows:
        raise ModelError(f"{source} has only {len(kept)} rows inside the domain box")
    dataset = AuditDataset(source=source,
                           feature_names=card.feature_names, scale_bits=card.scale_bits,
                           favourable_label=card.architecture.class_labels[f], rows=tuple(kept), labels=tuple(labels))
    return dataset, outside


def _favourable(card, favourable_class: int | None) -> int:
    f = favourable_class if favourable_class is not None else card.favourable_class
    if f is None:
        raise ModelError("name the favourable class (--favourable-class): the card has no lens naming one")
    if not 0 <= f < card.architecture.n_classes:
        raise ModelError(f"class {f} is not a class of the model")
    return f


@dataclass
class GroupCountsProver:
    """Group-counts proofs for one committed model."""

    workspace: ModelWorkspace
    backend: object = None
    progress: Progress = _quiet
    ptau: Path | None = None  # the bank's phase-1 file: a one-contribution ceremony (else single-party)
    single_party: bool = False
    _keys: dict = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.backend is None:
            self.backend = get_backend()
        self.card = self.workspace.card()
        self.model = self.workspace.fixed_point()
        self.salt = self.workspace.salt()

    def shape(self, n_rows: int, favourable_class: int | None = None) -> GroupCountsShape:
        f = _favourable(self.card, favourable_class)
        wb, bb = parameter_bits(self.model)
        base = statement_shape(self.model, region_slots=1, farkas_slots=1, eps_bits=self.card.eps_scale_bits,
                               weight_bits=wb, bias_bits=bb)
        try:
            return GroupCountsShape.of(base, n_rows, f)
        except GroupCountsError as exc:
            raise ModelError(str(exc)) from None

    def _directory(self, shape: GroupCountsShape) -> Path:
        return self.workspace.keys_dir(f"{shape.name}-{shape.digest()[:12]}")

    def keys(self, shape: GroupCountsShape):
        """(relation, proving key, verifying key) of the audit circuit, set up and published on first use."""
        name = shape.name
        if name in self._keys:
            return self._keys[name]
        directory = self._directory(shape)
        self.progress(f"building the audit circuit for {shape.n_rows} rows")
        started = time.perf_counter()
        r1cs = group_counts_relation(shape)
        self.progress(f"  {r1cs.n_constraints} constraints ({time.perf_counter() - started:.1f} s)")
        with exclusive_lock(self.workspace.root / "keys" / ".setup.lock"):
            published = next((c for c in self.card.audit_circuits if c.name == name), None)
            if (directory / "verification_key.json").is_file() and (directory / "proving_key").is_dir():
                pk, vk, record = load_keys(directory, self.backend)
            elif published is not None:
                raise ModelError(f"the card publishes audit circuit {name}, but its keys are missing from "
                                 f"{directory}: restore them from backup")
            else:
                installed = self._setup(shape, r1cs, directory)
                save_keys(directory, shape.to_json(), installed, self.backend)
                pk, vk, record = installed.proving_key, installed.verifying_key, installed.setup
            self._publish(shape, r1cs, vk, record)
        keys = (ArrayR1CS.from_r1cs(r1cs), pk, vk)
        self._keys[name] = keys
        return keys

    def _publish(self, shape: GroupCountsShape, r1cs, vk, record: SetupRecord) -> None:
        """Put the audit circuit on the card (under the setup lock)."""
        circuit = AuditCircuit(
            name=shape.name, n_rows=shape.n_rows, favourable_class=shape.favourable_class,
            weight_bits=shape.weight_bits, bias_bits=shape.bias_bits, n_constraints=r1cs.n_constraints,
            n_public=r1cs.n_public, r1cs_digest=r1cs_digest(r1cs), verifying_key_digest=vk_digest(vk),
            verifying_key=verifying_key_to_json(vk), setup=record)
        published = next((c for c in self.card.audit_circuits if c.name == shape.name), None)
        if published is not None and published != circuit:
            raise ModelError(f"the keys of audit circuit {shape.name} on disk are not the ones the card publishes")
        if self.card.group_counts_shape_json(circuit) != shape.to_json():
            raise ModelError(f"audit circuit {shape.name}: the card's model fields do not describe its shape")
        card = self.workspace.card().with_audit_circuit(circuit)
        if card != self.workspace.card():
            self.workspace.save_card(card)
        self.card = card

    def install_ceremony(self, ceremony: Ceremony, *, ptau: Path | None = None) -> AuditCircuit:
        """Verify a finished ceremony for one of this model's audit circuits and publish its final key."""
        shape = ceremony_group_shape(ceremony)
        if shape != self.shape(shape.n_rows, shape.favourable_class):
            raise ModelError(f"{ceremony.directory} is for another circuit than audit circuit {shape.name} of this "
                             "model")
        if not ceremony.state.contributors:
            raise ModelError(f"{ceremony.directory} has no contribution yet: its key is degenerate")
        r1cs = group_counts_relation(shape)
        ceremony.verify(self.backend, ptau_path=ptau, r1cs=r1cs, progress=self.progress)
        pk, vk = read_zkey(ceremony.current_key_path, r1cs, self.backend)
        installed = InstalledKeys(pk, vk, setup_record(ceremony, self.backend))
        with exclusive_lock(self.workspace.root / "keys" / ".setup.lock"):
            if any(c.name == shape.name for c in self.card.audit_circuits):
                raise ModelError(f"the card already publishes audit circuit {shape.name}; installing other keys "
                                 "would change it under issued proofs")
            install_ceremony_keys(self._directory(shape), shape.to_json(), installed, ceremony, self.backend)
            self._publish(shape, r1cs, vk, installed.setup)
        self._keys.pop(shape.name, None)
        return self.card.audit_circuit(shape.name)

    def _setup(self, shape: GroupCountsShape, r1cs, directory: Path) -> InstalledKeys:
        if self.ptau is not None and self.single_party:
            raise ModelError("give either a phase-1 file (ceremony keys) or single-party setup, not both")
        if self.ptau is None and not self.single_party:
            raise ModelError("the audit circuit has no keys yet: give the bank's phase-1 file (--ptau) for a "
                             "ceremony the bank contributes to, or --single-party-setup for tests")
        started = time.perf_counter()
        if self.single_party:
            self.progress(f"single-party key setup ({r1cs.n_constraints} constraints)")
            pk, vk = setup(r1cs, self.backend, progress=lambda stage, done, total: self.progress(
                f"  setup: {stage} {done}/{total}"))
            installed = InstalledKeys(pk, vk, SetupRecord(method="single-party"))
        else:
            work = directory / "ceremony"
            if work.exists():
                shutil.rmtree(work)
            ceremony = Ceremony.init(work, r1cs, self.ptau, self.backend,
                                     label=f"{self.card.model_id} {shape.name}",
                                     metadata=audit_ceremony_metadata(self.card, shape), progress=self.progress)
            receipt = ceremony.contribute("bank", secrets.token_bytes(32), self.backend, progress=self.progress)
            self.progress(f"  contribution hash of 'bank': {receipt.hash}")
            ceremony.verify(self.backend, ptau_path=self.ptau, r1cs=r1cs, progress=self.progress)
            pk, vk = read_zkey(ceremony.current_key_path, r1cs, self.backend)
            installed = InstalledKeys(pk, vk, setup_record(ceremony, self.backend))
        self.progress(f"  keys ready ({time.perf_counter() - started:.1f} s)")
        return installed

    def prove(self, dataset: AuditDataset, favourable_class: int | None = None) -> GroupCountsBundle:
        """The group-counts bundle of `dataset` (its rows inside the box, the card's inputs and scale)."""
        card = self.card
        if dataset.feature_names != card.feature_names or dataset.scale_bits != card.scale_bits:
            raise ModelError("the audit dataset's inputs or scale are not the card's")
        shape = self.shape(len(dataset.rows), favourable_class)
        if dataset.favourable_label != card.architecture.class_labels[shape.favourable_class]:
            raise ModelError(f"the audit dataset's labels say {dataset.favourable_label!r} is favourable, not "
                             f"{card.architecture.class_labels[shape.favourable_class]!r}")
        rows = [tuple(r) for r in dataset.rows]
        labels = list(dataset.labels)
        try:
            digest = dataset_digest(shape, rows, labels)
        except GroupCountsError as exc:
            raise ModelError(f"the audit dataset cannot be proved on: {exc}") from None
        relation, pk, _ = self.keys(shape)
        card = self.card
        net = self.model.net
        decisions = [net.decision(x) for x in rows]
        counts = plain_counts(shape, decisions, rows, labels)
        public = GroupCountsPublic(model_commitment(self.model, self.salt, shape), digest, counts)
        if public.commitment != int(card.commitment):
            raise ModelError("the model on disk is not the one the card commits to")
        witness = GroupCountsWitness(net.weights, net.biases, self.salt, tuple(rows), tuple(labels))
        started = time.perf_counter()
        cs = ConstraintSystem(with_values=True, keep_constraints=False)
        with StageBar("witness rows", total=shape.n_rows) as bar:
            build_group_counts(cs, shape, public, witness, progress=lambda done, total: bar.update(done, total))
        self.progress(f"witness ready ({time.perf_counter() - started:.1f} s); proving")
        started = time.perf_counter()
        values = public.field_elements()
        proof = Groth16(self.backend).prove(RelationKey(relation, pk), values, cs.witness())
        self.progress(f"proof ready ({time.perf_counter() - started:.1f} s)")
        name = shape.name
        return GroupCountsBundle(
            issued_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), model_id=card.model_id,
            card_digest=card.digest(), circuit=name, dataset_sha256=dataset.sha256(), dataset_digest=str(digest),
            favourable_class=shape.favourable_class,
            favourable_label=card.architecture.class_labels[shape.favourable_class],
            groups=tuple(GroupCounts(slice_index=g, values=card.slice_labels(g)[0], labels=card.slice_labels(g)[1],
                                     rows=c.rows, positives=c.positives, selected=c.selected,
                                     true_positives=c.true_positives) for g, c in enumerate(counts)),
            proof=proof_to_json(proof), public_signals=tuple(public_to_json(values)),
            proof_hex=proof_to_bytes(proof).hex())
