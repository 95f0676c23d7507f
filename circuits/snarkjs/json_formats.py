"""snarkjs's JSON artifacts: verification_key.json, proof.json, public.json.

Numbers are canonical decimal strings. Points are written projectively:
G1 [x, y, z], G2 [[x0, x1], [y0, y1], [z0, z1]] with Fq2 elements as
[c0, c1] = c0 + c1*u. snarkjs writes z = 1 (affine) and the point at infinity
as [0, 1, 0]; reading accepts exactly those spellings (two spellings of one
point would let two different documents verify alike). Every point is checked
to be on the curve (and, for G2, in the order-r subgroup), every number to be
a canonical decimal below its modulus, never reduced.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..curve import g1_on_curve, g2_in_subgroup, g2_on_curve
from ..errors import MalformedArtifact
from ..field import Q, R, NonCanonicalNumber, parse_canonical_decimal
from ..groth16.types import G1Affine, G2Affine, Proof, VerifyingKey

PROTOCOL = "groth16"
CURVE = "bn128"
_CURVE_ALIASES = {"bn128", "bn254", "alt_bn128"}


# --- numbers ---------------------------------------------------------------

def _number(value: Any, where: str, bound: int) -> int:
    """A canonical decimal string below `bound` (snarkjs writes every number so); nothing else."""
    try:
        return parse_canonical_decimal(value, bound, where)
    except NonCanonicalNumber as exc:
        raise MalformedArtifact(str(exc)) from None


def _list(value: Any, length: int, where: str) -> list:
    if not isinstance(value, list) or len(value) != length:
        raise MalformedArtifact(f"{where}: expected a list of {length} entries, found {value!r:.80}")
    return value


# --- points ------------------------------------------------------------------

def g1_to_json(p: G1Affine) -> list[str]:
    if p is None:
        return ["0", "1", "0"]
    return [str(p[0]), str(p[1]), "1"]


def g2_to_json(p: G2Affine) -> list[list[str]]:
    if p is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = p
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def g1_from_json(value: Any, where: str) -> G1Affine:
    if isinstance(value, list) and len(value) == 2:
        value = [*value, "1"]
    raw = _list(value, 3, where)
    x, y, z = (_number(c, f"{where}[{i}]", Q) for i, c in enumerate(raw))
    if z == 0:
        if (x, y) != (0, 1):
            raise MalformedArtifact(f"{where}: the point at infinity is written [0, 1, 0]")
        return None
    if z != 1:  # one spelling per point: snarkjs writes affine coordinates
        raise MalformedArtifact(f"{where}: z must be 1 (affine coordinates), found {z}")
    point = (x, y)
    if not g1_on_curve(point):
        raise MalformedArtifact(f"{where}: point is not on the BN254 G1 curve")
    return point


def _f2_from_json(value: Any, where: str) -> tuple[int, int]:
    raw = _list(value, 2, where)
    return (_number(raw[0], f"{where}[0]", Q), _number(raw[1], f"{where}[1]", Q))


def g2_from_json(value: Any, where: str, check_subgroup: bool = True, backend: Any = None) -> G2Affine:
    if isinstance(value, list) and len(value) == 2:
        value = [*value, ["1", "0"]]
    raw = _list(value, 3, where)
    x, y, z = (_f2_from_json(c, f"{where}[{i}]") for i, c in enumerate(raw))
    if z == (0, 0):
        if (x, y) != ((0, 0), (1, 0)):
            raise MalformedArtifact(f"{where}: the point at infinity is written [[0, 0], [1, 0], [0, 0]]")
        return None
    if z != (1, 0):  # one spelling per point: snarkjs writes affine coordinates
        raise MalformedArtifact(f"{where}: z must be [1, 0] (affine coordinates)")
    point = (x, y)
    if not g2_on_curve(point):
        raise MalformedArtifact(f"{where}: point is not on the BN254 G2 twist")
    if check_subgroup and not g2_in_subgroup(point, backend):
        raise MalformedArtifact(f"{where}: point is not in the order-r subgroup of G2")
    return point


# --- documents -----------------------------------------------------------------

def verifying_key_to_json(vk: VerifyingKey) -> dict[str, Any]:
    """The dictionary snarkjs's `zkey export verificationkey` writes.

    `vk_alphabeta_12` is omitted: snarkjs's verifier and its Solidity export do
    not read it."""
    return {
        "protocol": PROTOCOL,
        "curve": CURVE,
        "nPublic": vk.n_public,
        "vk_alpha_1": g1_to_json(vk.alpha_g1),
        "vk_beta_2": g2_to_json(vk.beta_g2),
        "vk_gamma_2": g2_to_json(vk.gamma_g2),
        "vk_delta_2": g2_to_json(vk.delta_g2),
        "IC": [g1_to_json(p) for p in vk.ic],
    }


def _check_header(doc: Any, what: str) -> dict:
    if not isinstance(doc, dict):
        raise MalformedArtifact(f"{what}: expected a JSON object")
    protocol = doc.get("protocol", PROTOCOL)
    if protocol != PROTOCOL:
        raise MalformedArtifact(f"{what}: protocol is {protocol!r}, only 'groth16' is supported")
    curve = doc.get("curve", CURVE)
    if curve not in _CURVE_ALIASES:
        raise MalformedArtifact(f"{what}: curve is {curve!r}, only bn128 (BN254) is supported")
    return doc


def _field(doc: dict, key: str, what: str) -> Any:
    if key not in doc:
        raise MalformedArtifact(f"{what}: missing field {key!r}")
    return doc[key]


def verifying_key_from_json(doc: Any, what: str = "verification key", backend: Any = None) -> VerifyingKey:
    """Parse and validate; `backend` (optional) makes the G2 subgroup checks native."""
    doc = _check_header(doc, what)
    ic_raw = _field(doc, "IC", what)
    if not isinstance(ic_raw, list) or not ic_raw:
        raise MalformedArtifact(f"{what}: IC must be a non-empty list")
    ic = tuple(g1_from_json(p, f"{what}: IC[{i}]") for i, p in enumerate(ic_raw))
    if "nPublic" in doc and doc["nPublic"] != len(ic) - 1:
        raise MalformedArtifact(f"{what}: nPublic is {doc['nPublic']!r} but IC has {len(ic)} points (expected nPublic + 1)")
    return VerifyingKey(
        alpha_g1=g1_from_json(_field(doc, "vk_alpha_1", what), f"{what}: vk_alpha_1"),
        beta_g2=g2_from_json(_field(doc, "vk_beta_2", what), f"{what}: vk_beta_2", backend=backend),
        gamma_g2=g2_from_json(_field(doc, "vk_gamma_2", what), f"{what}: vk_gamma_2", backend=backend),
        delta_g2=g2_from_json(_field(doc, "vk_delta_2", what), f"{what}: vk_delta_2", backend=backend),
        ic=ic,
    )


def proof_to_json(proof: Proof) -> dict[str, Any]:
    return {
        "pi_a": g1_to_json(proof.a),
        "pi_b": g2_to_json(proof.b),
        "pi_c": g1_to_json(proof.c),
        "protocol": PROTOCOL,
        "curve": CURVE,
    }


def proof_from_json(doc: Any, what: str = "proof", backend: Any = None, check_subgroup: bool = True) -> Proof:
    """check_subgroup=False leaves B's order-r subgroup check (the one costly check) to a
    verifier that makes it anyway (groth16.check_prepared_proof); B is on the twist."""
    doc = _check_header(doc, what)
    return Proof(
        a=g1_from_json(_field(doc, "pi_a", what), f"{what}: pi_a"),
        b=g2_from_json(_field(doc, "pi_b", what), f"{what}: pi_b", check_subgroup, backend),
        c=g1_from_json(_field(doc, "pi_c", what), f"{what}: pi_c"),
    )


def public_to_json(values: Sequence[int]) -> list[str]:
    return [str(v % R) for v in values]


def public_from_json(doc: Any, what: str = "public inputs") -> list[int]:
    if not isinstance(doc, list):
        raise MalformedArtifact(f"{what}: expected a JSON list of decimal strings")
    return [_number(v, f"{what}[{i}]", R) for i, v in enumerate(doc)]


# --- files -----------------------------------------------------------------------

def strict_loads(text: str, max_number_chars: int = 100) -> Any:
    """json.loads refusing what has two readings: duplicate keys, NaN and Infinity, and numbers longer
    than `max_number_chars` (nothing this format holds needs more; int() of a huge one is slow).
    Raises MalformedArtifact for those, ValueError for text that is not JSON."""
    def bounded(kind: type):
        def parse(literal: str) -> Any:
            if len(literal) > max_number_chars:
                raise MalformedArtifact(f"a number of {len(literal)} characters is longer than any field allows")
            return kind(literal)
        return parse

    return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant,
                      parse_int=bounded(int), parse_float=bounded(float))


def load_json(path: str | Path, what: str) -> Any:
    path = Path(path)
    if not path.is_file():
        raise MalformedArtifact(f"{what}: {path} does not exist or is not a file")
    try:
        return strict_loads(path.read_text(encoding="utf-8"))
    except MalformedArtifact as exc:
        raise MalformedArtifact(f"{what}: {path}: {exc}") from None
    except OSError as exc:
        raise MalformedArtifact(f"{what}: cannot read {path} ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError
        raise MalformedArtifact(f"{what}: {path} is not valid JSON ({exc})") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise MalformedArtifact(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise MalformedArtifact(f"{name} is not a JSON number")


def dump_json(path: str | Path, doc: Any) -> None:
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def read_verifying_key(path: str | Path) -> VerifyingKey:
    return verifying_key_from_json(load_json(path, "verification key"), f"verification key {path}")


def write_verifying_key(path: str | Path, vk: VerifyingKey) -> None:
    dump_json(path, verifying_key_to_json(vk))


def read_proof(path: str | Path) -> Proof:
    return proof_from_json(load_json(path, "proof"), f"proof {path}")


def write_proof(path: str | Path, proof: Proof) -> None:
    dump_json(path, proof_to_json(proof))


def read_public(path: str | Path) -> list[int]:
    return public_from_json(load_json(path, "public inputs"), f"public inputs {path}")


def write_public(path: str | Path, values: Sequence[int]) -> None:
    dump_json(path, public_to_json(values))
