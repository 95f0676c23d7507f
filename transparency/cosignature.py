"""C2SP tlog-cosignature/v1, Ed25519 (signature type 0x04): https://c2sp.org/tlog-cosignature

A cosigner (witness) signs a checkpoint it has checked for consistency. The
note signature is timestamp (u64, big-endian) || Ed25519 signature over

    cosignature/v1
    time <timestamp>
    <the whole checkpoint body>

The key ID is SHA-256(name || 0x0A || 0x04 || public key)[:4], and the public
key MAY be written as a vkey with type byte 0x04. The spec defines no private
key string; CosignatureSigner.from_key() takes Go's PRIVATE+KEY form with
type byte 0x04, as transparency-dev/formats does.

A CosignatureVerifier goes in the verifier list of note.open() next to the
log's own note.Verifier.
"""

from __future__ import annotations

import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from transparency.checkpoint import Checkpoint, CheckpointError
from transparency.note import (
    Note,
    NoteError,
    Signature,
    Signer,
    Verifier,
    ed25519_verify,
    signature_line,
)

SIG_COSIGNATURE_V1 = 0x04
MAX_TIMESTAMP = 2**63 - 1  # the spec caps the u64 timestamp here


class CosignatureError(NoteError):
    """A cosignature, or what it would sign, is malformed."""


def signed_message(checkpoint_body: str, timestamp: int) -> bytes:
    """The bytes an Ed25519 cosignature/v1 signs."""
    if type(timestamp) is not int or not 0 <= timestamp <= MAX_TIMESTAMP:
        raise CosignatureError(f"cosignature timestamp {timestamp!r} is not in [0, 2^63)")
    try:
        Checkpoint.parse(checkpoint_body)  # a cosigner vouches for checkpoints only
    except CheckpointError as e:
        raise CosignatureError(f"not a checkpoint body: {e}") from None
    return f"cosignature/v1\ntime {timestamp}\n{checkpoint_body}".encode()


def timestamp_of(sig: Signature) -> int:
    """The timestamp a cosignature claims (not a proof that it verifies)."""
    if len(sig.sig) != 8 + 64:
        raise CosignatureError(f"cosignature by {sig.name} is {len(sig.sig)} bytes, want 72")
    return int.from_bytes(sig.sig[:8], "big")


class CosignatureVerifier(Verifier):
    """A trusted cosigner's Ed25519 public key (vkey type 0x04)."""

    SIG_TYPE = SIG_COSIGNATURE_V1

    def verify(self, msg: bytes, sig: bytes) -> bool:
        if len(sig) != 8 + 64:
            return False
        timestamp = int.from_bytes(sig[:8], "big")
        try:
            signed = signed_message(msg.decode("utf-8"), timestamp)
        except (UnicodeDecodeError, CosignatureError):
            return False
        return ed25519_verify(self._key, signed, sig[8:])

    def verified_timestamp(self, note: Note) -> int:
        """The timestamp of this cosigner's verified signature in an opened note."""
        for s in note.verified:
            if (s.name, s.key_id) == (self.name, self.key_id):
                return timestamp_of(s)
        raise CosignatureError(f"no verified cosignature by {self.name}+{self.key_id:08x}")


class CosignatureSigner(Signer):
    """A cosigner's Ed25519 private key under its name."""

    SIG_TYPE = SIG_COSIGNATURE_V1

    def cosign(self, checkpoint_body: str, timestamp: int) -> str:
        """The signature line ('— name base64(...)\\n') to append to the checkpoint's note."""
        return signature_line(self.name, self.key_id, self._cosign(checkpoint_body, timestamp))

    def _cosign(self, checkpoint_body: str, timestamp: int) -> bytes:
        signed = signed_message(checkpoint_body, timestamp)
        return timestamp.to_bytes(8, "big") + self._key.sign(signed)

    def sign(self, msg: bytes) -> bytes:
        """For note.sign(): cosign the note text at the current time."""
        return self._cosign(msg.decode("utf-8"), int(time.time()))

    def verifier(self) -> CosignatureVerifier:
        return CosignatureVerifier(self.name, self.public_key)


def generate_key(name: str) -> tuple[str, str]:
    """A fresh cosigner key pair: (skey, vkey), both with type byte 0x04."""
    signer = CosignatureSigner(name, Ed25519PrivateKey.generate())
    return signer.skey(), signer.verifier().vkey()

