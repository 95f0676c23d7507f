"""The fairness statement: between the plain arithmetic of `fairness` and the proof machinery of `circuits`.

The circuit modules take plain ints and tuples (and the cover kinds of
`fairness.covers`) only. Importing this package loads nothing of the fairness
prover (no numpy-heavy code, no torch or scipy), so the public model card and
the customer's verifier can rebuild a shape. Two modules are imported
explicitly, never from here: the bank-side adapter `statement.adapter`
converts a `FixedPointModel`, a salt and a checked fairness certificate into
(`StatementShape`, `StatementPublic`, `StatementWitness`), and
`statement.proof_system` is the seam to the proof system (`Groth16`).

Modules: `shape` (public constants, digests, bucket name), `widths` (the
no-wrap analysis from the shape alone), `witness` (public-input order and
private witness), `commitment` (salted Poseidon commitment, native and
in-circuit), `affine` (region forms from weights and codes), `distance`,
`membership`, `farkas`, `boundary` (the rule gadgets), `circuit`
(`build_statement`), `adapter` and `proof_system`.

Cost model (constraints; w_x = bit width of x from `widths`, nf free inputs,
H hidden neurons, h_l layer sizes, C classes, K slots, F pool entries):
- per region slot: derivation sum_{l>=1} h_l h_{l-1} (nf + 3) + (C-1) h_L (nf + 3);
  per deeper row one distance check (w_dist + nf + 4); per row one cover
  one-hot (4 for neurons, 2 for decision rows) and lookup queries (2 each:
  NEIGHBOR and FAR_REGION for neurons, FARKAS for all);
- per pool entry: derivation (as a slot, without values), multiplier
  ranges H fb + fb + 1, the residual (H + C - 1)(nf + 1) products, one box
  multiplier per free input (sign and magnitude, w_nu + 2 each: the dominant
  term), h(u*) and ||r'||^2 (3 nf), and two final ranges (w_h, and the
  squared comparison on neuron-row and region entries);
- per slice: the layer-0 distance flags (h_0 (w_dist + 2)), slot 0 (the
  forward pass with activation comparisons), and the two membership lookups'
  tables (2 per entry, multiplicities range-checked) and challenge (one
  Poseidon chain over the packed code, kind, pool and multiplicity bits);
- once: weight ranges, the Poseidon commitment (~600 per 15 parameters),
  query box checks, the designated row's derivation and the boundary point.
`benchmarks/bench_statement.py` measures these for a German-credit shape.

Deviations from the first design notes, and why:
- separate weight_bits and bias_bits per layer: biases live at scale
  2^(s(l+2)), one shared bound would inflate every width by ~(l+1)s bits;
- slot 0 IS the start region (its bits are the forward pass's activation
  comparisons) instead of a membership test of the start code;
- the commitment binds the model part of the shape (architecture, box,
  slices, scale), not the bucket (K, F, t, E_cap): one published commitment
  serves every bucket's keys;
- membership (NEIGHBOR codes, FARKAS keys) is a log-derivative lookup with
  an in-circuit Poseidon challenge (`membership`), 2 constraints per query
  instead of K (or F) for a vanishing product; it adds the random-oracle
  assumption on Poseidon that the commitment already makes;
- NO_CLASS follows `fairness.regions.class_system`: the extra row is
  d_o(u) <= 0 (class j(o) at least ties y), mu >= 0;
- every pool entry is a separation certificate (docs/STATEMENT.md): a
  facet or region far from the query (FAR_FACET, FAR_REGION) or, with
  r' = 0, an empty one (EMPTY_FACET, NO_CLASS; the witness uses nu = -r).
"""
from importlib import import_module
from typing import Any

# Names are loaded on first use (PEP 562), so that importing one light module of the package, e.g.
# `statement.dataset` in the customer's verifier, does not load the circuit and what it imports.
_EXPORTS = {
    "StatementHandles": "circuit", "build_statement": "circuit", "statement_relation": "circuit",
    "COMMITMENT_SCHEME": "commitment", "COMMITMENT_TAG": "commitment", "commit": "commitment",
    "commit_in_circuit": "commitment", "preimage": "commitment",
    "StatementShape": "shape", "StatementShapeError": "shape",
    "StatementWidths": "widths",  # the function widths: `from statement.widths import widths` (the submodule's name)
    "STATUS_CERTIFIED": "witness", "STATUS_FLIP": "witness", "Counterexample": "witness", "Designation": "witness",
    "FarkasEntry": "witness", "SliceWitness": "witness", "StatementPublic": "witness", "StatementWitness": "witness",
    "StatementWitnessError": "witness",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
