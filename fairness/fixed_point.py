"""The exact fixed-point model: the integer network that is committed and certified.

Inputs and weights are integers at scale 2^s. Layer l (0-based) multiplies an
input at scale 2^(s(l+1)) by weights at 2^s, so its bias is stored at
2^(s(l+2)) and its output lives at 2^(s(l+2)). ReLU commutes with positive
scaling, so no truncation is ever needed: the integer forward pass is the
model, and its decisions are exactly what the certificate speaks of.

All integers are Python ints (numpy object arrays where arrays help), so
nothing can overflow outside the circuit; inside the circuit the bit widths
derived in `fairness.bitwidth` keep every value far from the field modulus.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fairness.codes import ActivationCode

IntVector = tuple[int, ...]
IntMatrix = tuple[IntVector, ...]


@dataclass(frozen=True)
class QuantisedMLP:
    """A fully connected ReLU network with integer parameters.

    weights[l] has shape (out_l, in_l) and value round(W_l * 2^s);
    biases[l] has value round(b_l * 2^(s(l+2))). The last layer is linear
    (logits); every other layer is followed by ReLU.
    """

    scale_bits: int
    weights: tuple[IntMatrix, ...]
    biases: tuple[IntVector, ...]

    def __post_init__(self) -> None:
        if self.scale_bits < 0:
            raise ValueError("scale_bits must be non-negative")
        if len(self.weights) != len(self.biases) or not self.weights:
            raise ValueError("need one bias vector per weight matrix, and at least one layer")
        for l, (w, b) in enumerate(zip(self.weights, self.biases)):
            if any(len(row) != len(w[0]) for row in w) or len(b) != len(w):
                raise ValueError(f"layer {l}: ragged weights or bias of the wrong length")
            if l and len(w[0]) != len(self.weights[l - 1]):
                raise ValueError(f"layer {l}: takes {len(w[0])} inputs, previous layer gives {len(self.weights[l - 1])}")
            if not all(isinstance(v, int) for row in w for v in row) or not all(isinstance(v, int) for v in b):
                raise TypeError(f"layer {l}: parameters must be Python ints")

    @property
    def n_inputs(self) -> int:
        return len(self.weights[0][0])

    @property
    def hidden_sizes(self) -> tuple[int, ...]:
        return tuple(len(w) for w in self.weights[:-1])

    @property
    def n_classes(self) -> int:
        return len(self.weights[-1])

    @property
    def n_layers(self) -> int:
        return len(self.weights)

    def output_scale_bits(self, layer: int) -> int:
        """Scale exponent of layer `layer`'s pre-activations (and of its bias)."""
        return self.scale_bits * (layer + 2)

    @property
    def logit_scale_bits(self) -> int:
        return self.output_scale_bits(self.n_layers - 1)

    def pre_activations(self, x: Sequence[int]) -> list[IntVector]:
        """Pre-activation vector of every layer, the last being the logits."""
        if len(x) != self.n_inputs:
            raise ValueError(f"expected {self.n_inputs} input features, got {len(x)}")
        h: Sequence[int] = [int(v) for v in x]
        out: list[IntVector] = []
        for l, (w, b) in enumerate(zip(self.weights, self.biases)):
            z = tuple(sum(wi * hi for wi, hi in zip(row, h)) + bi for row, bi in zip(w, b))
            out.append(z)
            h = [v if v > 0 else 0 for v in z]
        return out

    def logits(self, x: Sequence[int]) -> IntVector:
        return self.pre_activations(x)[-1]

    def scaled_logits(self, numerators: Sequence[int], denominator: int) -> IntVector:
        """denominator * logits at the rational input numerators / denominator, exactly.

        ReLU is positively homogeneous, so the forward pass on the numerators
        with every bias multiplied by the denominator (> 0) is the forward pass
        at the rational point scaled by the denominator: no division needed."""
        if type(denominator) is not int or denominator <= 0:
            raise ValueError("the denominator must be a positive integer")
        if len(numerators) != self.n_inputs:
            raise ValueError(f"expected {self.n_inputs} input features, got {len(numerators)}")
        h: Sequence[int] = [int(v) for v in numerators]
        z: IntVector = ()
        for w, b in zip(self.weights, self.biases):
            z = tuple(sum(wi * hi for wi, hi in zip(row, h)) + bi * denominator for row, bi in zip(w, b))
            h = [v if v > 0 else 0 for v in z]
        return z

    def activation_code(self, x: Sequence[int]) -> ActivationCode:
        """On/off bit of every hidden ReLU (on means pre-activation > 0)."""
        return ActivationCode(tuple(tuple(v > 0 for v in z) for z in self.pre_activations(x)[:-1]))

    def decision(self, x: Sequence[int]) -> int:
        """Index of the largest logit (the lowest index on a tie; see `is_tie`)."""
        z = self.logits(x)
        return max(range(len(z)), key=lambda j: (z[j], -j))

    def is_tie(self, x: Sequence[int]) -> bool:
        z = self.logits(x)
        top = max(z)
        return sum(1 for v in z if v == top) > 1

    def as_arrays(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Object arrays of Python ints, for exact vectorised arithmetic."""
        ws = [np.array([list(r) for r in w], dtype=object) for w in self.weights]
        bs = [np.array(list(b), dtype=object) for b in self.biases]
        return ws, bs


@dataclass(frozen=True)
class SensitiveDomain:
    """A sensitive attribute: the input columns it occupies and the integer point (at scale 2^s) each of
    its values puts there, with readable labels.

    An attribute held as one code is one column and 1-tuples; a one-hot attribute is one column per
    kept value and unit points (the dropped value, if any, all zeros). The statement only ever sees
    the points, so both are the same thing to it."""

    name: str
    columns: tuple[int, ...]
    points: tuple[IntVector, ...]
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "points", tuple(tuple(p) for p in self.points))
        object.__setattr__(self, "labels", tuple(self.labels))
        if not self.columns or len(set(self.columns)) != len(self.columns):
            raise ValueError(f"sensitive feature {self.name!r}: needs distinct input columns (at least one)")
        if not self.points or len(self.points) != len(self.labels):
            raise ValueError(f"sensitive feature {self.name!r}: need one label per domain value")
        for label, point in zip(self.labels, self.points):
            if len(point) != len(self.columns) or not all(type(v) is int for v in point):
                raise ValueError(f"sensitive feature {self.name!r}: value {label!r} must be "
                                 f"{len(self.columns)} integer(s), one per column, not {point!r}")
        if len(set(self.points)) != len(self.points):
            raise ValueError(f"sensitive feature {self.name!r}: repeated domain value")

    @classmethod
    def scalar(cls, name: str, column: int, values: Sequence[int], labels: Sequence[str]) -> "SensitiveDomain":
        """An attribute held in one input column as one integer per value."""
        return cls(name, (column,), tuple((v,) for v in values), tuple(labels))

    @property
    def width(self) -> int:
        return len(self.columns)

    @property
    def column(self) -> int:
        """The input column of a one-column attribute."""
        return self._single("column")[0]

    @property
    def values(self) -> IntVector:
        """The integer values of a one-column attribute."""
        self._single("values")
        return tuple(p[0] for p in self.points)

    def _single(self, what: str) -> tuple[int, ...]:
        if self.width != 1:
            raise ValueError(f"sensitive feature {self.name!r} spans {self.width} input columns "
                             f"{list(self.columns)}: it has no single {what}; use its columns and points")
        return self.columns

    def point_of(self, x: Sequence[int]) -> IntVector:
        """The attribute's columns of the input x."""
        return tuple(x[c] for c in self.columns)

    def label_of(self, point: Sequence[int]) -> str:
        """The readable label of one of the attribute's points."""
        return self.labels[self.points.index(tuple(point))]


@dataclass(frozen=True)
class FixedPointModel:
    """What the certificate is about: the integer network, its input domain box
    and its sensitive features, all at the same scale 2^s."""

    net: QuantisedMLP
    box_lower: IntVector
    box_upper: IntVector
    sensitive: tuple[SensitiveDomain, ...]

    def __post_init__(self) -> None:
        n = self.net.n_inputs
        if len(self.box_lower) != n or len(self.box_upper) != n:
            raise ValueError("the domain box must have one bound per input feature")
        if any(lo > hi for lo, hi in zip(self.box_lower, self.box_upper)):
            raise ValueError("domain box has a lower bound above its upper bound")
        columns = self.sensitive_columns
        if len(set(columns)) != len(columns) or any(not 0 <= c < n for c in columns):
            raise ValueError("sensitive columns must be distinct input indices")
        for f in self.sensitive:
            for label, point in zip(f.labels, f.points):
                for c, v in zip(f.columns, point):
                    if not self.box_lower[c] <= v <= self.box_upper[c]:
                        raise ValueError(f"sensitive feature {f.name!r}: value {label!r} lies outside the box "
                                         f"at column {c}")

    @property
    def scale_bits(self) -> int:
        return self.net.scale_bits

    @property
    def sensitive_columns(self) -> tuple[int, ...]:
        """Every sensitive attribute's columns, attribute after attribute: the order of a slice's values."""
        return tuple(c for f in self.sensitive for c in f.columns)

    @property
    def sensitive_widths(self) -> tuple[int, ...]:
        """How many columns each sensitive attribute spans (a slice is their points concatenated)."""
        return tuple(f.width for f in self.sensitive)

    @property
    def free_columns(self) -> tuple[int, ...]:
        """The non-sensitive columns, in input order: the coordinates u of a slice."""
        s = set(self.sensitive_columns)
        return tuple(i for i in range(self.net.n_inputs) if i not in s)

    def slices(self) -> list[IntVector]:
        """Every combination of sensitive values, in lexicographic order of domain indices: each the
        concatenation of one point per attribute (one value per sensitive column)."""
        return [join_points(combo) for combo in itertools.product(*(f.points for f in self.sensitive))]

    def slice_points(self, slice_values: Sequence[int]) -> tuple[IntVector, ...]:
        """A slice (or any values of the sensitive columns) cut into one point per attribute."""
        return split_points(slice_values, self.sensitive_widths)

    def slice_labels(self, slice_values: Sequence[int]) -> tuple[str, ...]:
        """The readable label of each attribute's value in a slice."""
        return tuple(f.label_of(p) for f, p in zip(self.sensitive, self.slice_points(slice_values)))

    def query_slice(self, x: Sequence[int]) -> IntVector:
        """The values of x's sensitive columns (a slice when x is a valid query)."""
        return tuple(x[c] for c in self.sensitive_columns)

    def with_slice(self, x: Sequence[int], slice_values: Sequence[int]) -> IntVector:
        """x with its sensitive columns replaced by one slice's values."""
        out = list(x)
        for c, v in zip(self.sensitive_columns, slice_values):
            out[c] = v
        return tuple(out)

    def off_domain(self, x: Sequence[int]) -> SensitiveDomain | None:
        """The first sensitive attribute whose columns of x are none of its points (None: all are)."""
        return next((f for f in self.sensitive if f.point_of(x) not in f.points), None)

    def in_box(self, x: Sequence[int]) -> bool:
        return all(lo <= v <= hi for v, lo, hi in zip(x, self.box_lower, self.box_upper))


def join_points(points: Sequence[Sequence[int]]) -> IntVector:
    """One point per attribute -> the flat values of the sensitive columns."""
    return tuple(v for p in points for v in p)


def split_points(values: Sequence[int], widths: Sequence[int]) -> tuple[IntVector, ...]:
    """The flat values of the sensitive columns -> one point per attribute of the given widths."""
    out, at = [], 0
    for w in widths:
        out.append(tuple(values[at:at + w]))
        at += w
    if at != len(values):
        raise ValueError(f"{len(values)} sensitive values for attributes of widths {list(widths)}")
    return tuple(out)


def quantise_value(value: float, bits: int) -> int:
    """round(value * 2^bits) with halves rounded up, computed exactly from the float."""
    if not np.isfinite(value):
        raise ValueError(f"cannot quantise a non-finite value ({value})")
    from fractions import Fraction

    scaled = Fraction(float(value)) * (1 << bits)
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r >= scaled.denominator:
        q += 1
    return int(q)


def quantise_vector(values: Sequence[float], bits: int) -> IntVector:
    return tuple(quantise_value(float(v), bits) for v in values)


def quantise_mlp(weights: Sequence[np.ndarray], biases: Sequence[np.ndarray], scale_bits: int) -> QuantisedMLP:
    """Quantise a float network (weights[l] of shape (out, in)) at scale 2^scale_bits."""
    qw = tuple(tuple(quantise_vector(row, scale_bits) for row in np.asarray(w, dtype=float)) for w in weights)
    qb = tuple(quantise_vector(np.asarray(b, dtype=float), scale_bits * (l + 2)) for l, b in enumerate(biases))
    return QuantisedMLP(scale_bits=scale_bits, weights=qw, biases=qb)


# --------------------------------------------------------------------------- building from a float model

# Default input/weight scale: 2^16. For the paper's shapes ((4,2), (2,4), (8,2))
# every quantity of the statement stays far below the field's signed range at
# this scale; `fairness.bitwidth.check_no_wrap` proves it for a given model.
DEFAULT_SCALE_BITS = 16


def quantise_floor(value: float, bits: int) -> int:
    """floor(value * 2^bits), exactly."""
    from fractions import Fraction

    if not np.isfinite(value):
        raise ValueError(f"cannot quantise a non-finite value ({value})")
    scaled = Fraction(float(value)) * (1 << bits)
    return scaled.numerator // scaled.denominator


def quantise_ceil(value: float, bits: int) -> int:
    """ceil(value * 2^bits), exactly."""
    return -quantise_floor(-float(value), bits)


def to_fixed_point(artifact, scale_bits: int = DEFAULT_SCALE_BITS) -> FixedPointModel:
    """Quantise a float model artifact (`fairness.model.ModelArtifact`) at scale 2^scale_bits.

    Weights and biases as `quantise_mlp` (round half up); the domain box
    outward (floor of the lower, ceil of the upper bound), so every float input
    in the float box quantises into the integer box; every coordinate v of a
    sensitive value's point becomes v * 2^s exactly (they are integers).
    """
    if not isinstance(scale_bits, int) or scale_bits < 0:
        raise ValueError(f"scale_bits must be a non-negative int, got {scale_bits!r}")
    model = artifact.model
    net = quantise_mlp(model.weights, model.biases, scale_bits)
    lower = tuple(quantise_floor(v, scale_bits) for v in artifact.box_lower)
    upper = tuple(quantise_ceil(v, scale_bits) for v in artifact.box_upper)
    sensitive = tuple(
        SensitiveDomain(
            name=f.name,
            columns=tuple(f.columns),
            points=tuple(tuple(int(v) << scale_bits for v in p) for p in f.points),
            labels=tuple(f.labels),
        )
        for f in artifact.sensitive
    )
    return FixedPointModel(net=net, box_lower=lower, box_upper=upper, sensitive=sensitive)


def quantise_query(model: FixedPointModel, x: Sequence[float], *, check_box: bool = True) -> IntVector:
    """A float model input -> integers at the model's scale (round half up).

    With check_box (the default) a coordinate outside the integer domain box,
    or a sensitive attribute's columns not exactly one of its values' points, raises DataError.
    """
    from fairness.errors import DataError

    if len(x) != model.net.n_inputs:
        raise DataError(f"query has {len(x)} features, the model takes {model.net.n_inputs}")
    if not all(np.isfinite(float(v)) for v in x):
        raise DataError("query contains a non-finite value")
    q = quantise_vector([float(v) for v in x], model.scale_bits)
    if check_box:
        for i, (v, lo, hi) in enumerate(zip(q, model.box_lower, model.box_upper)):
            if not lo <= v <= hi:
                raise DataError(f"query feature {i} = {float(x[i])!r} lies outside the model's domain box "
                                f"[{lo / (1 << model.scale_bits)}, {hi / (1 << model.scale_bits)}]")
        f = model.off_domain(q)
        if f is not None:
            raise DataError(_off_domain_message(f, x))
    return q


def _off_domain_message(f: SensitiveDomain, x: Sequence[float]) -> str:
    """Why a query's sensitive attribute is refused, naming its columns (and values, when it has several)."""
    if f.width == 1:
        return f"sensitive feature {f.name!r} = {float(x[f.column])!r} is not a value of its domain"
    given = ", ".join(f"{float(x[c])!r}" for c in f.columns)
    return (f"sensitive feature {f.name!r} = ({given}) at column(s) {list(f.columns)} is not a value of its domain "
            f"({', '.join(f.labels)})")


def queries_in_box(model: FixedPointModel, rows: Sequence[Sequence[float]], n: int) -> list[IntVector]:
    """The first n rows that quantise to valid queries (rows outside the box are skipped)."""
    from fairness.errors import DataError

    out: list[IntVector] = []
    for row in rows:
        if len(out) == n:
            break
        try:
            out.append(quantise_query(model, row))
        except DataError:
            continue
    return out


def integer_logits(net: QuantisedMLP, X_int: np.ndarray) -> np.ndarray:
    """Exact integer logits of many inputs (rows of Python ints), as an object array."""
    ws, bs = net.as_arrays()
    h = np.asarray(X_int, dtype=object)
    for l, (w, b) in enumerate(zip(ws, bs)):
        h = h.dot(w.T) + b
        if l < len(ws) - 1:
            h = np.where(h > 0, h, 0)
    return h


@dataclass(frozen=True)
class AgreementReport:
    """How far the integer model is from the float model on a set of inputs.

    agreement_rate: fraction of inputs where the decisions (argmax, lowest
    index on ties) are equal; max_logit_error: max |float logit - integer
    logit / 2^(s(L+1))| in float units; n_ties: inputs where the integer
    logits tie; n_outside_box: quantised inputs outside the integer box.
    """

    scale_bits: int
    n: int
    n_agree: int
    max_logit_error: float
    n_ties: int
    n_outside_box: int

    @property
    def agreement_rate(self) -> float:
        return self.n_agree / self.n if self.n else float("nan")

    def to_dict(self) -> dict:
        return {"scale_bits": self.scale_bits, "n": self.n, "n_agree": self.n_agree,
                "agreement_rate": self.agreement_rate, "max_logit_error": self.max_logit_error,
                "n_ties": self.n_ties, "n_outside_box": self.n_outside_box}


def agreement_report(float_model, fixed_point_model: FixedPointModel | QuantisedMLP, X: np.ndarray) -> AgreementReport:
    """Compare decisions and logits of a float model (`FloatMLP`) and its integer model on rows X."""
    net = fixed_point_model.net if isinstance(fixed_point_model, FixedPointModel) else fixed_point_model
    X = np.asarray(X, dtype=np.float64)
    s = net.scale_bits
    X_int = np.array([list(quantise_vector(row, s)) for row in X], dtype=object).reshape(len(X), net.n_inputs)
    z_int = integer_logits(net, X_int)
    from fractions import Fraction

    denom = 1 << net.logit_scale_bits
    z_float = float_model.forward(X)
    max_err = 0.0
    n_agree = n_ties = 0
    for zi, zf in zip(z_int, z_float):
        zi = [int(v) for v in zi]
        top = max(zi)
        n_ties += sum(1 for v in zi if v == top) > 1
        d_int = zi.index(top)  # lowest index among ties, as QuantisedMLP.decision
        n_agree += d_int == int(np.argmax(zf))
        max_err = max(max_err, max(abs(float(Fraction(a, denom) - Fraction(float(b)))) for a, b in zip(zi, zf)))
    outside = 0
    if isinstance(fixed_point_model, FixedPointModel):
        outside = sum(not fixed_point_model.in_box([int(v) for v in row]) for row in X_int)
    return AgreementReport(s, len(X), n_agree, max_err, n_ties, outside)
