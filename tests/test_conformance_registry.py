"""The conformance corpus (tests/vectors/) against the Solidity registry, in py-evm.

Each vector the registry can judge (its `applies_to`) is submitted as a caller would: the registry of the
vector's card deployed once (a card whose keys export-solidity or the constructor refuses gets none: K1),
then verifyCertificate, verifyPerSliceCertificate or verifyGroupCounts with the certificate's proofs and
signals. A VALID vector must be accepted; an INVALID one refused at the same stage its reason code names:
at deployment (key.*), on its signals before any pairing (claims.*, groups.signals) or by the pairing
(proof.*). The registry returns a boolean, so the stage is all it can say of a reason. The one-hot family
(tests/vectors/v1-onehot: a sensitive attribute over three inputs) and the tree-ensemble family
(tests/vectors/v1-trees) run the same way.
"""
from __future__ import annotations

import pytest

from conformance import RegistryRunner, load_vectors, registry_family
from test_solidity import evm  # noqa: F401 (fixture)


# Each family and the stages at which its vectors are refused (the one-hot family's cards all have sound keys).
FAMILIES = {"v1": {None, "key", "claims", "proof"}, "v1-onehot": {None, "claims", "proof"},
            "v1-trees": {None, "claims", "proof"}}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_registry_gives_every_vector_it_can_judge_its_verdict(family, evm):
    vectors = [v for v in load_vectors(family) if v.applies_to("registry")]
    runner = RegistryRunner()
    wrong = []
    for v in vectors:
        got, expected = runner.verdict(v), (v.verdict, registry_family(v.code))
        if got != expected:
            wrong.append(f"{v.id} {v.description}: registry {got}, expected {expected} [{v.code}]")
    assert not wrong, "\n".join(wrong)
    assert {registry_family(v.code) for v in vectors} == FAMILIES[family]
