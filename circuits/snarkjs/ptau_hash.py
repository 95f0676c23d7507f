"""The partial hash of a phase-1 contribution: @noble/hashes' blake2b-512 with its state exposed.

powersoftau_contribute.js stores in a contribution record the state of its
blake2b (@noble/hashes) after the challenge and the compressed points of
sections 2-6: 216 bytes that hashlib's blake2b cannot produce, as it does not
expose its state. `NobleBlake2b` is blake2b-512 in Python with that state
readable and restorable; `contribute_partial_hash` hashes in the chunks the
contribution uses. The development writer (circuits/snarkjs/ptau_dev.py) runs
it in a child process (`_start_partial_hash`, `_finish_partial_hash`) while it
computes the Lagrange points.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

__all__ = ["HASH_SIZE", "PARTIAL_HASH_SIZE", "NobleBlake2b", "contribute_partial_hash"]

HASH_SIZE = 64
PARTIAL_HASH_SIZE = 216
# Points per responseHasher.update in powersoftau_contribute.js: (1 << 20) / (2 * n8 of the group's field).
_CONTRIBUTE_CHUNK = {"G1": (1 << 20) // 64, "G2": (1 << 20) // 128}


# --- @noble/hashes blake2b-512 with its state exposed --------------------------------------

_M64 = (1 << 64) - 1
_IV = (0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
       0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179)
_SIGMA = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
          (14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3),
          (11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4),
          (7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8),
          (9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13),
          (2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9),
          (12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11),
          (13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10),
          (6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5),
          (10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0))
_LANES = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
          (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _compress_source() -> str:
    """RFC 7693's compression function F with its 12 rounds unrolled into straight-line
    code on local variables: 1.5x faster in CPython than the loop, and hashing
    the compressed points is the one part of the writer that runs in Python."""
    lines = ["def compress(h, block, t, last):",
             "    m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15 = _UNPACK(block)",
             "    v0, v1, v2, v3, v4, v5, v6, v7 = h",
             "    v8, v9, v10, v11, v12, v13, v14, v15 = _IV",
             "    v12 ^= t & _M64",
             "    v13 ^= t >> 64",
             "    if last:",
             "        v14 ^= _M64"]
    for round_ in range(12):
        s = _SIGMA[round_ % 10]
        for i, lane in enumerate(_LANES):
            a, b, c, d = (f"v{k}" for k in lane)
            x, y = f"m{s[2 * i]}", f"m{s[2 * i + 1]}"
            lines += [f"    {a} = ({a} + {b} + {x}) & _M64; {d} ^= {a}; {d} = (({d} >> 32) | ({d} << 32)) & _M64",
                      f"    {c} = ({c} + {d}) & _M64; {b} ^= {c}; {b} = (({b} >> 24) | ({b} << 40)) & _M64",
                      f"    {a} = ({a} + {b} + {y}) & _M64; {d} ^= {a}; {d} = (({d} >> 16) | ({d} << 48)) & _M64",
                      f"    {c} = ({c} + {d}) & _M64; {b} ^= {c}; {b} = (({b} >> 63) | ({b} << 1)) & _M64"]
    lines.append("    return (" + ", ".join(f"h[{i}] ^ v{i} ^ v{i + 8}" for i in range(8)) + ")")
    return "\n".join(lines)


_namespace: dict = {"_UNPACK": struct.Struct("<16Q").unpack, "_IV": _IV, "_M64": _M64}
exec(compile(_compress_source(), "<blake2b compress>", "exec"), _namespace)  # noqa: S102 - generated above, no input
_compress: Callable[[tuple[int, ...], bytes, int, bool], tuple[int, ...]] = _namespace["compress"]


class NobleBlake2b:
    """blake2b-512 exactly as @noble/hashes 1.x (snarkjs's hasher) buffers it, so that its
    state, which snarkjs stores as a contribution's "partial hash", can be written.

    noble keeps the last block of each update() in its 128-byte buffer and
    compresses it only when more input arrives; the other full blocks are
    compressed straight from the input, so the buffer's bytes beyond `pos` are
    left over from an earlier update. Feeding the same updates as snarkjs (its
    inputs are 4-byte aligned, so noble's fast path applies whenever the buffer
    is empty) reproduces the state byte for byte. Digests equal hashlib's.
    """

    def __init__(self) -> None:
        self.h: tuple[int, ...] = (_IV[0] ^ 0x01010000 ^ HASH_SIZE, *_IV[1:])  # digest length 64, no key, sequential
        self.buffer = bytearray(128)
        self.pos = 0
        self.length = 0

    def update(self, data: bytes) -> "NobleBlake2b":
        view = memoryview(data)
        n, at = len(data), 0
        while at < n:
            if self.pos == 128:
                self.h = _compress(self.h, self.buffer, self.length, False)
                self.pos = 0
            take = min(128 - self.pos, n - at)
            if take == 128 and at + take < n:
                while at + 128 < n:
                    self.length += 128
                    self.h = _compress(self.h, view[at:at + 128], self.length, False)
                    at += 128
                continue
            self.buffer[self.pos:self.pos + take] = view[at:at + take]
            self.pos += take
            self.length += take
            at += take
        return self

    def digest(self) -> bytes:
        block = bytes(self.buffer[:self.pos]).ljust(128, b"\0")
        return struct.pack("<8Q", *_compress(self.h, block, self.length, True))

    def partial_state(self) -> bytes:
        """misc.toPartialHash: buffer, h as u32 halves, u32 (length - pos), 0, u32 pos, 0, 8 zero bytes."""
        return (bytes(self.buffer) + struct.pack("<8Q", *self.h)
                + struct.pack("<4I", (self.length - self.pos) & 0xFFFFFFFF, 0, self.pos, 0) + bytes(8))

    @classmethod
    def from_partial_state(cls, partial: bytes) -> "NobleBlake2b":
        """misc.fromPartialHash, as `snarkjs powersoftau verify` reads the partial hash back."""
        if len(partial) != PARTIAL_HASH_SIZE:
            raise ValueError(f"a partial hash has {PARTIAL_HASH_SIZE} bytes, not {len(partial)}")
        hasher = cls()
        hasher.buffer = bytearray(partial[:128])
        hasher.h = struct.unpack_from("<8Q", partial, 128)
        low, high, pos, pos_high = struct.unpack_from("<4I", partial, 192)
        hasher.pos = pos + (pos_high << 32)
        hasher.length = low + (high << 32) + hasher.pos
        return hasher


def contribute_partial_hash(challenge: bytes, compressed_sections: Sequence[tuple[str, bytes]]) -> bytes:
    """The partial hash powersoftau_contribute.js stores: the challenge, then each of
    sections 2-6 (group name, compressed points) in the chunks contribute hashes them in."""
    hasher = NobleBlake2b().update(challenge)
    for group, data in compressed_sections:
        step = _CONTRIBUTE_CHUNK[group] * (32 if group == "G1" else 64)
        for start in range(0, len(data), step):
            hasher.update(data[start:start + step])
    return hasher.partial_state()


# The partial hash in a child Python process, so that it runs on another core while the
# Lagrange points are computed: a plain subprocess (multiprocessing's spawn would re-run
# the caller's main module). Input on stdin: the challenge, then per section a group byte
# (1 or 2), a u64 length and the compressed points; output: the 216 bytes.
_CHILD_CODE = ("import sys; data = sys.stdin.buffer.read(); "
               "from circuits.snarkjs.ptau_hash import _partial_hash_child; _partial_hash_child(data)")


def _partial_hash_child(data: bytes) -> None:
    challenge, at, sections = data[:HASH_SIZE], HASH_SIZE, []
    while at < len(data):
        group, length = struct.unpack_from("<BQ", data, at)
        sections.append((f"G{group}", data[at + 9:at + 9 + length]))
        at += 9 + length
    sys.stdout.buffer.write(contribute_partial_hash(challenge, sections))


def _start_partial_hash(challenge: bytes, compressed_sections: Sequence[tuple[str, bytes]]) -> subprocess.Popen | None:
    """The child computing contribute_partial_hash, or None if it could not start."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))}
    try:
        child = subprocess.Popen([sys.executable, "-c", _CHILD_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env)
    except OSError:
        return None
    assert child.stdin is not None
    try:
        child.stdin.write(challenge)
        for group, data in compressed_sections:
            child.stdin.write(struct.pack("<BQ", int(group[1]), len(data)))
            child.stdin.write(data)
        child.stdin.close()
    except OSError:  # the child died (it failed to import, say): the caller hashes itself
        child.kill()
        child.wait()
        return None
    return child


def _finish_partial_hash(child: subprocess.Popen | None, challenge: bytes,
                         compressed_sections: Sequence[tuple[str, bytes]]) -> bytes:
    """The child's result; computed here if the child failed (its error output is discarded:
    the fallback gives the same bytes)."""
    if child is not None:
        assert child.stdout is not None
        out = child.stdout.read()
        if child.wait() == 0 and len(out) == PARTIAL_HASH_SIZE:
            return out
    return contribute_partial_hash(challenge, compressed_sections)
