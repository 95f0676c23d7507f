"""The conformance corpus (tests/vectors/): reading vectors and asking `fairproof-verify` for a verdict."""
from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent / "vectors"
EXIT_VERDICTS = {0: "VALID", 1: "INVALID", 2: "UNUSABLE"}


@dataclass(frozen=True)
class Vector:
    id: str
    description: str
    card: str  # the card's bytes (as text)
    bundle: str
    options: dict[str, Any] = field(default_factory=dict)
    verdict: str = "INVALID"
    code: str | None = None


def load_vectors(version: str = "v1") -> list[Vector]:
    root = VECTORS / version
    out = []
    for line in (root / "vectors.jsonl").read_text(encoding="utf-8").splitlines():
        v = json.loads(line)
        out.append(Vector(v["id"], v["description"], (root / v["card"]).read_text(encoding="utf-8"), v["bundle"],
                          v["options"], v["expected"]["verdict"], v["expected"]["code"]))
    return out


def cli_arguments(vector: Vector, workdir: Path) -> list[str]:
    """`fairproof-verify` arguments for `vector` in file mode, its documents written under `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "card.json").write_text(vector.card, encoding="utf-8")
    (workdir / "bundle.json").write_text(vector.bundle, encoding="utf-8")
    pins = workdir / "pins.json"
    pins.unlink(missing_ok=True)
    o = vector.options
    argv = [str(workdir / "bundle.json"), "--card", str(workdir / "card.json"), "--pin-file", str(pins), "--json"]
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
    if o.get("pinned_digest"):
        # The page's pinned digest, as a pin file holds it: a customer who pinned that card digest for the model.
        model_id = json.loads(vector.card).get("model_id", "")
        commitment = json.loads(vector.card).get("commitment", "")
        pins.write_text(json.dumps({"version": 1, "pins": [{
            "service": "file", "model_id": model_id, "commitment": commitment,
            "card_digest": o["pinned_digest"].lower(), "first_seen": "2026-11-28T00:00:00+00:00"}]}))
    return argv


def python_verdict(vector: Vector, workdir: Path) -> tuple[str, str | None, str]:
    """(verdict, reason code, reason) of `fairproof-verify` on `vector`."""
    from verifier_client.cli import main as verify_main
    from verifier_client.output import CertificateReport

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = verify_main(cli_arguments(vector, workdir))
    verdict = EXIT_VERDICTS[status]
    if verdict == "UNUSABLE":
        return verdict, None, err.getvalue().strip()
    report = CertificateReport.model_validate_json(out.getvalue())
    return verdict, report.reason_code, report.reason or ""


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
