"""`fairproof demo` end to end, piped, as a newcomer runs it: its customers' certificates state the hybrid radius,
which on its German Credit (4,2) model is the exact one; its development phase-1 file is large enough for every
bucket these customers need under every radius mode; and a second run with `--radius fast` states the fast lower
bound, reusing that phase-1 file.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.claims import bundle_claims
from verifier_client.verify import verify_bundle

pytestmark = pytest.mark.slow  # training, precompute, a development phase 1 and two-party ceremonies: minutes

REPO = Path(__file__).resolve().parents[1]
CUSTOMERS = 2
MODEL_DIR = "german-4x2-fair"


def _demo(workdir: Path, *extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "prover_service.cli", "demo", "--workdir", str(workdir),
                           "--customers", str(CUSTOMERS), *extra], capture_output=True, text=True, timeout=3600,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("demo") / "demo"
    return workdir, _demo(workdir)


def _bundle(workdir: Path, index: int) -> CertificateBundle:
    return CertificateBundle.model_validate_json((workdir / "bundles" / f"customer-{index}.json").read_bytes())


def _card(workdir: Path) -> ModelCard:
    return ModelCard.from_json((workdir / "card.json").read_bytes())


def _plaintext(workdir: Path, radius: str) -> list:
    """Each demo customer's certificate in `radius`, certified here from the demo's own store."""
    from offline_precompute.certify import certify, query_from_index
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(workdir / MODEL_DIR)
    model = workspace.fixed_point()
    db = open_database(resolve_store_url(None, workspace.root))
    try:
        return [certify(db, model, query_from_index(workspace.artifact, model, i), radius=radius,
                        eps_bits=workspace.card().eps_scale_bits).certificate for i in range(CUSTOMERS)]
    finally:
        db.dispose()


def _table_rows(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.split()[:1] in ([str(i)] for i in range(CUSTOMERS))
            and "VALID" in line]


def test_the_customers_certificates_state_the_exact_radius(demo):
    workdir, output = demo
    card = _card(workdir)
    exact = _plaintext(workdir, "exact")
    rows = _table_rows(output)
    assert len(rows) == CUSTOMERS and not any("INVALID" in row for row in rows)
    for index, row in enumerate(rows):
        bundle = _bundle(workdir, index)
        assert verify_bundle(bundle, card).valid
        claims = bundle_claims(bundle, card)
        assert bundle.bucket.endswith("-exact") and claims.eps_exact
        assert bundle.eps.numerator == exact[index].eps  # the true radius, rounded down to 2^-t
        assert f"= {bundle.eps.decimal}" in row  # the table says "=", not ">="
    assert "Radius: eps = " in output and "(exact: the true radius rounded down" in output


def test_the_phase1_file_serves_every_bucket_of_every_mode(demo):
    """The buckets these customers need with the fast and the exact radius, and the bound radius's bucket, are
    each rebuilt here from the card and their circuit powers compared with the phase-1 file's."""
    from circuits.snarkjs.ptau import read_ptau
    from circuits.snarkjs.zkey_new import circuit_power
    from prover_service.bucket_keys import card_shape
    from prover_service.workspace import ModelWorkspace
    from statement import statement_relation
    from statement.adapter import bucket_sizes

    workdir, output = demo
    workspace = ModelWorkspace.open(workdir / MODEL_DIR)
    card, model = workspace.card(), workspace.fixed_point()
    sizes = {(1, 1, "bound")}
    for radius in ("fast", "exact"):
        sizes |= {(*bucket_sizes(c, 4), radius) for c in _plaintext(workdir, radius) if c.slices}
    powers = {f"{k}-{f}-{r}": circuit_power(statement_relation(card_shape(card, model, k, f, r)))
              for k, f, r in sizes}
    phase1 = read_ptau(workdir / "phase1" / "development.ptau").power
    assert phase1 >= max(powers.values()), (phase1, powers)
    assert powers["1-1-bound"] > 16  # the file a fast-only demo made (2^16) would not have served it
    assert "[5/7] phase-2 ceremonies for buckets k1-f1-bound" in output  # hybrid: the bound bucket set up too


def test_fast_only_when_asked_and_on_the_same_phase1_file(demo):
    workdir, _ = demo
    exact = [c.eps for c in _plaintext(workdir, "exact")]
    output = _demo(workdir, "--radius", "fast")
    assert "made by an earlier run" in output.split("[5/7]")[0]  # phase 1 reused, not made again
    card = _card(workdir)
    rows = _table_rows(output)
    assert len(rows) == CUSTOMERS
    for index, row in enumerate(rows):
        bundle = _bundle(workdir, index)
        claims = bundle_claims(bundle, card)
        assert verify_bundle(bundle, card).valid
        assert card.bucket(bundle.bucket).shape.radius == "fast" and not claims.eps_exact
        assert bundle.eps.numerator <= exact[index] and f">= {bundle.eps.decimal}" in row
