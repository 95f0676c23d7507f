"""Group counts on a public audit dataset: the statement (statement.group_counts), its proof and its checks.

Circuit against plaintext on toy models; malicious witnesses refused by the
constraints; then a dishonest bank's forgeries of a real German Credit proof
refused by the auditor's verifier (verifier_client.audit), the command line
and snarkjs.
"""
from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from circuits.builder import ConstraintSystem
from circuits.field import R
from circuits.groth16 import r1cs_digest
from circuits.snarkjs import find_snarkjs, run_snarkjs
from circuits.snarkjs.node import missing_reason
from commitments.audit import AuditDataset, GroupCountsBundle
from commitments.card import ModelCard
from fairness.fixed_point import FixedPointModel, SensitiveDomain
from statement.adapter import model_commitment, statement_shape
from statement.group_counts import (GroupCount, GroupCountsError, GroupCountsPublic, GroupCountsShape,
                                    GroupCountsWitness, build_group_counts, dataset_digest, group_counts_relation,
                                    plain_counts)
from verifier_client.audit import describe, verify_group_counts
from verifier_client.cli import main as verify_main

from fairness_toy_models import random_model, random_query
from statement_cases import unsatisfied_labels

SALT = 0x5EED_0F_A0D17
needs_snarkjs = pytest.mark.skipif(find_snarkjs() is None, reason=missing_reason())


# ----------------------------------------------------------------------------- toy statements
def two_attribute_model(seed: int, n_classes: int = 2) -> FixedPointModel:
    """A random (4, 2) model whose inputs 0 and 3 are sensitive (values {0, 1} and {-1, 0, 1})."""
    base = random_model(seed, n_inputs=5, n_classes=n_classes)
    one = 1 << base.scale_bits
    sensitive = (SensitiveDomain.scalar("group", 0, (0, one), ("a", "b")),
                 SensitiveDomain.scalar("band", 3, (-one, 0, one), ("low", "mid", "high")))
    return FixedPointModel(net=base.net, box_lower=base.box_lower, box_upper=base.box_upper, sensitive=sensitive)


def toy_statement(seed: int, n_rows: int, favourable: int = 1, n_classes: int = 2):
    model = two_attribute_model(seed, n_classes)
    shape = GroupCountsShape.of(statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=8), n_rows, favourable)
    rng = random.Random(seed)
    rows = [random_query(model, rng) for _ in range(n_rows)]
    labels = [rng.randint(0, 1) for _ in range(n_rows)]
    public = GroupCountsPublic(model_commitment(model, SALT, shape.statement_shape()),
                               dataset_digest(shape, rows, labels),
                               plain_counts(shape, [model.net.decision(x) for x in rows], rows, labels))
    witness = GroupCountsWitness(model.net.weights, model.net.biases, SALT, tuple(rows), tuple(labels))
    return model, shape, public, witness


def build(shape, public, witness, strict: bool = True, cs_type=ConstraintSystem) -> ConstraintSystem:
    cs = cs_type(with_values=True, strict=strict)
    build_group_counts(cs, shape, public, witness)
    return cs


def satisfied(cs: ConstraintSystem) -> bool:
    return cs.compile(wire_names=False).is_satisfied(cs.witness())


def brute_force_counts(model: FixedPointModel, shape, rows, labels) -> list[tuple[int, int, int, int]]:
    """The counts by a plain loop over the exact logits (first maximum wins), independent of plain_counts."""
    out = {s: [0, 0, 0, 0] for s in shape.slices}
    for x, label in zip(rows, labels):
        z = model.net.logits(x)
        decision = z.index(max(z))
        c = out[tuple(x[col] for col in shape.sensitive_columns)]
        c[0] += 1
        c[1] += label
        c[2] += decision == shape.favourable_class
        c[3] += label and decision == shape.favourable_class
    return [tuple(out[s]) for s in shape.slices]


@pytest.mark.parametrize("seed,n_classes,favourable", [(1, 2, 1), (2, 2, 0), (3, 3, 2), (4, 3, 0)])
def test_circuit_counts_equal_brute_force(seed, n_classes, favourable):
    model, shape, public, witness = toy_statement(seed, 24, favourable, n_classes)
    assert [tuple(vars(c).values()) for c in public.counts] == brute_force_counts(model, shape, witness.rows,
                                                                                   witness.labels)
    assert sum(c.rows for c in public.counts) == 24 and len(public.counts) == 6
    cs = build(shape, public, witness)
    assert satisfied(cs)
    # The relation anyone rebuilds from the shape alone is the one the prover's witness satisfies.
    assert r1cs_digest(cs.compile(wire_names=False)) == r1cs_digest(group_counts_relation(shape))
    assert shape.model_digest() == statement_shape(model, region_slots=2, farkas_slots=4, eps_bits=8).model_digest()


def test_circuit_size_grows_per_row_only():
    a, b, c = (group_counts_relation(toy_statement(5, n)[1]).n_constraints for n in (8, 16, 24))
    # Linear in N: the dataset hash's chunks are the only part not a whole number per row.
    assert abs((c - b) - (b - a)) <= 0.05 * (b - a) and 100 < (b - a) / 8 < 2000


@pytest.mark.parametrize("field,delta", [("rows", 1), ("positives", -1), ("selected", 1), ("true_positives", 1),
                                         ("selected", R - 1)])
def test_forged_count_is_refused(field, delta):
    _, shape, public, witness = toy_statement(6, 12)
    counts = list(public.counts)
    counts[0] = GroupCount(**{**vars(counts[0]), field: (getattr(counts[0], field) + delta) % R})
    cs = build(shape, GroupCountsPublic(public.commitment, public.dataset_digest, tuple(counts)), witness, strict=False)
    assert not satisfied(cs)
    assert any("counts" in label for label in unsatisfied_labels(cs))


def test_counts_moved_between_groups_are_refused():
    _, shape, public, witness = toy_statement(7, 16)
    counts = list(public.counts)
    donor = next(g for g, c in enumerate(counts) if c.selected > 0)
    taker = (donor + 1) % len(counts)
    counts[donor] = GroupCount(**{**vars(counts[donor]), "selected": counts[donor].selected - 1})
    counts[taker] = GroupCount(**{**vars(counts[taker]), "selected": counts[taker].selected + 1})
    assert not satisfied(build(shape, GroupCountsPublic(public.commitment, public.dataset_digest, tuple(counts)),
                               witness, strict=False))


def test_other_rows_or_labels_than_the_digest_are_refused():
    _, shape, public, witness = toy_statement(8, 10)
    rows = [list(r) for r in witness.rows]
    rows[3][1] += 1
    moved = GroupCountsWitness(witness.weights, witness.biases, SALT, tuple(map(tuple, rows)), witness.labels)
    cs = build(shape, public, moved, strict=False)
    assert not satisfied(cs) and any("dataset" in label for label in unsatisfied_labels(cs))
    labels = list(witness.labels)
    labels[0] = 1 - labels[0]
    flipped = GroupCountsWitness(witness.weights, witness.biases, SALT, witness.rows, tuple(labels))
    assert not satisfied(build(shape, public, flipped, strict=False))
    # A "label" of 2 that a packing without range checks would let through.
    two = GroupCountsWitness(witness.weights, witness.biases, SALT, witness.rows, (2, *witness.labels[1:]))
    assert not satisfied(build(shape, public, two, strict=False))


def test_other_weights_or_salt_than_the_commitment_are_refused():
    model, shape, public, witness = toy_statement(9, 8)
    other = random_model(99, n_inputs=5)
    forged = GroupCountsWitness(other.net.weights, other.net.biases, SALT, witness.rows, witness.labels)
    counts = plain_counts(shape, [other.net.decision(x) for x in witness.rows], witness.rows, witness.labels)
    cs = build(shape, GroupCountsPublic(public.commitment, public.dataset_digest, counts), forged, strict=False)
    assert not satisfied(cs) and any("commitment" in label for label in unsatisfied_labels(cs))
    salted = GroupCountsWitness(witness.weights, witness.biases, SALT + 1, witness.rows, witness.labels)
    assert not satisfied(build(shape, public, salted, strict=False))


class _LyingSystem(ConstraintSystem):
    """A dishonest prover: the first output of every hint named `lie` is replaced by `value(honest)`."""

    lie = ""
    value = staticmethod(lambda honest: honest)

    def hint(self, name, fn, inputs, n_outputs):
        if name != self.lie:
            return super().hint(name, fn, inputs, n_outputs)
        return super().hint(name, lambda *v: self._twisted(fn(*v)), inputs, n_outputs)

    def _twisted(self, outs):
        outs = list(outs)
        return [type(self).value(outs)] + outs[1:] if len(outs) == 1 else type(self).value(outs)


@pytest.mark.parametrize("lie,value", [
    ("argmax", lambda chosen: chosen[::-1]),          # every row decided by the other class
    ("argmax", lambda chosen: [1] * len(chosen)),    # two classes chosen at once
])
def test_a_dishonest_argmax_is_refused(lie, value):
    model, shape, public, witness = toy_statement(10, 8)
    # The counts the lie would give, so that only the decision rule can refuse it.
    decisions = [1 - model.net.decision(x) for x in witness.rows]
    lying_public = GroupCountsPublic(public.commitment, public.dataset_digest,
                                     plain_counts(shape, decisions, witness.rows, witness.labels))
    lying = type("Lying", (_LyingSystem,), {"lie": lie, "value": staticmethod(value)})
    cs = build(shape, lying_public, witness, strict=False, cs_type=lying)
    assert not satisfied(cs)


def test_dataset_checks_and_digest():
    _, shape, _, witness = toy_statement(11, 6)
    rows, labels = [list(r) for r in witness.rows], list(witness.labels)
    digest = dataset_digest(shape, rows, labels)
    assert dataset_digest(shape, rows[::-1], labels[::-1]) != digest  # order matters
    bad = [r[:] for r in rows]
    bad[0][1] = shape.box_upper[1] + 1
    with pytest.raises(GroupCountsError, match="outside the domain box"):
        dataset_digest(shape, bad, labels)
    bad = [r[:] for r in rows]
    bad[0][0] = 7  # not a value of the sensitive domain
    with pytest.raises(GroupCountsError, match="sensitive values"):
        dataset_digest(shape, bad, labels)
    with pytest.raises(GroupCountsError, match="label"):
        dataset_digest(shape, rows, [2] + labels[1:])
    with pytest.raises(GroupCountsError, match="rows"):
        dataset_digest(shape, rows[:-1], labels[:-1])


# ----------------------------------------------------------------------------- the bank's real proof
N_ROWS = 12


@pytest.fixture(scope="module")
def audit(bank, tmp_path_factory):
    """(card, dataset, bundle, directory) of a real German Credit group-counts proof on 12 rows."""
    from bank_fixtures import copy_of_bank_model
    from prover_service.audit_proving import GroupCountsProver, audit_dataset

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "audit")
    store.dispose()
    dataset, _ = audit_dataset(workspace, rows=N_ROWS)
    bundle = GroupCountsProver(workspace, single_party=True).prove(dataset)
    card = ModelCard.from_json(workspace.card_path.read_bytes())
    directory = tmp_path_factory.mktemp("audit-files")
    (directory / "card.json").write_text(card.canonical_json())
    (directory / "dataset.json").write_text(dataset.model_dump_json())
    (directory / "bundle.json").write_text(bundle.model_dump_json())
    return card, dataset, bundle, directory


def reissued(bundle: GroupCountsBundle, **fields) -> GroupCountsBundle:
    return GroupCountsBundle.model_validate({**bundle.model_dump(), **fields})


def test_the_real_proof_verifies_and_its_metrics_are_exact(audit):
    card, dataset, bundle, _ = audit
    verdict = verify_group_counts(bundle, card, dataset)
    assert verdict, verdict.reason
    groups = verdict.metrics.groups
    assert sum(g.counts.rows for g in groups) == N_ROWS
    assert sum(g.counts.positives for g in groups) == sum(dataset.labels)
    rates = [g.selection_rate for g in groups if g.selection_rate is not None]
    assert verdict.metrics.statistical_parity == max(rates) - min(rates)
    assert all(g.selection_rate == Fraction(g.counts.selected, g.counts.rows) for g in groups if g.counts.rows)


def test_equalized_odds_is_the_larger_of_the_two_proved_rate_gaps(audit, bank):
    """FVGM's EO from the proved counts, against a count of the bank model's own decisions on the rows."""
    card, dataset, bundle, _ = audit
    metrics = verify_group_counts(bundle, card, dataset).metrics
    model, f, column = bank.prover.model, bundle.favourable_class, card.sensitive[0].column
    tpr, fpr = [], []
    for group in bundle.groups:
        members = [(model.net.decision(list(x)) == f, l) for x, l in zip(dataset.rows, dataset.labels)
                   if x[column] == group.values[0]]
        positives = [d for d, l in members if l]
        negatives = [d for d, l in members if not l]
        if positives:
            tpr.append(Fraction(sum(positives), len(positives)))
        if negatives:
            fpr.append(Fraction(sum(negatives), len(negatives)))
    assert metrics.equal_opportunity == max(tpr) - min(tpr)
    assert metrics.false_positive_gap == max(fpr) - min(fpr)
    assert metrics.equalized_odds == max(max(tpr) - min(tpr), max(fpr) - min(fpr))
    assert metrics.equalized_odds >= metrics.equal_opportunity
    text = "\n".join(describe(metrics, card, bundle.circuit))
    assert "equalized odds" in text and "false-positive rate difference" in text


def test_counts_equal_the_bank_models_decisions(audit, bank):
    card, dataset, bundle, _ = audit
    model = bank.prover.model
    f = bundle.favourable_class
    column = card.sensitive[0].column
    for group in bundle.groups:
        members = [(x, l) for x, l in zip(dataset.rows, dataset.labels) if x[column] == group.values[0]]
        selected = [l for x, l in members if model.net.decision(list(x)) == f]
        assert (group.rows, group.positives, group.selected, group.true_positives) == \
            (len(members), sum(l for _, l in members), len(selected), sum(selected))


@pytest.mark.parametrize("forgery", [
    "readable count", "signal and readable count", "rows signal", "impossible count", "favourable label",
    "group labels", "dataset digest", "commitment", "another circuit", "field-sized count",
])
def test_a_dishonest_banks_bundle_is_refused(audit, forgery):
    card, dataset, bundle, _ = audit
    groups = [g.model_dump() for g in bundle.groups]
    signals = list(bundle.public_signals)
    g = next(i for i, x in enumerate(groups) if x["rows"] > 0)
    if forgery == "readable count":
        groups[g]["selected"] += 1
        forged = reissued(bundle, groups=groups)
    elif forgery == "signal and readable count":  # consistent everywhere: only the pairing can refuse it
        k = 2 + 4 * g + 2
        value = groups[g]["selected"] - 1 if groups[g]["selected"] > groups[g]["true_positives"] else \
            groups[g]["selected"] + 1
        groups[g]["selected"] = value
        signals[k] = str(value)
        forged = reissued(bundle, groups=groups, public_signals=signals)
    elif forgery == "rows signal":
        groups[g]["rows"] += 1
        signals[2 + 4 * g] = str(groups[g]["rows"])
        forged = reissued(bundle, groups=groups, public_signals=signals)
    elif forgery == "impossible count":
        groups[g]["selected"] = groups[g]["rows"] + 1
        signals[2 + 4 * g + 2] = str(groups[g]["selected"])
        forged = reissued(bundle, groups=groups, public_signals=signals)
    elif forgery == "favourable label":
        forged = reissued(bundle, favourable_label="some other class")
    elif forgery == "group labels":
        groups[g]["labels"] = ["nobody"]
        forged = reissued(bundle, groups=groups)
    elif forgery == "dataset digest":
        signals[1] = str((int(signals[1]) + 1) % R)
        forged = reissued(bundle, public_signals=signals, dataset_digest=signals[1])
    elif forgery == "commitment":
        signals[0] = str((int(signals[0]) + 1) % R)
        forged = reissued(bundle, public_signals=signals)
    elif forgery == "another circuit":
        forged = reissued(bundle, circuit="groups-n24-c1")
    else:  # a count given as itself plus R would pass a check made mod R
        with pytest.raises(ValueError):
            reissued(bundle, public_signals=[*signals[:2], str(int(signals[2]) + R), *signals[3:]])
        return
    verdict = verify_group_counts(forged, card, dataset)
    assert not verdict
    if forgery == "signal and readable count":
        assert "proof rejected" in verdict.reason


def test_a_proof_about_another_dataset_is_refused(audit):
    card, dataset, bundle, _ = audit
    rows = [list(r) for r in dataset.rows]
    j = next(j for j in range(len(rows[0])) if j not in {f.column for f in card.sensitive}
             and rows[0][j] < card.box_upper[j])
    rows[0][j] += 1
    other = dataset.model_copy(update={"rows": tuple(map(tuple, rows))})
    assert "another audit dataset" in verify_group_counts(bundle, card, other).reason
    # The bank relabels its bundle with the other dataset's name: the digest still says which one it proved.
    relabelled = reissued(bundle, dataset_sha256=other.sha256())
    assert "digest" in verify_group_counts(relabelled, card, other).reason
    labels = (1 - dataset.labels[0], *dataset.labels[1:])
    relabelled_rows = dataset.model_copy(update={"labels": labels})
    assert not verify_group_counts(reissued(bundle, dataset_sha256=relabelled_rows.sha256()), card, relabelled_rows)


def test_a_dishonest_banks_own_card_or_keys_are_refused(audit, bank):
    from circuits.backends import get_backend
    from circuits.groth16 import setup, vk_digest
    from circuits.snarkjs.json_formats import verifying_key_to_json

    card, dataset, bundle, _ = audit
    # The bank's own keys for a circuit that checks nothing of the counts, slipped onto a re-published card.
    from circuits.builder import ConstraintSystem as CS

    cs = CS(with_values=False)
    inputs = [cs.public_input(f"x{i}") for i in range(card.audit_circuits[0].n_public)]
    cs.assert_equal(cs.mul(inputs[0], inputs[0]), cs.mul(inputs[0], inputs[0]))
    _, vk = setup(cs.compile(wire_names=False), get_backend(), seed=1)
    def republished(**fields) -> ModelCard:
        circuit = {**card.audit_circuits[0].model_dump(mode="json"), **fields}
        return ModelCard.model_validate({**card.model_dump(mode="json"), "audit_circuits": [circuit]})

    rogue = republished(verifying_key=verifying_key_to_json(vk), verifying_key_digest=vk_digest(vk))
    assert "another model card" in verify_group_counts(reissued(bundle, card_digest=rogue.digest()), card, dataset).reason
    # The key swapped but its digest left as published: the card's own check refuses it.
    swapped = republished(verifying_key=verifying_key_to_json(vk))
    verdict = verify_group_counts(reissued(bundle, card_digest=swapped.digest()), swapped, dataset)
    assert not verdict and "digest" in verdict.reason
    # Even a holder of the rogue card itself: the bank's trivial circuit is not the audit circuit.
    verdict = verify_group_counts(reissued(bundle, card_digest=rogue.digest()), rogue, dataset)
    assert not verdict and "proof rejected" in verdict.reason
    # Keys the bank set up alone are refused by an auditor who requires a contributor of their own.
    trusted = "ab" * 64
    verdict = verify_group_counts(bundle, card, dataset, trusted_contributors=[trusted])
    assert not verdict and "bank alone" in verdict.reason


def test_the_auditors_command_line(audit, capsys):
    card, dataset, bundle, d = audit
    assert verify_main([str(d / "bundle.json"), "--card", str(d / "card.json"), "--dataset", str(d / "dataset.json")]) == 0
    out = capsys.readouterr().out
    assert "VALID proof of group counts" in out and "disparate impact" in out and "foreign" in out
    groups = [g.model_dump() for g in bundle.groups]
    groups[0]["selected"] = groups[0]["selected"] + 1 if groups[0]["selected"] < groups[0]["rows"] else 0
    (d / "forged.json").write_text(reissued(bundle, groups=groups).model_dump_json())
    assert verify_main([str(d / "forged.json"), "--card", str(d / "card.json"), "--dataset", str(d / "dataset.json")]) == 1
    assert "INVALID" in capsys.readouterr().err
    # --json: the verified counts as a document checked against its schema; a refusal as one too.
    from verifier_client.output import GroupCountsReport

    argv = [str(d / "bundle.json"), "--card", str(d / "card.json"), "--dataset", str(d / "dataset.json"), "--json"]
    assert verify_main(argv) == 0
    report = GroupCountsReport.model_validate_json(capsys.readouterr().out, strict=True)
    assert report.valid and [g.selected for g in report.groups] == [g.selected for g in bundle.groups]
    assert report.rows == N_ROWS and report.dataset_sha256 == dataset.sha256()
    assert verify_main([str(d / "forged.json"), *argv[1:]]) == 1
    refused = GroupCountsReport.model_validate_json(capsys.readouterr().out, strict=True)
    assert not refused.valid and refused.reason
    (d / "broken.json").write_text("{")
    assert verify_main([str(d / "broken.json"), "--card", str(d / "card.json"), "--dataset", str(d / "dataset.json")]) == 2


@pytest.mark.snarkjs
@needs_snarkjs
def test_snarkjs_verifies_the_export_and_refuses_tampering(audit, tmp_path):
    from prover_service.cli import main as fairproof

    _, _, _, d = audit
    out = tmp_path / "snarkjs"
    assert fairproof(["export-snarkjs", str(d / "bundle.json"), str(out), "--card", str(d / "card.json"),
                      "--dataset", str(d / "dataset.json")]) == 0

    def snarkjs_ok() -> bool:
        done = run_snarkjs(["groth16", "verify", out / "verification_key.json", out / "public.json",
                            out / "proof.json"], timeout=120, check=False)
        ok = done.returncode == 0 and "OK" in done.stdout
        assert ok or "Invalid proof" in done.stdout + done.stderr, done.stdout + done.stderr
        return ok

    assert snarkjs_ok()
    public = json.loads((out / "public.json").read_text())
    public[4] = str(int(public[4]) + 1)  # slice 0's selected count
    (out / "public.json").write_text(json.dumps(public))
    assert not snarkjs_ok()


def test_audit_dataset_files_are_strict(audit, tmp_path):
    _, dataset, _, _ = audit
    text = dataset.model_dump_json()
    assert AuditDataset.from_json(text) == dataset
    for bad in (text.replace('"labels":[', '"labels":[2,', 1), text.replace('"version":1', '"version":"1"')):
        with pytest.raises(ValueError):
            AuditDataset.from_json(bad)


def test_cli_dataset_and_prove_groups(bank, tmp_path_factory, tmp_path):
    """The bank's commands: a dataset file, then a proof that the auditor's command line accepts."""
    from bank_fixtures import copy_of_bank_model
    from prover_service.cli import main as fairproof

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "audit-cli")
    store.dispose()
    data, bundle = tmp_path / "audit.json", tmp_path / "groups.json"
    assert fairproof(["audit", "dataset", "--model", str(root), "--rows", "6", "--out", str(data)]) == 0
    assert fairproof(["audit", "prove-groups", "--model", str(root), "--dataset", str(data), "--out", str(bundle),
                      "--single-party-setup"]) == 0
    card = root / "card.json"
    assert verify_main([str(bundle), "--card", str(card), "--dataset", str(data)]) == 0
    assert fairproof(["audit", "prove-groups", "--model", str(root), "--dataset", str(tmp_path / "missing.json"),
                      "--out", str(bundle)]) != 0


# ----------------------------------------------------------------------------- a regulator's ceremony
BEACON = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
CEREMONY_ROWS = 4


def _cli(*args: str):
    """`fairproof ARGS` in its own process, as a contributor on another machine would run it."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "prover_service.cli", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def regulated(bank, tmp_path_factory):
    """The audit circuit of 4 rows set up in a ceremony: the bank, then the regulator, then a beacon;
    installed on a copy of the bank's model, and a proof of group counts under it."""
    from bank_fixtures import copy_of_bank_model
    from circuits.backends import get_backend
    from circuits.snarkjs.ptau_dev import write_dev_ptau
    from circuits.snarkjs.zkey_new import circuit_power
    from prover_service.audit_proving import GroupCountsProver, audit_dataset
    from prover_service.cli import main as fairproof

    root, workspace, store = copy_of_bank_model(bank, tmp_path_factory, "regulated")
    store.dispose()
    shape = GroupCountsProver(workspace).shape(CEREMONY_ROWS)
    work = tmp_path_factory.mktemp("regulated-files")
    ptau = work / "phase1.ptau"
    write_dev_ptau(ptau, circuit_power(group_counts_relation(shape)), get_backend(), name="phase-1 test contributor")
    directory = work / "ceremony"
    assert fairproof(["ceremony", "init", "--model", str(root), "--audit-rows", str(CEREMONY_ROWS),
                      "--ptau", str(ptau), "--out", str(directory)]) == 0
    hashes = {}
    for name in ("bank", "regulator"):
        done = _cli("ceremony", "contribute", str(directory), "--name", name, "--entropy", f"{name} dice")
        assert done.returncode == 0, done.stderr
        hashes[name] = done.stdout.strip().splitlines()[-1]
    assert fairproof(["ceremony", "finalize", str(directory), "--beacon", BEACON, "--iterations", "10"]) == 0
    assert fairproof(["ceremony", "install", str(directory), "--model", str(root), "--ptau", str(ptau)]) == 0
    dataset, _ = audit_dataset(workspace, rows=CEREMONY_ROWS)
    (work / "dataset.json").write_text(dataset.model_dump_json())
    # No key setup allowed: the proof must use the installed ceremony's key.
    bundle = GroupCountsProver(ModelWorkspace_open(root)).prove(dataset)
    (work / "bundle.json").write_text(bundle.model_dump_json())
    (work / "card.json").write_text(ModelWorkspace_open(root).card().canonical_json())
    return {"root": root, "work": work, "ptau": ptau, "hashes": hashes, "dataset": dataset, "bundle": bundle}


def ModelWorkspace_open(root):
    from prover_service.workspace import ModelWorkspace

    return ModelWorkspace.open(root)


def test_a_regulator_who_contributed_accepts_the_proof(regulated, capsys):
    w = regulated["work"]
    argv = [str(w / "bundle.json"), "--card", str(w / "card.json"), "--dataset", str(w / "dataset.json")]
    assert verify_main([*argv, "--trust-contributor", regulated["hashes"]["regulator"]]) == 0
    assert "regulator" in capsys.readouterr().out
    assert verify_main([*argv, "--trust-contributor", "5" * 128]) == 1
    assert "none of your trusted contributors" in capsys.readouterr().err


def test_audit_keys_checks_the_audit_circuit(regulated):
    from circuits.backends import get_backend
    from circuits.snarkjs.ceremony import file_sha256
    from circuits.snarkjs.ptau import read_ptau
    from prover_service.key_audit import audit_bucket, find_bucket_key

    w = regulated["work"]
    keys = regulated["root"] / "keys"
    ptau = read_ptau(regulated["ptau"])
    # `zkey new` of the circuit and phase 1, as `ceremony install --ptau` checked: regenerated once, not per card.
    initial = (w / "ceremony" / "key_0000.zkey").read_bytes()

    def audit(card: ModelCard):
        # The bank's certificate buckets are single-party here (nothing to audit); the audit circuit is checked.
        circuit = card.audit_circuits[0]
        zkey = find_bucket_key(keys, circuit.name).read_bytes()
        return {circuit.name: audit_bucket(card, circuit, ptau, file_sha256(regulated["ptau"]), zkey, get_backend(),
                                           initial=initial)}

    card = ModelCard.from_json((w / "card.json").read_bytes())
    circuit = card.audit_circuits[0]
    result = audit(card)[circuit.name]
    assert result.ok, result.reason
    assert [c.name for c in result.contributors] == ["bank", "regulator", "final beacon"]
    # A card that names the same key under another circuit's shape (one more row) is caught.
    lying = ModelCard.model_validate({**card.model_dump(mode="json"), "audit_circuits": [
        {**circuit.model_dump(mode="json"), "n_rows": CEREMONY_ROWS + 1,
         "name": f"groups-n{CEREMONY_ROWS + 1}-c{circuit.favourable_class}"}]})
    shutil_copy_key(keys, circuit.name, lying.audit_circuits[0].name)
    result = audit(lying)[lying.audit_circuits[0].name]
    assert not result.ok and "R1CS digest" in result.reason
    # ... and one that lists a contributor who is not in the key's transcript.
    forged = ModelCard.model_validate({**card.model_dump(mode="json"), "audit_circuits": [
        {**circuit.model_dump(mode="json"), "setup": {**circuit.setup.model_dump(mode="json"), "contributions": [
            {"name": "regulator", "hash": "5" * 128, "kind": "contribution"}]}}]})
    result = audit(forged)[circuit.name]
    assert not result.ok and "contributor" in result.reason


def shutil_copy_key(keys, name: str, as_name: str) -> None:
    """The real final key, filed under another circuit's name (what a lying card would point auditors to)."""
    import shutil

    source = next(keys.glob(f"{name}-*/bucket.zkey"))
    target = keys / f"{as_name}-{'0' * 12}"
    target.mkdir()
    shutil.copyfile(source, target / "bucket.zkey")


def test_a_contributor_refuses_an_audit_ceremony_for_another_circuit(regulated, tmp_path, capsys):
    """The bank names one shape and ships another circuit: the contributor's rebuild catches it."""
    import shutil

    from prover_service.cli import main as fairproof

    copy = tmp_path / "ceremony"
    shutil.copytree(regulated["work"] / "ceremony", copy)
    state = json.loads((copy / "ceremony.json").read_text())
    state["metadata"]["group_counts_shape"]["n_rows"] = CEREMONY_ROWS + 1
    (copy / "ceremony.json").write_text(json.dumps(state))
    assert fairproof(["ceremony", "contribute", str(copy), "--name", "regulator"]) == 1
    assert "not the group-counts statement" in capsys.readouterr().err
