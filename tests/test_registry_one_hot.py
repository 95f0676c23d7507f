"""The registry (verifier_client/solidity/registry.py, in py-evm) on sensitive attributes spanning several inputs: the
cases of tests/page_cases.py `one_hot_cases` (race over three inputs, sex over one with female dropped, region
over two with north dropped), every certificate with a proof the pairing accepts, so only the registry's checks
of the claims can refuse one. The registry must give each certificate the verdict `fairproof-verify` gives it,
refusing a forged claim before any pairing; a card Python cannot read gets no registry at all."""
from __future__ import annotations

import json

import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from page_cases import one_hot_bank, one_hot_cases, one_hot_per_slice_cases
from test_registry_claims import CERTIFY_TYPES, CHECK, NO_PAIRING, PER_SLICE, PER_SLICE_TYPES, view
from test_solidity import CERTIFY, Chain, deploy_card, evm  # noqa: F401 (fixture)
from verifier_client.solidity import per_slice_calldata, proof_calldata, registry_source
from verifier_client.verify import verify_bundle


@pytest.fixture(scope="module")
def cases():
    return one_hot_cases(one_hot_bank())


@pytest.fixture(scope="module")
def registries(cases, evm):
    """The chain and a registry per card the cases' certificates are under (the cards Python reads)."""
    chain = Chain()
    texts = {c.card for c in cases if c.expected != "UNUSABLE"}
    return chain, {text: deploy_card(chain, ModelCard.from_json(text))[0] for text in texts}


def test_every_certificate_gets_the_verifiers_verdict_and_a_forged_claim_no_pairing(cases, registries):
    chain, deployed = registries
    judged = [c for c in cases if c.expected != "UNUSABLE" and c.code != "customer.record"]  # no record on-chain
    assert {c.expected for c in judged} == {"VALID", "INVALID"} and len(judged) >= 15
    wrong = []
    for case in judged:
        card, bundle = ModelCard.from_json(case.card), CertificateBundle.from_json(case.bundle)
        python = verify_bundle(bundle, card)
        signals = [int(v) for v in bundle.public_signals]
        registry = deployed[case.card]
        claims = view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.bucket, signals])
        ok, gas = chain.call(registry, CERTIFY, CERTIFY_TYPES, [bundle.bucket, *proof_calldata(bundle.proof), signals])
        if python.valid != (case.expected == "VALID") or ok != python.valid or claims != python.valid:
            wrong.append(f"{case.name}: Python {python.valid}, registry claims {claims}, certificate {ok}")
        elif not ok and gas >= NO_PAIRING:
            wrong.append(f"{case.name}: refused after a pairing ({gas} gas)")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow  # 20 s: 18 proofs of the one-hot card made and paired per certificate
def test_a_certificate_proved_slice_by_slice_gets_the_verifiers_verdict(evm):
    """The per-slice registry call takes one proof per slice of the one-hot card: 18 (its points' combinations),
    11.1M gas for the honest certificate (18 pairings and 51 public inputs each), so more than the 10M the
    other calls are given and less than a block's 30M. Its calldata (35 KB) costs more than a refusal before
    any pairing would show, so the claims' own check says which refusals are the claims'."""
    cases = one_hot_per_slice_cases(one_hot_bank(per_slice=True))
    card = ModelCard.from_json(cases[0].card)
    chain = Chain()
    registry, _ = deploy_card(chain, card)
    assert f"uint256 public constant N_SLICES = {len(card.slices())};" in registry_source(card) and len(card.slices()) == 18
    wrong = []
    for case in cases:
        bundle = CertificateBundle.from_json(case.bundle)
        python = verify_bundle(bundle, card).valid
        ok, _ = chain.call(registry, PER_SLICE, PER_SLICE_TYPES, list(per_slice_calldata(bundle)), gas=20_000_000)
        claims = view(chain, registry, CHECK, ["string", "uint256[]"], [bundle.bucket, [int(v) for v in bundle.public_signals]])
        if python != (case.expected == "VALID") or ok != python:
            wrong.append(f"{case.name}: Python {python}, registry {ok}")
        elif claims != (case.code != "claims.sensitive-value"):
            wrong.append(f"{case.name}: the registry's check of slice 0's claims says {claims}")
    assert not wrong, "\n".join(wrong)


def test_a_card_python_cannot_read_gets_no_registry(cases, tmp_path, capsys):
    """Overlapping columns, both column and columns, a value of the wrong length, a point the schema does not
    have: `fairproof export-solidity` refuses the card, naming the defect, and writes no contract; the card it
    reads is exported."""
    from prover_service.cli import main as fairproof

    refused = [c for c in cases if c.expected == "UNUSABLE"]
    assert len(refused) >= 10
    honest = next(c for c in cases if c.expected == "VALID")
    for i, case in enumerate([honest, *refused]):
        path, out = tmp_path / f"card{i}.json", tmp_path / f"sol{i}"
        path.write_text(case.card)
        capsys.readouterr()
        code = fairproof(["export-solidity", "--card", str(path), "--out", str(out)])
        err = capsys.readouterr().err
        if case is honest:
            assert code == 0 and (out / "FairProofRegistry.sol").is_file()
        else:
            assert code != 0 and not (out / "FairProofRegistry.sol").exists(), case.name
            assert case.reason in err and "Traceback" not in err, (case.name, err)


def test_the_registry_names_each_attribute_and_the_label_of_each_persistence_value(cases):
    card = ModelCard.from_json(cases[0].card)
    source = registry_source(card)
    for a, f in enumerate(card.sensitive):
        assert f"function pointOf{a}(uint256[] calldata s)" in source
        assert f"/// {f.name}: which of its {len(f.points)} domain points" in source
    for a, point in card.persistence_pairs():
        assert f"// {card.sensitive[a].name} = {card.sensitive[a].label_of(point)}" in source


def test_labels_cannot_write_code_into_the_registry(cases):
    """The card is the bank's: a label with a line break stays inside its comment."""
    value = json.loads(cases[0].card)
    value["sensitive"][0]["labels"][0] = "a\n    function steal() external {}\n//"
    value["sensitive"][0]["name"] = "race\nfunction x() external {}"
    del value["feature_schema"]  # the schema's labels are others: only the card's own rules bind it
    source = registry_source(ModelCard.model_validate(value), check_keys=False)
    assert not any(line.lstrip().startswith(("function steal", "function x")) for line in source.splitlines())
