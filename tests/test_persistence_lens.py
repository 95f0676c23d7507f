"""The persistence lens on the customer's side: a real bank's bundles carry it, the claims follow from the
signals and the card alone, and every field a dishonest bank could bend is refused."""
from __future__ import annotations

import dataclasses

import pytest

from bank_fixtures import forged
from circuits.field import R
from commitments.bundle import PersistentBias
from commitments.card import ModelCard
from commitments.claims import ClaimError, bundle_claims, claims_from_signals
from fairness.persistence import proved_bounds
from verifier_client.verify import lens_problem, persistence_summary, verify_bundle


def _lens_start(card):
    return 5 + card.architecture.n_inputs + card.n_spread_signals


def _signals_with(bundle, card, position, value):
    signals = list(bundle.public_signals)
    signals[_lens_start(card) + position] = str(value % R)
    return signals


def test_card_states_the_lens(bank):
    lens = bank.card.persistence
    assert lens is not None and bank.card.lenses == ("radius", "spread", "persistence")
    assert lens.favourable_class == bank.card.spread.favourable_class
    model = bank.prover.model
    numeric = bank.prover.workspace.artifact.numeric_columns
    assert lens.columns == tuple(j for j in numeric if model.box_lower[j] < model.box_upper[j]) and lens.columns
    assert lens.default_delta == 1 << (bank.card.scale_bits - 2)  # 0.25 standard deviations, exactly


def test_bank_bundles_carry_the_plaintext_bounds(bank):
    """Each bundle states the plaintext bounds of its bucket's slopes: optimised (the LP's) on the buckets a new
    card sets up, never looser than CROWN's fixed ones and at most the triangle LP's optimum away from it."""
    card, model = bank.card, bank.prover.model
    lens = card.persistence
    for bundle in bank.bundles:
        claims = bundle_claims(bundle, card)
        ps = claims.persistence
        assert ps is not None and bundle.persistence == ps.readable()
        assert ps.delta == lens.default_delta
        alpha_bits = card.bucket(bundle.bucket).shape.alpha_bits
        assert alpha_bits  # the buckets of a card made today optimise their slopes
        assert list(ps.bounds) == proved_bounds(model, bundle.query, lens.favourable_class, lens.columns, ps.delta,
                                                alpha_bits=alpha_bits)
        crown = proved_bounds(model, bundle.query, lens.favourable_class, lens.columns, ps.delta)
        assert all(c_lo <= lo <= hi <= c_hi for (lo, hi), (c_lo, c_hi) in zip(ps.bounds, crown))
        assert sum(ps.own) == len(card.sensitive)
        assert verify_bundle(bundle, card).valid


def test_claims_refuse_persistence_signals_no_proof_can_have(bank):
    card, bundle = bank.card, bank.bundles[0]
    bucket = card.bucket(bundle.bucket)
    claims = bundle_claims(bundle, card).persistence
    own = claims.own.index(True)
    other = claims.own.index(False)
    lo, hi = claims.bounds[other]
    cases = [
        (_signals_with(bundle, card, 0, card.persistence_delta_cap + 1), "delta"),
        (_signals_with(bundle, card, 0, -1), "delta"),  # -1 in the field
        (_signals_with(bundle, card, 1 + 2 * other, R // 2), "no integer a proof can state"),
        (_signals_with(bundle, card, 1 + 2 * other, hi + 1), "lower above upper"),
    ]
    for lower, upper in ((1, 5), (-5, -1)):  # the customer's own value: g is 0 there
        signals = _signals_with(bundle, card, 1 + 2 * own, lower)
        signals[_lens_start(card) + 2 + 2 * own] = str(upper % R)
        cases.append((signals, "do not contain 0"))
    assert lo <= hi
    for signals, words in cases:
        with pytest.raises(ClaimError, match=words):
            claims_from_signals(signals, card, bucket)
    noncanonical = list(bundle.public_signals)
    noncanonical[_lens_start(card) + 1] = str(int(noncanonical[_lens_start(card) + 1]) + R)
    with pytest.raises(ClaimError, match="public signal"):
        claims_from_signals(noncanonical, card, bucket)


def test_readable_persistence_must_match_the_signals(bank):
    card, bundle = bank.card, bank.bundles[0]
    ps = bundle.persistence
    i = next(k for k, b in enumerate(ps.bounds) if b.status != "own")
    b = ps.bounds[i]
    other_status = "favoured" if b.status != "favoured" else "disfavoured"
    lies = [
        ps.model_copy(update={"delta": ps.delta + 1}),
        ps.model_copy(update={"bounds": ps.bounds[:i] + (b.model_copy(update={"status": other_status}),)
                              + ps.bounds[i + 1:]}),
        ps.model_copy(update={"bounds": ps.bounds[:i] + (b.model_copy(update={"lower": b.lower - 1}),)
                              + ps.bounds[i + 1:]}),
        ps.model_copy(update={"bounds": ps.bounds[:i] + (b.model_copy(update={"label": "someone else"}),)
                              + ps.bounds[i + 1:]}),
        ps.model_copy(update={"bounds": tuple(reversed(ps.bounds))}),
    ]
    for lie in lies:
        assert lie != ps
        with pytest.raises(ClaimError, match="persistence"):
            bundle_claims(bundle.model_copy(update={"persistence": lie}), card)
    with pytest.raises(ClaimError, match="persistence"):
        bundle_claims(bundle.model_copy(update={"persistence": None}), card)
    assert isinstance(ps, PersistentBias)


@pytest.mark.parametrize("change", ["bound", "delta", "status to favoured"])
def test_forged_persistence_signals_fail_the_pairing(bank, change):
    """The bank edits what the lens says, the readable field and the signals agreeing: only the proof can
    catch it, and it does."""
    card, bundle = bank.card, bank.bundles[0]
    ps = bundle.persistence
    i = next(k for k, b in enumerate(ps.bounds) if b.status != "own")
    b = ps.bounds[i]
    if change == "bound":
        lie = ps.model_copy(update={"bounds": ps.bounds[:i] + (b.model_copy(update={"upper": b.upper + 1}),)
                                    + ps.bounds[i + 1:]})
    elif change == "delta":
        lie = ps.model_copy(update={"delta": ps.delta * 2})
    else:
        lie = ps.model_copy(update={"bounds": ps.bounds[:i] + (b.model_copy(update={
            "lower": 1, "upper": max(b.upper, 1), "status": "favoured"}),) + ps.bounds[i + 1:]})
    bent = forged(bundle, persistence=lie.model_dump())
    assert bundle_claims(bent, card).persistence.readable() == lie  # well formed
    verdict = verify_bundle(bent, card)
    assert not verdict.valid and "proof" in verdict.reasons[0]


@pytest.mark.parametrize("lie", ["lens dropped", "other columns", "other favourable class", "other default delta"])
def test_a_card_republished_with_another_lens_refuses_the_bundles(bank, lie):
    """Another card is another digest (the customer pins it); and a card without the lens has fewer
    signals than the bucket's proofs."""
    card, bundle = bank.card, bank.bundles[0]
    lens = card.persistence
    if lie == "lens dropped":
        update = {"persistence": None}
    elif lie == "other columns":
        update = {"persistence": lens.model_copy(update={"columns": lens.columns[1:]})}
    elif lie == "other favourable class":
        update = {"persistence": lens.model_copy(update={"favourable_class": 1 - lens.favourable_class}),
                  "spread": card.spread.model_copy(update={"favourable_class": 1 - lens.favourable_class})}
    else:
        update = {"persistence": lens.model_copy(update={"default_delta": lens.default_delta + 1})}
    other = ModelCard.model_validate_json(card.model_copy(update=update).model_dump_json())
    with pytest.raises(ClaimError, match="another model card"):
        bundle_claims(bundle, other)
    if lie == "lens dropped":
        with pytest.raises(ClaimError, match="public inputs"):
            claims_from_signals(bundle.public_signals, other, other.bucket(bundle.bucket))


def test_card_refuses_a_lens_that_cannot_be_proved(bank):
    card = bank.card
    lens = card.persistence
    sensitive = card.sensitive[0].column
    for update, words in (
        ({"columns": (sensitive,)}, "non-sensitive"),
        ({"columns": tuple(reversed(lens.columns))}, "in order"),
        ({"default_delta": card.persistence_delta_cap + 1}, "default delta"),
        ({"favourable_class": 1 - lens.favourable_class}, "same favourable class"),
    ):
        data = card.model_copy(update={"persistence": lens.model_copy(update=update)}).model_dump_json()
        with pytest.raises(ValueError, match=words):
            ModelCard.model_validate_json(data)


def test_verifier_prints_the_persistence(bank, tmp_path, capsys):
    from verifier_client.cli import main as verify_main

    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bank.bundles[0].model_dump_json())
    c.write_text(bank.card.canonical_json())
    assert verify_main([str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json"),
                        "--require-lens", "persistence"]) == 0
    out = capsys.readouterr().out
    assert "Persistent bias" in out and "standard deviations" in out
    claims = bundle_claims(bank.bundles[0], bank.card)
    text = persistence_summary(claims, bank.card)
    assert text in out
    for i, own in enumerate(claims.persistence.own):
        assert (f"= {claims.persistence.labels[i]}:" in text) != own


def test_a_customer_who_requires_persistence_refuses_a_certificate_without_it(bank):
    claims = bundle_claims(bank.bundles[0], bank.card)
    assert lens_problem(claims, ["radius", "spread", "persistence"]) is None
    assert "persistent bias" in lens_problem(dataclasses.replace(claims, persistence=None), ["persistence"])


# -- asking the bank's service for a box ---------------------------------------------------------------


def test_service_mode_refuses_a_certificate_over_another_box(bank, tmp_path, capsys):
    """The customer asks for delta 0.5; the bank answers with its (valid) certificate for the default 0.25."""
    import json

    from bank_fixtures import FakeService, run_cli

    service = FakeService(bank.card, bank.bundles[0])
    assert run_cli(service, bank.records[0], tmp_path, "--delta", "0.5") == 1
    assert "not the box you asked for" in capsys.readouterr().err
    posted = [json.loads(r.content) for r in service.requests if r.method == "POST"]
    assert [p["delta"] for p in posted] == [0.5]
    honest = FakeService(bank.card, bank.bundles[0])
    assert run_cli(honest, bank.records[0], tmp_path, "--delta", "0.25") == 0
    assert "Persistent bias" in capsys.readouterr().out
    assert run_cli(FakeService(bank.card, bank.bundles[0]), bank.records[0], tmp_path) == 0  # the default box


def test_file_mode_checks_the_box_asked_for(bank, tmp_path, capsys):
    from verifier_client.cli import main as verify_main

    b, c = tmp_path / "bundle.json", tmp_path / "card.json"
    b.write_text(bank.bundles[0].model_dump_json())
    c.write_text(bank.card.canonical_json())
    base = [str(b), "--card", str(c), "--pin-file", str(tmp_path / "pins.json")]
    assert verify_main([*base, "--delta", "0.25"]) == 0
    assert verify_main([*base, "--delta", "0.26"]) == 1
    assert "not the box you asked for" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse refuses a box no card can prove
        verify_main([*base, "--delta", str(10 ** 6)])


def test_box_rounding_matches_the_service(bank):
    from prover_service.service.app import _persistence_delta
    from verifier_client.service_client import persistence_delta

    card = bank.card
    for delta in (0.0, 0.1, 0.25, 1 / 3, 2.0):
        assert _persistence_delta(card, "m", delta) == {"persistence_delta": persistence_delta(card, delta)}
    assert persistence_delta(card, None) == card.persistence.default_delta


def test_a_requested_box_is_rounded_up_and_bounded_by_the_card(bank):
    from commitments.card import scaled_delta

    card = bank.card
    one = 1 << card.scale_bits
    assert card.persistence_box(None) == card.persistence.default_delta
    assert card.persistence_box(0) == 0 and card.persistence_box(0.5) == one // 2
    assert card.persistence_box(1 / 3) == one // 3 + 1  # up: the box proved contains the one asked for
    for bad in (-0.1, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(ValueError, match="delta"):
            scaled_delta(bad, card.scale_bits)
    with pytest.raises(ValueError, match="exceeds"):
        card.persistence_box(card.persistence_delta_cap / one + 1)
    bare = card.model_copy(update={"persistence": None})
    assert bare.persistence_box(None) is None
    with pytest.raises(ValueError, match="does not prove persistent bias"):
        bare.persistence_box(0.25)


def test_commit_refuses_a_lens_it_cannot_prove(bank, tmp_path_factory, capsys):
    from bank_fixtures import copy_of_bank_model
    from prover_service.cli import main as fairproof

    root, _, store = copy_of_bank_model(bank, tmp_path_factory, "commit-persistence")
    store.dispose()
    for delta in ("-1", "1e6", "nan"):
        code = fairproof(["commit", "--model", str(root), "--force", "--persistence", delta])
        err = capsys.readouterr().err
        assert code != 0 and "Traceback" not in err and "delta" in err, (delta, err)
    assert fairproof(["commit", "--model", str(root), "--force", "--persistence", "0.5"]) == 0
    assert "lens: persistent bias over" in capsys.readouterr().out


def test_the_prover_refuses_a_scaled_box_the_card_cannot_prove(bank):
    from fairness.errors import ModelError

    card = bank.card
    assert bank.prover.persistence_delta(None) == card.persistence.default_delta
    assert bank.prover.persistence_delta(card.persistence_delta_cap) == card.persistence_delta_cap
    for bad in (-1, card.persistence_delta_cap + 1, True, 0.5):
        with pytest.raises(ModelError, match="delta"):
            bank.prover.persistence_delta(bad)
