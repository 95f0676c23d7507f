"""A proof as the verifier contracts take it: snarkjs's proof.json as (a, b, c), G2 coordinates imaginary
part first (EIP-197), and a per-slice certificate's proofs and signals as verifyPerSliceCertificate's
arguments.
"""
from __future__ import annotations


from commitments.bundle import CertificateBundle, SnarkjsProof


def proof_calldata(proof: SnarkjsProof) -> tuple[list[int], list[list[int]], list[int]]:
    """(a, b, c) of a snarkjs proof.json (a `SnarkjsProof`) as the verifier takes them."""
    a = [int(v) for v in proof.pi_a[:2]]
    (b_x_re, b_x_im), (b_y_re, b_y_im) = proof.pi_b[0], proof.pi_b[1]
    b = [[int(b_x_im), int(b_x_re)], [int(b_y_im), int(b_y_re)]]
    c = [int(v) for v in proof.pi_c[:2]]
    return a, b, c


def per_slice_calldata(bundle: CertificateBundle) -> tuple[list[str], list[list[int]], list[list[list[int]]],
                                                           list[list[int]], list[list[int]]]:
    """(bucket names, a's, b's, c's, public signals) of every slice's proof of a per-slice certificate, slice
    0 first (the bundle's own proof, then its parts in order): verifyPerSliceCertificate's arguments."""
    from commitments.claims import part_signals

    names, a_s, b_s, c_s, signals = [bundle.bucket], [], [], [], [[int(v) for v in bundle.public_signals]]
    for proof in (bundle.proof, *(p.proof for p in bundle.parts)):
        a, b, c = proof_calldata(proof)
        a_s.append(a)
        b_s.append(b)
        c_s.append(c)
    for part in bundle.parts:
        names.append(part.bucket)
        signals.append([int(v) for v in part_signals(bundle, part.slice_index)])
    return names, a_s, b_s, c_s, signals
