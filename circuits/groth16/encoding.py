"""Byte encodings of BN254 points, Groth16 proofs and verifying keys.

Compressed points (the form proofs travel in) follow gnark-crypto's layout:
big-endian field elements, the two most significant bits of the first byte
are flags, the remaining 254 bits hold x (every x < Q fits, since Q < 2^254).

    flags 0b10  compressed, y is the lexicographically smaller root
    flags 0b11  compressed, y is the lexicographically larger root
    flags 0b01  point at infinity (every other bit must be zero)
    flags 0b00  uncompressed encoding: refused here

G1: 32 bytes, x. "Larger" means y > (Q - 1) / 2.
G2: 64 bytes, x.c1 || x.c0 (imaginary part first, as in EIP-197); the flags
sit in the first byte (of x.c1). For y in Fq2 "larger" compares y.c1 first and
y.c0 when y.c1 = 0 (the zkcrypto/gnark rule).

Decoding validates everything: length, flags, x < Q (canonical), a square
root exists (the point is on the curve), and for G2 membership of the order-R
subgroup (the twist has a large cofactor). Failures raise MalformedArtifact.
Since neither group has points of order 2 (both orders are odd), y = 0 never
occurs and each x has two distinct roots, so the encoding is a bijection.

Uncompressed points (portable key storage) use the EIP-196/197 form: x || y
(G1, 64 bytes) and x.c1 || x.c0 || y.c1 || y.c0 (G2, 128 bytes), big-endian,
infinity as all zero bytes ((0, 0) is on neither curve).

Proof: A (32) || B (64) || C (32) = 128 bytes.
Verifying key: b"FPVK" || version u8 || n_public u32 BE || alpha_g1 || beta_g2
|| gamma_g2 || delta_g2 || ic[0..n_public], compressed; its digest is the
SHA-256 of exactly these bytes.
"""
from __future__ import annotations

import hashlib
from typing import Any, Mapping

from ..errors import MalformedArtifact
from ..field import Q
from .types import G1Affine, G2Affine, Proof, VerifyingKey
from ..curve import Fq2, fq2_mul, g1_curve_rhs, g1_on_curve, g2_curve_rhs, g2_in_subgroup, g2_is_valid, g2_on_curve

G1_COMPRESSED = 32
G2_COMPRESSED = 64
G1_UNCOMPRESSED = 64
G2_UNCOMPRESSED = 128
PROOF_BYTES = G1_COMPRESSED + G2_COMPRESSED + G1_COMPRESSED

_FLAG_MASK = 0b11 << 6
_FLAG_SMALLER = 0b10 << 6
_FLAG_LARGER = 0b11 << 6
_FLAG_INFINITY = 0b01 << 6

VK_MAGIC = b"FPVK"
VK_VERSION = 1
_HALF_Q = (Q - 1) // 2

# --- field arithmetic (Fq and Fq2 = Fq[u]/(u^2 + 1)) on plain ints ---------------


def _fq_sqrt(a: int) -> int | None:
    """A square root of a in Fq, or None (Q = 3 mod 4, so a^((Q+1)/4) works)."""
    root = pow(a, (Q + 1) // 4, Q)
    return root if root * root % Q == a % Q else None


def fq2_sqrt(a: Fq2) -> Fq2 | None:
    """A square root in Fq2 via the norm: if (x0 + x1 u)^2 = a0 + a1 u then
    x0^2 = (a0 +- sqrt(a0^2 + a1^2)) / 2 and x1 = a1 / (2 x0). Verified at the end."""
    a0, a1 = a[0] % Q, a[1] % Q
    if a1 == 0:
        root = _fq_sqrt(a0)
        if root is not None:
            return (root, 0)
        root = _fq_sqrt(-a0 % Q)  # (r u)^2 = -r^2
        return None if root is None else (0, root)
    norm_root = _fq_sqrt((a0 * a0 + a1 * a1) % Q)
    if norm_root is None:
        return None
    inv2 = (Q + 1) // 2
    x0 = _fq_sqrt((a0 + norm_root) * inv2 % Q)
    if x0 is None:
        x0 = _fq_sqrt((a0 - norm_root) * inv2 % Q)
    if x0 is None or x0 == 0:
        return None
    x1 = a1 * pow(2 * x0, Q - 2, Q) % Q
    candidate = (x0, x1)
    return candidate if fq2_mul(candidate, candidate) == (a0, a1) else None


def _fq_is_larger(y: int) -> bool:
    return y > _HALF_Q


def fq2_is_larger(y: Fq2) -> bool:
    return _fq_is_larger(y[0]) if y[1] == 0 else _fq_is_larger(y[1])


def _g2_valid(p: G2Affine, backend: Any) -> bool:
    return g2_is_valid(p, backend)


# --- compressed points ---------------------------------------------------------


def encode_g1_compressed(p: G1Affine) -> bytes:
    if p is None:
        return bytes([_FLAG_INFINITY]) + bytes(G1_COMPRESSED - 1)
    x, y = p
    out = bytearray(x.to_bytes(32, "big"))
    out[0] |= _FLAG_LARGER if _fq_is_larger(y) else _FLAG_SMALLER
    return bytes(out)


def _split_flags(data: bytes, size: int, what: str) -> tuple[int, bytes]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise MalformedArtifact(f"{what}: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) != size:
        raise MalformedArtifact(f"{what}: expected {size} bytes, got {len(data)}")
    flags = data[0] & _FLAG_MASK
    body = bytes([data[0] & ~_FLAG_MASK & 0xFF]) + data[1:]
    if flags == 0:
        raise MalformedArtifact(f"{what}: not a compressed encoding (flag bits 00)")
    if flags == _FLAG_INFINITY and any(body):
        raise MalformedArtifact(f"{what}: infinity flag set with non-zero payload")
    return flags, body


def decode_g1_compressed(data: bytes, what: str = "G1 point") -> G1Affine:
    flags, body = _split_flags(data, G1_COMPRESSED, what)
    if flags == _FLAG_INFINITY:
        return None
    x = int.from_bytes(body, "big")
    if x >= Q:
        raise MalformedArtifact(f"{what}: x coordinate is not reduced mod Q")
    y = _fq_sqrt(g1_curve_rhs(x))
    if y is None or y == 0:
        raise MalformedArtifact(f"{what}: x is not the abscissa of a BN254 G1 point")
    if _fq_is_larger(y) != (flags == _FLAG_LARGER):
        y = Q - y
    return (x, y)  # G1 has cofactor 1: on the curve means in the group


def encode_g2_compressed(p: G2Affine) -> bytes:
    if p is None:
        return bytes([_FLAG_INFINITY]) + bytes(G2_COMPRESSED - 1)
    (x0, x1), y = p
    out = bytearray(x1.to_bytes(32, "big") + x0.to_bytes(32, "big"))
    out[0] |= _FLAG_LARGER if fq2_is_larger(y) else _FLAG_SMALLER
    return bytes(out)


def decode_g2_compressed(data: bytes, what: str = "G2 point", backend: Any = None) -> G2Affine:
    """Decode and validate; the subgroup check uses `backend` if given, else py_ecc."""
    flags, body = _split_flags(data, G2_COMPRESSED, what)
    if flags == _FLAG_INFINITY:
        return None
    x1, x0 = int.from_bytes(body[:32], "big"), int.from_bytes(body[32:], "big")
    if x0 >= Q or x1 >= Q:
        raise MalformedArtifact(f"{what}: x coordinate is not reduced mod Q")
    y = fq2_sqrt(g2_curve_rhs((x0, x1)))
    if y is None or y == (0, 0):
        raise MalformedArtifact(f"{what}: x is not the abscissa of a point on the BN254 twist")
    if fq2_is_larger(y) != (flags == _FLAG_LARGER):
        y = ((Q - y[0]) % Q, (Q - y[1]) % Q)
    point = ((x0, x1), y)
    if not _g2_valid(point, backend):
        raise MalformedArtifact(f"{what}: point is not in the order-R subgroup of the twist")
    return point


# --- uncompressed points (EIP-196/197) ---------------------------------------------


def encode_g1_uncompressed(p: G1Affine) -> bytes:
    if p is None:
        return bytes(G1_UNCOMPRESSED)
    return p[0].to_bytes(32, "big") + p[1].to_bytes(32, "big")


def decode_g1_uncompressed(data: bytes, what: str = "G1 point") -> G1Affine:
    if len(data) != G1_UNCOMPRESSED:
        raise MalformedArtifact(f"{what}: expected {G1_UNCOMPRESSED} bytes, got {len(data)}")
    if not any(data):
        return None
    p = (int.from_bytes(data[:32], "big"), int.from_bytes(data[32:], "big"))
    if not g1_on_curve(p):
        raise MalformedArtifact(f"{what}: not a canonical point on the BN254 G1 curve")
    return p


def encode_g2_uncompressed(p: G2Affine) -> bytes:
    if p is None:
        return bytes(G2_UNCOMPRESSED)
    (x0, x1), (y0, y1) = p
    return b"".join(v.to_bytes(32, "big") for v in (x1, x0, y1, y0))


def decode_g2_uncompressed(data: bytes, what: str = "G2 point", check_subgroup: bool = True) -> G2Affine:
    if len(data) != G2_UNCOMPRESSED:
        raise MalformedArtifact(f"{what}: expected {G2_UNCOMPRESSED} bytes, got {len(data)}")
    if not any(data):
        return None
    x1, x0, y1, y0 = (int.from_bytes(data[i : i + 32], "big") for i in range(0, 128, 32))
    p = ((x0, x1), (y0, y1))
    if not g2_on_curve(p):
        raise MalformedArtifact(f"{what}: not a canonical point on the BN254 twist")
    if check_subgroup and not g2_in_subgroup(p):
        raise MalformedArtifact(f"{what}: not in the order-R subgroup of the twist")
    return p


# --- proofs --------------------------------------------------------------------------


def proof_to_bytes(proof: Proof) -> bytes:
    """128 bytes: A || B || C compressed."""
    return encode_g1_compressed(proof.a) + encode_g2_compressed(proof.b) + encode_g1_compressed(proof.c)


def proof_from_bytes(data: bytes, backend: Any = None) -> Proof:
    """Parse and fully validate a 128-byte proof (raises MalformedArtifact)."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) != PROOF_BYTES:
        size = len(data) if isinstance(data, (bytes, bytearray, memoryview)) else type(data).__name__
        raise MalformedArtifact(f"proof: expected {PROOF_BYTES} bytes, got {size}")
    data = bytes(data)
    a = decode_g1_compressed(data[:32], "proof.A")
    b = decode_g2_compressed(data[32:96], "proof.B", backend)
    c = decode_g1_compressed(data[96:], "proof.C")
    return Proof(a=a, b=b, c=c)


# --- verifying keys -----------------------------------------------------------------


def vk_to_bytes(vk: VerifyingKey) -> bytes:
    parts = [
        VK_MAGIC,
        bytes([VK_VERSION]),
        vk.n_public.to_bytes(4, "big"),
        encode_g1_compressed(vk.alpha_g1),
        encode_g2_compressed(vk.beta_g2),
        encode_g2_compressed(vk.gamma_g2),
        encode_g2_compressed(vk.delta_g2),
    ]
    parts.extend(encode_g1_compressed(p) for p in vk.ic)
    return b"".join(parts)


def vk_from_bytes(data: bytes, backend: Any = None) -> VerifyingKey:
    data = bytes(data)
    head = len(VK_MAGIC) + 1 + 4
    if len(data) < head or data[: len(VK_MAGIC)] != VK_MAGIC:
        raise MalformedArtifact("verifying key: missing FPVK header")
    if data[4] != VK_VERSION:
        raise MalformedArtifact(f"verifying key: unsupported version {data[4]}")
    n_public = int.from_bytes(data[5:9], "big")
    expected = head + G1_COMPRESSED + 3 * G2_COMPRESSED + (n_public + 1) * G1_COMPRESSED
    if len(data) != expected:
        raise MalformedArtifact(f"verifying key: {len(data)} bytes, expected {expected} for {n_public} public inputs")
    at = head
    alpha = decode_g1_compressed(data[at : at + 32], "vk.alpha_g1")
    at += 32
    g2s = []
    for name in ("beta_g2", "gamma_g2", "delta_g2"):
        g2s.append(decode_g2_compressed(data[at : at + 64], f"vk.{name}", backend))
        at += 64
    ic = []
    for i in range(n_public + 1):
        ic.append(decode_g1_compressed(data[at : at + 32], f"vk.ic[{i}]"))
        at += 32
    return VerifyingKey(alpha_g1=alpha, beta_g2=g2s[0], gamma_g2=g2s[1], delta_g2=g2s[2], ic=tuple(ic))


def vk_digest(vk: VerifyingKey) -> str:
    """Hex SHA-256 of the canonical encoding `vk_to_bytes(vk)`."""
    return hashlib.sha256(vk_to_bytes(vk)).hexdigest()


def _g1_json(p: G1Affine) -> list[str] | None:
    return None if p is None else [str(p[0]), str(p[1])]


def _g2_json(p: G2Affine) -> list[list[str]] | None:
    return None if p is None else [[str(p[0][0]), str(p[0][1])], [str(p[1][0]), str(p[1][1])]]


def _int_field(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise MalformedArtifact(f"{what}: expected a decimal string")
    try:
        v = int(value)
    except ValueError as exc:
        raise MalformedArtifact(f"{what}: {value!r} is not a decimal integer") from exc
    if not 0 <= v < Q:
        raise MalformedArtifact(f"{what}: coordinate out of range [0, Q)")
    return v


def g1_from_json(value: Any, what: str) -> G1Affine:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise MalformedArtifact(f"{what}: expected [x, y]")
    p = (_int_field(value[0], f"{what}.x"), _int_field(value[1], f"{what}.y"))
    if not g1_on_curve(p):
        raise MalformedArtifact(f"{what}: not on the BN254 G1 curve")
    return p


def g2_from_json(value: Any, what: str, backend: Any = None) -> G2Affine:
    if value is None:
        return None
    try:
        (x0, x1), (y0, y1) = value
    except (TypeError, ValueError) as exc:
        raise MalformedArtifact(f"{what}: expected [[x0, x1], [y0, y1]]") from exc
    p = (
        (_int_field(x0, f"{what}.x0"), _int_field(x1, f"{what}.x1")),
        (_int_field(y0, f"{what}.y0"), _int_field(y1, f"{what}.y1")),
    )
    if not _g2_valid(p, backend):
        raise MalformedArtifact(f"{what}: not in the order-R subgroup of the BN254 twist")
    return p


def g1_to_json(p: G1Affine) -> list[str] | None:
    return _g1_json(p)


def g2_to_json(p: G2Affine) -> list[list[str]] | None:
    return _g2_json(p)


def vk_to_dict(vk: VerifyingKey) -> dict[str, Any]:
    """JSON-ready form: affine coordinates as decimal strings, infinity as null,
    G2 coordinates as [[x.c0, x.c1], [y.c0, y.c1]]."""
    return {
        "protocol": "groth16",
        "curve": "bn254",
        "n_public": vk.n_public,
        "alpha_g1": _g1_json(vk.alpha_g1),
        "beta_g2": _g2_json(vk.beta_g2),
        "gamma_g2": _g2_json(vk.gamma_g2),
        "delta_g2": _g2_json(vk.delta_g2),
        "ic": [_g1_json(p) for p in vk.ic],
        "digest": vk_digest(vk),
    }


def vk_from_dict(data: Mapping[str, Any], backend: Any = None) -> VerifyingKey:
    """Inverse of vk_to_dict; validates every point and, if present, the digest."""
    if not isinstance(data, Mapping):
        raise MalformedArtifact("verifying key: expected a JSON object")
    if data.get("protocol") != "groth16" or data.get("curve") != "bn254":
        raise MalformedArtifact("verifying key: protocol must be groth16 and curve bn254")
    try:
        ic_raw = list(data["ic"])
        vk = VerifyingKey(
            alpha_g1=g1_from_json(data["alpha_g1"], "vk.alpha_g1"),
            beta_g2=g2_from_json(data["beta_g2"], "vk.beta_g2", backend),
            gamma_g2=g2_from_json(data["gamma_g2"], "vk.gamma_g2", backend),
            delta_g2=g2_from_json(data["delta_g2"], "vk.delta_g2", backend),
            ic=tuple(g1_from_json(p, f"vk.ic[{i}]") for i, p in enumerate(ic_raw)),
        )
    except KeyError as exc:
        raise MalformedArtifact(f"verifying key: missing field {exc.args[0]!r}") from exc
    except TypeError as exc:
        raise MalformedArtifact(f"verifying key: malformed field ({exc})") from exc
    if not vk.ic:
        raise MalformedArtifact("verifying key: ic must hold at least one point")
    if "n_public" in data and data["n_public"] != vk.n_public:
        raise MalformedArtifact(f"verifying key: n_public {data['n_public']} but {len(vk.ic)} ic points")
    if "digest" in data and data["digest"] != vk_digest(vk):
        raise MalformedArtifact("verifying key: digest does not match its contents")
    return vk


def proof_to_dict(proof: Proof) -> dict[str, Any]:
    return {"a": _g1_json(proof.a), "b": _g2_json(proof.b), "c": _g1_json(proof.c), "hex": proof_to_bytes(proof).hex()}


def proof_from_dict(data: Mapping[str, Any], backend: Any = None) -> Proof:
    if not isinstance(data, Mapping):
        raise MalformedArtifact("proof: expected a JSON object")
    if "hex" in data:
        try:
            raw = bytes.fromhex(data["hex"])
        except (TypeError, ValueError) as exc:
            raise MalformedArtifact("proof: 'hex' is not hexadecimal") from exc
        proof = proof_from_bytes(raw, backend)
        for name in ("a", "b", "c"):
            if name in data:
                decoded = g1_from_json(data[name], f"proof.{name}") if name != "b" else g2_from_json(data[name], "proof.b", backend)
                if decoded != getattr(proof, name):
                    raise MalformedArtifact(f"proof: field {name!r} disagrees with 'hex'")
        return proof
    try:
        return Proof(
            a=g1_from_json(data["a"], "proof.a"),
            b=g2_from_json(data["b"], "proof.b", backend),
            c=g1_from_json(data["c"], "proof.c"),
        )
    except KeyError as exc:
        raise MalformedArtifact(f"proof: missing field {exc.args[0]!r}") from exc
