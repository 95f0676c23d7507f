"""The EVM's BN254 pairing check (precompile 0x08, EIP-197) computed natively, for the contract tests.

py-evm computes the precompile in pure Python (py_ecc): about 1.3 s for the four pairs of one Groth16
verification, which made the registry's tests the slowest in the suite. Ethereum clients compute it natively
(geth with gnark-crypto), and so does `native_pairing_check` here, with mcl. Only the arithmetic changes:
py-evm's own reading of the input and its own refusals stay. The input is read by py-evm's `_extract_point`;
a G1 point is checked by py-evm's `validate_point` (coordinates below q, on the curve or (0, 0)); every G2
coordinate must be below q; a G2 point other than (0, 0) must be on the twist and in the order-R subgroup
(mcl's check, which py-evm makes with a multiplication by R). Any refusal is py-evm's ValidationError, which
its precompile turns into a failed call. tests/test_evm_pairing.py compares the two precompiles on products
that hold, products that do not, and every kind of refused input.

`installed()` patches `eth.precompiles.ecpairing._ecpairing`, the function py-evm's precompile calls for
every fork, for as long as the context lasts.
"""
from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator

from circuits.backends import get_backend
from circuits.field import Q


def native_pairing_check(data: bytes) -> bool:
    """prod e(P_i, Q_i) == 1 over the 192-byte pairs of `data` (its length a multiple of 192, as the
    precompile checks first), refusing what py-evm refuses with its ValidationError."""
    from eth._utils.bn128 import validate_point
    from eth.precompiles.ecpairing import _extract_point
    from eth_utils import ValidationError

    pairs = []
    for start in range(0, len(data), 192):
        x1, y1, x2_i, x2_r, y2_i, y2_r = _extract_point(data[start:start + 192])
        validate_point(x1, y1)
        if any(v >= Q for v in (x2_i, x2_r, y2_i, y2_r)):
            raise ValidationError("value greater than field modulus")
        g1 = None if (x1, y1) == (0, 0) else (x1, y1)
        g2 = None if (x2_i, x2_r, y2_i, y2_r) == (0, 0, 0, 0) else ((x2_r, x2_i), (y2_r, y2_i))
        if g2 is not None and not get_backend("mcl").g2_is_valid(g2):
            raise ValidationError("G2 point is not on the twist or not in the order-R subgroup")
        pairs.append((g1, g2))
    if not pairs:
        return True  # the empty product
    return get_backend("mcl").pairing_product_is_one(pairs)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """py-evm's pairing precompile computes with `native_pairing_check` inside the context."""
    precompile = importlib.import_module("eth.precompiles.ecpairing")  # the package's `ecpairing` is the function

    original = precompile._ecpairing
    precompile._ecpairing = native_pairing_check
    try:
        yield
    finally:
        precompile._ecpairing = original
