"""Interoperability with the circom/snarkjs ecosystem.

- `.r1cs` constraint files and `.wtns` witness files (iden3 binfile formats);
- `verification_key.json`, `proof.json`, `public.json` (snarkjs's JSON);
- `.zkey` proving keys written from known toxic waste (tests and benchmarks only);
- locating and running the snarkjs command line.
"""
from importlib import import_module
from typing import Any

# Imported on first use (PEP 562): a command that reads a witness and writes a proof does not load
# the .zkey writer, the node runner or the .r1cs encoder.
_LAZY = {
    **dict.fromkeys(("proof_from_json", "proof_to_json", "public_from_json", "public_to_json", "read_proof",
                     "read_public", "read_verifying_key", "verifying_key_from_json", "verifying_key_to_json",
                     "write_proof", "write_public", "write_verifying_key"), "json_formats"),
    **dict.fromkeys(("find_snarkjs", "run_snarkjs"), "node"),
    **dict.fromkeys(("decode_r1cs", "decode_r1cs_arrays", "encode_r1cs", "read_r1cs", "read_r1cs_arrays",
                     "read_r1cs_with_info", "write_r1cs"), "r1cs"),
    **dict.fromkeys(("decode_wtns", "decode_wtns_limbs", "encode_wtns", "read_wtns", "read_wtns_limbs", "write_wtns"),
                   "wtns"),
    **dict.fromkeys(("ToxicWaste", "encode_zkey", "sample_toxic_waste", "snarkjs_domain_size", "write_zkey"), "zkey"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ToxicWaste", "sample_toxic_waste", "decode_r1cs", "decode_wtns", "encode_r1cs", "encode_wtns", "encode_zkey", "find_snarkjs",
    "proof_from_json", "proof_to_json", "public_from_json", "public_to_json", "read_proof", "read_public",
    "decode_r1cs_arrays", "read_r1cs", "read_r1cs_arrays", "read_r1cs_with_info", "read_verifying_key", "read_wtns", "read_wtns_limbs",
    "decode_wtns_limbs", "run_snarkjs", "snarkjs_domain_size",
    "verifying_key_from_json", "verifying_key_to_json", "write_proof", "write_public", "write_r1cs",
    "write_verifying_key", "write_wtns", "write_zkey",
]
