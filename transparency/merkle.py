"""The Merkle tree of RFC 9162 (Certificate Transparency v2), section 2.1.

SHA-256 with a 0x00 prefix for leaves and 0x01 for interior nodes (2.1.1);
inclusion proofs, built per 2.1.3.1 and checked per 2.1.3.2; consistency
proofs, built per 2.1.4.1 and checked per 2.1.4.2. A log that stores the hash
of every complete, aligned perfect subtree under its NodeId builds proofs with
one batched lookup; MerkleAccumulator appends leaves in O(log n) memory.

Only the standard library is used: the customer's verifier imports this.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

HASH_SIZE = 32
EMPTY_ROOT: bytes = hashlib.sha256(b"").digest()

_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


class NodeId(NamedTuple):
    """The perfect subtree of 2**level leaves covering [index << level, (index + 1) << level)."""

    level: int
    index: int


class InvalidProof(ValueError):
    """A proof, root or size that does not verify. The message says what failed."""


# One batched lookup of stored node hashes: every requested NodeId must be a key.
NodeFetcher = Callable[[Sequence[NodeId]], Mapping[NodeId, bytes]]


# -- Hashing (RFC 9162 2.1.1) ------------------------------------------------


def leaf_hash(data: bytes) -> bytes:
    """HASH(0x00 || data): the hash of one log entry."""
    if not isinstance(data, bytes):
        raise TypeError(f"leaf data must be bytes, not {type(data).__name__}")
    return hashlib.sha256(_LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """HASH(0x01 || left || right): the hash of an interior node."""
    _require_hash("left", left)
    _require_hash("right", right)
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def fold(hashes: Sequence[bytes]) -> bytes:
    """Right fold: node(h0, node(h1, ... node(h_{k-2}, h_{k-1}))). Needs at least one hash."""
    if len(hashes) == 0:
        raise ValueError("fold needs at least one hash")
    acc = hashes[-1]
    _require_hash("hash", acc)
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc


# -- Tree shape -------------------------------------------------------------


def _largest_power_of_2_below(n: int) -> int:
    """The k of RFC 9162 2.1.1: the largest power of 2 smaller than n (n >= 2)."""
    assert n >= 2
    return 1 << ((n - 1).bit_length() - 1)


def range_nodes(lo: int, hi: int) -> list[NodeId]:
    """The perfect subtrees, largest first, whose right fold is MTH(D[lo:hi]).

    Precondition: 0 <= lo <= hi and, when hi - lo >= 2, lo is a multiple of
    the largest power of 2 smaller than hi - lo. Every range the RFC recursion
    produces from [0, size) has this property; ValueError otherwise. The empty
    range gives [].

    Why this works: MTH(D[lo:hi]) = node(MTH(D[lo:lo+k]), MTH(D[lo+k:hi])), and
    D[lo:lo+k] is the aligned perfect subtree (log2 k, lo / k); the rest starts
    at a multiple of k and is at most k long, so the same split applies to it.
    """
    _require_int("lo", lo)
    _require_int("hi", hi)
    if lo < 0 or lo > hi:
        raise ValueError(f"range [{lo}, {hi}) is not a range of leaves")
    if hi - lo >= 2 and lo % _largest_power_of_2_below(hi - lo) != 0:
        raise ValueError(f"range [{lo}, {hi}) is not one the RFC 9162 recursion produces")
    nodes: list[NodeId] = []
    while lo < hi:
        n = hi - lo
        if n & (n - 1) == 0 and lo % n == 0:
            # A whole aligned perfect subtree: one stored node.
            level = n.bit_length() - 1
            nodes.append(NodeId(level, lo >> level))
            break
        k = _largest_power_of_2_below(n)
        level = k.bit_length() - 1
        nodes.append(NodeId(level, lo >> level))
        lo += k
    return nodes


def root_nodes(size: int) -> list[NodeId]:
    """The perfect subtrees of the tree of `size` leaves, largest first: range_nodes(0, size)."""
    return range_nodes(0, size)


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The [lo, hi) ranges whose MTHs form PATH(index, D[0:size]) (RFC 9162 2.1.3.1), in proof order."""
    _require_int("index", index)
    _require_int("size", size)
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not in a tree of size {size}")
    # Walk down from the root; each step records the sibling range. The RFC
    # appends siblings on the way back up, so the proof is this list reversed.
    ranges: list[tuple[int, int]] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _largest_power_of_2_below(hi - lo)
        if index < lo + k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo = lo + k
    ranges.reverse()
    return ranges


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The [lo, hi) ranges whose MTHs form PROOF(old, D[0:new]) (RFC 9162 2.1.4.1), in proof order.

    [] when old == new or old == 0.
    """
    _require_int("old", old)
    _require_int("new", new)
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from size {old} to size {new}")
    if old == 0 or old == new:
        return []
    # SUBPROOF(m, D[lo:hi], b) with m = old - lo, walked down from the root.
    # The old tree always ends inside the current range: lo < old <= hi.
    ranges: list[tuple[int, int]] = []
    lo, hi = 0, new
    whole_old_root_known = True  # the RFC's b
    while old != hi:
        k = _largest_power_of_2_below(hi - lo)
        if old - lo <= k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo = lo + k
            whole_old_root_known = False
    if not whole_old_root_known:
        # SUBPROOF(m, D[m], false) = {MTH(D[m])}
        ranges.append((lo, hi))
    ranges.reverse()
    return ranges


# -- Building from stored nodes ---------------------------------------------


def _fetch_ranges(ranges: Sequence[tuple[int, int]], fetch: NodeFetcher) -> list[bytes]:
    """MTH of each range, from one call to `fetch` (none when no node is needed)."""
    per_range = [range_nodes(lo, hi) for lo, hi in ranges]
    wanted = list(dict.fromkeys(node for nodes in per_range for node in nodes))
    if not wanted:
        return []
    found = fetch(wanted)
    for node in wanted:
        if node not in found:
            raise LookupError(f"node store has no hash for {node}")
        h = found[node]
        if not isinstance(h, bytes) or len(h) != HASH_SIZE:
            raise ValueError(f"node store returned a malformed hash for {node}")
    return [fold([found[node] for node in nodes]) for nodes in per_range]


def root(size: int, fetch: NodeFetcher) -> bytes:
    """MTH(D[0:size]) from the stored nodes; EMPTY_ROOT for size 0 (without calling fetch)."""
    _require_int("size", size)
    if size < 0:
        raise ValueError(f"tree size {size} is negative")
    if size == 0:
        return EMPTY_ROOT
    return _fetch_ranges([(0, size)], fetch)[0]


def inclusion_proof(index: int, size: int, fetch: NodeFetcher) -> list[bytes]:
    """PATH(index, D[0:size]). Calls fetch once with every node needed (not at all for size 1)."""
    return _fetch_ranges(inclusion_ranges(index, size), fetch)


def consistency_proof(old: int, new: int, fetch: NodeFetcher) -> list[bytes]:
    """PROOF(old, D[0:new]). Calls fetch once with every node needed (not at all when the proof is empty)."""
    return _fetch_ranges(consistency_ranges(old, new), fetch)


# -- Verification -----------------------------------------------------------


def verify_inclusion(leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """Check that `leaf_hash` is leaf `index` of the tree of `size` leaves with `root`.

    RFC 9162 2.1.3.2 step by step. Raises InvalidProof on any failure.
    """
    _check_hash_arg("leaf hash", leaf_hash)
    _check_int_arg("leaf index", index)
    _check_int_arg("tree size", size)
    _check_proof_arg(proof)
    _check_hash_arg("root", root)

    if index >= size:
        raise InvalidProof(f"leaf index {index} is not below tree size {size}")
    fn = index
    sn = size - 1
    r = leaf_hash
    for p in proof:
        if sn == 0:
            raise InvalidProof(f"inclusion proof is too long for leaf {index} of size {size}")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                # Skip the levels where this node has no right sibling.
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise InvalidProof(f"inclusion proof is too short for leaf {index} of size {size}")
    if r != root:
        raise InvalidProof(f"inclusion proof for leaf {index} of size {size} does not lead to the root")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree of `old_size` with `old_root` is a prefix of the one of `new_size` with `new_root`.

    RFC 9162 2.1.4.2 step by step for 0 < old_size < new_size. Outside that
    range the proof must be empty, and: equal sizes need equal roots, and the
    root of size 0 must be EMPTY_ROOT. Raises InvalidProof on any failure.
    """
    _check_int_arg("old size", old_size)
    _check_int_arg("new size", new_size)
    _check_hash_arg("old root", old_root)
    _check_hash_arg("new root", new_root)
    _check_proof_arg(proof)

    if old_size > new_size:
        raise InvalidProof(f"old size {old_size} is larger than new size {new_size}")
    if old_size == 0 or old_size == new_size:
        if len(proof) != 0:
            raise InvalidProof(f"consistency proof from size {old_size} to {new_size} must be empty")
        if old_size == 0 and old_root != EMPTY_ROOT:
            raise InvalidProof("old root is not the root of the empty tree")
        if old_size == new_size and old_root != new_root:
            raise InvalidProof(f"roots differ for the same size {old_size}")
        return

    # 1. An empty path proves nothing here.
    if len(proof) == 0:
        raise InvalidProof(f"consistency proof from size {old_size} to {new_size} is empty")
    # 2. When the old tree is a perfect subtree the proof leaves its root out.
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    # 3.
    fn = old_size - 1
    sn = new_size - 1
    # 4. Climb to the lowest level where the old tree's last node is a left child.
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # 5.
    fr = path[0]
    sr = path[0]
    # 6.
    for c in path[1:]:
        if sn == 0:
            raise InvalidProof(f"consistency proof from size {old_size} to {new_size} is too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    # 7.
    if sn != 0:
        raise InvalidProof(f"consistency proof from size {old_size} to {new_size} is too short")
    if fr != old_root:
        raise InvalidProof(f"consistency proof does not lead to the old root of size {old_size}")
    if sr != new_root:
        raise InvalidProof(f"consistency proof does not lead to the new root of size {new_size}")


# -- Compact range ----------------------------------------------------------


class MerkleAccumulator:
    """The root nodes of the tree of `size` leaves: enough to append and to compute the root."""

    def __init__(self) -> None:
        self.size: int = 0
        # root_nodes(size) with their hashes, largest (leftmost) first.
        self._nodes: list[tuple[NodeId, bytes]] = []

    @classmethod
    def from_nodes(cls, size: int, hashes: Sequence[bytes]) -> MerkleAccumulator:
        """Resume from the hashes of root_nodes(size), in that order."""
        ids = root_nodes(size)  # checks size
        if len(hashes) != len(ids):
            raise ValueError(f"a tree of size {size} has {len(ids)} root nodes, got {len(hashes)} hashes")
        for h in hashes:
            _require_hash("root node hash", h)
        acc = cls()
        acc.size = size
        acc._nodes = list(zip(ids, hashes))
        return acc

    def nodes(self) -> list[tuple[NodeId, bytes]]:
        """root_nodes(size) with their hashes."""
        return list(self._nodes)

    def append(self, leaf_hash: bytes) -> list[tuple[NodeId, bytes]]:
        """Append one leaf; return every perfect subtree it completed, the leaf first, then upwards."""
        _require_hash("leaf hash", leaf_hash)
        node = NodeId(0, self.size)
        h = leaf_hash
        completed = [(node, h)]
        # The last root node is the left sibling exactly when it has the same level.
        while self._nodes and self._nodes[-1][0].level == node.level:
            left_id, left_hash = self._nodes.pop()
            node = NodeId(node.level + 1, left_id.index >> 1)
            h = node_hash(left_hash, h)
            completed.append((node, h))
        self._nodes.append((node, h))
        self.size += 1
        return completed

    def root(self) -> bytes:
        """MTH of the leaves appended so far."""
        if not self._nodes:
            return EMPTY_ROOT
        return fold([h for _, h in self._nodes])


# -- Argument checks ----------------------------------------------------------


def _require_int(name: str, value: object) -> None:
    # bool is an int subclass; a True here is a bug, not a size.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")


def _require_hash(name: str, value: object) -> None:
    if not isinstance(value, bytes):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    if len(value) != HASH_SIZE:
        raise ValueError(f"{name} must be {HASH_SIZE} bytes, got {len(value)}")


def _check_int_arg(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidProof(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidProof(f"{name} {value} is negative")


def _check_hash_arg(name: str, value: object) -> None:
    if not isinstance(value, bytes):
        raise InvalidProof(f"{name} must be bytes, not {type(value).__name__}")
    if len(value) != HASH_SIZE:
        raise InvalidProof(f"{name} must be {HASH_SIZE} bytes, got {len(value)}")


def _check_proof_arg(proof: object) -> None:
    if isinstance(proof, (bytes, bytearray, str)) or not isinstance(proof, Sequence):
        raise InvalidProof(f"proof must be a sequence of hashes, not {type(proof).__name__}")
    for i, p in enumerate(proof):
        if not isinstance(p, bytes):
            raise InvalidProof(f"proof element {i} must be bytes, not {type(p).__name__}")
        if len(p) != HASH_SIZE:
            raise InvalidProof(f"proof element {i} must be {HASH_SIZE} bytes, got {len(p)}")
