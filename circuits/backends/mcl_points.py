"""Points of the mcl backend as mcl's C structs: layout, single-point and whole-vector conversions.

The struct layout (Montgomery Fq limbs, Jacobian x, y, z; G1 12 and G2 24
u64 limbs, 96 and 192 bytes), the conversions between canonical affine
points and single structs (built in Python for G1, parsed by mcl for G2 so
that its subgroup check applies), and the vectorised helpers over arrays of
structs: batched normalisation and negation through zk_dtypes' Jacobian
Montgomery points (the same layout, checked when the library loads,
circuits/backends/mcl_binding.py), the curve check of a whole vector, and
structs from affine Montgomery points. Every function that calls into mcl
takes the loaded library as its argument.
"""
from __future__ import annotations

import ctypes

import numpy as np
import zk_dtypes

from ..errors import CircuitError, MalformedArtifact
from ..field import Q
from ..groth16.types import G1Affine, G2Affine
from .base import B2, fq_dtype

IO_EC_AFFINE_SERIALIZE = 4096  # x || y, 32-byte little-endian standard-form coordinates

FP_LIMBS = 4
G1_LIMBS = 3 * FP_LIMBS
G2_LIMBS = 6 * FP_LIMBS
GT_LIMBS = 12 * FP_LIMBS
G1_BYTES = 8 * G1_LIMBS
G2_BYTES = 8 * G2_LIMBS

_G2_ETH = (
    (
        10857046999023057135944570762232829481370756359578518086990519993285655852781,
        11559732032986387107991004021392285783925812861821192530917403151452391805634,
    ),
    (
        8495653923123431417604973247489272438418190587263600148770280649306958101930,
        4082367875863433681332203403145435568316851327593401208105741076214120093531,
    ),
)


def _is_coord(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < Q


def _le(v: int) -> bytes:
    return v.to_bytes(32, "little")


def _g1_shape_ok(p: object) -> bool:
    return isinstance(p, tuple) and len(p) == 2 and all(_is_coord(v) for v in p)


def _g2_shape_ok(p: object) -> bool:
    try:
        (x0, x1), (y0, y1) = p  # type: ignore[misc]
    except (TypeError, ValueError):
        return False
    return all(_is_coord(v) for v in (x0, x1, y0, y1))


_MONT_Q = 1 << 256  # Fq elements are stored as v * 2^256 mod Q
_MONT_Q_INV = pow(_MONT_Q, -1, Q)
_MONT_ONE_LE = (_MONT_Q % Q).to_bytes(32, "little")


def _g1_try(lib: ctypes.CDLL, p: G1Affine, out: np.ndarray | None = None) -> np.ndarray | None:
    """p as an mclBnG1 (written into `out` if given); None if p is not a valid G1 point.

    Built in Python (Montgomery limbs, z = 1) rather than by mclBnG1_setStr:
    this mcl build checks the order of every G1 point it parses, a full scalar
    multiplication, although G1 = E(Fq) has cofactor 1 so that on the curve
    already means order R.
    """
    out = np.zeros(G1_LIMBS, dtype=np.uint64) if out is None else out
    if p is None:
        out[:] = 0  # z = 0: infinity
        return out
    if not _g1_shape_ok(p):
        return None
    x, y = p
    if (y * y - x * x * x - 3) % Q:
        return None
    raw = ((x * _MONT_Q) % Q).to_bytes(32, "little") + ((y * _MONT_Q) % Q).to_bytes(32, "little") + _MONT_ONE_LE
    out[:] = np.frombuffer(raw, dtype="<u8")
    return out


def _g2_try(lib: ctypes.CDLL, p: G2Affine, out: np.ndarray | None = None) -> np.ndarray | None:
    out = np.zeros(G2_LIMBS, dtype=np.uint64) if out is None else out
    if p is None:
        lib.mclBnG2_clear(out.ctypes.data)
        return out
    if not _g2_shape_ok(p) or p == ((0, 0), (0, 0)):
        return None
    (x0, x1), (y0, y1) = p
    data = _le(x0) + _le(x1) + _le(y0) + _le(y1)
    # with verifyOrderG2 on, setStr also refuses points outside the order-R subgroup
    if lib.mclBnG2_setStr(out.ctypes.data, data, len(data), IO_EC_AFFINE_SERIALIZE) != 0:
        return None
    return out


def _g1_from_canonical(lib: ctypes.CDLL, p: G1Affine, what: str = "G1 point") -> np.ndarray:
    out = _g1_try(lib, p)
    if out is None:
        raise MalformedArtifact(f"{what} is not on the BN254 G1 curve: {p!r}")
    return out


def _g2_from_canonical(lib: ctypes.CDLL, p: G2Affine, what: str = "G2 point") -> np.ndarray:
    out = _g2_try(lib, p)
    if out is None:
        raise MalformedArtifact(f"{what} is not in the BN254 G2 order-R subgroup: {p!r}")
    return out


def _g1_to_canonical(lib: ctypes.CDLL, p: np.ndarray) -> G1Affine:
    if lib.mclBnG1_isZero(p.ctypes.data):
        return None
    buf = ctypes.create_string_buffer(1024)  # mcl may write a terminator past the data
    if lib.mclBnG1_getStr(buf, len(buf), p.ctypes.data, IO_EC_AFFINE_SERIALIZE) != 64:
        raise CircuitError("mclBnG1_getStr failed")
    raw = buf.raw[:64]
    return (int.from_bytes(raw[:32], "little"), int.from_bytes(raw[32:], "little"))


def _g2_to_canonical(lib: ctypes.CDLL, p: np.ndarray) -> G2Affine:
    if lib.mclBnG2_isZero(p.ctypes.data):
        return None
    buf = ctypes.create_string_buffer(1024)
    if lib.mclBnG2_getStr(buf, len(buf), p.ctypes.data, IO_EC_AFFINE_SERIALIZE) != 128:
        raise CircuitError("mclBnG2_getStr failed")
    v = [int.from_bytes(buf.raw[i : i + 32], "little") for i in range(0, 128, 32)]
    return ((v[0], v[1]), (v[2], v[3]))



def _check_vector(vector: object, limbs: int, tag: str) -> None:
    if not isinstance(vector, np.ndarray) or vector.ndim != 2 or vector.shape[1] != limbs:
        raise CircuitError(f"expected a {tag} vector of the mcl backend")


def _jacobian_dtype(tag: str) -> np.dtype:
    return np.dtype(zk_dtypes.bn254_g1_jacobian_mont if tag == "G1" else zk_dtypes.bn254_g2_jacobian_mont)


def _affine_dtype(tag: str) -> np.dtype:
    return np.dtype(zk_dtypes.bn254_g1_affine_mont if tag == "G1" else zk_dtypes.bn254_g2_affine_mont)


def _normalised(arr: np.ndarray, tag: str) -> np.ndarray:
    """Jacobian structs -> the same points with z = 1 (all zeros for infinity):
    zk_dtypes' batched conversion to affine (one inversion for the whole
    array), then z appended. mcl's structs and zk_dtypes' Jacobian Montgomery
    points share one layout (checked when the library loads)."""
    limbs = arr.shape[1]
    if arr.shape[0] == 0:
        return arr
    affine = np.ascontiguousarray(arr).view(_jacobian_dtype(tag)).reshape(-1).astype(_affine_dtype(tag))
    return np.frombuffer(_structs_from_affine(affine.tobytes(), limbs), dtype=np.uint64).reshape(-1, limbs).copy()


def _negate_rows(arr: np.ndarray, rows: np.ndarray, tag: str) -> None:
    """y -> -y (each Fq component of y) on the rows selected by the boolean mask, in place."""
    third = arr.shape[1] // 3
    picked = np.flatnonzero(rows)
    y = np.ascontiguousarray(arr[picked, third:2 * third])
    arr[picked, third:2 * third] = (-y.view(fq_dtype())).view(np.uint64).reshape(y.shape)


def _first_off_curve(arr: np.ndarray, tag: str) -> int | None:
    """Index of the first Jacobian struct not on its curve, vectorised in
    zk_dtypes' Montgomery Fq: y^2 = x^3 + b z^6 (G1: b = 3; G2: b = b' on the
    twist over Fq2 = Fq[u]/(u^2 + 1)); z = 0 is the point at infinity, as in
    mcl. Coordinates must already be below Q."""
    if arr.shape[0] == 0:
        return None
    f = np.ascontiguousarray(arr).view(fq_dtype()).reshape(arr.shape[0], -1)
    if tag == "G1":
        x, y, z = f[:, 0], f[:, 1], f[:, 2]
        z2 = z * z
        off = y * y != x * x * x + _fq(3) * (z2 * z2 * z2)
        infinity = ~arr[:, 2 * FP_LIMBS:].any(axis=1)
    else:
        def mul(a: tuple, b: tuple) -> tuple:
            return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]

        x, y, z = (f[:, 0], f[:, 1]), (f[:, 2], f[:, 3]), (f[:, 4], f[:, 5])
        z2 = mul(z, z)
        bz6 = mul((_fq(B2[0]), _fq(B2[1])), mul(mul(z2, z2), z2))
        x3 = mul(mul(x, x), x)
        yy = mul(y, y)
        off = (yy[0] != x3[0] + bz6[0]) | (yy[1] != x3[1] + bz6[1])
        infinity = ~arr[:, 4 * FP_LIMBS:].any(axis=1)
    bad = np.flatnonzero(off & ~infinity)
    return int(bad[0]) if bad.size else None


def _fq(v: int) -> np.ndarray:
    return np.frombuffer((v * _MONT_Q % Q).to_bytes(32, "little"), dtype="<u8").view(fq_dtype())


def _structs_from_affine(data: bytes, limbs: int) -> bytes:
    """Affine Montgomery points (x || y) as mcl structs (x || y || z), bytes."""
    xy_limbs = limbs * 2 // 3
    if len(data) % (8 * xy_limbs):
        raise MalformedArtifact(f"affine point vector: {len(data)} bytes is not a multiple of {8 * xy_limbs}")
    xy = np.frombuffer(data, dtype="<u8").reshape(-1, xy_limbs)
    out = np.zeros((xy.shape[0], limbs), dtype=np.uint64)
    out[:, :xy_limbs] = xy
    finite = xy.any(axis=1)
    out[finite, xy_limbs] = np.frombuffer(_MONT_ONE_LE, dtype="<u8")[0]  # z = 1 (its c0 for G2)
    out[finite, xy_limbs + 1 : xy_limbs + FP_LIMBS] = np.frombuffer(_MONT_ONE_LE, dtype="<u8")[1:]
    return out.tobytes()
