"""The EVM verifiers (verifier_client/solidity/): compiled with solc, run in py-evm (eth-tester).

Honest certificates are accepted by the bucket's verifier and by the registry; a dishonest bank's
variants are refused: a changed signal, a signal given as itself plus r, another proof, a proof under
another card's commitment, an unknown bucket, and a registry's bucket verifier asked with signals of
the wrong length. The registry's claim rules, per-slice certificates, audit circuits and deployment
checks: tests/test_registry_claims.py.
"""
from __future__ import annotations

import pytest

import evm_pairing
from circuits.field import Q, R
from verifier_client.solidity import (card_verifiers, compile_contracts, contract_name, find_solc_module,
                                      proof_calldata, registry_source)



@pytest.fixture(scope="module")
def evm():
    """py-evm with its pairing precompile computed natively (tests/evm_pairing.py: py-evm's input rules, mcl's
    arithmetic). Skips (a failure in CI) without solc from npm or eth_tester."""
    if find_solc_module() is None:
        pytest.skip("solc from npm is not installed (npm ci)")
    pytest.importorskip("eth_tester")
    with evm_pairing.installed():
        yield


VERIFY = "verify(uint256[2],uint256[2][2],uint256[2],uint256[])"
CERTIFY = "verifyCertificate(string,uint256[2],uint256[2][2],uint256[2],uint256[])"
PROOF_TYPES = ["uint256[2]", "uint256[2][2]", "uint256[2]"]


class DeploymentRefused(RuntimeError):
    """A contract's constructor reverted."""


class Chain:
    """A local EVM (py-evm) with one funded account."""

    def __init__(self):
        from eth_tester import EthereumTester, PyEVMBackend

        self.tester = EthereumTester(PyEVMBackend())
        self.account = self.tester.get_accounts()[0]

    def deploy(self, bytecode: str, types=(), args=()) -> str:
        from eth_abi import encode

        data = "0x" + bytecode + encode(list(types), list(args)).hex()
        tx = self.tester.send_transaction({"from": self.account, "data": data, "gas": 10_000_000})
        receipt = self.tester.get_transaction_receipt(tx)
        if receipt.get("status") == 0:
            try:  # the revert reason: the same creation as a call
                self.tester.call({"from": self.account, "data": data, "gas": 10_000_000})
            except Exception as exc:  # eth_tester's TransactionFailed, with the reason
                raise DeploymentRefused(str(exc)) from None
            raise DeploymentRefused(f"the constructor reverted ({receipt['gas_used']} gas)")
        return receipt["contract_address"]

    def call(self, to: str, signature: str, types, args, gas: int = 10_000_000) -> tuple[bool, int]:
        """(the boolean result, the gas the call used as a transaction with ample gas: `gas`, below a block's
        30M). Not estimate_gas: a verifier whose precompile call runs out of gas returns false without
        reverting, so the least gas that does not revert is not the gas of a verification."""
        from eth_abi import decode, encode
        from eth_utils import function_signature_to_4byte_selector

        data = "0x" + (function_signature_to_4byte_selector(signature) + encode(list(types), list(args))).hex()
        tx = {"from": self.account, "to": to, "data": data, "gas": gas}
        (result,) = decode(["bool"], bytes.fromhex(self.tester.call(tx)[2:]))
        receipt = self.tester.get_transaction_receipt(self.tester.send_transaction(tx))
        return result, receipt["gas_used"]


def compile_card(card, check_keys: bool = True):
    """Every verifier of `card` and its registry, compiled: (contract name -> CompiledContract, verifiers)."""
    verifiers = card_verifiers(card)
    sources = {f"{v.contract}.sol": v.source for v in verifiers}
    sources["FairProofRegistry.sol"] = registry_source(card, check_keys=check_keys)
    return compile_contracts(sources), verifiers


def deploy_card(chain: Chain, card, compiled=None, check_keys: bool = True) -> tuple[str, dict[str, str]]:
    """(registry address, bucket or audit circuit -> verifier address): every verifier of the card deployed,
    then the registry with their addresses in the card's order."""
    if compiled is None:
        compiled, verifiers = compile_card(card, check_keys)
    else:
        verifiers = card_verifiers(card)
    addresses = {v.bucket: chain.deploy(compiled[v.contract].bytecode) for v in verifiers}
    registry = chain.deploy(compiled["FairProofRegistry"].bytecode, ["address[]"],
                            [[addresses[v.bucket] for v in verifiers]])
    return registry, addresses


@pytest.fixture(scope="module")
def deployed(bank, evm):
    bucket = bank.bundles[0].bucket
    chain = Chain()
    registry, addresses = deploy_card(chain, bank.card)
    return chain, addresses[bucket], registry, bucket


def _args(bundle, signals=None):
    a, b, c = proof_calldata(bundle.proof)
    return [a, b, c, [int(s) for s in (signals if signals is not None else bundle.public_signals)]]


def test_the_buckets_verifier_accepts_honest_certificates(bank, deployed):
    chain, address, _, bucket = deployed
    for bundle in bank.bundles:
        if bundle.bucket != bucket:
            continue
        ok, gas = chain.call(address, VERIFY, [*PROOF_TYPES, "uint256[]"], _args(bundle))
        assert ok and 150_000 < gas < 1_000_000


def test_the_registry_accepts_and_refuses(bank, deployed):
    chain, _, registry, bucket = deployed
    bundle = bank.bundles[0]
    ok, gas = chain.call(registry, CERTIFY, ["string", *PROOF_TYPES, "uint256[]"], [bucket, *_args(bundle)])
    assert ok
    unknown, _ = chain.call(registry, CERTIFY, ["string", *PROOF_TYPES, "uint256[]"], ["k1-f1", *_args(bundle)])
    assert not unknown
    # Another card's commitment in the first signal: refused before any pairing.
    other = [str((int(bundle.public_signals[0]) + 1) % R), *bundle.public_signals[1:]]
    refused, _ = chain.call(registry, CERTIFY, ["string", *PROOF_TYPES, "uint256[]"], [bucket, *_args(bundle, other)])
    assert not refused


@pytest.mark.parametrize("forgery", ["eps + 1", "signal + r", "a negated", "b and c from another proof",
                                     "coordinate + q", "one signal short"])
def test_forged_certificates_are_refused(bank, deployed, forgery):
    chain, address, _, bucket = deployed
    bundle = bank.bundles[0]
    a, b, c, signals = _args(bundle)
    if forgery == "eps + 1":
        signals[2] += 1
    elif forgery == "signal + r":  # the same residue: a verifier reducing mod r would accept it
        signals[2] += R
    elif forgery == "a negated":
        a = [a[0], Q - a[1]]
    elif forgery == "b and c from another proof":
        other = next(x for x in bank.bundles if x.proof != bundle.proof)
        _, b, c = proof_calldata(other.proof)
    elif forgery == "coordinate + q":
        c = [c[0] + Q, c[1]]
    else:
        signals = signals[:-1]
    ok, _ = chain.call(address, VERIFY, [*PROOF_TYPES, "uint256[]"], [a, b, c, signals])
    assert not ok


def test_the_fixed_size_entry_point_is_snarkjs_s(bank, deployed):
    chain, address, _, _ = deployed
    bundle = bank.bundles[0]
    n = len(bundle.public_signals)
    ok, _ = chain.call(address, f"verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[{n}])",
                       [*PROOF_TYPES, f"uint256[{n}]"], _args(bundle))
    assert ok


def test_contract_names_are_identifiers():
    assert contract_name("k4-f4-exact-slice") == "FairProofVerifier_k4_f4_exact_slice"
    assert contract_name("groups-n1000-c1") == "FairProofVerifier_groups_n1000_c1"


def test_export_solidity_command(bank, evm, tmp_path, capsys):
    from prover_service.cli import main as fairproof

    card = tmp_path / "card.json"
    card.write_text(bank.card.canonical_json())
    assert fairproof(["export-solidity", "--card", str(card), "--out", str(tmp_path / "sol"), "--compile"]) == 0
    names = {p.name for p in (tmp_path / "sol").iterdir()}
    assert "FairProofRegistry.sol" in names and "FairProofRegistry.bin" in names
    assert any(n.startswith("FairProofVerifier_") and n.endswith(".abi.json") for n in names)
    (tmp_path / "bad.json").write_text("{}")
    assert fairproof(["export-solidity", "--card", str(tmp_path / "bad.json"), "--out", str(tmp_path / "x")]) != 0
