"""`fairproof export-snarkjs`: a bundle as snarkjs's three files, for independent verification."""
from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export-snarkjs",
        help="write verification_key.json, proof.json and public.json for `snarkjs groth16 verify`",
        description="Write the bundle's proof and public inputs, and the verifying key of its bucket from the "
                    "model card, in snarkjs's formats, so that `snarkjs groth16 verify verification_key.json "
                    "public.json proof.json` checks the certificate independently. A certificate proved slice "
                    "by slice gets one directory per slice (OUTDIR/slice-N), each to be verified. A proof of group "
                    "counts (`audit prove-groups`) needs --dataset, and is exported only if it verifies.",
    )
    p.add_argument("bundle", metavar="BUNDLE.json", help="the certificate bundle (or proof of group counts) to export")
    p.add_argument("outdir", metavar="OUTDIR", help="directory for the three files (created)")
    p.add_argument("--card", required=True, metavar="CARD.json", help="the model card the bundle was issued under")
    p.add_argument("--dataset", metavar="AUDIT.json", help="BUNDLE is a proof of group counts on this audit dataset")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from circuits.errors import MalformedArtifact
    from circuits.snarkjs.json_formats import dump_json
    from commitments.bundle import CertificateBundle
    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard
    from commitments.claims import BOUND_METHOD, ClaimError, bundle_claims
    from verifier_client.verify import bucket_verifying_key

    if args.dataset is not None:
        return _group_counts(args)
    try:
        bundle = CertificateBundle.from_json(_read(args.bundle, "bundle"))
        card = ModelCard.from_json(_read(args.card, "model card"))
        # snarkjs checks the proof against the signals only: a bundle whose readable fields say
        # something else than its signals would export and verify, so it is refused here.
        claims = bundle_claims(bundle, card)
    except (NonCanonical, ClaimError) as exc:
        raise MalformedArtifact(str(exc)) from None
    from commitments.claims import part_signals

    # A per-slice certificate is one proof per slice: each goes to a directory of its own, and every
    # one must verify (a single part proves one slice only).
    proofs = [(0, claims.bucket, bundle.proof, bundle.public_signals)]
    proofs += [(p.slice_index, p.bucket, p.proof, part_signals(bundle, p.slice_index)) for p in bundle.parts]
    base = Path(args.outdir)
    commands = []
    for slice_index, name, proof, signals in proofs:
        bucket = card.bucket(name)
        bucket_verifying_key(bucket)  # snarkjs checks no key: a degenerate one would accept anything
        out = base / f"slice-{slice_index}" if bundle.parts else base
        out.mkdir(parents=True, exist_ok=True)
        dump_json(out / "verification_key.json", bucket.verifying_key.model_dump(mode="json"))
        dump_json(out / "proof.json", proof.model_dump(mode="json"))
        dump_json(out / "public.json", list(signals))
        print(f"wrote {out}/verification_key.json, proof.json, public.json")
        commands.append(f"snarkjs groth16 verify {out}/verification_key.json {out}/public.json {out}/proof.json")
    # snarkjs checks the proof against this key only; what eps is comes from the bucket the key is for.
    what = {"exact": "the exact radius (the true radius rounded down to 2^-t)",
            "bound": f"the bound radius ({BOUND_METHOD[claims.model_kind]}: a lower bound on the true radius)",
            "fast": "the fast radius (a lower bound on the true radius)"}[claims.radius]
    if bundle.parts:
        print(f"the keys are buckets {', '.join(dict.fromkeys((claims.bucket, *claims.part_buckets)))} on the card, "
              f"one proof per slice: together their statements prove {what}; every one must verify")
    else:
        print(f"the key is bucket {claims.bucket}'s on the card: its statement proves {what}")
    for command in commands:
        print(f"verify with: {command}")
    return 0


def _group_counts(args: argparse.Namespace) -> int:
    """A group-counts proof: snarkjs checks the pairing only, so everything else it cannot (the dataset's
    digest and counts, the card, the readable fields) is checked here first, with the whole verifier."""
    from circuits.errors import MalformedArtifact
    from circuits.snarkjs.json_formats import dump_json
    from commitments.audit import AuditDataset, GroupCountsBundle
    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard
    from verifier_client.audit import verify_group_counts

    try:
        bundle = GroupCountsBundle.from_json(_read(args.bundle, "group-counts bundle"))
        card = ModelCard.from_json(_read(args.card, "model card"))
        dataset = AuditDataset.from_json(_read(args.dataset, "audit dataset"))
    except NonCanonical as exc:
        raise MalformedArtifact(str(exc)) from None
    verdict = verify_group_counts(bundle, card, dataset)
    if not verdict:
        raise MalformedArtifact(f"not exported: the proof of group counts is invalid ({verdict.reason})")
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    dump_json(out / "verification_key.json", card.audit_circuit(bundle.circuit).verifying_key.model_dump(mode="json"))
    dump_json(out / "proof.json", bundle.proof.model_dump(mode="json"))
    dump_json(out / "public.json", list(bundle.public_signals))
    print(f"wrote {out}/verification_key.json, proof.json, public.json (audit circuit {bundle.circuit})")
    print(f"verify with: snarkjs groth16 verify {out}/verification_key.json {out}/public.json {out}/proof.json")
    return 0


def _read(path: str, what: str) -> bytes:
    from circuits.errors import MalformedArtifact

    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise MalformedArtifact(f"cannot read {what} {path}: {exc.strerror or exc}") from None
