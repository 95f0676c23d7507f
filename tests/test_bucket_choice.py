"""Which circuit bucket proves a certificate: the card's published buckets first, then the prover's ladder."""
from __future__ import annotations

import dataclasses

import pytest

from fairness.errors import ModelError
from statement.adapter import bucket_level, required_slots


def test_bucket_levels_climb_by_the_growth_from_four():
    assert [bucket_level(n, 4) for n in (0, 1, 4, 5, 16, 17, 65)] == [4, 4, 4, 16, 16, 64, 256]
    assert [bucket_level(n, 2) for n in (0, 1, 4, 5, 8, 9, 330, 638)] == [4, 4, 4, 8, 8, 16, 512, 1024]
    assert bucket_level(17) == 64  # powers of four unless asked otherwise


@pytest.mark.parametrize("growth", [0, 1, 3, 8, -2])
def test_other_growths_are_refused(growth):
    with pytest.raises(ValueError, match="bucket growth"):
        bucket_level(10, growth)


def _with_buckets(prover, buckets):
    """The prover as it would be with a card publishing `buckets` ((K, F, radius, constraints) each)."""
    template = prover.card.circuits[0]
    circuits = tuple(template.model_copy(update={
        "bucket": f"k{k}-f{f}" + ("-exact" if radius == "exact" else ""), "n_constraints": n,
        "shape": template.shape.model_copy(update={"region_slots": k, "farkas_slots": f, "radius": radius})})
        for k, f, radius, n in buckets)
    other = dataclasses.replace(prover)
    other.card = prover.card.model_copy(update={"circuits": circuits})
    return other


@pytest.fixture(scope="module")
def needed(bank):
    from offline_precompute.certify import query_from_record

    certificate = bank.prover.certify(query_from_record(bank.prover.workspace.artifact, bank.prover.model,
                                                        bank.records[0]))
    return certificate, required_slots(certificate)


def test_the_published_bucket_with_fewest_constraints_that_holds_the_certificate_is_chosen(bank, needed):
    certificate, (k, f) = needed
    prover = _with_buckets(bank.prover, [
        (k + 60, f + 60, "fast", 900_000),
        (k + 4, f + 20, "fast", 300_000),  # holds it, fewest constraints among those that do
        (k, f + 100, "fast", 400_000),
        (max(k - 1, 1), f, "fast", 10),  # too few region slots
        (k, max(f - 1, 1), "fast", 10) if f > 1 else (k, f, "exact", 10),  # too few pool slots / other statement
        (k + 4, f + 20, "exact", 5),  # another statement: never proves a fast certificate
    ])
    shape = prover.shape_for_certificate(certificate)
    assert (shape.region_slots, shape.farkas_slots, shape.radius) == (k + 4, f + 20, "fast")


def test_without_a_published_bucket_that_holds_it_the_ladder_decides(bank, needed):
    certificate, (k, f) = needed
    small = [(max(k - 1, 1), 1024, "fast", 10)] if k > 1 else []
    for growth in (2, 4):
        prover = _with_buckets(dataclasses.replace(bank.prover, bucket_growth=growth), small)
        shape = prover.shape_for_certificate(certificate)
        assert (shape.region_slots, shape.farkas_slots) == (bucket_level(k, growth), bucket_level(f, growth))


@pytest.mark.parametrize("growth", [3, 1, "2"])
def test_a_prover_refuses_another_growth(bank, growth):
    with pytest.raises(ModelError, match="bucket growth"):
        dataclasses.replace(bank.prover, bucket_growth=growth)


def test_settings_and_commands_take_the_bucket_growth():
    from prover_service.cli import build_parser
    from prover_service.commands.serve import settings_from
    from prover_service.service.settings import Settings

    assert Settings().bucket_growth == 4
    assert Settings.from_env({"FAIRPROOF_BUCKET_GROWTH": "2"}).bucket_growth == 2
    for bad in ("3", "two", "2.0", "-2"):
        with pytest.raises(ValueError):
            Settings.from_env({"FAIRPROOF_BUCKET_GROWTH": bad})
    parser = build_parser()
    for argv in (["serve"], ["worker"], ["prove", "--model", "m", "--index", "0", "--out", "o"],
                 ["precompute", "--model", "m"], ["demo"]):
        assert parser.parse_args([*argv, "--bucket-growth", "2"]).bucket_growth == 2
        with pytest.raises(SystemExit):
            parser.parse_args([*argv, "--bucket-growth", "3"])
    assert settings_from(parser.parse_args(["serve", "--bucket-growth", "2"])).bucket_growth == 2
    assert settings_from(parser.parse_args(["serve"])).bucket_growth == 4
