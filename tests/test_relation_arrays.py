"""Relations in arrays (`ArrayR1CS`): decoded from .r1cs files, evaluated by the
backends in bulk, and proving exactly what the tuple form proves."""
from __future__ import annotations

import numpy as np
import pytest

from circuits.backends import get_backend
from circuits.backends.base import CurveBackend
from circuits.errors import CircuitError, UnsatisfiedConstraint
from circuits.field import R
from circuits.groth16 import prove, setup, verify
from circuits.groth16.qap import row_evaluations
from circuits.relation_arrays import ArrayR1CS, SparseRows, limbs_below_r
from circuits.snarkjs import decode_r1cs, decode_r1cs_arrays, encode_r1cs
from backend_fixtures import mcl_or_skip
from groth16_circuits import cubic, cubic_witness, random_system

R_BLIND, S_BLIND = 123456789, 987654321


@pytest.fixture(scope="module", params=["reference", "mcl"])
def backend(request):
    return mcl_or_skip() if request.param == "mcl" else get_backend("reference")


def _same_arrays(x: ArrayR1CS, y: ArrayR1CS) -> bool:
    return all(np.array_equal(getattr(getattr(x, side), part), getattr(getattr(y, side), part))
               for side in "abc" for part in ("start", "wire", "coefficient"))


@pytest.mark.parametrize("size, seed", [(1, 0), (40, 1), (300, 2)])
def test_an_r1cs_file_decodes_to_the_same_relation_in_either_form(size, seed):
    r1cs, _ = random_system(size, 3, seed=seed)
    data = encode_r1cs(r1cs)
    arrays = decode_r1cs_arrays(data)
    assert arrays.relation == decode_r1cs(data)[0] == r1cs
    assert _same_arrays(arrays, ArrayR1CS.from_r1cs(r1cs))
    assert (arrays.n_constraints, arrays.n_public, arrays.n_private) == (r1cs.n_constraints, r1cs.n_public, r1cs.n_private)


def test_rows_are_evaluated_alike_by_every_backend_and_by_the_tuple_form():
    r1cs, witness = random_system(200, 3, seed=5)  # bit constraints leave C rows empty
    assert any(not c.c for c in r1cs.constraints)
    arrays = ArrayR1CS.from_r1cs(r1cs)
    expected = row_evaluations(r1cs, witness, 256)
    for backend in (get_backend("reference"), mcl_or_skip()):
        rows = backend.row_evaluations(arrays, backend.scalar_vector(witness), 256)
        assert [backend.scalar_vector_to_ints(v) for v in rows] == list(expected)


def test_the_generic_row_evaluation_is_the_reference():
    # CurveBackend's own (Python) version, not an override, on the mcl backend's vectors
    mcl = mcl_or_skip()
    r1cs, witness = random_system(60, 2, seed=9)
    arrays = ArrayR1CS.from_r1cs(r1cs)
    generic = CurveBackend.row_evaluations(mcl, arrays, mcl.scalar_vector(witness), 128)
    assert [mcl.scalar_vector_to_ints(v) for v in generic] == list(row_evaluations(r1cs, witness, 128))


def test_a_proof_from_the_array_form_is_the_proof_from_the_tuple_form(backend):
    size = 200 if backend.name == "mcl" else 12
    r1cs, witness = random_system(size, 2, seed=7)
    pk, vk = setup(r1cs, backend, seed="arrays")
    arrays = decode_r1cs_arrays(encode_r1cs(r1cs))
    one = prove(pk, arrays, witness, backend, r=R_BLIND, s=S_BLIND)
    assert one == prove(pk, r1cs, witness, backend, r=R_BLIND, s=S_BLIND)
    assert verify(vk, arrays.public_inputs(witness), one, backend)
    wrong = arrays.public_inputs(witness)
    wrong[0] = (wrong[0] + 1) % R
    assert not verify(vk, wrong, one, backend)


def test_an_unsatisfying_witness_is_refused_at_the_same_constraint(backend):
    pk, _ = setup(cubic(), backend, seed="cubic")
    arrays = ArrayR1CS.from_r1cs(cubic())
    witness = cubic_witness(3)
    witness[4] += 1  # x^3 wrong: constraint 1 fails first
    with pytest.raises(UnsatisfiedConstraint) as info:
        prove(pk, arrays, witness, backend)
    assert info.value.constraint_index == 1
    witness = cubic_witness(3)
    witness[1] = 36  # claimed output wrong: constraint 2
    with pytest.raises(UnsatisfiedConstraint) as info:
        prove(pk, arrays, witness, backend)
    assert info.value.constraint_index == 2
    with pytest.raises(UnsatisfiedConstraint):
        prove(pk, arrays, cubic_witness(3)[:4], backend)
    with pytest.raises(UnsatisfiedConstraint, match="wire 0"):
        prove(pk, arrays, [2, *cubic_witness(3)[1:]], backend)
    with pytest.raises(CircuitError, match="integers"):
        prove(pk, arrays, [1, 35.0, 3, 9, 27], backend)


def test_coefficients_at_or_above_r_are_not_below_r():
    values = [0, 1, R - 1, R, R + 1, (1 << 256) - 1, 1 << 255]
    limbs = np.frombuffer(b"".join(v.to_bytes(32, "little") for v in values), dtype="<u8").reshape(-1, 4)
    assert limbs_below_r(limbs).tolist() == [v < R for v in values]


def _rows(starts, wires, coefficients) -> SparseRows:
    raw = b"".join(k.to_bytes(32, "little") for k in coefficients)
    return SparseRows(np.array(starts, dtype=np.int64), np.array(wires, dtype=np.int64),
                      np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32))


@pytest.mark.parametrize("rows, message", [
    (_rows([0, 1, 2], [1, 3], [1, 1]), "constraint 1 names wire 3"),
    (_rows([0, 1, 2], [1, 2], [1, R]), "constraint 1 has a coefficient not reduced"),
    (_rows([0, 2, 1], [1, 2], [1, 1]), "not a partition"),
    (_rows([0, 1, 3], [1, 2], [1, 1]), "not a partition"),
    (_rows([1, 1, 2], [1, 2], [1, 1]), "not a partition"),
])
def test_malformed_rows_are_refused_with_the_constraint_named(rows, message):
    with pytest.raises(ValueError, match=message):
        rows.check(3, "side A")


@pytest.mark.parametrize("size, seed", [(0, 0), (1, 1), (40, 2), (500, 3)])
def test_the_digest_is_the_same_for_either_form_and_changes_with_any_term(size, seed):
    from circuits.groth16 import r1cs_digest
    from circuits.relation import R1CS, Constraint

    r1cs, _ = random_system(size, 2, seed=seed)
    arrays = ArrayR1CS.from_r1cs(r1cs)
    assert r1cs_digest(arrays) == r1cs_digest(r1cs)
    if size:
        first = r1cs.constraints[0]
        moved = Constraint(first.a, first.b, first.c + ((0, 1),))
        other = R1CS(r1cs.n_wires, r1cs.n_public, (moved, *r1cs.constraints[1:]))
        assert r1cs_digest(ArrayR1CS.from_r1cs(other)) == r1cs_digest(other) != r1cs_digest(r1cs)
