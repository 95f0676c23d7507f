"""`fairproof export-solidity`: EVM verifiers of a card's buckets and a registry fixing the card."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export-solidity",
        help="write a Solidity verifier per bucket of a model card and a registry contract for the card",
        description="From the public model card alone: one Groth16 verifier contract per circuit bucket and audit "
                    "circuit (snarkjs's layout, the card's verifying key as constants, every public input required "
                    "below r), and FairProofRegistry.sol, written from the card: its digest, the weight "
                    "commitment, every constant the certificate's claims are checked against and each bucket's "
                    "key hash; its constructor takes the verifiers in the card's order and refuses a key that is "
                    "not the card's or is degenerate. verifyCertificate(bucket, a, b, c, publicSignals) checks a whole "
                    "certificate's claims (as the Python verifier does) and proof, verifyPerSliceCertificate every "
                    "slice's proof of a per-slice one at once, verifyGroupCounts an audit circuit's proof. A card "
                    "with a degenerate verifying key (delta = +-gamma, a point at infinity) is refused. With "
                    "--compile, also each contract's ABI and bytecode (solc from npm).",
    )
    p.add_argument("--card", required=True, metavar="CARD.json", help="the model card")
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write the contracts to")
    p.add_argument("--compile", action="store_true", help="also write <Contract>.abi.json and <Contract>.bin")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fairness.errors import ModelError
    from verifier_client.solidity import (KeyRefused, SolidityError, card_verifiers, compile_contracts,
                                          registry_source)

    from .card_file import read_card

    card = read_card(args.card)
    verifiers = card_verifiers(card)
    if not verifiers:
        raise ModelError(f"the card of {card.model_id} publishes no circuit bucket yet: nothing to verify")
    try:
        registry = registry_source(card)  # refuses degenerate keys before anything is written
    except KeyRefused as exc:
        raise ModelError(f"no registry can be deployed for this card: {exc}") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sources = {f"{v.contract}.sol": v.source for v in verifiers} | {"FairProofRegistry.sol": registry}
    for name, text in sources.items():
        (out / name).write_text(text)
    print(f"wrote {len(verifiers)} verifier(s) and FairProofRegistry.sol to {out}")
    for v in verifiers:
        print(f"  {v.bucket:<24} {v.contract}")
    print(f"registry for card 0x{card.digest()} (commitment {card.commitment}); its constructor takes the "
          f"verifiers' addresses in this order: {', '.join(v.contract for v in verifiers)}")
    if args.compile:
        try:
            compiled = compile_contracts(sources)
        except SolidityError as exc:
            raise ModelError(str(exc)) from None
        for name, contract in compiled.items():
            if not contract.bytecode:
                continue  # an interface
            (out / f"{name}.abi.json").write_text(json.dumps(contract.abi, indent=1))
            (out / f"{name}.bin").write_text(contract.bytecode)
        print(f"compiled with solc: {', '.join(n for n, c in compiled.items() if c.bytecode)}")
    return 0
