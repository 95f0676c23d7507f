"""`fairproof demo`: the whole product end to end on German Credit, with SQLite.

Train (or load) a German Credit (4,2) model, commit to it, enumerate its
regions into the precompute store, set up the keys of the circuit buckets
the first customers need in a two-party ceremony (the bank and a named
auditor contribute, a beacon closes it); the auditor then audits every key
on the card (`fairproof audit-keys`) and signs an attestation of it. For a
few test customers: certify, prove, and verify each bundle as a customer who
trusts the auditor would (card + bundle + the auditor's attestation, checked
against the auditor's key only).

Certificates state the hybrid radius unless --radius says otherwise: the exact
radius where region enumeration finishes within --exact-budget seconds (it does
on this small model), the bound radius where it does not.

Phase 1 here is a development powers-of-tau file written on this machine (by
the auditor, in the story): production uses a public ceremony's file, see
docs/guides/bank.md. It is made large enough for every bucket these customers need under
every radius mode (fast, exact and bound: hybrid uses the last two), so that a
second run with another --radius reuses it.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .radius_option import (add_bucket_growth_argument, add_exact_budget_argument, add_exact_size_argument,
                           add_per_slice_argument, add_radius_argument, check_exact_budget)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="train, commit, precompute, prove and verify certificates for a few German Credit customers",
        description="End-to-end run on the embedded default: German Credit, hidden layers (4,2), fair variant, "
                    "SQLite store. Artifacts go to --workdir; a second run reuses them.",
    )
    p.add_argument("--workdir", default="var/demo", metavar="DIR", help="where the model, keys and store live")
    p.add_argument("--customers", type=int, default=3, metavar="N", help="test customers to certify (default 3)")
    p.add_argument("--hidden", default="4,2", help="hidden layer sizes (default 4,2)")
    p.add_argument("--variant", choices=("fair", "unfair"), default="fair",
                   help="fair: trained with the largest L2 penalty that keeps validation accuracy within 1 point "
                        "of the unpenalised model (default); unfair: no penalty")
    p.add_argument("--data-dir", metavar="DIR", help="dataset directory (default: see README)")
    p.add_argument("--persistence", type=float, default=0.25, metavar="DELTA",
                   help="the persistence lens's box: numeric features moved by up to DELTA standard deviations "
                        "(default 0.25)")
    p.add_argument("--no-persistence", dest="persistence", action="store_const", const=None,
                   help="certificates without the persistence lens")
    p.add_argument("--store", metavar="URL", help="precompute store URL (default: SQLite in the model directory)")
    add_radius_argument(p)
    add_exact_budget_argument(p)
    add_exact_size_argument(p)
    add_bucket_growth_argument(p)
    add_per_slice_argument(p)
    p.set_defaults(handler=run)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from fairness.errors import DataError
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.proving import Prover

    if args.customers < 1:
        raise DataError("--customers must be at least 1")
    check_exact_budget(args.exact_budget)
    hidden = tuple(int(h) for h in args.hidden.split(","))
    workdir = Path(args.workdir)
    model_dir = workdir / f"german-{'x'.join(map(str, hidden))}-{args.variant}"

    backend = get_backend()
    workspace = _trained_model(args, hidden, workdir, model_dir, backend)
    _committed(args, workspace, model_dir)

    _say("[3/7] precompute regions")
    db = open_database(resolve_store_url(args.store, model_dir))
    try:
        prover = Prover(workspace, db, backend, progress=_say, radius=args.radius,
                        bucket_growth=args.bucket_growth, per_slice=args.per_slice,
                        exact_budget=args.exact_budget,
                        exact_max_constraints=args.exact_max_constraints)
        queries = _precomputed_customers(args, db, workspace, prover)
        auditor_hashes = _ceremonies(prover, queries, workdir, backend)
        auditor_key, attestation = _auditor_attests(prover.card, workdir, model_dir, backend)
        failures, verdict = _prove_customers(prover, queries, workspace, workdir, backend,
                                             auditor_hashes, auditor_key, attestation)
    finally:
        db.dispose()
    print()
    _print_claims(verdict, prover.card)
    _print_next_steps(workdir, model_dir, auditor_key, attestation, auditor_hashes)
    return 1 if failures else 0


def _trained_model(args: argparse.Namespace, hidden: tuple[int, ...], workdir: Path, model_dir: Path, backend):
    """Step 1: the German Credit model, trained (or loaded from its cache) on the first run."""
    from fairness.model import save_artifact
    from fairness.training import load_or_train
    from prover_service.workspace import ModelWorkspace

    _say(f"[1/7] model: German Credit {hidden} {args.variant} (curve backend: {backend.name})")
    if not (model_dir / "model.json").is_file():
        artifact = load_or_train("german", hidden, args.variant, cache_dir=workdir / "cache", data_dir=args.data_dir,
                                 progress=lambda *a: None)
        model_dir.mkdir(parents=True, exist_ok=True)
        save_artifact(artifact, model_dir)
    workspace = ModelWorkspace.open(model_dir)
    _say(f"      test accuracy {workspace.artifact.test_accuracy:.3f}")
    return workspace


def _committed(args: argparse.Namespace, workspace, model_dir: Path) -> None:
    """Step 2: the model committed (once: a second run keeps its card)."""
    from prover_service.publishing import commit_model

    _say("[2/7] commit")
    card = workspace.card() if workspace.is_committed else commit_model(
        workspace, model_id=model_dir.name, persistence_delta=args.persistence)
    _say(f"      commitment {card.commitment}")


def _precomputed_customers(args: argparse.Namespace, db, workspace, prover) -> list:
    """Step 3: the model's regions in the store; the first test customers' queries."""
    from offline_precompute.certify import query_from_index, test_inputs
    from offline_precompute.enumerate import precompute
    from prover_service.commands.precompute import ProgressPrinter

    summary = precompute(db, prover.model, progress=ProgressPrinter(interval=2.0))
    _say(f"      {summary.regions} regions, {summary.facets} facets, {summary.lps} new LPs, "
         f"{summary.seconds:.1f} s")
    X, _ = test_inputs(workspace.artifact, args.data_dir)
    return [query_from_index(workspace.artifact, prover.model, i, args.data_dir)
            for i in range(min(args.customers, len(X)))]


def _prove_customers(prover, queries, workspace, workdir: Path, backend, auditor_hashes, auditor_key, attestation):
    """Step 7: each customer certified, proved and verified as a customer trusting the auditor would;
    (failures, the last verdict)."""
    import shutil

    from prover_service.progress import StageBar
    from prover_service.proving import ExactRadiusUnavailable
    from verifier_client.verify import verify_bundle

    _say(f"[7/7] certify, prove and verify {len(queries)} customers (trusting the auditor's key)")
    bundles_dir = workdir / "bundles"
    bundles_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(workspace.card_path, workdir / "card.json")
    print(f"{'customer':>8}  {'decision':<10} {'status':<20} {'eps':>12}  {'constraints':>11}  "
          f"{'online s':>8}  {'prove s':>7}  {'verify ms':>9}  proof")
    failures = 0
    verdict = None
    for index, query in enumerate(queries):
        try:
            with StageBar(f"customer {index}") as bar:
                result = prover.prove(query, on_stage=bar.stage)
        except ExactRadiusUnavailable as exc:
            print(f"{index:>8}  not proved: {exc}", flush=True)
            continue
        bundle = result.bundle
        (bundles_dir / f"customer-{index}.json").write_text(bundle.model_dump_json(indent=1) + "\n")
        t0 = time.perf_counter()
        verdict = verify_bundle(bundle, prover.card, backend, trusted_contributors=auditor_hashes,
                                trusted_auditors=[auditor_key] if attestation else [],
                                attestations=[attestation] if attestation else [])
        verify_ms = (time.perf_counter() - t0) * 1000
        failures += not verdict
        # "=" for an exact radius, ">=" for a lower bound: what the verified bucket's statement proves.
        relation = "" if not verdict or bundle.status != "certified" else (
            "= " if verdict.claims.eps_exact and not verdict.claims.capped else ">= ")
        print(f"{index:>8}  {bundle.decision_label:<10} {bundle.status:<20} {relation + bundle.eps.decimal:>12}  "
              f"{result.n_constraints:>11}  {result.timings.online:>8.2f}  {result.timings.prove:>7.2f}  "
              f"{verify_ms:>9.1f}  {len(bytes.fromhex(bundle.proof_hex))} B "
              + ("VALID" if verdict else "INVALID: " + "; ".join(verdict.reasons)), flush=True)
    shutil.copyfile(workspace.card_path, workdir / "card.json")
    return failures, verdict


def _print_claims(verdict, card) -> None:
    """What the last valid certificate says, as its customer reads it."""
    from verifier_client.verify import explain, persistence_summary, radius_summary, spread_summary

    if not verdict:
        return
    print(radius_summary(verdict.claims))
    print(explain(verdict.claims, card))
    for lens in (spread_summary(verdict.claims, card), persistence_summary(verdict.claims, card)):
        if lens:
            print(lens)


def _print_next_steps(workdir: Path, model_dir: Path, auditor_key, attestation, auditor_hashes) -> None:
    """The commands that check a bundle as a customer and audit the keys as the auditor did."""
    bundles_dir = workdir / "bundles"
    trust = (f"--trust-auditor {auditor_key} --attestation {_attestation_path(workdir)}" if attestation
             else " ".join(f"--trust-contributor {h}" for h in auditor_hashes))
    print(f"\nbundles in {bundles_dir}/, card in {workdir / 'card.json'}; check one as a customer who trusts the "
          f"auditor:\n  fairproof-verify {bundles_dir}/customer-0.json --card {workdir / 'card.json'} {trust}")
    print(f"audit every key of the card and attest it, as the auditor did:\n  fairproof audit-keys --card "
          f"{workdir / 'card.json'} --ptau {_phase1_path(workdir)} --keys {model_dir / 'keys'} "
          f"--attest ATTESTATION.json --signing-key {_auditor_key_path(workdir)}")


AUDITOR = "Consumer Credit Association (auditor)"
AUDITOR_KEY_NAME = "audit.consumer-credit.example"  # the name in the auditor's signing key


def _auditor_key_path(workdir: Path) -> Path:
    return workdir / "auditor" / "attestation.key"


def _attestation_path(workdir: Path) -> Path:
    return workdir / "attestation.json"


def _auditor_attests(card, workdir: Path, model_dir: Path, backend):
    """The auditor audits every key on `card` and signs what it checked: (its verifier key, the attestation),
    or (its key, None) for a card without buckets. Reuses an earlier run's attestation of this very card."""
    from datetime import datetime, timezone

    from commitments.attestation import Attestation, sign_attestation, statement_mismatch, verify_signature
    from prover_service.key_audit import audit_card
    from transparency.note import Signer, generate_key

    from .key_files import read_signer, write_new_key

    key_path, out = _auditor_key_path(workdir), _attestation_path(workdir)
    if not key_path.is_file():
        key_path.parent.mkdir(parents=True, exist_ok=True)
        write_new_key(key_path, generate_key(AUDITOR_KEY_NAME)[0], "an auditor key")
    signer = read_signer(key_path, Signer, "auditor key")
    vkey = signer.verifier().vkey()
    if not card.circuits:
        return vkey, None
    if out.is_file():
        earlier = Attestation.from_json(out.read_bytes())
        if statement_mismatch(verify_signature(earlier).statement, card, card.digest()) is None:
            _say(f"[6/7] the auditor's attestation of card {card.digest()[:16]}...: made by an earlier run")
            return vkey, earlier
    _say(f"[6/7] the auditor audits every key on card {card.digest()[:16]}... and attests it")
    audit = audit_card(card, _phase1_path(workdir), model_dir / "keys", backend, progress=lambda m: _say(f"      {m}"))
    if not audit.ok:
        failed = "; ".join(f"{b.bucket}: {b.reason}" for b in audit.buckets if not b.ok)
        raise RuntimeError(f"the auditor's audit of the card failed: {failed}")
    attestation = sign_attestation(audit.statement(datetime.now(timezone.utc).date().isoformat()), signer)
    out.write_text(attestation.model_dump_json(indent=1) + "\n")
    _say(f"      attestation by {signer.name} written to {out}")
    return vkey, attestation


def _phase1_path(workdir: Path) -> Path:
    return workdir / "phase1" / "development.ptau"


def _ceremonies(prover, queries, workdir: Path, backend) -> list[str]:
    """Keys for every bucket the customers need, each from a bank + auditor ceremony; the auditor's hashes."""
    import hashlib
    import json

    from circuits.snarkjs.ceremony import Ceremony
    from circuits.snarkjs.ptau import read_ptau
    from circuits.snarkjs.ptau_dev import write_dev_ptau
    from circuits.snarkjs.zkey_new import circuit_power
    from prover_service.bucket_keys import ceremony_metadata
    from statement import statement_relation

    shapes = _needed_shapes(prover, queries)
    if not shapes:
        return []
    relations = {name: statement_relation(shape) for name, shape in shapes.items()}
    power = max(circuit_power(r) for r in relations.values())
    ptau = _phase1_path(workdir)
    if not ptau.is_file() or read_ptau(ptau).power < power:
        # One file for every mode: a later run, or a guide's command, with another --radius reuses it.
        power = max([power] + [circuit_power(statement_relation(shape))
                               for name, shape in _other_modes_shapes(prover, queries).items()
                               if name not in relations])
        _say(f"[4/7] phase 1: a development powers-of-tau file of 2^{power} (made here, by the auditor in this "
             "story; production uses a public ceremony's file)")
        ptau.parent.mkdir(parents=True, exist_ok=True)
        write_dev_ptau(ptau, power, backend, name=AUDITOR, progress=lambda m: _say(f"      {m}"))
    else:
        _say(f"[4/7] phase 1: {ptau} (2^{read_ptau(ptau).power}, made by an earlier run)")

    receipts_path = workdir / "ceremonies" / "auditor-hashes.json"
    receipts = json.loads(receipts_path.read_text()) if receipts_path.is_file() else {}
    _say(f"[5/7] phase-2 ceremonies for buckets {', '.join(sorted(shapes))}: the bank, then the auditor, "
         "then a public beacon")
    for name, shape in sorted(shapes.items()):
        if any(b.bucket == name for b in prover.card.circuits):
            _say(f"      {name}: installed by an earlier run")
            continue
        directory = workdir / "ceremonies" / f"{prover.card.model_id}-{name}"
        if directory.exists():
            import shutil

            shutil.rmtree(directory)  # an interrupted earlier run: start this bucket again
        step = lambda m: _say(f"      {m}")  # noqa: E731
        ceremony = Ceremony.init(directory, relations[name], ptau, backend, label=f"{prover.card.model_id} {name}",
                                 metadata=ceremony_metadata(prover.card, shape), progress=step)
        bank = ceremony.contribute("bank", b"", backend, progress=step)
        _say(f"      {name}: the bank's contribution hash {bank.hash[:32]}...")
        auditor = ceremony.contribute(AUDITOR, b"", backend, progress=step)  # on the auditor's machine, in life
        _say(f"      {name}: the auditor's contribution hash {auditor.hash[:32]}...")
        beacon = hashlib.sha256(f"public beacon for {prover.card.commitment}".encode()).hexdigest()
        ceremony.finalize(beacon, 10, backend, progress=step)
        prover.install_ceremony(ceremony)
        receipts[name] = auditor.hash
        receipts_path.write_text(json.dumps(receipts, indent=1))
    # One contribution per bucket, so one hash per bucket: a customer who trusts the auditor names each.
    return sorted({receipts[name] for name in shapes})


def _needed_shapes(prover, queries) -> dict:
    """Bucket name -> shape of every bucket `prover` needs for these customers, with the buckets its radius
    needs whoever the customer is (a hybrid prover's bound bucket)."""
    from prover_service.proving import ExactRadiusUnavailable

    shapes = {}
    for query in queries:
        try:
            needed = prover.shapes_for_certificate(prover.certify(query))
        except ExactRadiusUnavailable:
            continue  # reported when the customer is proved
        for shape in needed:
            shapes.setdefault(shape.bucket, shape)
    for shape in prover.standing_shapes():
        shapes.setdefault(shape.bucket, shape)
    return shapes


def _other_modes_shapes(prover, queries) -> dict:
    """The buckets these customers need under the radius modes this run does not use (fast, exact, bound):
    the phase-1 file is sized for them as well, so a later run or a guide's command with another --radius
    finds it large enough."""
    import dataclasses

    from fairness.radius import PROVED_RADII

    shapes = {}
    for mode in PROVED_RADII:
        if mode == prover.radius:
            continue
        other = dataclasses.replace(prover, radius=mode, per_slice=False, progress=lambda _: None)
        shapes.update(_needed_shapes(other, queries))
    return shapes
