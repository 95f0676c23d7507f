"""Gas of a FairProof certificate checked on the EVM, ours beside snarkjs's own Solidity verifier.

A committed German Credit (4,2) model (radius, spread and persistence lenses), single-party keys, the
first --customers test customers proved; the bucket's verifier written by `fairproof export-solidity`
and the verifier snarkjs renders from the same verifying key (its template, `snarkjs zkey export
solidityverifier`'s), both compiled by solc (npm) and run in py-evm (eth-tester). Gas is the whole call
as a transaction (21,000 intrinsic included). The registry (written from the card) checks every claim
commitments/claims.py checks before its external call to the verifier: its verifyCertificate is reported
beside the 477,062 gas the registry cost when it checked the commitment alone (target: within 1.2x). With
--per-slice, the first customer is also proved slice by slice (exact radius, one proof per slice) and
verifyPerSliceCertificate's gas reported for all its proofs in one call.

    .venv/bin/python benchmarks/evm_verify.py [--customers 3] [--per-slice]

Writes benchmarks/results/evm_verify.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

RESULTS = HERE / "results" / "evm_verify.json"
OLD_REGISTRY_GAS = 477_062  # verifyCertificate when it checked the commitment alone (docs/BENCHMARKS.md, before)
PER_SLICE = "verifyPerSliceCertificate(string[],uint256[2][],uint256[2][2][],uint256[2][],uint256[][])"
PER_SLICE_TYPES = ["string[]", "uint256[2][]", "uint256[2][2][]", "uint256[2][]", "uint256[][]"]


def snarkjs_verifier(vk_json: dict) -> str:
    """snarkjs's Groth16 Solidity verifier for this key, rendered from its own template."""
    template = ROOT / "node_modules" / "snarkjs" / "templates" / "verifier_groth16.sol.ejs"
    script = ("const ejs = require(process.argv[1]); const fs = require('fs');"
              "const vk = JSON.parse(fs.readFileSync(0, 'utf8'));"
              "process.stdout.write(ejs.render(fs.readFileSync(process.argv[2], 'utf8'), vk));")
    done = subprocess.run(["node", "-e", script, str(ROOT / "node_modules" / "ejs"), str(template)],
                          input=json.dumps(vk_json), capture_output=True, text=True, check=True)
    return done.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--customers", type=int, default=3)
    p.add_argument("--per-slice", action="store_true", help="also a per-slice certificate of the first customer")
    args = p.parse_args()

    from circuits.backends import get_backend
    from fairness.datasets import load_dataset
    from fairness.model import save_artifact
    from fairness.training import load_or_train
    from offline_precompute.certify import query_from_record
    from offline_precompute.db import open_database, resolve_store_url
    from offline_precompute.enumerate import precompute
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace
    from test_solidity import CERTIFY, PROOF_TYPES, VERIFY, Chain, deploy_card
    from verifier_client.solidity import (card_verifiers, compile_contracts, per_slice_calldata, proof_calldata,
                                          registry_source)

    with tempfile.TemporaryDirectory() as tmp:
        art = load_or_train("german", (4, 2), "fair", Path.home() / ".cache" / "fairproof" / "models")
        save_artifact(art, Path(tmp) / "model")
        workspace = ModelWorkspace.open(Path(tmp) / "model")
        commit_model(workspace, model_id="german-4x2-fair", persistence_delta=0.25)
        db = open_database(resolve_store_url(None, workspace.root))
        prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup())
        precompute(db, prover.model)
        records = load_dataset("german").records_test
        queries = [query_from_record(art, prover.model, dict(records[i])) for i in range(args.customers)]
        bundles = [prover.prove(q).bundle for q in queries]
        card = prover.card
        sliced = None
        if args.per_slice:
            from fairness.certificate import EXACT

            slicer = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius=EXACT,
                            per_slice=True)
            sliced = slicer.prove(queries[0]).bundle
            sliced_card = slicer.card
        db.dispose()

    chain = Chain()
    registry, _ = deploy_card(chain, card)
    registry_bytes = len(compile_contracts({"FairProofRegistry.sol": registry_source(card)})
                         ["FairProofRegistry"].bytecode) // 2
    rows = []
    for bucket in sorted({b.bucket for b in bundles}):
        ours = next(v for v in card_verifiers(card) if v.bucket == bucket)
        peer = snarkjs_verifier(card.bucket(bucket).verifying_key.model_dump(mode="json"))
        compiled = compile_contracts({f"{ours.contract}.sol": ours.source, "Peer.sol": peer})
        ours_at = chain.deploy(compiled[ours.contract].bytecode)
        peer_at = chain.deploy(compiled["Groth16Verifier"].bytecode)
        for bundle in (b for b in bundles if b.bucket == bucket):
            a, b, c = proof_calldata(bundle.proof)
            signals = [int(s) for s in bundle.public_signals]
            n = len(signals)
            fixed = f"verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[{n}])"
            ok_ours, gas_ours = chain.call(ours_at, fixed, [*PROOF_TYPES, f"uint256[{n}]"], [a, b, c, signals])
            ok_dyn, gas_dyn = chain.call(ours_at, VERIFY, [*PROOF_TYPES, "uint256[]"], [a, b, c, signals])
            ok_peer, gas_peer = chain.call(peer_at, fixed, [*PROOF_TYPES, f"uint256[{n}]"], [a, b, c, signals])
            ok_reg, gas_reg = chain.call(registry, CERTIFY, ["string", *PROOF_TYPES, "uint256[]"],
                                         [bucket, a, b, c, signals])
            tampered = list(signals)
            tampered[2] += 1
            refused = not chain.call(ours_at, VERIFY, [*PROOF_TYPES, "uint256[]"], [a, b, c, tampered])[0]
            tampered[3] = 2  # an impossible status: refused by the registry before the pairing
            ok_bad, gas_bad = chain.call(registry, CERTIFY, ["string", *PROOF_TYPES, "uint256[]"],
                                         [bucket, a, b, c, tampered])
            if not (ok_ours and ok_dyn and ok_peer and ok_reg and refused and not ok_bad):
                raise RuntimeError(f"{bucket}: an honest certificate was refused or a tampered one accepted")
            rows.append({"bucket": bucket, "public_inputs": n, "ours_gas": gas_ours, "ours_dynamic_gas": gas_dyn,
                         "snarkjs_gas": gas_peer, "registry_gas": gas_reg, "ours_over_snarkjs": gas_ours / gas_peer,
                         "registry_over_old": gas_reg / OLD_REGISTRY_GAS, "registry_refusal_gas": gas_bad,
                         "ours_bytecode_bytes": len(compiled[ours.contract].bytecode) // 2,
                         "snarkjs_bytecode_bytes": len(compiled["Groth16Verifier"].bytecode) // 2,
                         "registry_bytecode_bytes": registry_bytes})
    per_slice = None
    if sliced is not None:
        registry_s, _ = deploy_card(chain, sliced_card)
        names, a_s, b_s, c_s, signals_s = per_slice_calldata(sliced)
        ok, gas = chain.call(registry_s, PER_SLICE, PER_SLICE_TYPES, [names, a_s, b_s, c_s, signals_s])
        if not ok:
            raise RuntimeError("the honest per-slice certificate was refused")
        per_slice = {"buckets": names, "proofs": len(names), "public_inputs_each": len(signals_s[0]),
                     "registry_gas": gas, "per_proof": gas / len(names)}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"certificates": rows, "per_slice": per_slice}, indent=1))
    print("bucket | public inputs | ours gas | ours (dynamic) | snarkjs gas | ours/snarkjs | registry gas | "
          f"registry / {OLD_REGISTRY_GAS} | refused claim | bytecode ours/snarkjs/registry")
    for r in rows:
        print(f"{r['bucket']} | {r['public_inputs']} | {r['ours_gas']} | {r['ours_dynamic_gas']} | "
              f"{r['snarkjs_gas']} | "
              f"{r['ours_over_snarkjs']:.2f} | {r['registry_gas']} | {r['registry_over_old']:.3f} | "
              f"{r['registry_refusal_gas']} | {r['ours_bytecode_bytes']}/{r['snarkjs_bytecode_bytes']}/"
              f"{r['registry_bytecode_bytes']}")
    if per_slice:
        print(f"per-slice certificate: {per_slice['proofs']} proofs ({', '.join(per_slice['buckets'])}), "
              f"{per_slice['public_inputs_each']} public inputs each: verifyPerSliceCertificate "
              f"{per_slice['registry_gas']} gas ({per_slice['per_proof']:.0f} per proof)")
    print(f"wrote {RESULTS}")

if __name__ == "__main__":
    main()
