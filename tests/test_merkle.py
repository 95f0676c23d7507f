"""transparency.merkle against published RFC 6962/9162 vectors and a literal reference.

The reference below transcribes RFC 9162 2.1.1 (MTH), 2.1.3.1 (PATH) and
2.1.4.1 (PROOF/SUBPROOF) recursively with hashlib, sharing no code with the
module under test.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transparency.merkle import (
    EMPTY_ROOT,
    HASH_SIZE,
    InvalidProof,
    MerkleAccumulator,
    NodeId,
    consistency_proof,
    consistency_ranges,
    fold,
    inclusion_proof,
    inclusion_ranges,
    leaf_hash,
    node_hash,
    range_nodes,
    root,
    root_nodes,
    verify_consistency,
    verify_inclusion,
)

# -- Published vectors ----------------------------------------------------------
#
# The classic Certificate Transparency test tree (first published in
# google/certificate-transparency cpp/merkletree/merkle_tree_test.cc), as
# carried by github.com/transparency-dev/merkle:
#   testonly/constants.go       LeafInputs, NodeHashes, RootHashes, CompactTrees
#   proof/verify_test.go        inclusionProofs, consistencyProofs (verified there)
#   testonly/reference_test.go  TestRefInclusionProof, TestRefConsistencyProof
#                               (generated there by the RFC reference algorithm)


def hd(s: str) -> bytes:
    return bytes.fromhex(s)


LEAF_INPUTS = [
    hd(""),
    hd("00"),
    hd("10"),
    hd("2021"),
    hd("3031"),
    hd("40414243"),
    hd("5051525354555657"),
    hd("606162636465666768696a6b6c6d6e6f"),
]

# testonly/constants.go NodeHashes(): [level][index].
NODE_HASHES = [
    [
        hd("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        hd("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        hd("0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7"),
        hd("07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7"),
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        hd("4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658"),
        hd("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
        hd("46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"),
    ],
    [
        hd("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        hd("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
    ],
    [
        hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        hd("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ],
    [
        hd("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
    ],
]

# testonly/constants.go RootHashes(): indexed by tree size, 0..8.
ROOT_HASHES = [
    hd("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    hd("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    hd("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    hd("aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77"),
    hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    hd("4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4"),
    hd("76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef"),
    hd("ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c"),
    hd("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
]


def _nh(level: int, index: int) -> bytes:
    return NODE_HASHES[level][index]


# testonly/constants.go CompactTrees(): the compact range after each size.
COMPACT_TREES = [
    [],
    [_nh(0, 0)],
    [_nh(1, 0)],
    [_nh(1, 0), _nh(0, 2)],
    [_nh(2, 0)],
    [_nh(2, 0), _nh(0, 4)],
    [_nh(2, 0), _nh(1, 2)],
    [_nh(2, 0), _nh(1, 2), _nh(0, 6)],
    [_nh(3, 0)],
]

# proof/verify_test.go inclusionProofs: (leaf, size, proof) with a 1-based
# leaf number (its {0, 0, nil} entry is an invalid probe there and skipped).
VERIFY_TEST_INCLUSION = [
    (1, 1, []),
    (1, 8, [
        hd("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ]),
    (6, 8, [
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        hd("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
        hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    ]),
    (3, 3, [
        hd("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    ]),
    (2, 5, [
        hd("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
    ]),
]

# testonly/reference_test.go TestRefInclusionProof: (0-based index, size, proof).
REFERENCE_TEST_INCLUSION = [
    (0, 1, []),
    (0, 2, [hd("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7")]),
    (1, 2, [hd("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d")]),
    (2, 3, [hd("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")]),
    (1, 5, [
        hd("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
    ]),
    (0, 8, [
        hd("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ]),
    (5, 8, [
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        hd("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
        hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    ]),
]

INCLUSION_VECTORS = [(leaf - 1, size, proof) for leaf, size, proof in VERIFY_TEST_INCLUSION] + REFERENCE_TEST_INCLUSION

# proof/verify_test.go consistencyProofs: (size1, size2, proof).
VERIFY_TEST_CONSISTENCY = [
    (1, 1, []),
    (1, 8, [
        hd("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ]),
    (6, 8, [
        hd("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        hd("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
        hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    ]),
    (2, 5, [
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
    ]),
    (6, 7, [
        hd("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        hd("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
        hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    ]),
]

# testonly/reference_test.go TestRefConsistencyProof: (size1, size2, proof).
REFERENCE_TEST_CONSISTENCY = [
    (1, 1, []),
    (1, 8, [
        hd("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ]),
    (2, 5, [
        hd("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        hd("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
    ]),
    (6, 8, [
        hd("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        hd("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
        hd("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    ]),
]

CONSISTENCY_VECTORS = VERIFY_TEST_CONSISTENCY + REFERENCE_TEST_CONSISTENCY

# From proof/verify_test.go: a 32-byte hash that is no node of the test tree.
SOME_HASH = hd("abacaba000000000000000000000000000000000000000000060061e00123456")


# -- Reference: RFC 9162 2.1 transcribed literally ---------------------------------


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def split_point(n: int) -> int:
    """The largest power of two smaller than n (n >= 2), by counting."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class Reference:
    """MTH, PATH and SUBPROOF of RFC 9162 over D[lo:hi] of one leaf list (MTH memoised)."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self.leaves = list(leaves)
        self._mth: dict[tuple[int, int], bytes] = {}

    def mth(self, lo: int, hi: int) -> bytes:
        if (lo, hi) not in self._mth:
            n = hi - lo
            if n == 0:
                h = sha256(b"")
            elif n == 1:
                h = sha256(b"\x00" + self.leaves[lo])
            else:
                k = split_point(n)
                h = sha256(b"\x01" + self.mth(lo, lo + k) + self.mth(lo + k, hi))
            self._mth[(lo, hi)] = h
        return self._mth[(lo, hi)]

    def path(self, m: int, lo: int, hi: int) -> list[bytes]:
        n = hi - lo
        if n == 1:
            return []
        k = split_point(n)
        if m < k:
            return self.path(m, lo, lo + k) + [self.mth(lo + k, hi)]
        return self.path(m - k, lo + k, hi) + [self.mth(lo, lo + k)]

    def subproof(self, m: int, lo: int, hi: int, b: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if b else [self.mth(lo, hi)]
        k = split_point(n)
        if m <= k:
            return self.subproof(m, lo, lo + k, b) + [self.mth(lo + k, hi)]
        return self.subproof(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]

    def proof(self, old: int, new: int) -> list[bytes]:
        if old == 0 or old == new:
            return []
        return self.subproof(old, 0, new, True)

    def leaf(self, i: int) -> bytes:
        return self.mth(i, i + 1)

    def store(self) -> dict[NodeId, bytes]:
        """Every complete perfect subtree of the whole tree, by NodeId."""
        size = len(self.leaves)
        out = {}
        level = 0
        while (1 << level) <= size:
            for i in range(size >> level):
                out[NodeId(level, i)] = self.mth(i << level, (i + 1) << level)
            level += 1
        return out


class FakeStore:
    """A node table. Its fetchers record each call and assert every requested node
    exists in the tree of the size they serve."""

    def __init__(self, hashes: dict[NodeId, bytes]) -> None:
        self.hashes = hashes

    def fetcher(self, size: int):
        calls: list[list[NodeId]] = []

        def fetch(ids: Sequence[NodeId]) -> dict[NodeId, bytes]:
            ids = list(ids)
            calls.append(ids)
            assert len(set(ids)) == len(ids), f"duplicate node ids requested: {ids}"
            for node in ids:
                assert isinstance(node, NodeId), node
                assert node.level >= 0 and node.index >= 0, node
                assert (node.index + 1) << node.level <= size, f"{node} is not in a tree of size {size}"
            return {node: self.hashes[node] for node in ids}

        return fetch, calls


VECTOR_STORE = FakeStore({NodeId(l, i): h for l, row in enumerate(NODE_HASHES) for i, h in enumerate(row)})


def flip(h: bytes, bit: int = 3) -> bytes:
    return bytes([h[0] ^ (1 << bit)]) + h[1:]


# -- Rejection twins ------------------------------------------------------------


def inclusion_twins(
    leaf: bytes, index: int, size: int, proof: list[bytes], root_hash: bytes, other_leaf: bytes | None = None
) -> Iterator[tuple[str, tuple]]:
    """Altered copies of a valid inclusion claim, each of which must be rejected."""
    yield "index + 1", (leaf, index + 1, size, proof, root_hash)
    if index > 0:
        yield "index - 1", (leaf, index - 1, size, proof, root_hash)
    yield "index ^ 2", (leaf, index ^ 2, size, proof, root_hash)
    yield "index == size", (leaf, size, size, proof, root_hash)
    yield "index > size", (leaf, size + 5, size, proof, root_hash)
    yield "size * 2", (leaf, index, size * 2, proof, root_hash)
    yield "size // 2", (leaf, index, size // 2, proof, root_hash)
    yield "size 0", (leaf, index, 0, proof, root_hash)
    yield "flipped root", (leaf, index, size, proof, flip(root_hash))
    yield "empty-tree root", (leaf, index, size, proof, EMPTY_ROOT)
    yield "some other root", (leaf, index, size, proof, SOME_HASH)
    yield "flipped leaf", (flip(leaf), index, size, proof, root_hash)
    if other_leaf is not None:
        yield "another leaf's hash", (other_leaf, index, size, proof, root_hash)
    yield "31-byte leaf", (leaf[:31], index, size, proof, root_hash)
    yield "31-byte root", (leaf, index, size, proof, root_hash[:31])
    yield "extended by garbage", (leaf, index, size, proof + [SOME_HASH], root_hash)
    yield "extended by root", (leaf, index, size, proof + [root_hash], root_hash)
    yield "preceded by garbage", (leaf, index, size, [SOME_HASH] + proof, root_hash)
    yield "preceded by root", (leaf, index, size, [root_hash] + proof, root_hash)
    yield "extended by empty element", (leaf, index, size, proof + [b""], root_hash)
    for i in range(len(proof)):
        for bit in (0, 3, 7):
            bad = list(proof)
            bad[i] = flip(bad[i], bit)
            yield f"proof[{i}] bit {bit} flipped", (leaf, index, size, bad, root_hash)
        yield f"proof[{i}] 31 bytes", (leaf, index, size, proof[:i] + [proof[i][:31]] + proof[i + 1 :], root_hash)
        yield f"proof[{i}] 33 bytes", (leaf, index, size, proof[:i] + [proof[i] + b"\x00"] + proof[i + 1 :], root_hash)
        yield f"proof[{i}] removed", (leaf, index, size, proof[:i] + proof[i + 1 :], root_hash)
    if proof:
        yield "truncated", (leaf, index, size, proof[:-1], root_hash)
        yield "inserted element", (leaf, index, size, proof[:1] + [SOME_HASH] + proof[1:], root_hash)
    if len(proof) >= 2 and list(reversed(proof)) != proof:
        yield "reversed", (leaf, index, size, list(reversed(proof)), root_hash)
        swapped = [proof[1], proof[0]] + proof[2:]
        yield "first two swapped", (leaf, index, size, swapped, root_hash)


def consistency_twins(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> Iterator[tuple[str, tuple]]:
    """Altered copies of a valid consistency claim, each of which must be rejected."""
    yield "flipped old root", (old, new, flip(old_root), new_root, proof)
    if old > 0:  # the empty tree is a prefix of every tree, whatever its root
        yield "flipped new root", (old, new, old_root, flip(new_root), proof)
    yield "31-byte old root", (old, new, old_root[:31], new_root, proof)
    yield "33-byte new root", (old, new, old_root, new_root + b"\x00", proof)
    yield "extended by garbage", (old, new, old_root, new_root, proof + [SOME_HASH])
    yield "extended by new root", (old, new, old_root, new_root, proof + [new_root])
    yield "preceded by old root", (old, new, old_root, new_root, [old_root] + proof)
    if old < new:
        yield "old > new", (new, old, new_root, old_root, proof)
        yield "old > new, same roots", (new, old, old_root, new_root, proof)
    if old == new:
        yield "same size, other new root", (old, new, old_root, SOME_HASH, proof)
        yield "same size, other old root", (old, new, SOME_HASH, new_root, proof)
    if old == 0:
        yield "size 0, other old root", (old, new, SOME_HASH, new_root, proof)
    if not proof:
        return
    yield "old - 1", (old - 1, new, old_root, new_root, proof)
    yield "old + 1", (old + 1, new, old_root, new_root, proof)
    yield "old ^ 2", (old ^ 2, new, old_root, new_root, proof)
    yield "new * 2", (old, new * 2, old_root, new_root, proof)
    yield "new // 2", (old, new // 2, old_root, new_root, proof)
    # Not "new + 1": the RFC 9162 algorithm binds a size only through the
    # proof's shape, and e.g. (2, 5) and (2, 6) have the same shape, so it
    # accepts MTH(5) as a size-6 root. No size-6 tree has that root (the leaf
    # and node prefixes differ), and a signed checkpoint fixes size and root.
    yield "swapped roots", (old, new, new_root, old_root, proof)
    yield "empty-tree old root", (old, new, EMPTY_ROOT, new_root, proof)
    yield "empty proof", (old, new, old_root, new_root, [])
    yield "preceded by new root", (old, new, old_root, new_root, [new_root] + proof)
    yield "preceded by proof[0]", (old, new, old_root, new_root, [proof[0]] + proof)
    yield "truncated", (old, new, old_root, new_root, proof[:-1])
    yield "inserted element", (old, new, old_root, new_root, proof[:1] + [SOME_HASH] + proof[1:])
    for i in range(len(proof)):
        for bit in (0, 4, 7):
            bad = list(proof)
            bad[i] = flip(bad[i], bit)
            yield f"proof[{i}] bit {bit} flipped", (old, new, old_root, new_root, bad)
        yield f"proof[{i}] 31 bytes", (old, new, old_root, new_root, proof[:i] + [proof[i][:31]] + proof[i + 1 :])
        yield f"proof[{i}] 33 bytes", (old, new, old_root, new_root, proof[:i] + [proof[i] + b"\x00"] + proof[i + 1 :])
        yield f"proof[{i}] removed", (old, new, old_root, new_root, proof[:i] + proof[i + 1 :])
    if len(proof) >= 2 and list(reversed(proof)) != proof:
        yield "reversed", (old, new, old_root, new_root, list(reversed(proof)))
        yield "first two swapped", (old, new, old_root, new_root, [proof[1], proof[0]] + proof[2:])


def assert_inclusion_rejected(*args, **kwargs) -> None:
    accepted = []
    for desc, twin in inclusion_twins(*args, **kwargs):
        try:
            verify_inclusion(*twin)
        except InvalidProof as e:
            assert "\n" not in str(e) and str(e), desc
        else:
            accepted.append(desc)
    assert not accepted, f"accepted altered inclusion proofs: {accepted}"


def assert_consistency_rejected(*args) -> None:
    accepted = []
    for desc, twin in consistency_twins(*args):
        try:
            verify_consistency(*twin)
        except InvalidProof as e:
            assert "\n" not in str(e) and str(e), desc
        else:
            accepted.append(desc)
    assert not accepted, f"accepted altered consistency proofs: {accepted}"


# -- 1. Known answers -------------------------------------------------------------


def test_hash_primitives_match_published_nodes():
    assert EMPTY_ROOT == ROOT_HASHES[0] == sha256(b"")
    assert HASH_SIZE == 32
    for i, data in enumerate(LEAF_INPUTS):
        assert leaf_hash(data) == NODE_HASHES[0][i]
    for level in range(1, len(NODE_HASHES)):
        for i, h in enumerate(NODE_HASHES[level]):
            assert node_hash(NODE_HASHES[level - 1][2 * i], NODE_HASHES[level - 1][2 * i + 1]) == h


def test_reference_matches_published_roots():
    ref = Reference(LEAF_INPUTS)
    for size, expected in enumerate(ROOT_HASHES):
        assert ref.mth(0, size) == expected


@pytest.mark.parametrize("size", range(9))
def test_root_from_published_nodes(size):
    fetch, calls = VECTOR_STORE.fetcher(size)
    assert root(size, fetch) == ROOT_HASHES[size]
    assert len(calls) == (1 if size else 0)
    assert calls == [] or calls[0] == root_nodes(size)


def test_accumulator_matches_published_tree():
    acc = MerkleAccumulator()
    assert acc.root() == ROOT_HASHES[0] and acc.nodes() == []
    completed = {}
    for size in range(1, 9):
        for node, h in acc.append(leaf_hash(LEAF_INPUTS[size - 1])):
            completed[node] = h
        assert acc.size == size
        assert acc.root() == ROOT_HASHES[size]
        assert [h for _, h in acc.nodes()] == COMPACT_TREES[size]
        assert [n for n, _ in acc.nodes()] == root_nodes(size)
    assert completed == VECTOR_STORE.hashes


@pytest.mark.parametrize("index,size,proof", INCLUSION_VECTORS)
def test_inclusion_vector(index, size, proof):
    fetch, calls = VECTOR_STORE.fetcher(size)
    assert inclusion_proof(index, size, fetch) == proof
    assert len(calls) == (1 if proof else 0)
    assert Reference(LEAF_INPUTS).path(index, 0, size) == proof
    leaf = NODE_HASHES[0][index]
    verify_inclusion(leaf, index, size, proof, ROOT_HASHES[size])
    other = NODE_HASHES[0][(index + 1) % 8]
    assert_inclusion_rejected(leaf, index, size, proof, ROOT_HASHES[size], other_leaf=other)


@pytest.mark.parametrize("old,new,proof", CONSISTENCY_VECTORS)
def test_consistency_vector(old, new, proof):
    fetch, calls = VECTOR_STORE.fetcher(new)
    assert consistency_proof(old, new, fetch) == proof
    assert len(calls) == (1 if proof else 0)
    assert Reference(LEAF_INPUTS).proof(old, new) == proof
    verify_consistency(old, new, ROOT_HASHES[old], ROOT_HASHES[new], proof)
    assert_consistency_rejected(old, new, ROOT_HASHES[old], ROOT_HASHES[new], proof)


# proof/verify_test.go TestVerifyConsistency, with 32-byte roots: there the
# "don't care" roots are shorter, which this module rejects outright, and a
# size-0 old root must be the empty-tree root here.
R1 = sha256(b"root 1")
R2 = sha256(b"root 2")


@pytest.mark.parametrize(
    "old,new,old_root,new_root,proof,ok",
    [
        (0, 0, R1, R2, [], False),
        (1, 1, R1, R2, [], False),
        (0, 0, EMPTY_ROOT, EMPTY_ROOT, [], True),
        (0, 1, EMPTY_ROOT, R2, [], True),
        (1, 1, R2, R2, [], True),
        (1, 0, R1, R2, [], False),
        (2, 1, R1, R2, [], False),
        (1, 2, R1, R2, [], False),
        (0, 0, EMPTY_ROOT, R2, [], False),
        (1, 1, EMPTY_ROOT, R2, [], False),
        (0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], False),
        (0, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], False),
        (1, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], False),
        (0, 5, R1, R2, [], False),  # size-0 root must be the empty-tree root
    ],
)
def test_consistency_edge_cases(old, new, old_root, new_root, proof, ok):
    if ok:
        verify_consistency(old, new, old_root, new_root, proof)
    else:
        with pytest.raises(InvalidProof):
            verify_consistency(old, new, old_root, new_root, proof)


# proof/verify_test.go TestVerifyInclusionSingleEntry and TestVerifyInclusion.
def test_inclusion_edge_cases():
    h = leaf_hash(b"data")
    verify_inclusion(h, 0, 1, [], h)
    for leaf, root_hash in [(h, b""), (b"", h), (b"", b"")]:
        with pytest.raises(InvalidProof):
            verify_inclusion(leaf, 0, 1, [], root_hash)
    for index, size in [(0, 0), (1, 0), (1, 1), (2, 1)]:
        for leaf, root_hash in [(SOME_HASH, EMPTY_ROOT), (SOME_HASH, SOME_HASH), (EMPTY_ROOT, EMPTY_ROOT)]:
            with pytest.raises(InvalidProof):
                verify_inclusion(leaf, index, size, [], root_hash)


# -- 2. Properties against the reference --------------------------------------------


sizes = st.integers(min_value=1, max_value=600)
salts = st.binary(min_size=0, max_size=6)


def random_tree(size: int, salt: bytes) -> Reference:
    # Distinct leaves of varying length: a salt, then the position.
    return Reference([salt + i.to_bytes(2, "big") * (1 + i % 3) for i in range(size)])


@settings(max_examples=40, deadline=None)
@given(size=sizes, salt=salts, data=st.data())
def test_inclusion_proofs_verify(size, salt, data):
    ref = random_tree(size, salt)
    store = FakeStore(ref.store())
    root_hash = ref.mth(0, size)
    fetch, calls = store.fetcher(size)
    assert root(size, fetch) == root_hash and len(calls) == 1

    picks = data.draw(st.lists(st.integers(0, size - 1), max_size=12))
    for index in sorted({0, size - 1, *picks}):
        fetch, calls = store.fetcher(size)
        proof = inclusion_proof(index, size, fetch)
        assert len(calls) == (1 if size > 1 else 0)
        assert proof == ref.path(index, 0, size)
        assert [ref.mth(lo, hi) for lo, hi in inclusion_ranges(index, size)] == proof
        verify_inclusion(ref.leaf(index), index, size, proof, root_hash)
        other = ref.leaf((index + 1) % size) if size > 1 else None
        assert_inclusion_rejected(ref.leaf(index), index, size, proof, root_hash, other_leaf=other)
        if size > 1:
            # Another leaf's proof does not prove this leaf.
            j = (index + 1) % size
            fetch, _ = store.fetcher(size)
            with pytest.raises(InvalidProof):
                verify_inclusion(ref.leaf(index), index, size, inclusion_proof(j, size, fetch), root_hash)


@settings(max_examples=40, deadline=None)
@given(new=sizes, salt=salts, data=st.data())
def test_consistency_proofs_verify(new, salt, data):
    ref = random_tree(new, salt)
    store = FakeStore(ref.store())
    picks = data.draw(st.lists(st.integers(0, new), max_size=10))
    for old in sorted({0, 1, new - 1, new, *picks}):
        fetch, calls = store.fetcher(new)
        proof = consistency_proof(old, new, fetch)
        assert len(calls) == (1 if proof else 0)
        assert proof == ref.proof(old, new)
        assert [ref.mth(lo, hi) for lo, hi in consistency_ranges(old, new)] == proof
        old_root, new_root = ref.mth(0, old), ref.mth(0, new)
        verify_consistency(old, new, old_root, new_root, proof)
        assert_consistency_rejected(old, new, old_root, new_root, proof)
        if 0 < old < new:
            # A proof from another tree of the same sizes does not verify.
            other = random_tree(new, salt + b"x")
            with pytest.raises(InvalidProof):
                verify_consistency(old, new, old_root, new_root, other.proof(old, new))


def completed_nodes(size: int) -> set[NodeId]:
    """Brute force: every perfect subtree lying inside [0, size)."""
    return {
        NodeId(level, i)
        for level in range(size.bit_length())
        for i in range(size >> level)
        if (i + 1) << level <= size
    }


@settings(max_examples=15, deadline=None)
@given(size=sizes, salt=salts, data=st.data())
def test_accumulator_against_reference(size, salt, data):
    ref = random_tree(size, salt)
    store = ref.store()
    resume_at = data.draw(st.integers(0, size))
    acc = MerkleAccumulator()
    before: set[NodeId] = set()
    for n in range(size + 1):
        assert acc.size == n
        assert acc.root() == ref.mth(0, n)
        assert acc.nodes() == [(node, store[node]) for node in root_nodes(n)]
        if n == resume_at:
            # Resuming from the stored root nodes gives the same state.
            acc = MerkleAccumulator.from_nodes(n, [h for _, h in acc.nodes()])
            assert acc.size == n and acc.root() == ref.mth(0, n)
        if n == size:
            break
        added = acc.append(ref.leaf(n))
        after = completed_nodes(n + 1)
        assert [node for node, _ in added] == sorted(after - before), n
        assert [node.level for node, _ in added] == list(range(len(added)))
        assert all(h == store[node] for node, h in added)
        before = after


# -- 3. Very large trees ---------------------------------------------------------
#
# A tree whose leaves are all equal is a real Merkle tree whose every node at a
# level has the same hash, so trees of up to 2^63 - 1 leaves can be served.

BIG_LEVELS = [sha256(b"\x00" + b"same")]
for _ in range(64):
    BIG_LEVELS.append(sha256(b"\x01" + BIG_LEVELS[-1] + BIG_LEVELS[-1]))


def big_mth(n: int) -> bytes:
    if n & (n - 1) == 0:
        return BIG_LEVELS[n.bit_length() - 1]
    k = split_point(n) if n < 64 else 1 << ((n - 1).bit_length() - 1)
    return sha256(b"\x01" + big_mth(k) + big_mth(n - k))


def big_path(m: int, n: int) -> list[bytes]:
    if n == 1:
        return []
    k = 1 << ((n - 1).bit_length() - 1)
    if m < k:
        return big_path(m, k) + [big_mth(n - k)]
    return big_path(m - k, n - k) + [big_mth(k)]


def big_subproof(m: int, n: int, b: bool) -> list[bytes]:
    if m == n:
        return [] if b else [big_mth(n)]
    k = 1 << ((n - 1).bit_length() - 1)
    if m <= k:
        return big_subproof(m, k, b) + [big_mth(n - k)]
    return big_subproof(m - k, n - k, False) + [big_mth(k)]


def big_fetcher(size: int):
    calls = []

    def fetch(ids):
        calls.append(list(ids))
        for node in ids:
            assert (node.index + 1) << node.level <= size, node
        return {node: BIG_LEVELS[node.level] for node in ids}

    return fetch, calls


BIG = 2**63 - 1


@pytest.mark.parametrize("size", [BIG, BIG - 1, 2**62 + 1, 2**63 - 2**40, 2**62])
def test_very_large_inclusion(size):
    fetch, calls = big_fetcher(size)
    root_hash = root(size, fetch)
    assert root_hash == big_mth(size) and len(calls) == 1
    for index in [0, 1, size // 2, size // 3, size - 2, size - 1]:
        fetch, calls = big_fetcher(size)
        proof = inclusion_proof(index, size, fetch)
        assert proof == big_path(index, size) and len(calls) == 1
        verify_inclusion(BIG_LEVELS[0], index, size, proof, root_hash)
        for bad in (proof[:-1], proof + [proof[-1]], [flip(proof[0])] + proof[1:]):
            with pytest.raises(InvalidProof):
                verify_inclusion(BIG_LEVELS[0], index, size, bad, root_hash)
        with pytest.raises(InvalidProof):
            verify_inclusion(BIG_LEVELS[0], index, size * 2, proof, root_hash)
    with pytest.raises(InvalidProof):
        verify_inclusion(BIG_LEVELS[0], size, size, [], root_hash)


@pytest.mark.parametrize("old,new", [(1, BIG), (BIG - 1, BIG), (2**62, BIG), (2**62 + 3, 2**63 - 5), (12345, 2**40 + 1)])
def test_very_large_consistency(old, new):
    fetch, calls = big_fetcher(new)
    proof = consistency_proof(old, new, fetch)
    assert proof == big_subproof(old, new, True) and len(calls) == 1
    verify_consistency(old, new, big_mth(old), big_mth(new), proof)
    for bad in (proof[:-1], proof + [proof[-1]], [flip(proof[0])] + proof[1:], []):
        with pytest.raises(InvalidProof):
            verify_consistency(old, new, big_mth(old), big_mth(new), bad)


# -- 4. Shapes, fetcher use, argument checks -------------------------------------------


def test_range_nodes_shapes():
    assert root_nodes(0) == []
    assert root_nodes(1) == [NodeId(0, 0)]
    assert root_nodes(6) == [NodeId(2, 0), NodeId(1, 2)]
    assert root_nodes(7) == [NodeId(2, 0), NodeId(1, 2), NodeId(0, 6)]
    assert root_nodes(8) == [NodeId(3, 0)]
    # [2, 6) has 4 leaves but is not an aligned perfect subtree: two nodes.
    assert range_nodes(2, 6) == [NodeId(1, 1), NodeId(1, 2)]
    assert range_nodes(4, 7) == [NodeId(1, 2), NodeId(0, 6)]
    assert range_nodes(5, 6) == [NodeId(0, 5)]
    assert range_nodes(1, 3) == [NodeId(0, 1), NodeId(0, 2)]
    assert range_nodes(2, 5) == [NodeId(1, 1), NodeId(0, 4)]
    for lo, hi in [(1, 4), (3, 6), (2, 7), (3, 7), (2, 9), (-1, 2), (3, 2)]:
        with pytest.raises(ValueError):
            range_nodes(lo, hi)
    assert range_nodes(0, BIG)[0] == NodeId(62, 0) and len(range_nodes(0, BIG)) == 63


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 300), salt=salts, data=st.data())
def test_range_nodes_fold_to_mth(size, salt, data):
    # Every range the RFC recursion produces (those in PATH and PROOF) folds to its MTH.
    ref = random_tree(size, salt)
    store = ref.store()
    index = data.draw(st.integers(0, size - 1))
    old = data.draw(st.integers(0, size))
    for lo, hi in inclusion_ranges(index, size) + consistency_ranges(old, size) + [(0, size)]:
        assert fold([store[n] for n in range_nodes(lo, hi)]) == ref.mth(lo, hi)


def test_ranges_edge_cases():
    assert inclusion_ranges(0, 1) == []
    assert consistency_ranges(0, 5) == [] and consistency_ranges(5, 5) == [] and consistency_ranges(0, 0) == []
    assert consistency_ranges(3, 4) == [(2, 3), (3, 4), (0, 2)]
    for bad in [(1, 1), (-1, 3), (0, 0)]:
        with pytest.raises(ValueError):
            inclusion_ranges(*bad)
    with pytest.raises(ValueError):
        consistency_ranges(5, 4)
    with pytest.raises(TypeError):
        inclusion_ranges(True, 3)


def test_fetcher_errors_surface():
    def missing(ids):
        return {}

    def short(ids):
        return {node: b"\x00" * 31 for node in ids}

    with pytest.raises(LookupError):
        root(5, missing)
    with pytest.raises(ValueError):
        inclusion_proof(1, 5, short)


def test_fold():
    a, b, c = sha256(b"a"), sha256(b"b"), sha256(b"c")
    assert fold([a]) == a
    assert fold([a, b, c]) == node_hash(a, node_hash(b, c))
    with pytest.raises(ValueError):
        fold([])
    with pytest.raises(ValueError):
        fold([a, b[:31]])


def test_from_nodes_checks():
    h = sha256(b"x")
    assert MerkleAccumulator.from_nodes(0, []).root() == EMPTY_ROOT
    assert MerkleAccumulator.from_nodes(3, [h, h]).nodes() == [(NodeId(1, 0), h), (NodeId(0, 2), h)]
    with pytest.raises(ValueError):
        MerkleAccumulator.from_nodes(3, [h])
    with pytest.raises(ValueError):
        MerkleAccumulator.from_nodes(3, [h, h[:31]])
    with pytest.raises(ValueError):
        MerkleAccumulator.from_nodes(-1, [])
    with pytest.raises(ValueError):
        MerkleAccumulator().append(h + b"\x00")


def test_hash_argument_types():
    h = sha256(b"x")
    with pytest.raises(TypeError):
        leaf_hash("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        node_hash(bytearray(h), h)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        node_hash(h[:31], h)


@pytest.mark.parametrize(
    "args",
    [
        (NODE_HASHES[0][0], False, 2, [NODE_HASHES[0][1]], ROOT_HASHES[2]),  # bool is not an index
        (NODE_HASHES[0][0], 0, 2.0, [NODE_HASHES[0][1]], ROOT_HASHES[2]),
        (NODE_HASHES[0][0], 0, True, [], NODE_HASHES[0][0]),  # would be a valid size-1 claim
        (NODE_HASHES[0][0], -1, 2, [NODE_HASHES[0][1]], ROOT_HASHES[2]),
        (bytearray(NODE_HASHES[0][0]), 0, 2, [NODE_HASHES[0][1]], ROOT_HASHES[2]),
        (NODE_HASHES[0][0], 0, 2, [bytearray(NODE_HASHES[0][1])], ROOT_HASHES[2]),
        (NODE_HASHES[0][0], 0, 2, [NODE_HASHES[0][1].hex()], ROOT_HASHES[2]),
        (NODE_HASHES[0][0], 0, 2, NODE_HASHES[0][1], ROOT_HASHES[2]),
        (NODE_HASHES[0][0], 0, 2, None, ROOT_HASHES[2]),
        (NODE_HASHES[0][0], 0, 2, [NODE_HASHES[0][1]], ROOT_HASHES[2].hex()),
    ],
)
def test_verify_inclusion_rejects_wrong_types(args):
    leaf, index, size, proof, root_hash = args
    # The untouched claim verifies; each parametrised case alters one argument.
    verify_inclusion(NODE_HASHES[0][0], 0, 2, [NODE_HASHES[0][1]], ROOT_HASHES[2])
    with pytest.raises(InvalidProof):
        verify_inclusion(leaf, index, size, proof, root_hash)


def test_verify_consistency_rejects_wrong_types():
    _, _, proof = VERIFY_TEST_CONSISTENCY[3]  # 2 -> 5
    r2, r5 = ROOT_HASHES[2], ROOT_HASHES[5]
    verify_consistency(2, 5, r2, r5, proof)
    for args in [
        (True, True, r2, r2, []),  # with 1 for True this would be a valid claim
        (False, 5, EMPTY_ROOT, r5, []),
        (2, 5.0, r2, r5, proof),
        (-2, 5, r2, r5, proof),
        (2, 5, bytearray(r2), r5, proof),
        (2, 5, r2, r5.hex(), proof),
        (2, 5, r2, r5, tuple(p.hex() for p in proof)),
        (2, 5, r2, r5, b"".join(proof)),
        (2, 5, r2, r5, iter(proof)),
    ]:
        with pytest.raises(InvalidProof):
            verify_consistency(*args)
    # A tuple is as good as a list.
    verify_consistency(2, 5, r2, r5, tuple(proof))
