"""snarkjs `.wtns` witness files <-> lists of field elements.

Format (iden3 binfile, magic "wtns", version 2), as written by circom's
witness generators and snarkjs `wtns calculate`: section 1 = u32 n8 (32),
prime (n8 bytes LE), u32 number of values; section 2 = the values, n8 bytes
each, little-endian, standard (not Montgomery) form. Value 0 is the constant 1.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Sequence

from ..errors import MalformedArtifact
from ..field import R
from .binfile import Reader, decode_binfile, encode_binfile, read_field_header, read_file_bytes

N8 = 32


def encode_wtns(values: Sequence[int]) -> bytes:
    header = struct.pack("<I", N8) + R.to_bytes(N8, "little") + struct.pack("<I", len(values))
    body = b"".join((v % R).to_bytes(N8, "little") for v in values)
    return encode_binfile(b"wtns", 2, [(1, header), (2, body)])


def write_wtns(path: str | Path, values: Sequence[int]) -> None:
    Path(path).write_bytes(encode_wtns(values))


def decode_wtns(data: bytes, what: str = "wtns") -> list[int]:
    container = decode_binfile(data, b"wtns", (2,), what)
    head = Reader(container.section(1, what), f"{what} header")
    read_field_header(head, what)
    count = head.u32()
    raw = container.section(2, what)
    if len(raw) != count * N8:
        raise MalformedArtifact(f"{what}: header announces {count} values ({count * N8} bytes), section 2 holds {len(raw)} bytes")
    values = [int.from_bytes(raw[i:i + N8], "little") for i in range(0, len(raw), N8)]
    for index, v in enumerate(values):
        if v >= R:
            raise MalformedArtifact(f"{what}: value {index} is not reduced mod r")
    if values and values[0] != 1:
        raise MalformedArtifact(f"{what}: value 0 must be the constant 1, found {values[0]}")
    return values


def read_wtns(path: str | Path) -> list[int]:
    return decode_wtns(read_file_bytes(path, "wtns file"), what=f"wtns file {path}")


def decode_wtns_limbs(data: bytes, what: str = "wtns"):
    """The values of a .wtns file as an (n, 4) array of little-endian uint64 limbs (standard form), with
    the checks of `decode_wtns` made on the whole array at once: what a prover packs into its scalar
    vector without making a Python int per value."""
    import numpy as np

    from ..relation_arrays import limbs_below_r

    container = decode_binfile(data, b"wtns", (2,), what)
    head = Reader(container.section(1, what), f"{what} header")
    read_field_header(head, what)
    count = head.u32()
    raw = container.section(2, what)
    if len(raw) != count * N8:
        raise MalformedArtifact(f"{what}: header announces {count} values ({count * N8} bytes), section 2 holds {len(raw)} bytes")
    limbs = np.frombuffer(raw, dtype="<u8").reshape(-1, N8 // 8)
    below = limbs_below_r(limbs)
    if not below.all():
        raise MalformedArtifact(f"{what}: value {int(np.flatnonzero(~below)[0])} is not reduced mod r")
    if count and (int(limbs[0, 0]) != 1 or limbs[0, 1:].any()):
        raise MalformedArtifact(f"{what}: value 0 must be the constant 1, found {int.from_bytes(raw[:N8], 'little')}")
    return limbs


def read_wtns_limbs(path: str | Path):
    """`decode_wtns_limbs` of a file."""
    return decode_wtns_limbs(read_file_bytes(path, "wtns file"), what=f"wtns file {path}")
