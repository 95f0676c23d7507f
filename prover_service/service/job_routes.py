"""A customer's job and certificate, read with the job's token (header X-Job-Token) or the admin key.

    GET /v1/jobs/{job_id}                  -> JobView
    GET /v1/certificates/{certificate_id}  -> CertificateBundle (with its transparency-log evidence)

Without the admin key, a missing or non-matching token is the same 401 whether the job exists or not.
"""
from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response
from pydantic import ValidationError

from commitments.api import API_PREFIX, JobView
from commitments.bundle import CertificateBundle

from .contract import ContractRoute, answers
from .errors import BadRequest, NotFound, Unauthorized, Unavailable
from .jobs import JobRecord
from .state import JobAccess, State

log = logging.getLogger("fairproof.service")

router = APIRouter(tags=["decisions"], route_class=ContractRoute)

UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

_READ_ERRORS = answers(Unauthorized, NotFound, BadRequest, Unavailable, notes={
    401: "neither the job's token (header X-Job-Token) nor the admin key was given that opens it (the same "
         "answer whether it exists or not)",
    404: "(admin key) no such id",
    422: "the id is not a lowercase UUID",
})


def job_view(job: JobRecord) -> JobView:
    fields = dict(
        job_id=job.id, model_id=job.model_id, kind=job.kind, status=job.status, stage=job.stage,
        progress=round(job.progress, 4), attempts=job.attempts,
        created_at=job.created_at.isoformat(timespec="seconds"), updated_at=job.updated_at.isoformat(timespec="seconds"),
        error=job.error, certificate_id=job.certificate_id,
        certificate_url=f"{API_PREFIX}/certificates/{job.certificate_id}" if job.certificate_id else None)
    try:
        return JobView(**fields, result=job.result)
    except ValidationError:  # a result of a shape this version never writes: the job is shown without it
        log.warning("job result not shown: not of a known shape", extra={"job_id": job.id})
        return JobView(**fields)


@router.get("/jobs/{job_id}", response_model=JobView, responses={
    200: {"links": {"GetCertificate": {
        "operationId": "certificate", "parameters": {"certificate_id": "$response.body#/certificate_id"},
        "description": "the certificate, once the job has succeeded (read with the same key)"}}},
    **_READ_ERRORS})
def job_status(job_id: Annotated[str, Path(pattern=UUID)], state: State, access: JobAccess) -> JobView:
    """Where a job is: queued, running (with its stage and progress), succeeded or failed (with why).

    Read with the job's token (header X-Job-Token, from the decision's answer) or the admin key."""
    job = state.ledger.get(job_id)
    access.check(job, f"job {job_id}", state.settings)
    assert job is not None
    return job_view(job)


@router.get("/certificates/{certificate_id}", response_model=CertificateBundle,
            responses={200: {"description": "the certificate bundle"}, **_READ_ERRORS})
def certificate(certificate_id: Annotated[str, Path(pattern=UUID)], state: State, access: JobAccess) -> Response:
    """The certificate bundle as issued, with its and its card's inclusion in the transparency log
    against the newest signed checkpoint (verify it with `fairproof-verify`).

    Read with its job's token (header X-Job-Token) or the admin key."""
    found = state.ledger.certificate(certificate_id)
    job = state.ledger.get(found[2]) if found is not None else None
    access.check(job, f"certificate {certificate_id}", state.settings)
    assert found is not None
    text, leaf_index, _ = found
    if leaf_index is None:  # issued before this service kept a log
        return Response(text, media_type="application/json")
    bundle = CertificateBundle.model_validate_json(text)
    evidence = state.log.evidence(leaf_index, bundle.card_digest)
    return Response(bundle.model_copy(update={"log": evidence}).model_dump_json(), media_type="application/json")
