"""A transparency log: an append-only Merkle tree with signed checkpoints.

One concept per module, none of them aware of what the log's leaves mean:

    merkle      RFC 9162 hashing, inclusion and consistency proofs (build and verify)
    note        C2SP signed notes: Ed25519 keys, signing and opening
    checkpoint  C2SP tlog-checkpoint bodies (origin, size, root hash)
    cosignature C2SP tlog-cosignature/v1: a witness's timestamped cosignature

Depends on the standard library and `cryptography` only: the customer's
verifier imports it.
"""
