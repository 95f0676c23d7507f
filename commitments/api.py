"""The service's public wire format: what the bank's API and a customer exchange.

The prover service answers with these models and the verifier client parses
them, so both sides agree on one definition. Model cards and certificate
bundles have their own modules (`card`, `bundle`); these are the envelopes
around them. Depends on pydantic and the radius vocabulary (fairness.radius) only: the verifier client
imports it.

    GET  /v1/models                         -> ModelList
    GET  /v1/models/{model_id}/card         -> ModelCard
    POST /v1/models/{model_id}/decisions    DecisionRequest -> DecisionAccepted (202)
    GET  /v1/jobs/{job_id}                  -> JobView
    GET  /v1/certificates/{certificate_id}  -> CertificateBundle
    errors                                  -> ErrorBody with a 4xx/5xx status
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from fairness.radius import RADIUS_MODES as RADIUS_MODES  # the wire format's modes, for its readers
from fairness.radius import RADIUS_WORDS

API_PREFIX = "/v1"

JobStatus = Literal["queued", "running", "succeeded", "failed"]
JobKind = Literal["certificate", "precompute", "key_setup"]
FINISHED: frozenset[str] = frozenset({"succeeded", "failed"})

# A customer record: raw attribute name -> raw value (number or category label).
RecordValue = str | int | float | bool | None


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorBody(_Message):
    detail: str


# What a certificate can prove beside the decision (a card's `lenses` say which it does).
Lens = Literal["radius", "spread", "persistence"]


class ModelSummary(_Message):
    model_id: str
    description: str = ""
    dataset: str
    commitment: str
    card_digest: str
    n_inputs: int
    hidden_sizes: tuple[int, ...]
    sensitive_features: tuple[str, ...]
    buckets: tuple[str, ...] = ()
    card_url: str
    lenses: tuple[Lens, ...] = ("radius",)


class ModelList(_Message):
    models: tuple[ModelSummary, ...]


# How a certificate states its radius (a bundle's bucket says which statement proved it): fairness.radius.
RADIUS_DESCRIPTION = ("how the certificate states its radius: hybrid (the exact radius when region enumeration "
                      "finishes within the service's budget, else the bound radius), exact (the true radius rounded "
                      "down, proved minimal by a counterexample), bound (linear bound propagation: a lower bound) or "
                      "fast (a projection-distance lower bound); default: the service's (FAIRPROOF_RADIUS); any other "
                      "word is refused (400)")


class DecisionRequest(_Message):
    """One customer's record, attribute by attribute, as the card's `features` name them."""

    record: dict[str, RecordValue] = Field(
        description="raw attribute values: numbers for numeric features, category codes for categorical ones",
        examples=[{"duration": 12, "purpose": "A43"}],
    )
    lenses: tuple[Lens, ...] = Field(
        default=(), description="lenses the certificate must prove (refused when the model's card does not prove "
                                "one); every certificate proves all of its card's lenses")
    delta: float | None = Field(
        default=None, ge=0, le=100, allow_inf_nan=False,
        description="persistence lens: how far the numeric features move, in standard deviations, for you and "
                    "for each counterfactual alike (default: the card's; refused when the card has no such lens)")
    # Any text is read here so that a word that is no mode is refused (400) with the modes named.
    radius: str | None = Field(
        default=None, json_schema_extra={"enum": [*RADIUS_WORDS, None]},
        description=RADIUS_DESCRIPTION)


# The header that carries a job's capability token (returned once, in DecisionAccepted.job_token).
JOB_TOKEN_HEADER = "X-Job-Token"
ADMIN_KEY_HEADER = "X-API-Key"  # the operator's key, on admin endpoints
# A client-chosen key (16-128 of A-Z a-z 0-9 . _ : -, random: it is the job token's secret) that makes a decision
# request idempotent: the same key and record again answer the same job and token, never a second job.
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9._:-]{16,128}$"


class DecisionAccepted(_Message):
    job_id: str
    model_id: str
    decision: int
    decision_label: str
    status: JobStatus
    job_url: str
    certificate_url: str | None = None  # set once the certificate exists
    # Reads the job and its certificate (header X-Job-Token): they hold the customer's encoded record,
    # so the job's id alone does not. Shown only here, to whoever submitted the record.
    job_token: str


class BucketSetupResult(_Message):
    """A circuit bucket a precompute job set up (or found set up) for the test customers."""

    bucket: str
    n_constraints: int = Field(ge=0)
    seconds: float = Field(ge=0)  # 0 when its keys existed already
    status: Literal["ready", "needs a ceremony"] = "ready"


class PrecomputeResult(_Message):
    """A finished precompute job: the regions enumerated into the store, and the buckets set up."""

    regions: int = Field(ge=0)
    slices: int = Field(ge=0)
    facets: int = Field(ge=0)
    lps: int = Field(ge=0)
    seconds: float = Field(ge=0)
    buckets: tuple[BucketSetupResult, ...] = ()


class KeySetupResult(_Message):
    """A finished key setup job (queued when a certificate needed a bucket without keys)."""

    bucket: str
    constraints: int = Field(ge=0)
    seconds: float = Field(ge=0)


class RetryHint(_Message):
    """A certificate job that failed for want of its bucket's keys: ask again after `retry_after_seconds`,
    once the key setup job `key_setup_job_id` has set them up."""

    retry_after_seconds: int = Field(ge=0)
    key_setup_job_id: str


JobResult = PrecomputeResult | KeySetupResult | RetryHint


class JobView(_Message):
    job_id: str
    model_id: str
    kind: JobKind
    status: JobStatus
    stage: str  # what the worker is doing now, in words
    progress: float = Field(ge=0.0, le=1.0)
    attempts: int = Field(ge=0)
    created_at: str
    updated_at: str
    error: str | None = None
    certificate_id: str | None = None
    certificate_url: str | None = None
    result: JobResult | None = None  # what a finished job computed, or how to retry a failed one


class RegisterModel(_Message):
    """Register a committed model directory found under the service's models directory."""

    directory: str = Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                           description="name of the model directory inside FAIRPROOF_MODELS_DIR")


def _whole_number(value: object) -> object:
    """An integer as JSON Schema counts one: 5 or 5.0 (the same JSON number), never "5", 5.5 or true."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# An integer field: JSON Schema's "integer" (5 and 5.0 alike), with no text or boolean read as one.
JsonInteger = Annotated[int, BeforeValidator(_whole_number), Field(strict=True)]


class PrecomputeRequest(_Message):
    key_queries: JsonInteger = Field(default=0, ge=0, le=1000,
                                     description="also set up the circuit keys the first N test customers need "
                                                 "(an integer: not \"5\", 5.5 or true)")


class Health(_Message):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = Field(default_factory=dict)
