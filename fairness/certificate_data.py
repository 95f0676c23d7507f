"""The plaintext fairness certificate as data: its parts (covers per region and row, slices, the
attainment of E, a flip) and their versioned JSON form (`to_json` / `from_json`, `FORMAT`, `VERSION`).

What a certificate states, and how `fairness.certificate.certify` proves it, is told in
`fairness.certificate`; `fairness.checker.check_certificate` verifies one exactly. A malformed JSON form
raises `CertificationError` naming the defect.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from fairness.covers import CoverKind
from fairness.errors import CertificationError
from fairness.farkas import FarkasCertificate
from fairness.fixed_point import IntVector
from fairness.geocert import DECISION, NEURON
from fairness.regions import RationalPoint

FORMAT = "fairproof.fairness-certificate"
VERSION = 1
DEFAULT_EPS_BITS = 16

DISTANCE = CoverKind.DISTANCE
NEIGHBOR = CoverKind.NEIGHBOR
EMPTY_FACET = CoverKind.EMPTY_FACET
FAR_FACET = CoverKind.FAR_FACET
FAR_REGION = CoverKind.FAR_REGION
FAR_CLASS = CoverKind.FAR_CLASS
NO_CLASS = CoverKind.NO_CLASS
COVER_KINDS = (DISTANCE, NEIGHBOR, EMPTY_FACET, FAR_FACET, FAR_REGION, FAR_CLASS, NO_CLASS)
CERTIFICATE_KINDS = (EMPTY_FACET, FAR_FACET, FAR_REGION, FAR_CLASS, NO_CLASS)  # covers that carry multipliers
SEPARATION_KINDS = (FAR_FACET, FAR_REGION, FAR_CLASS)  # covers whose multipliers include the box

# How eps is made maximal (`Attainment.kind`): the published cap, a DISTANCE
# row at projection distance < (E+1)/2^t (the fast radius), or a point of
# another class closer than (E+1)/2^t (the exact radius).
CAP = "cap"
COUNTEREXAMPLE = "counterexample"
# Counterexample denominators are powers of two up to 2^COUNTEREXAMPLE_BITS
# (the exact statement's shape allows that many bits).
COUNTEREXAMPLE_BITS = 48
ATTAINMENT_KINDS = (CAP, NEURON, DECISION, COUNTEREXAMPLE)

CERTIFIED = "certified"
FLIP = "flip"


@dataclass(frozen=True)
class Cover:
    kind: str
    farkas: FarkasCertificate | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind}
        if self.farkas is not None:
            out["farkas"] = self.farkas.to_json()
        return out

    @classmethod
    def from_json(cls, data: Any) -> "Cover":
        _expect(isinstance(data, dict) and data.get("kind") in COVER_KINDS, f"bad cover {data!r}")
        farkas = data.get("farkas")
        kind = data["kind"]
        needs = kind in CERTIFICATE_KINDS
        _expect((farkas is not None) == needs, f"cover {kind!r}: Farkas certificate {'missing' if needs else 'unexpected'}")
        cert = _farkas_from_json(farkas) if farkas is not None else None
        _expect(cert is None or (cert.box is not None) == (kind in SEPARATION_KINDS),
                f"cover {kind!r}: box multipliers {'missing' if kind in SEPARATION_KINDS else 'unexpected'}")
        return cls(kind, cert)


@dataclass(frozen=True)
class RegionCover:
    """Covers of one region: one per hidden neuron (flat order), one per class
    (None at the decision's own index)."""

    code: str
    neurons: tuple[Cover, ...]
    classes: tuple[Cover | None, ...]

    def to_json(self) -> dict:
        return {"code": self.code, "neurons": [c.to_json() for c in self.neurons],
                "classes": [None if c is None else c.to_json() for c in self.classes]}

    @classmethod
    def from_json(cls, data: Any) -> "RegionCover":
        _expect(isinstance(data, dict) and isinstance(data.get("code"), str), "region cover needs a code string")
        _expect(isinstance(data.get("neurons"), list) and isinstance(data.get("classes"), list),
                "region cover needs neuron and class lists")
        return cls(data["code"], tuple(Cover.from_json(c) for c in data["neurons"]),
                   tuple(None if c is None else Cover.from_json(c) for c in data["classes"]))


@dataclass(frozen=True)
class SliceCertificate:
    slice_values: IntVector
    regions: tuple[RegionCover, ...]
    traversal_steps: int

    def to_json(self) -> dict:
        return {"slice_values": list(self.slice_values), "regions": [r.to_json() for r in self.regions],
                "traversal_steps": self.traversal_steps}

    @classmethod
    def from_json(cls, data: Any) -> "SliceCertificate":
        _expect(isinstance(data, dict), "slice entry must be an object")
        return cls(_ints(data.get("slice_values"), "slice_values"),
                   tuple(RegionCover.from_json(r) for r in _list(data.get("regions"), "regions")),
                   _int(data.get("traversal_steps"), "traversal_steps"))


@dataclass(frozen=True)
class Attainment:
    """What makes E maximal: kind 'cap'; 'neuron' / 'decision' with the
    slice index, region code and row (neuron index or class j), where decision
    rows carry the boundary witness: a rational point on z_y = z_j inside the
    region and the box; or 'counterexample' with the slice index, the class j
    in `row` and in `witness` a rational point of that slice (free
    coordinates) at which class j at least ties y, closer than (E+1)/2^t."""

    kind: str
    slice_index: int | None = None
    code: str | None = None
    row: int | None = None
    witness: RationalPoint | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "slice_index": self.slice_index, "code": self.code, "row": self.row,
                "witness": None if self.witness is None else self.witness.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> "Attainment":
        _expect(isinstance(data, dict) and data.get("kind") in ATTAINMENT_KINDS, "bad attainment")
        if data["kind"] == CAP:
            return cls(CAP)
        witness = data.get("witness")
        try:
            w = None if witness is None else RationalPoint.from_json(witness)
        except (KeyError, TypeError, ValueError) as exc:
            raise CertificationError(f"malformed boundary witness: {exc}") from None
        code = data.get("code")
        if data["kind"] == COUNTEREXAMPLE:
            _expect(code is None and w is not None, "a counterexample names no region and needs its point")
            return cls(COUNTEREXAMPLE, _int(data.get("slice_index"), "slice_index"), None,
                       _int(data.get("row"), "row"), w)
        _expect(isinstance(code, str), "attainment needs a region code")
        return cls(data["kind"], _int(data.get("slice_index"), "slice_index"), code,
                   _int(data.get("row"), "row"), w)


@dataclass(frozen=True)
class Flip:
    """The first slice whose forward pass at x* does not strictly decide y."""

    slice_index: int
    slice_values: IntVector
    tie: bool

    def to_json(self) -> dict:
        return {"slice_index": self.slice_index, "slice_values": list(self.slice_values), "tie": self.tie}

    @classmethod
    def from_json(cls, data: Any) -> "Flip":
        _expect(isinstance(data, dict) and isinstance(data.get("tie"), bool), "bad flip entry")
        return cls(_int(data.get("slice_index"), "slice_index"), _ints(data.get("slice_values"), "slice_values"),
                   data["tie"])


@dataclass(frozen=True)
class Certificate:
    query: IntVector
    decision: int
    eps: int
    eps_bits: int
    status: str
    slices: tuple[SliceCertificate, ...] = ()
    attainment: Attainment | None = None
    flip: Flip | None = None
    min_distance_sq: Fraction | None = None  # information only: exact squared real distance of the attaining row
    version: int = VERSION

    @property
    def eps_value(self) -> Fraction:
        return Fraction(self.eps, 1 << self.eps_bits)

    @property
    def radius_is_exact(self) -> bool:
        """eps is floor(true radius * 2^t) / 2^t, not only a lower bound: a
        flip (the true radius is 0) or a proved counterexample."""
        return self.status == FLIP or (self.attainment is not None and self.attainment.kind == COUNTEREXAMPLE)

    @property
    def regions_per_slice(self) -> tuple[int, ...]:
        return tuple(len(s.regions) for s in self.slices)

    @property
    def farkas_count(self) -> int:
        return sum(1 for s in self.slices for r in s.regions
                   for c in (*r.neurons, *r.classes) if c is not None and c.farkas is not None)

    @property
    def traversal_steps(self) -> tuple[int, ...]:
        return tuple(s.traversal_steps for s in self.slices)

    def to_json(self) -> dict:
        return {
            "format": FORMAT, "version": self.version,
            "query": list(self.query), "decision": self.decision, "status": self.status,
            "eps": {"E": self.eps, "t": self.eps_bits,
                    "min_distance_sq": None if self.min_distance_sq is None
                    else [self.min_distance_sq.numerator, self.min_distance_sq.denominator]},
            "flip": None if self.flip is None else self.flip.to_json(),
            "attainment": None if self.attainment is None else self.attainment.to_json(),
            "slices": [s.to_json() for s in self.slices],
            "leakage": {"regions_per_slice": list(self.regions_per_slice), "farkas_certificates": self.farkas_count,
                        "traversal_steps": list(self.traversal_steps)},
        }

    @classmethod
    def from_json(cls, data: Any) -> "Certificate":
        _expect(isinstance(data, dict) and data.get("format") == FORMAT, "not a fairness certificate")
        _expect(data.get("version") == VERSION, f"unsupported certificate version {data.get('version')!r}")
        eps = data.get("eps")
        _expect(isinstance(eps, dict), "missing eps")
        status = data.get("status")
        _expect(status in (CERTIFIED, FLIP), f"bad status {status!r}")
        mds = eps.get("min_distance_sq")
        if mds is not None:
            _expect(isinstance(mds, list) and len(mds) == 2 and all(type(v) is int for v in mds) and mds[1] > 0,
                    "bad min_distance_sq")
            mds = Fraction(mds[0], mds[1])
        cert = cls(
            query=_ints(data.get("query"), "query"), decision=_int(data.get("decision"), "decision"),
            eps=_int(eps.get("E"), "eps.E"), eps_bits=_int(eps.get("t"), "eps.t"), status=status,
            slices=tuple(SliceCertificate.from_json(s) for s in _list(data.get("slices"), "slices")),
            attainment=None if data.get("attainment") is None else Attainment.from_json(data["attainment"]),
            flip=None if data.get("flip") is None else Flip.from_json(data["flip"]),
            min_distance_sq=mds,
        )
        leak = data.get("leakage")
        if leak is not None:
            _expect(leak == {"regions_per_slice": list(cert.regions_per_slice),
                             "farkas_certificates": cert.farkas_count,
                             "traversal_steps": list(cert.traversal_steps)},
                    "leakage counts do not match the certificate body")
        return cert


# ---------------------------------------------------------------- JSON helpers

def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise CertificationError(f"malformed certificate: {message}")


def _int(v: Any, name: str) -> int:
    _expect(type(v) is int, f"{name} must be an integer")
    return v


def _list(v: Any, name: str) -> list:
    _expect(isinstance(v, list), f"{name} must be a list")
    return v


def _ints(v: Any, name: str) -> IntVector:
    _expect(isinstance(v, list) and all(type(x) is int for x in v), f"{name} must be a list of integers")
    return tuple(v)


def _farkas_from_json(data: Any) -> FarkasCertificate:
    try:
        return FarkasCertificate.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CertificationError(f"malformed certificate: bad Farkas certificate ({exc})") from None


# ---------------------------------------------------------------- decision

def strict_decision(logits: Sequence[int]) -> int | None:
    """The index of the unique largest logit, or None on a tie."""
    top = max(logits)
    winners = [j for j, v in enumerate(logits) if v == top]
    return winners[0] if len(winners) == 1 else None
