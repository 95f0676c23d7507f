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
                    "public.json proof.json` checks the certificate independently.",
    )
    p.add_argument("bundle", metavar="BUNDLE.json")
    p.add_argument("outdir", metavar="OUTDIR")
    p.add_argument("--card", required=True, metavar="CARD.json", help="the model card the bundle was issued under")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from circuits.errors import MalformedArtifact
    from circuits.snarkjs.json_formats import dump_json
    from commitments.bundle import CertificateBundle
    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard
    from commitments.claims import ClaimError, bundle_claims
    from verifier_client.verify import bucket_verifying_key

    try:
        bundle = CertificateBundle.from_json(_read(args.bundle, "bundle"))
        card = ModelCard.from_json(_read(args.card, "model card"))
        # snarkjs checks the proof against the signals only: a bundle whose readable fields say
        # something else than its signals would export and verify, so it is refused here.
        claims = bundle_claims(bundle, card)
    except (NonCanonical, ClaimError) as exc:
        raise MalformedArtifact(str(exc)) from None
    bucket = card.bucket(claims.bucket)
    bucket_verifying_key(bucket)  # snarkjs checks no key: a degenerate one would accept anything
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    dump_json(out / "verification_key.json", bucket.verifying_key.model_dump(mode="json"))
    dump_json(out / "proof.json", bundle.proof.model_dump(mode="json"))
    dump_json(out / "public.json", list(bundle.public_signals))
    print(f"wrote {out}/verification_key.json, proof.json, public.json")
    # snarkjs checks the proof against this key only; what eps is comes from the bucket the key is for.
    what = ("the exact radius (the true radius rounded down to 2^-t)" if claims.eps_exact
            else "the fast radius (a lower bound on the true radius)")
    print(f"the key is bucket {claims.bucket}'s on the card: its statement proves {what}")
    print(f"verify with: snarkjs groth16 verify {out}/verification_key.json {out}/public.json {out}/proof.json")
    return 0


def _read(path: str, what: str) -> bytes:
    from circuits.errors import MalformedArtifact

    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise MalformedArtifact(f"cannot read {what} {path}: {exc.strerror or exc}") from None
