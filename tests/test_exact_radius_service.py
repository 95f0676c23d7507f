"""Exact-radius certificates through the bank's prover and the customer's verifier.

The bank's German Credit (4,2) model (tests/bank_fixtures.py) is copied and
proved by an exact-radius prover: its card then publishes the fast bucket
k4-f4 and the exact bucket k4-f4-exact. The customer's verifier must say
whether eps is exact from the verified bucket's shape alone (file mode,
service mode, Python API, the monitor's report), and the bank, as the
adversary, must not get "exact" printed for a fast proof:

(a) a bundle field outside the proof claiming exactness is refused (the
    bundle format has no such field and refuses unknown ones); a fast proof
    relabelled with the exact bucket does not verify under its key;
(b) a card listing one bucket's verifying key under the other radius is
    refused by the card's one-circuit-one-key rule when both are published,
    and by `fairproof audit-keys` when the relabelled bucket stands alone
    (tests/test_ceremony.py);
(c) the honest exact bundle verifies end to end and prints the eps of the
    plaintext exact certificate; a tampered public input is refused.

The prover's side: exact buckets on the card (shape, name, key), the
fallback to the fast statement only when the card publishes fast buckets,
and a typed error otherwise.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bank_fixtures import FakeService, copy_of_bank_model, forged, run_cli
from commitments.bundle import Radius, radius_decimal
from commitments.card import ModelCard
from commitments.claims import bundle_claims, claims_from_signals
from verifier_client.cli import main as verify_main
from verifier_client.verify import verify_bundle


@pytest.fixture(scope="module")
def exact(bank, tmp_path_factory):
    """A copy of the bank's model with an exact-radius prover, and both radii proved for customer 0."""
    from circuits.backends import get_backend
    from fairness.certificate import EXACT
    from offline_precompute.certify import certify as certify_plaintext
    from offline_precompute.certify import query_from_record
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover

    root, workspace, db = copy_of_bank_model(bank, tmp_path_factory, "exact-bank")
    backend = get_backend()
    prover = Prover(workspace, db, backend, key_setup=SinglePartyKeySetup(), radius=EXACT)
    query = query_from_record(workspace.artifact, prover.model, bank.records[0])
    proved = prover.prove(query)
    fast = Prover(workspace, db, backend).prove(query)  # the copied k4-f4 keys: no setup
    # The reference: a separate plaintext exact certification (its own oracle over the store).
    plaintext = certify_plaintext(db, prover.model, query, eps_bits=prover.card.eps_scale_bits,
                                  radius=EXACT).certificate
    card = ModelCard.from_json(workspace.card_path.read_bytes())  # as a customer reads it
    yield {"root": root, "db": db, "prover": prover, "query": query, "bundle": proved.bundle,
           "certificate": proved.certificate, "fast": fast.bundle, "plaintext": plaintext, "card": card}
    db.dispose()


def _files(tmp_path: Path, capsys, bundle_text: str, card_text: str, *extra: str) -> tuple[int, str, str]:
    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bundle_text)
    c.write_text(card_text)
    code = verify_main([str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json"), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _record(tmp_path: Path, record: dict) -> str:
    path = tmp_path / "customer.json"
    path.write_text(json.dumps(record))
    return str(path)


# -- the card ----------------------------------------------------------------------------------------------


def test_the_card_publishes_the_exact_bucket_with_its_shape(exact, bank):
    card = exact["card"]
    assert {b.bucket: b.shape.radius for b in card.circuits} == {"k4-f4": "fast", "k4-f4-exact": "exact"}
    assert exact["bundle"].bucket == "k4-f4-exact" and exact["fast"].bucket == "k4-f4"
    assert exact["bundle"].card_digest == exact["fast"].card_digest == card.digest()
    # The card names the exact statement: its shape JSON is the prover's, radius included.
    bucket = card.bucket("k4-f4-exact")
    shape = exact["prover"].shape_for(4, 4, "exact")
    assert card.statement_shape_json(bucket) == json.loads(json.dumps(shape.to_json()))
    assert bucket.n_constraints == exact["prover"].keys(shape).r1cs.n_constraints
    # Fast buckets are written as before exact ones existed: the bank's fast card keeps its digest.
    assert '"radius"' not in bank.card.canonical_json() and '"radius":"exact"' in card.canonical_json()
    assert ModelCard.from_json(bank.card.canonical_json()).digest() == bank.card.digest()


def test_a_bucket_name_that_does_not_say_its_radius_is_refused(exact, tmp_path, capsys):
    def rename(data, name, to):
        for b in data["circuits"]:
            if b["bucket"] == name:
                b["bucket"] = to

    for name, to in (("k4-f4-exact", "k4-f4-fast"), ("k4-f4", "k4-f4-exact")):
        data = json.loads(exact["card"].canonical_json())
        rename(data, name, to)
        code, _, err = _files(tmp_path, capsys, exact["bundle"].model_dump_json(), json.dumps(data))
        assert code == 2 and "circuits" in err and "Traceback" not in err, err
    data = json.loads(exact["card"].canonical_json())
    for b in data["circuits"]:  # the exact shape under the fast bucket's name
        if b["bucket"] == "k4-f4":
            b["shape"]["radius"] = "exact"
    code, _, err = _files(tmp_path, capsys, exact["fast"].model_dump_json(), json.dumps(data))
    assert code == 2 and "does not name its shape" in err


# -- (c) the honest exact certificate ----------------------------------------------------------------------


def test_an_honest_exact_bundle_verifies_and_prints_the_plaintext_exact_eps(exact, bank, tmp_path, capsys):
    bundle, plaintext = exact["bundle"], exact["plaintext"]
    assert plaintext.radius_is_exact and exact["certificate"].radius_is_exact
    decimal = radius_decimal(plaintext.eps, plaintext.eps_bits)
    code, out, err = _files(tmp_path, capsys, bundle.model_dump_json(), exact["card"].canonical_json(),
                            "--record", _record(tmp_path, bank.records[0]))
    assert code == 0, err
    assert f"Radius: eps = {decimal} (exact: the true radius rounded down to 2^-{plaintext.eps_bits})" in out
    assert "This eps is exact" in out and "lower bound" not in out
    # The Python API: a typed field, from the verified bucket.
    verdict = verify_bundle(bundle, exact["card"], query=exact["query"])
    assert verdict and verdict.radius == "exact" and verdict.claims.radius == "exact" and verdict.claims.eps_exact
    assert verdict.claims.eps_numerator == plaintext.eps and verdict.claims.eps_decimal == decimal
    # The fast certificate of the same customer, on the same card: a lower bound, never above the exact one.
    code, out, _ = _files(tmp_path, capsys, exact["fast"].model_dump_json(), exact["card"].canonical_json())
    fast = verify_bundle(exact["fast"], exact["card"])
    assert code == 0 and fast.radius == "fast" and not fast.claims.eps_exact
    assert f"Radius: eps >= {fast.claims.eps_decimal} is a lower bound (fast" in out and "This eps is exact" not in out
    assert fast.claims.eps_numerator <= plaintext.eps


def test_service_mode_says_the_radius_is_exact(exact, bank, tmp_path, capsys):
    first = FakeService(exact["card"], exact["bundle"])
    assert run_cli(first, bank.records[0], tmp_path) == 0
    out = capsys.readouterr().out
    assert f"Radius: eps = {radius_decimal(exact['plaintext'].eps, exact['plaintext'].eps_bits)} (exact:" in out
    assert run_cli(FakeService(exact["card"], exact["fast"], log=first.log), bank.records[0], tmp_path) == 0
    assert "is a lower bound (fast" in capsys.readouterr().out


@pytest.mark.parametrize("signal", [2, 5])  # E, and the first query value
def test_a_tampered_public_input_of_the_exact_bundle_is_refused(exact, tmp_path, capsys, signal):
    bundle = exact["bundle"]
    if signal == 2:  # every readable field made to match, as a forger would
        tampered = forged(bundle, eps=Radius(numerator=bundle.eps.numerator + 1, scale_bits=bundle.eps.scale_bits))
    else:
        signals = list(bundle.public_signals)
        signals[signal] = str(int(signals[signal]) + 1)
        tampered = bundle.model_copy(update={"public_signals": tuple(signals),
                                             "query": (bundle.query[0] + 1, *bundle.query[1:])})
    verdict = verify_bundle(tampered, exact["card"])
    assert not verdict and verdict.radius is None and "proof rejected" in verdict.reasons[0]
    code, _, err = _files(tmp_path, capsys, tampered.model_dump_json(), exact["card"].canonical_json())
    assert code == 1 and "proof rejected" in err


def test_export_snarkjs_says_what_the_buckets_key_proves(exact, tmp_path, capsys):
    from prover_service.cli import main as fairproof

    card = tmp_path / "card.json"
    card.write_text(exact["card"].canonical_json())
    for bundle, words in ((exact["bundle"], "bucket k4-f4-exact's on the card: its statement proves the exact radius"),
                          (exact["fast"], "bucket k4-f4's on the card: its statement proves the fast radius")):
        path = tmp_path / f"{bundle.bucket}.json"
        path.write_text(bundle.model_dump_json())
        assert fairproof(["export-snarkjs", str(path), str(tmp_path / bundle.bucket), "--card", str(card)]) == 0
        assert words in capsys.readouterr().out


# -- (a) exactness claimed outside the proof ---------------------------------------------------------------


@pytest.mark.parametrize("where", ["eps.exact", "radius", "eps.radius"])
def test_an_unsigned_field_claiming_exactness_is_refused(exact, bank, tmp_path, capsys, where):
    data = json.loads(exact["fast"].model_dump_json())
    if where == "radius":
        data["radius"] = "exact"
    else:
        data["eps"][where.split(".")[1]] = True if where == "eps.exact" else "exact"
    text = json.dumps(data)
    code, out, err = _files(tmp_path, capsys, text, exact["card"].canonical_json())
    assert code == 2 and where in err and "exact" not in out, err
    # Service mode: the same bundle served for the customer's certificate.
    import httpx

    service = FakeService(exact["card"], exact["fast"])
    service.overrides[("GET", f"/v1/certificates/{exact['fast'].certificate_id}")] = httpx.Response(200, text=text)
    assert run_cli(service, bank.records[0], tmp_path) == 2
    out, err = capsys.readouterr()
    assert "malformed" in err and where in err and "VALID" not in out


def test_a_fast_proof_relabelled_with_the_exact_bucket_does_not_verify(exact, tmp_path, capsys):
    relabelled = exact["fast"].model_copy(update={"bucket": "k4-f4-exact"})
    verdict = verify_bundle(relabelled, exact["card"])
    assert not verdict and "proof rejected" in verdict.reasons[0]
    code, out, err = _files(tmp_path, capsys, relabelled.model_dump_json(), exact["card"].canonical_json())
    assert code == 1 and "proof rejected" in err and "exact" not in out
    # And the exact proof named as the fast bucket's is refused too (it would understate, still a lie).
    assert not verify_bundle(exact["bundle"].model_copy(update={"bucket": "k4-f4"}), exact["card"])


def test_the_label_comes_from_the_verified_bucket_only(exact):
    """Claims derived from the same signals under the two buckets differ only in the label: the label
    is the bucket's, and the bucket is the one whose key accepted the proof."""
    card, signals = exact["card"], exact["bundle"].public_signals
    as_exact = claims_from_signals(signals, card, card.bucket("k4-f4-exact"))
    as_fast = claims_from_signals(signals, card, card.bucket("k4-f4"))
    assert (as_exact.radius, as_fast.radius) == ("exact", "fast")
    assert bundle_claims(exact["bundle"], card).radius == "exact"
    assert verify_bundle(exact["bundle"], card).radius == "exact"  # only this bucket's key accepts the proof


# -- (b) a card that lists a key under the other radius ----------------------------------------------------


@pytest.mark.parametrize("direction", ["fast key as exact", "exact key as fast"])
def test_a_card_listing_one_key_under_both_radii_is_refused(exact, tmp_path, capsys, direction):
    source, target = ("k4-f4", "k4-f4-exact") if direction == "fast key as exact" else ("k4-f4-exact", "k4-f4")
    data = json.loads(exact["card"].canonical_json())
    buckets = {b["bucket"]: b for b in data["circuits"]}
    for field in ("verifying_key", "verifying_key_digest", "r1cs_digest", "n_constraints", "setup"):
        buckets[target][field] = buckets[source][field]
    forged_card = json.dumps(data)
    lying = (exact["fast"] if source == "k4-f4" else exact["bundle"]).model_copy(update={"bucket": target})
    code, out, err = _files(tmp_path, capsys, lying.model_dump_json(), forged_card)
    assert code == 2 and "share one verifying key" in err and "VALID" not in out, err
    with pytest.raises(ValueError, match="share one verifying key"):
        ModelCard.model_validate_json(forged_card)


# -- the monitor's report ------------------------------------------------------------------------------


def test_the_monitor_counts_exact_radii_from_the_buckets(exact):
    from verifier_client.monitor import ModelStats, count_certificate, model_report

    stats = ModelStats()
    card = exact["card"]
    for bundle in (exact["bundle"], exact["fast"]):
        count_certificate(stats, claims_from_signals(bundle.public_signals, card, card.bucket(bundle.bucket)))
    assert model_report(stats)["radius"] == {"exact": 1, "fast": 1}


# -- the prover ----------------------------------------------------------------------------------------


def _fast_certificate(exact):
    from offline_precompute.certify import certify as certify_plaintext

    prover = exact["prover"]
    return certify_plaintext(exact["db"], prover.model, exact["query"], eps_bits=prover.card.eps_scale_bits).certificate


def test_a_fallback_certificate_is_proved_fast_when_the_card_publishes_fast_buckets(exact, monkeypatch):
    prover = exact["prover"]
    fallback = _fast_certificate(exact)
    assert not fallback.radius_is_exact
    monkeypatch.setattr(prover, "certify", lambda query: fallback)
    result = prover.prove(exact["query"])
    verdict = verify_bundle(result.bundle, prover.card)
    assert result.bundle.bucket == "k4-f4" and verdict and verdict.radius == "fast"
    assert result.bundle.eps.numerator == fallback.eps


def test_a_fallback_certificate_without_fast_buckets_is_a_typed_refusal(exact, tmp_path, monkeypatch):
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.proving import ExactRadiusUnavailable, Prover
    from prover_service.service.runner import public_reason
    from prover_service.workspace import ModelWorkspace

    root = tmp_path / "exact-only"
    shutil.copytree(exact["root"], root)
    workspace = ModelWorkspace.open(root)
    card = workspace.card()
    workspace.save_card(card.model_copy(update={"circuits": tuple(b for b in card.circuits
                                                                  if b.shape.radius == "exact")}))
    db = open_database(resolve_store_url(None, root))
    try:
        prover = Prover(workspace, db, radius="exact")
        honest = prover.prove(exact["query"])  # an exact certificate: the published exact bucket
        assert honest.bundle.bucket == "k4-f4-exact" and verify_bundle(honest.bundle, prover.card).radius == "exact"
        fallback = _fast_certificate(exact)
        monkeypatch.setattr(prover, "certify", lambda query: fallback)
        with pytest.raises(ExactRadiusUnavailable, match="publishes no fast bucket") as refused:
            prover.prove(exact["query"])
        assert not any(b.shape.radius == "fast" for b in workspace.card().circuits)  # nothing set up
        assert "exact radii only" in public_reason(refused.value, "job")
    finally:
        db.dispose()


def test_key_setup_of_an_exact_prover_picks_exact_buckets(exact):
    from prover_service.key_setup import setup_keys_for_test_customers

    done = setup_keys_for_test_customers(exact["prover"], 2)
    assert done and all(d.bucket.endswith("-exact") and d.status == "ready" for d in done)


def test_the_prove_command_takes_the_radius(exact, bank, tmp_path, capsys):
    from prover_service.cli import main as fairproof

    out = tmp_path / "bundle.json"
    assert fairproof(["prove", "--model", str(exact["root"]), "--record", _record(tmp_path, bank.records[0]),
                      "--out", str(out), "--radius", "exact"]) == 0
    printed = capsys.readouterr().out
    assert "bucket k4-f4-exact" in printed and "(exact)" in printed
    bundle = json.loads(out.read_text())
    assert bundle["bucket"] == "k4-f4-exact" and bundle["eps"]["numerator"] == exact["plaintext"].eps


def test_settings_and_commands_take_the_radius():
    from prover_service.bucket_keys import parse_bucket
    from prover_service.cli import build_parser
    from prover_service.commands.serve import settings_from
    from prover_service.service.settings import Settings

    assert Settings().radius == "hybrid"  # fast only when asked for (tests/test_radius_defaults.py)
    assert Settings.from_env({"FAIRPROOF_RADIUS": "exact"}).radius == "exact"
    with pytest.raises(ValueError):
        Settings.from_env({"FAIRPROOF_RADIUS": "true"})
    parser = build_parser()
    for argv in (["serve"], ["worker"], ["prove", "--model", "m", "--index", "0", "--out", "o"],
                 ["precompute", "--model", "m"], ["demo"], ["certify", "--model", "m", "--index", "0"]):
        assert parser.parse_args([*argv, "--radius", "exact"]).radius == "exact"
        with pytest.raises(SystemExit):
            parser.parse_args([*argv, "--radius", "exactly"])
    args = parser.parse_args(["serve", "--radius", "exact"])
    assert settings_from(args).radius == "exact"
    assert parse_bucket("k4-f16-exact") == (4, 16, "exact") and parse_bucket("k4-f16") == (4, 16, "fast")


# -- the real service ----------------------------------------------------------------------------------


def test_the_service_with_radius_exact_issues_exact_certificates(exact, bank, tmp_path, capsys):
    """`fairproof serve` with FAIRPROOF_RADIUS=exact (SQLite, one proving thread) on the exact model:
    the customer's `fairproof-verify --url` prints the exact eps, equal to the plaintext one."""
    from bank_fixtures import MODEL
    from tests.service_fixtures import running, serve

    models = tmp_path / "models"
    shutil.copytree(exact["root"], models / "german-4x2-fair")
    service = serve(models, f"sqlite:///{tmp_path / 'service.sqlite'}", tmp_path / "serve.log",
                    FAIRPROOF_RADIUS="exact", FAIRPROOF_SINGLE_PARTY_SETUP="false",
                    FAIRPROOF_LOG_KEY_FILE=str(tmp_path / "log-key" / "log.key"))
    with running(service):
        code = verify_main(["--url", service.url, "--model", MODEL, "--record", _record(tmp_path, bank.records[0]),
                            "--pin-file", str(tmp_path / "pins.json")])
        out, err = capsys.readouterr()
    assert code == 0, err + service.log_tail()
    plaintext = exact["plaintext"]
    assert f"Radius: eps = {radius_decimal(plaintext.eps, plaintext.eps_bits)} (exact:" in out
    assert "k4-f4-exact" in out  # the keys' line names the verified bucket
