"""The conformance corpus (tests/vectors/): reading vectors and asking each verifier for its verdict.

`python_verdict` runs `fairproof-verify` in process, `page_verdicts` the verification page's verify.js in node,
`RegistryRunner` the card's Solidity registry in py-evm, and `browser_verdicts` the page in headless Chromium
through its own fields.
"""
from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent / "vectors"
EXIT_VERDICTS = {0: "VALID", 1: "INVALID", 2: "UNUSABLE"}
IMPLEMENTATIONS = ("fairproof-verify", "page", "registry")


@dataclass(frozen=True)
class Vector:
    id: str
    description: str
    card: str  # the card's bytes (as text)
    bundle: str
    options: dict[str, Any] = field(default_factory=dict)
    verdict: str = "INVALID"
    code: str | None = None
    rule: str = ""  # the rule of docs/VERIFYING.md the vector is about (the refused one, or the one it shows holding)
    not_applicable: dict[str, str] = field(default_factory=dict)  # implementation -> why it cannot judge the vector

    def applies_to(self, implementation: str) -> bool:
        return implementation not in self.not_applicable


def load_vectors(version: str = "v1") -> list[Vector]:
    root = VECTORS / version
    out = []
    for line in (root / "vectors.jsonl").read_text(encoding="utf-8").splitlines():
        v = json.loads(line)
        out.append(Vector(v["id"], v["description"], (root / v["card"]).read_text(encoding="utf-8"), v["bundle"],
                          v["options"], v["expected"]["verdict"], v["expected"]["code"], v["rule"],
                          v["not_applicable"]))
    return out


# ------------------------------------------------------------------------ fairproof-verify

def cli_arguments(vector: Vector, workdir: Path) -> list[str]:
    """`fairproof-verify` arguments for `vector` in file mode, its documents written under `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "card.json").write_text(vector.card, encoding="utf-8")
    (workdir / "bundle.json").write_text(vector.bundle, encoding="utf-8")
    pins = workdir / "pins.json"
    pins.unlink(missing_ok=True)
    o = vector.options
    argv = [str(workdir / "bundle.json"), "--card", str(workdir / "card.json"), "--pin-file", str(pins), "--json"]
    if o.get("dataset"):
        (workdir / "dataset.json").write_text(o["dataset"], encoding="utf-8")
        argv += ["--dataset", str(workdir / "dataset.json")]
    if o.get("record"):
        (workdir / "record.json").write_text(o["record"], encoding="utf-8")
        argv += ["--record", str(workdir / "record.json")]
    for h in o.get("trusted_contributors", ()):
        argv += ["--trust-contributor", h]
    for k in o.get("trusted_auditors", ()):
        argv += ["--trust-auditor", k]
    for i, text in enumerate(o.get("attestations", ())):
        (workdir / f"attestation{i}.json").write_text(text, encoding="utf-8")
        argv += ["--attestation", str(workdir / f"attestation{i}.json")]
    for lens in o.get("require_lens", ()):
        argv += ["--require-lens", lens]
    if o.get("delta") is not None:
        argv += ["--delta", repr(float(o["delta"]))]
    if o.get("accept_card_update"):
        argv += ["--accept-card-update"]
    if o.get("log_key"):
        argv += ["--log-key", o["log_key"]]
    for k in o.get("trusted_witnesses", ()):
        argv += ["--trust-witness", k]
    if o.get("require_log"):
        argv += ["--require-log"]
    if o.get("pinned_digest"):
        # The page's pinned digest, as a pin file holds it: a customer who pinned that card digest for the model.
        # With `pinned_card`, the pin keeps that card too (as fairproof-verify pins it), to say what a new one changes.
        card = json.loads(vector.card)
        pin = {"service": "file", "model_id": card.get("model_id", ""), "commitment": card.get("commitment", ""),
               "card_digest": o["pinned_digest"].lower(), "first_seen": "2026-11-28T00:00:00+00:00"}
        if o.get("pinned_card"):
            pin["card_json"] = o["pinned_card"]
        pins.write_text(json.dumps({"version": 1, "pins": [pin]}))
    return argv


def python_verdict(vector: Vector, workdir: Path) -> tuple[str, str | None, str]:
    """(verdict, reason code, reason) of `fairproof-verify` on `vector`."""
    from verifier_client.cli import main as verify_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = verify_main(cli_arguments(vector, workdir))
        except SystemExit as exc:  # argparse refusing an argument: exit status 2
            status = exc.code
    verdict = EXIT_VERDICTS[status]
    if verdict == "UNUSABLE":
        return verdict, None, err.getvalue().strip()
    report = json.loads(out.getvalue())
    return verdict, report.get("reason_code"), report.get("reason") or ""


# ------------------------------------------------------------------------ the page, in node

PAGE_RUNNER = """
const page = process.argv[1] + '/';
const verify = require(page + 'verify.js');
const canonical = require(page + 'canonical.js');
const snarkjs = require(process.argv[2]);
let input = ''; process.stdin.on('data', d => input += d).on('end', async () => {
  const job = JSON.parse(input);
  const env = { snarkjs, schemas: canonical.parseJson(job.schemas) };
  const out = [];
  for (const v of job.vectors) {
    const o = v.options;
    const r = await verify.verifyBundle({ bundleText: v.bundle, cardText: v.card, recordText: o.record || '',
      pinnedDigest: o.pinned_digest || '', trusted: o.trusted_contributors || [],
      trustedAuditors: o.trusted_auditors || [], attestations: o.attestations || [],
      requiredLenses: o.require_lens || [], delta: o.delta === undefined ? null : o.delta }, env);
    out.push({ verdict: r.valid ? 'VALID' : r.kind === 'unusable' ? 'UNUSABLE' : 'INVALID', reason: r.reason || '',
               code: r.valid || r.kind === 'unusable' ? null : (r.code || null) });
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
});
"""


def page_verdicts(vectors: list[Vector]) -> list[dict[str, str]]:
    """The verification page's verdict on each vector, in node (its modules as the page inlines them)."""
    from node_runner import run_node
    from page_cases import _snarkjs_node
    from verifier_client.page import PAGE_DIR, page_schemas

    job = {"schemas": json.dumps(page_schemas()),
           "vectors": [{"bundle": v.bundle, "card": v.card, "options": v.options} for v in vectors]}
    return run_node(PAGE_RUNNER, job, str(PAGE_DIR), str(_snarkjs_node()))


# ------------------------------------------------------------------------ the page, in Chromium

def browser_verdicts(vectors: list[Vector], workdir: Path) -> list[dict[str, str]]:
    """The page a customer opens from disk (`fairproof export-page`, no card bound), in headless Chromium: each
    vector's documents typed or chosen in its fields, Verify pressed, the verdict and code read back."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from browser_fixtures import chromium
    from verifier_client.page import build_page

    workdir.mkdir(parents=True, exist_ok=True)
    page = workdir / "verify.html"
    page.write_text(build_page().html, encoding="utf-8")
    driver = chromium()
    out = []
    try:
        driver.get(page.as_uri())
        for n, v in enumerate(vectors):
            o = v.options
            files = []
            for i, text in enumerate(o.get("attestations", ())):
                files.append(workdir / f"{n}-attestation{i}.json")
                files[-1].write_text(text, encoding="utf-8")
            driver.execute_script(
                "const set = (id, v) => { document.getElementById(id).value = v; };"
                "set('bundle-text', arguments[0]); set('card-text', arguments[1]); set('record-text', arguments[2]);"
                "set('pinned-digest', arguments[3]); set('trusted', arguments[4]); set('trusted-auditors', arguments[5]);"
                "set('attestation-files', '');"
                "for (const box of document.querySelectorAll('input[name=lens]')) box.checked = arguments[6].includes(box.value);",
                v.bundle, v.card, o.get("record", ""), o.get("pinned_digest", ""),
                "\n".join(o.get("trusted_contributors", ())), "\n".join(o.get("trusted_auditors", ())),
                list(o.get("require_lens", ())))
            if files:
                driver.find_element(By.ID, "attestation-files").send_keys("\n".join(str(f) for f in files))
            driver.find_element(By.ID, "verify").click()
            verdict = driver.find_element(By.ID, "verdict")
            WebDriverWait(driver, 120).until(lambda d: verdict.get_attribute("data-verdict") not in ("NONE", "WORKING"))
            out.append({"verdict": verdict.get_attribute("data-verdict"), "code": verdict.get_attribute("data-code") or None,
                        "reason": driver.find_element(By.ID, "report").text})
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, errors  # no script error, no blocked request
    finally:
        driver.quit()
    return out


# ------------------------------------------------------------------------ the registry, in py-evm

def registry_family(code: str | None) -> str | None:
    """What the registry can say of a refusal (it returns a boolean, no reason): the card's keys were refused
    when it was deployed (`key`, K1), the signals before any pairing (`claims`: C, G2), or the pairing (`proof`:
    K2, K3)."""
    if code is None:
        return None
    return {"key": "key", "proof": "proof"}.get(code.split(".")[0], "claims")


class RegistryRunner:
    """The registry of each vector's card (verifier_client/solidity/registry.py), deployed once per card in one py-evm
    chain, asked about the vector's certificate as a caller would submit it: verifyCertificate for a
    whole-statement certificate, verifyPerSliceCertificate for one with slice parts or a per-slice bucket,
    verifyGroupCounts for a proof of group counts."""

    NO_PAIRING = 120_000  # gas: a call refused for its claims costs far less than one pairing

    def __init__(self):
        from test_solidity import Chain

        self.chain = Chain()
        self.registries: dict[str, str | None] = {}  # card text -> registry address (None: no registry)
        self.answers: dict[str, tuple[str, str | None]] = {}  # calldata -> (verdict, family)

    def registry(self, card_text: str) -> str | None:
        from commitments.card import ModelCard
        from test_solidity import DeploymentRefused, deploy_card
        from verifier_client.solidity import KeyRefused

        if card_text not in self.registries:
            try:
                self.registries[card_text] = deploy_card(self.chain, ModelCard.from_json(card_text))[0]
            except (KeyRefused, DeploymentRefused):  # export-solidity or the constructor refused the card's keys
                self.registries[card_text] = None
        return self.registries[card_text]

    def verdict(self, vector: Vector) -> tuple[str, str | None]:
        """("VALID", None) or ("INVALID", family): the registry's answer on the vector's certificate."""
        registry = self.registry(vector.card)
        if registry is None:
            return "INVALID", "key"
        if vector.options.get("dataset"):
            signature, types, args, check = self._group_counts(vector)
        else:
            signature, types, args, check = self._certificate(vector)
        key = json.dumps([registry, signature, args])
        if key not in self.answers:
            self.answers[key] = self._ask(registry, signature, types, args, check)
        return self.answers[key]

    def _certificate(self, vector: Vector):
        from commitments.bundle import CertificateBundle
        from commitments.card import ModelCard
        from test_registry_claims import CERTIFY_TYPES, CHECK, PER_SLICE, PER_SLICE_TYPES
        from test_solidity import CERTIFY
        from verifier_client.solidity import per_slice_calldata, proof_calldata

        bundle, card = CertificateBundle.from_json(vector.bundle), ModelCard.from_json(vector.card)
        bucket = next((b for b in card.circuits if b.bucket == bundle.bucket), None)
        if bundle.parts or (bucket is not None and bucket.shape.per_slice):
            return PER_SLICE, PER_SLICE_TYPES, list(per_slice_calldata(bundle)), None
        signals = [int(v) for v in bundle.public_signals]
        return CERTIFY, CERTIFY_TYPES, [bundle.bucket, *proof_calldata(bundle.proof), signals], \
            (CHECK, [bundle.bucket, signals])

    def _group_counts(self, vector: Vector):
        from commitments.audit import GroupCountsBundle
        from test_registry_claims import CERTIFY_TYPES, CHECK_GROUPS, GROUPS
        from verifier_client.solidity import proof_calldata

        bundle = GroupCountsBundle.from_json(vector.bundle)
        signals = [int(v) for v in bundle.public_signals]
        return GROUPS, CERTIFY_TYPES, [bundle.circuit, *proof_calldata(bundle.proof), signals], \
            (CHECK_GROUPS, [bundle.circuit, signals])

    def _ask(self, registry: str, signature: str, types, args, check) -> tuple[str, str | None]:
        from test_registry_claims import view

        if check is not None and not view(self.chain, registry, check[0], ["string", "uint256[]"], check[1]):
            return "INVALID", "claims"  # the view of the claims alone refuses them
        if check is not None:
            return ("VALID", None) if view(self.chain, registry, signature, types, args) else ("INVALID", "proof")
        if view(self.chain, registry, signature, types, args):
            return "VALID", None
        # Per-slice: refused before any pairing or by one? The refusal's gas says (less its calldata's).
        return "INVALID", "claims" if self._execution_gas(registry, signature, types, args) < self.NO_PAIRING \
            else "proof"

    def _execution_gas(self, registry: str, signature: str, types, args) -> int:
        from eth_abi import encode
        from eth_utils import function_signature_to_4byte_selector

        data = function_signature_to_4byte_selector(signature) + encode(list(types), list(args))
        tx = {"from": self.chain.account, "to": registry, "data": "0x" + data.hex(), "gas": 10_000_000}
        used = self.chain.tester.get_transaction_receipt(self.chain.tester.send_transaction(tx))["gas_used"]
        return used - 21_000 - sum(16 if byte else 4 for byte in data)
