"""The native pairing precompile (tests/evm_pairing.py) against py-evm's own, input by input.

Both are asked the same 192-byte pairs: products that hold (a Groth16-shaped equation of four pairs, points at
infinity, the empty input) and products that do not, and every input py-evm refuses: a coordinate at q, a G1
point off the curve, a G2 point off the twist, a G2 point on the twist outside the order-R subgroup. Their
answers (True, False or a refusal) must be equal, and each kind must actually occur, so the comparison cannot
pass on inputs that never reach a refusal.
"""
from __future__ import annotations

import importlib
import random

import pytest

import evm_pairing
from circuits.field import Q, R

pytest.importorskip("eth")
from py_ecc import optimized_bn128 as ob  # noqa: E402
from test_backends import _twist_point_outside_subgroup  # noqa: E402


def _g1(p) -> bytes:
    if p is None:
        return bytes(64)
    x, y = ob.normalize(p)
    return int(x).to_bytes(32, "big") + int(y).to_bytes(32, "big")


def _g2(p) -> bytes:
    if p is None:
        return bytes(128)
    x, y = ob.normalize(p)
    (x_r, x_i), (y_r, y_i) = x.coeffs, y.coeffs
    return b"".join(int(v).to_bytes(32, "big") for v in (x_i, x_r, y_i, y_r))


def _raw_g2(x_i: int, x_r: int, y_i: int, y_r: int) -> bytes:
    return b"".join(v.to_bytes(32, "big") for v in (x_i, x_r, y_i, y_r))


def _answer(check, data: bytes):
    from eth_utils import ValidationError

    try:
        return check(data)
    except ValidationError:
        return "refused"


def _inputs(rng: random.Random) -> dict[str, bytes]:
    """Named precompile inputs covering every answer."""
    a, b, c, d = (rng.randrange(1, R) for _ in range(4))
    # e(aG1, bG2) e(cG1, dG2) e(-(ab + cd) G1, G2) = 1, with a pair at infinity: a verification's shape
    holds = [(ob.multiply(ob.G1, a), ob.multiply(ob.G2, b)), (ob.multiply(ob.G1, c), ob.multiply(ob.G2, d)),
             (ob.neg(ob.multiply(ob.G1, (a * b + c * d) % R)), ob.G2), (None, ob.G2)]
    pairs = b"".join(_g1(p) + _g2(q) for p, q in holds)
    g1, g2 = _g1(ob.G1), _g2(ob.G2)
    x, y = int(ob.normalize(ob.G1)[0]), int(ob.normalize(ob.G1)[1])
    (tx_r, tx_i), (ty_r, ty_i) = _twist_point_outside_subgroup(rng)
    return {
        "holds": pairs,
        "holds, infinity only": bytes(64) + g2 + g1 + bytes(128),
        "empty": b"",
        "fails: one scalar changed": pairs[:192] + _g1(ob.multiply(ob.G1, c + 1)) + pairs[256:],
        "fails: one pair": g1 + g2,
        "refused: G1 coordinate q": pairs[:192] + (x + Q).to_bytes(32, "big") + pairs[224:],
        "refused: G1 off the curve": (x).to_bytes(32, "big") + (y + 1).to_bytes(32, "big") + g2,
        "refused: G2 coordinate q": g1 + g2[:32] + (int.from_bytes(g2[32:64], "big") + Q).to_bytes(32, "big")
        + g2[64:],
        "refused: G2 off the twist": g1 + g2[:96] + (int.from_bytes(g2[96:], "big") + 1).to_bytes(32, "big"),
        "refused: G2 outside the subgroup": g1 + _raw_g2(tx_i, tx_r, ty_i, ty_r),
    }


def _differing(check, inputs: dict[str, bytes]) -> dict[str, tuple]:
    """The inputs on which `check` and py-evm's own precompile answer differently: name -> (py-evm, check)."""
    from eth.precompiles.ecpairing import _ecpairing as py_evm_check

    answers = {name: (_answer(py_evm_check, data), _answer(check, data)) for name, data in inputs.items()}
    return {name: pair for name, pair in answers.items() if pair[0] != pair[1]}


def test_the_native_precompile_answers_as_py_evms_on_every_kind_of_input():
    from eth.precompiles.ecpairing import _ecpairing as py_evm_check

    inputs = _inputs(random.Random(20261129))
    assert not _differing(evm_pairing.native_pairing_check, inputs)
    expected = {name: True if name.startswith("holds") or name == "empty"
                else False if name.startswith("fails") else "refused" for name in inputs}
    assert {name: _answer(py_evm_check, data) for name, data in inputs.items()} == expected


def test_a_precompile_without_the_subgroup_check_is_caught():
    """The comparison's rejection twin: a check that pairs whatever point is on the twist answers an input
    py-evm refuses, and the comparison names that input."""
    from eth.precompiles.ecpairing import _extract_point

    def lax(data: bytes) -> bool:
        x1, y1, x2_i, x2_r, y2_i, y2_r = _extract_point(data[:192])
        p1 = (ob.FQ(x1), ob.FQ(y1), ob.FQ.one())
        p2 = (ob.FQ2([x2_r, x2_i]), ob.FQ2([y2_r, y2_i]), ob.FQ2.one())
        return ob.final_exponentiate(ob.pairing(p2, p1, final_exponentiate=False)) == ob.FQ12.one()

    name = "refused: G2 outside the subgroup"
    inputs = {name: _inputs(random.Random(7))[name]}
    assert _differing(lax, inputs) == {name: ("refused", False)}


def test_the_precompile_calls_the_native_check_inside_the_context_and_py_evms_after():
    precompile = importlib.import_module("eth.precompiles.ecpairing")  # the package's `ecpairing` is the function

    original = precompile._ecpairing
    called = precompile.ecpairing.func.__globals__  # what the precompile's call resolves `_ecpairing` in
    with evm_pairing.installed():
        assert called["_ecpairing"] is evm_pairing.native_pairing_check
    assert called["_ecpairing"] is original is not evm_pairing.native_pairing_check
