"""`--json` results of the bank's commands: one document per run on stdout, a pydantic model each.

The schemas are published in docs/schemas/ (`python -m prover_service.outputs` rewrites them); progress and
warnings stay on stderr, so stdout is exactly one document. The customer's verifier has its own
(verifier_client.output).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fairness.radius import ProvedRadius

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "docs" / "schemas"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# What eps is: the radius a statement proves (a lower bound: fast, or bound by linear bound propagation; exact:
# the true radius rounded down), or an outcome that is no radius of its own: the whole box (cap), or 0 at a
# counterfactual flip. Not a radius mode: no command or request asks for "cap" or "flip".
EpsKind = Literal[ProvedRadius, "cap", "flip"]


class Radius(_Frozen):
    numerator: int
    scale_bits: int
    decimal: str
    kind: EpsKind


class CertifyOutput(_Frozen):
    command: Literal["certify"] = "certify"
    decision: int
    decision_label: str
    status: Literal["certified", "flip"]
    radius: Radius
    query: list[int]
    seconds: float
    certificate_file: str | None


class ProveOutput(_Frozen):
    command: Literal["prove"] = "prove"
    bundle_file: str
    bucket: str
    decision: int
    decision_label: str
    status: Literal["certified", "counterfactual_flip"]
    radius: Radius
    constraints: int
    online_seconds: float
    certify_seconds: float
    witness_seconds: float
    prove_seconds: float


class Groth16SetupOutput(_Frozen):
    command: Literal["groth16 setup"] = "groth16 setup"
    keydir: str
    constraints: int
    wires: int
    public: int
    backend: str
    seeded: bool  # secrets derived from a seed: forgeable, tests only


class Groth16ContributeOutput(_Frozen):
    command: Literal["groth16 contribute"] = "groth16 contribute"
    keydir: str
    contributions: int


class Groth16ContributionsOutput(_Frozen):
    command: Literal["groth16 verify-contributions"] = "groth16 verify-contributions"
    ok: bool
    reason: str | None = None
    contributions: int = 0
    names: list[str] = []


class Groth16ProveOutput(_Frozen):
    command: Literal["groth16 prove"] = "groth16 prove"
    proof_file: str
    public_file: str
    public_signals: list[str]


class Groth16VerifyOutput(_Frozen):
    command: Literal["groth16 verify"] = "groth16 verify"
    valid: bool
    reason: str | None = None


class PtauOutput(_Frozen):
    command: Literal["groth16 import-ptau"] = "groth16 import-ptau"
    ok: bool
    reason: str | None = None
    file: str
    power: int | None = None
    ceremony_power: int | None = None
    contributions: list[str] = []
    prepared: bool | None = None
    lagrange_checked: str | None = None  # "all powers" or "powers P and P+1"


class DevPtauOutput(_Frozen):
    command: Literal["groth16 dev-ptau"] = "groth16 dev-ptau"
    file: str
    power: int
    size: int
    seconds: float
    next_challenge: str


SCHEMAS: dict[str, type[BaseModel]] = {
    "certify.schema.json": CertifyOutput, "prove.schema.json": ProveOutput,
    "groth16-setup.schema.json": Groth16SetupOutput, "groth16-contribute.schema.json": Groth16ContributeOutput,
    "groth16-verify-contributions.schema.json": Groth16ContributionsOutput,
    "groth16-prove.schema.json": Groth16ProveOutput, "groth16-verify.schema.json": Groth16VerifyOutput,
    "groth16-import-ptau.schema.json": PtauOutput, "groth16-dev-ptau.schema.json": DevPtauOutput,
}


def emit(document: BaseModel) -> None:
    """The one document of a --json run, on stdout."""
    print(document.model_dump_json(indent=1))


from prover_service.commands.json_option import add_json_argument  # noqa: E402,F401 (re-exported)


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    for name, model in SCHEMAS.items():
        (SCHEMA_DIR / name).write_text(schema_text(model))
        print(f"wrote {SCHEMA_DIR / name}", file=sys.stderr)
