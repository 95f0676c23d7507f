"""A transparency log held in memory, as a bank (honest or not) can run one.

Tests use it to serve real log evidence from fake services and to build the
forgeries a dishonest bank would: its own trees, its own keys, checkpoints of
any size and root, signed for real.
"""
from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.log import CardPublished, ConsistencyProof, LogEvidence, LogInclusion, bundle_certificate_leaf, leaf_bytes
from transparency import merkle, note
from transparency.checkpoint import Checkpoint

ORIGIN = "bank.test/log"


def fixed_signer(origin: str = ORIGIN) -> note.Signer:
    """The same key in every test for one origin: a fake bank's log keeps its key across services."""
    seed = hashlib.sha256(b"fairproof test log key " + origin.encode()).digest()
    return note.Signer(origin, Ed25519PrivateKey.from_private_bytes(seed))


def new_signer(origin: str = ORIGIN) -> note.Signer:
    """A fresh key for `origin`: the bank's other key."""
    return note.Signer.from_key(note.generate_key(origin)[0])


class MemoryLog:
    def __init__(self, origin: str = ORIGIN, signer: note.Signer | None = None):
        self.signer = signer or fixed_signer(origin)
        self.origin = origin
        self.leaves: list[bytes] = []
        self._nodes: dict[merkle.NodeId, bytes] = {}
        self._accumulator = merkle.MerkleAccumulator()

    @property
    def verifier_key(self) -> str:
        return self.signer.verifier().vkey()

    @property
    def size(self) -> int:
        return len(self.leaves)

    def append(self, data: bytes) -> int:
        self.leaves.append(data)
        self._nodes.update(self._accumulator.append(merkle.leaf_hash(data)))
        return len(self.leaves) - 1

    def index(self, data: bytes) -> int | None:
        return self.leaves.index(data) if data in self.leaves else None

    def _fetch(self, ids):
        return {i: self._nodes[i] for i in ids}

    def root(self, size: int | None = None) -> bytes:
        return merkle.root(self.size if size is None else size, self._fetch)

    def checkpoint(self, size: int | None = None, *, root: bytes | None = None,
                   signers: list | None = None) -> str:
        size = self.size if size is None else size
        body = Checkpoint(self.origin, size, self.root(size) if root is None else root).body()
        return note.sign(body, signers or [self.signer])

    def inclusion(self, index: int, size: int | None = None) -> LogInclusion:
        size = self.size if size is None else size
        proof = merkle.inclusion_proof(index, size, self._fetch)
        return LogInclusion(leaf_index=index, tree_size=size, proof=tuple(h.hex() for h in proof))

    def consistency(self, old: int, new: int) -> ConsistencyProof:
        proof = merkle.consistency_proof(old, new, self._fetch)
        return ConsistencyProof(old_size=old, new_size=new, proof=tuple(h.hex() for h in proof))

    # ------------------------------------------------------------ FairProof events
    def publish(self, card: ModelCard) -> int:
        data = card_leaf(card)
        found = self.index(data)
        return found if found is not None else self.append(data)

    def issue(self, bundle: CertificateBundle, card: ModelCard) -> CertificateBundle:
        """Log the card (once) and the certificate; the bundle with its evidence at the current size."""
        card_index = self.publish(card)
        data = bundle_leaf(bundle)
        index = self.index(data)
        if index is None:
            index = self.append(data)
        return with_evidence(bundle, self.evidence(index, card_index))

    def evidence(self, certificate_index: int, card_index: int, size: int | None = None) -> LogEvidence:
        return LogEvidence(checkpoint=self.checkpoint(size), certificate=self.inclusion(certificate_index, size),
                           card=self.inclusion(card_index, size))


def card_leaf(card: ModelCard) -> bytes:
    return leaf_bytes(CardPublished(model_id=card.model_id, commitment=card.commitment, card_digest=card.digest()))


def bundle_leaf(bundle: CertificateBundle) -> bytes:
    """The certificate's leaf as the service logs it: `certificate_committed` for a bundle with a log salt,
    the old `certificate_issued` (public signals in the clear) for one without."""
    return leaf_bytes(bundle_certificate_leaf(bundle))


def salted(bundle: CertificateBundle, salt: str | None = None) -> CertificateBundle:
    """The bundle as the service issues it now: with a log salt (random unless given), so its leaf is the
    `certificate_committed` one."""
    return bundle.model_copy(update={"log_salt": salt or secrets.token_hex(32)})


def with_evidence(bundle: CertificateBundle, evidence: LogEvidence | None) -> CertificateBundle:
    return bundle.model_copy(update={"log": evidence})


def subtree_hashes(leaf_hashes: Sequence[bytes]) -> dict[tuple[int, int], bytes]:
    """Every complete aligned perfect subtree of the leaves, by (level, index), level by level:
    what a log's node store must hold, recomputed without the code under test."""
    nodes = {(0, i): h for i, h in enumerate(leaf_hashes)}
    level, row = 0, list(leaf_hashes)
    while len(row) >= 2:
        row = [hashlib.sha256(b"\x01" + row[2 * i] + row[2 * i + 1]).digest() for i in range(len(row) // 2)]
        level += 1
        nodes.update({(level, i): h for i, h in enumerate(row)})
    return nodes
