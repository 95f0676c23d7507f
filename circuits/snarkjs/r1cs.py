"""circom/snarkjs `.r1cs` files <-> `circuits.relation.R1CS`.

Format (iden3 binfile, magic "r1cs", version 1), as written by circom and read
by snarkjs's `r1csfile` package:
- section 1 (header): u32 field size n8 (32), prime (n8 bytes LE), u32 nWires,
  u32 nPubOut, u32 nPubIn, u32 nPrvIn, u64 nLabels, u32 nConstraints;
- section 2 (constraints): per constraint A, B, C, each as u32 nTerms then
  nTerms x (u32 wire, n8-byte LE coefficient in standard form);
- section 3 (wire -> label map): nWires x u64.
Wire 0 is the constant 1, then public outputs, public inputs, the rest private.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import MalformedArtifact
from ..field import R
from ..relation import R1CS, Constraint, LinearTerms
from ..relation_arrays import ArrayR1CS, SparseRows
from .binfile import Reader, decode_binfile, encode_binfile, read_field_header, read_file_bytes

N8 = 32
SECTION_HEADER = 1
SECTION_CONSTRAINTS = 2
SECTION_WIRE_MAP = 3


@dataclass(frozen=True)
class R1csFileInfo:
    """Header fields of an .r1cs file that the relation itself does not carry."""

    n_wires: int
    n_public_outputs: int
    n_public_inputs: int
    n_private_inputs: int
    n_labels: int
    n_constraints: int
    wire_to_label: tuple[int, ...]


def _encode_terms(terms: LinearTerms, n_wires: int, where: str) -> bytes:
    out = [struct.pack("<I", len(terms))]
    for wire, coeff in terms:
        if not 0 <= wire < n_wires:
            raise MalformedArtifact(f"{where}: wire {wire} outside 0..{n_wires - 1}")
        out.append(struct.pack("<I", wire))
        out.append((coeff % R).to_bytes(N8, "little"))
    return b"".join(out)


def encode_r1cs(r1cs: R1CS, n_private_inputs: int = 0, wire_to_label: list[int] | None = None) -> bytes:
    """Serialise a relation. `n_private_inputs` only documents how many private
    wires are circuit inputs (circom's nPrvIn); the proof system ignores it."""
    n_out = r1cs.n_public_outputs
    n_in = r1cs.n_public - n_out
    if n_in < 0:
        raise ValueError("n_public_outputs exceeds n_public")
    labels = list(range(r1cs.n_wires)) if wire_to_label is None else list(wire_to_label)
    if len(labels) != r1cs.n_wires:
        raise ValueError("wire_to_label needs one label per wire")
    header = struct.pack("<I", N8) + R.to_bytes(N8, "little") + struct.pack(
        "<IIIIQI", r1cs.n_wires, n_out, n_in, n_private_inputs, max(labels, default=-1) + 1, r1cs.n_constraints
    )
    body = []
    for index, c in enumerate(r1cs.constraints):
        where = f"constraint {index}"
        body.append(_encode_terms(c.a, r1cs.n_wires, where))
        body.append(_encode_terms(c.b, r1cs.n_wires, where))
        body.append(_encode_terms(c.c, r1cs.n_wires, where))
    wire_map = struct.pack(f"<{len(labels)}Q", *labels)
    return encode_binfile(b"r1cs", 1, [(SECTION_HEADER, header), (SECTION_CONSTRAINTS, b"".join(body)), (SECTION_WIRE_MAP, wire_map)])


def write_r1cs(path: str | Path, r1cs: R1CS, n_private_inputs: int = 0) -> None:
    Path(path).write_bytes(encode_r1cs(r1cs, n_private_inputs))


_U32 = struct.Struct("<I").unpack_from
_TERM = 4 + N8
_SIDES = "ABC"


def _decode_constraints(body: bytes, n_constraints: int, n_wires: int, what: str) -> tuple[Constraint, ...]:
    """The constraint section, one flat pass (this runs on every proof a
    command-line prover makes, so it avoids a call per term)."""
    from_bytes = int.from_bytes
    end = len(body)
    pos = 0
    constraints = []
    for index in range(n_constraints):
        sides = []
        for side in _SIDES:
            if pos + 4 > end:
                raise MalformedArtifact(f"{what}: truncated before constraint {index} side {side}")
            (n_terms,) = _U32(body, pos)
            pos += 4
            stop = pos + n_terms * _TERM
            if n_terms > n_wires:
                raise MalformedArtifact(f"{what}: constraint {index} side {side} has {n_terms} terms for {n_wires} wires")
            if stop > end:
                raise MalformedArtifact(f"{what}: truncated inside constraint {index} side {side}")
            terms = []
            for at in range(pos, stop, _TERM):
                (wire,) = _U32(body, at)
                coeff = from_bytes(body[at + 4:at + _TERM], "little")
                if wire >= n_wires:
                    raise MalformedArtifact(f"{what}: constraint {index} side {side} names wire {wire}, the file has {n_wires}")
                if coeff >= R:
                    raise MalformedArtifact(f"{what}: constraint {index} side {side} has a coefficient not reduced mod r")
                terms.append((wire, coeff))
            sides.append(tuple(terms))
            pos = stop
        constraints.append(Constraint(*sides))
    if pos != end:
        raise MalformedArtifact(f"{what}: constraint section has {end - pos} bytes beyond {n_constraints} constraints")
    return tuple(constraints)


def _read_header(container, what: str) -> tuple[int, int, int, int, int, int]:
    """(nWires, nPubOut, nPubIn, nPrvIn, nLabels, nConstraints), checked for consistency."""
    head = Reader(container.section(SECTION_HEADER, what), f"{what} header")
    read_field_header(head, what)
    n_wires, n_out, n_in, n_prv = head.u32(), head.u32(), head.u32(), head.u32()
    n_labels, n_constraints = head.u64(), head.u32()
    if n_wires < 1 or 1 + n_out + n_in > n_wires:
        raise MalformedArtifact(f"{what}: inconsistent header ({n_wires} wires, {n_out} outputs, {n_in} public inputs)")
    return n_wires, n_out, n_in, n_prv, n_labels, n_constraints


def decode_r1cs(data: bytes, what: str = "r1cs") -> tuple[R1CS, R1csFileInfo]:
    container = decode_binfile(data, b"r1cs", (1,), what)
    n_wires, n_out, n_in, n_prv, n_labels, n_constraints = _read_header(container, what)
    constraints = _decode_constraints(container.section(SECTION_CONSTRAINTS, what), n_constraints, n_wires, f"{what} constraints")
    labels: tuple[int, ...] = ()
    if SECTION_WIRE_MAP in container.sections:
        raw = container.sections[SECTION_WIRE_MAP]
        if len(raw) != 8 * n_wires:
            raise MalformedArtifact(f"{what}: wire map has {len(raw)} bytes, expected {8 * n_wires}")
        labels = struct.unpack(f"<{n_wires}Q", raw)
    relation = R1CS(n_wires=n_wires, n_public=n_out + n_in, constraints=constraints, n_public_outputs=n_out)
    info = R1csFileInfo(n_wires, n_out, n_in, n_prv, n_labels, n_constraints, labels)
    return relation, info


def _constraint_arrays(body: bytes, n_constraints: int, n_wires: int, what: str) -> tuple[SparseRows, SparseRows, SparseRows]:
    """The constraint section as A, B, C row arrays: one pass over the term
    counts (they give each section's length), then every term at once."""
    n_sections = 3 * n_constraints
    counts = [0] * n_sections
    end = len(body)
    pos = 0
    for i in range(n_sections):
        if pos + 4 > end:
            raise MalformedArtifact(f"{what}: truncated before constraint {i // 3} side {_SIDES[i % 3]}")
        (n_terms,) = _U32(body, pos)
        if n_terms > n_wires:
            raise MalformedArtifact(f"{what}: constraint {i // 3} side {_SIDES[i % 3]} has {n_terms} terms for {n_wires} wires")
        counts[i] = n_terms
        pos += 4 + n_terms * _TERM
    if pos > end:
        raise MalformedArtifact(f"{what}: truncated inside constraint {n_constraints - 1}")
    if pos < end:
        raise MalformedArtifact(f"{what}: constraint section has {end - pos} bytes beyond {n_constraints} constraints")
    count = np.array(counts, dtype=np.int64)
    raw = np.frombuffer(body, dtype=np.uint8)
    is_term_byte = np.ones(len(raw), dtype=bool)
    header_at = np.zeros(n_sections, dtype=np.int64)
    np.cumsum(4 + count[:-1] * _TERM, out=header_at[1:])
    for k in range(4):
        is_term_byte[header_at + k] = False
    terms = raw[is_term_byte].reshape(-1, _TERM)
    side_of_term = np.repeat(np.tile(np.arange(3, dtype=np.int8), n_constraints), count)
    wire_all = np.ascontiguousarray(terms[:, :4]).view("<u4").reshape(-1).astype(np.int64)
    sides = []
    for side in range(3):
        mine = side_of_term == side
        start = np.zeros(n_constraints + 1, dtype=np.int64)
        np.cumsum(count[side::3], out=start[1:])
        sides.append(SparseRows(start, wire_all[mine], np.ascontiguousarray(terms[mine, 4:])))
    for name, rows in zip(_SIDES, sides):
        try:
            rows.check(n_wires, f"{what}, side {name}")
        except ValueError as exc:
            raise MalformedArtifact(str(exc)) from None
    return sides[0], sides[1], sides[2]


def decode_r1cs_arrays(data: bytes, what: str = "r1cs") -> ArrayR1CS:
    """An .r1cs file as an `ArrayR1CS` (what a prover needs), checked as
    strictly as `decode_r1cs`: wires in range, coefficients below r."""
    container = decode_binfile(data, b"r1cs", (1,), what)
    n_wires, n_out, n_in, _, _, n_constraints = _read_header(container, what)
    a, b, c = _constraint_arrays(container.section(SECTION_CONSTRAINTS, what), n_constraints, n_wires,
                                 f"{what} constraints")
    return ArrayR1CS(n_wires=n_wires, n_public=n_out + n_in, a=a, b=b, c=c, n_public_outputs=n_out)


def read_r1cs_arrays(path: str | Path) -> ArrayR1CS:
    return decode_r1cs_arrays(read_file_bytes(path, "r1cs file"), what=f"r1cs file {path}")


def read_r1cs(path: str | Path) -> R1CS:
    relation, _ = decode_r1cs(read_file_bytes(path, "r1cs file"), what=f"r1cs file {path}")
    return relation


def read_r1cs_with_info(path: str | Path) -> tuple[R1CS, R1csFileInfo]:
    return decode_r1cs(read_file_bytes(path, "r1cs file"), what=f"r1cs file {path}")
