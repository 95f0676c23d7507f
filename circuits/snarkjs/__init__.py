"""Interoperability with the circom/snarkjs ecosystem.

- `.r1cs` constraint files and `.wtns` witness files (iden3 binfile formats);
- `verification_key.json`, `proof.json`, `public.json` (snarkjs's JSON);
- `.zkey` proving keys written from known toxic waste (tests and benchmarks only);
- locating and running the snarkjs command line.
"""
from .json_formats import (
    proof_from_json,
    proof_to_json,
    public_from_json,
    public_to_json,
    read_proof,
    read_public,
    read_verifying_key,
    verifying_key_from_json,
    verifying_key_to_json,
    write_proof,
    write_public,
    write_verifying_key,
)
from .node import find_snarkjs, run_snarkjs
from .r1cs import decode_r1cs, decode_r1cs_arrays, encode_r1cs, read_r1cs, read_r1cs_arrays, read_r1cs_with_info, write_r1cs
from .wtns import decode_wtns, encode_wtns, read_wtns, write_wtns
from .zkey import ToxicWaste, encode_zkey, sample_toxic_waste, snarkjs_domain_size, write_zkey

__all__ = [
    "ToxicWaste", "sample_toxic_waste", "decode_r1cs", "decode_wtns", "encode_r1cs", "encode_wtns", "encode_zkey", "find_snarkjs",
    "proof_from_json", "proof_to_json", "public_from_json", "public_to_json", "read_proof", "read_public",
    "decode_r1cs_arrays", "read_r1cs", "read_r1cs_arrays", "read_r1cs_with_info", "read_verifying_key", "read_wtns", "run_snarkjs", "snarkjs_domain_size",
    "verifying_key_from_json", "verifying_key_to_json", "write_proof", "write_public", "write_r1cs",
    "write_verifying_key", "write_wtns", "write_zkey",
]
