"""The customer's side over HTTP: ask the bank's service for a decision and check its certificate.

`ServiceClient` speaks the wire format of `commitments.api`; every failure
(an HTTP error status, the network, a timeout, a response that does not parse)
is one `ServiceError`. `request_certificate` is the whole customer flow:
fetch the card, check it against the pinned commitment, encode the record
locally, submit it, wait for the job, fetch the bundle, and verify that the
proof holds under the card and that the certificate is about this record.
"""
from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from circuits.backends import CurveBackend
from commitments.api import (ADMIN_KEY_HEADER, API_PREFIX, FINISHED, IDEMPOTENCY_KEY_HEADER, JOB_TOKEN_HEADER,
                             DecisionAccepted, DecisionRequest, ErrorBody, JobView, ModelList)
from commitments.attestation import Attestation, AttestationList
from commitments.bundle import CertificateBundle
from commitments.canonical import NonCanonical, parse_strict
from commitments.card import ModelCard
from commitments.claims import Claims
from commitments.log import ConsistencyProof, LogEntries, LogKey, PublishedCard, SignedCheckpoint
from commitments.record import encode_record
from transparency.cosignature import CosignatureVerifier

from .log_check import LogVerdict, check_log_evidence
from .pins import PinCheck, PinStore, normalise_service_url
from .verify import Verdict, card_attestation_problem, verify_bundle

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT = 30.0  # seconds, per HTTP request
# The largest answer read from a service: a bound on the client's memory whatever a service sends. The
# client itself takes about 60 MB; an answer is held once in chunks and once joined, so 16 MB keeps the
# process under 100 MB. A card takes about 10 KB per circuit bucket, a page of log entries well under 1 MB.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
DEFAULT_WAIT = 300.0  # seconds, for a certificate job to finish
# A certificate takes seconds to prove; polling every second keeps a crowd's job reads from taking
# the proving cores (service_load: 0.84 certificates/s with 50 customers polling every 0.25 s, 1.21 at 1 s).
DEFAULT_POLL_INTERVAL = 1.0
MAX_LOST_ANSWERS = 3  # a decision request whose answer was lost is sent again (same idempotency key) this often


def new_idempotency_key() -> str:
    """A fresh random Idempotency-Key for one decision request (it is also the secret of its job token)."""
    return secrets.token_urlsafe(32)


class ServiceError(Exception):
    """The service could not be used: HTTP error `status` (None for network errors,
    timeouts and malformed responses) with a readable `detail`."""

    def __init__(self, status: int | None, detail: str, retry_after: float | None = None):
        super().__init__(f"HTTP {status}: {detail}" if status is not None else detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after  # seconds, from the answer's Retry-After header


class ServiceClient:
    def __init__(self, base_url: str, timeout: float = DEFAULT_TIMEOUT, transport: httpx.BaseTransport | None = None,
                 *, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic):
        try:
            self.base_url = normalise_service_url(base_url)
        except ValueError as exc:
            raise ServiceError(None, str(exc)) from None
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers={"Accept": "application/json"})
        self._sleep, self._clock = sleep, clock

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ServiceClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- endpoints ----------------------------------------------------------------------

    def models(self) -> ModelList:
        return self._call("GET", "/models", ModelList)

    def card(self, model_id: str) -> ModelCard:
        return self._call("GET", f"/models/{_segment(model_id)}/card", ModelCard)

    def attestations(self, model_id: str) -> AttestationList:
        """The auditors' attestations the service holds for the model's cards (the customer checks them)."""
        return self._call("GET", f"/models/{_segment(model_id)}/attestations", AttestationList)

    def publish_attestation(self, model_id: str, attestation: Attestation, admin_key: str | None = None) -> Attestation:
        """POST an auditor's attestation: the service checks it, logs it and serves it to customers."""
        headers = {ADMIN_KEY_HEADER: admin_key} if admin_key else {}
        return self._call("POST", f"/models/{_segment(model_id)}/attestations", Attestation,
                          json=attestation.model_dump(mode="json"), headers=headers)

    def submit(self, model_id: str, record: Mapping[str, Any], delta: float | None = None, *,
               idempotency_key: str | None = None) -> DecisionAccepted:
        """POST the decision request. With `idempotency_key` (`new_idempotency_key()`), an answer lost to the
        network is asked for again with the same key: the service answers the job the first request made,
        never a second one."""
        try:
            optional: dict[str, Any] = {"delta": delta} if delta is not None else {}  # no delta: the field unset
            body = DecisionRequest(record=dict(record), **optional)
        except (ValidationError, TypeError, ValueError) as exc:
            raise ServiceError(None, f"the record cannot be sent: {_first_error(exc)}") from None
        headers = {IDEMPOTENCY_KEY_HEADER: idempotency_key} if idempotency_key else {}
        deadline = self._clock() + DEFAULT_WAIT
        lost = 0
        while True:
            try:
                return self._call("POST", f"/models/{_segment(model_id)}/decisions", DecisionAccepted,
                                  json=body.model_dump(mode="json"), headers=headers)
            except ServiceError as exc:
                # A full queue (429) or a service briefly unavailable (503) says when to come back; an answer
                # lost on the way (no status) is asked for again only under an idempotency key.
                if exc.status is None and idempotency_key and lost < MAX_LOST_ANSWERS:
                    lost += 1
                    self._sleep(min(2.0 ** lost, 10.0))
                    continue
                wait = exc.retry_after
                if exc.status not in (429, 503) or wait is None or self._clock() + wait > deadline:
                    raise
                self._sleep(wait)

    def job(self, job_id: str, token: str) -> JobView:
        """The job, read with its capability token (from the decision's answer)."""
        return self._call("GET", f"/jobs/{_segment(job_id)}", JobView, headers={JOB_TOKEN_HEADER: token})

    def wait(self, job_id: str, token: str, on_progress: Callable[[JobView], None] | None = None,
             poll_interval: float = DEFAULT_POLL_INTERVAL, timeout: float = DEFAULT_WAIT) -> JobView:
        """Poll the job until it has finished (succeeded or failed); ServiceError after `timeout` seconds."""
        deadline = self._clock() + timeout
        while True:
            view = self.job(job_id, token)
            if on_progress is not None:
                on_progress(view)
            if view.status in FINISHED:
                return view
            if self._clock() + poll_interval > deadline:
                raise ServiceError(None, f"job {job_id} did not finish within {timeout:g} s "
                                         f"(last seen {view.status}: {view.stage})")
            self._sleep(poll_interval)

    def certificate(self, certificate_id: str, token: str) -> CertificateBundle:
        """The certificate bundle, read with its job's capability token."""
        return self._call("GET", f"/certificates/{_segment(certificate_id)}", CertificateBundle,
                          headers={JOB_TOKEN_HEADER: token})

    # -- the transparency log --------------------------------------------------------------

    def log_key(self) -> LogKey:
        return self._call("GET", "/log/key", LogKey)

    def checkpoint(self) -> SignedCheckpoint:
        return self._call("GET", "/log/checkpoint", SignedCheckpoint)

    def consistency(self, old_size: int, new_size: int) -> ConsistencyProof:
        return self._call("GET", "/log/proof/consistency", ConsistencyProof,
                          params={"old": old_size, "new": new_size})

    def entries(self, start: int, end: int) -> LogEntries:
        return self._call("GET", "/log/entries", LogEntries, params={"start": start, "end": end})

    def published_card(self, card_digest: str) -> PublishedCard:
        return self._call("GET", f"/log/cards/{_segment(card_digest)}", PublishedCard)

    # -- plumbing -----------------------------------------------------------------------

    def _call(self, method: str, path: str, model: type[M], **kwargs: Any) -> M:
        url = API_PREFIX + path
        try:
            with self._http.stream(method, url, **kwargs) as response:
                content = _read_capped(response, f"{method} {self.base_url}{url}")
        except httpx.TimeoutException:
            raise ServiceError(None, f"{method} {self.base_url}{url}: the service did not answer in time") from None
        except httpx.HTTPError as exc:
            raise ServiceError(None, f"{method} {self.base_url}{url}: service unreachable ({exc})") from None
        if response.is_redirect:
            # Not followed: the pinned service must not be able to send the customer to another one.
            where = response.headers.get("location", "nowhere")[:200]
            raise ServiceError(response.status_code, f"the service redirects {url} to {where}; redirects are not "
                                                     "followed: use the service's own URL")
        if response.is_error:
            raise ServiceError(response.status_code, _error_detail(response, content), _retry_after(response))
        try:
            return parse_strict(model, content, f"{model.__name__} in the response")
        except NonCanonical as exc:
            raise ServiceError(None, f"{method} {url}: malformed {exc}") from None


def _segment(value: str) -> str:
    """One path segment: an id can never reach another endpoint."""
    if not value:
        raise ServiceError(None, "an empty id cannot be requested")
    return quote(value, safe="")


MAX_RETRY_AFTER = 300.0  # seconds: a longer wait asked for is capped, not obeyed blindly


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (delta form only; an HTTP date is ignored), capped at MAX_RETRY_AFTER."""
    value = response.headers.get("retry-after", "").strip()
    return min(float(value), MAX_RETRY_AFTER) if value.isdigit() else None


def _read_capped(response: httpx.Response, what: str) -> bytes:
    """The body, read in chunks and refused past MAX_RESPONSE_BYTES (never buffered whole first)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise ServiceError(None, f"{what}: the response is {int(declared)} bytes, more than the "
                                 f"{MAX_RESPONSE_BYTES} a service answer may be")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise ServiceError(None, f"{what}: the response exceeds the {MAX_RESPONSE_BYTES} bytes a service "
                                     "answer may be")
        chunks.append(chunk)
    return b"".join(chunks)


def _error_detail(response: httpx.Response, content: bytes) -> str:
    """ErrorBody's detail; FastAPI's validation errors (a list) and non-JSON bodies read too."""
    try:
        return ErrorBody.model_validate_json(content).detail[:1000]
    except ValidationError:
        pass
    try:
        detail = json.loads(content).get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, list) and detail:
        return "; ".join(_validation_item(item) for item in detail)
    text = content[:200].decode("utf-8", "replace").strip()
    return text if text else response.reason_phrase or "error without a message"


def _validation_item(item: Any) -> str:
    if isinstance(item, dict):
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
        return f"{where}: {item.get('msg')}" if where else str(item.get("msg"))
    return str(item)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "document"
        return f"{where}: {err.get('msg')}"
    return str(exc)


# -- the whole customer flow ----------------------------------------------------------------


@dataclass(frozen=True)
class CertificateResult:
    verdict: Verdict
    card: ModelCard
    pin: PinCheck
    query: tuple[int, ...]  # the customer's own encoding of the record
    accepted: DecisionAccepted
    bundle: CertificateBundle
    log: LogVerdict | None = None  # set when the certificate verified: its place in the transparency log


def request_certificate(client: ServiceClient, pins: PinStore, model_id: str, record: Mapping[str, Any], *,
                        on_progress: Callable[[JobView], None] | None = None,
                        poll_interval: float = DEFAULT_POLL_INTERVAL, timeout: float = DEFAULT_WAIT,
                        backend: CurveBackend | None = None, trusted_contributors: Iterable[str] = (),
                        accept_card_update: bool = False, log_key: str | None = None,
                        witnesses: Iterable[CosignatureVerifier] = (), delta: float | None = None,
                        trusted_auditors: Sequence[str] = ()) -> CertificateResult:
    """Submit `record` for a decision and check its certificate.

    Raises RecordError (commitments.record) before anything is sent if the
    record does not fit the card, PinMismatch if the service presents another
    model or card than the one pinned (unless `accept_card_update` and the
    commitment is unchanged), ServiceError if the service cannot be used.
    Otherwise returns the verdict: valid only if the proof holds under the
    pinned card, the certificate is about this record's query, and it states
    the decision the service announced, and, when the card proves persistent bias, its box is the one
    asked for (`delta`, standard deviations; the card's default otherwise). A valid certificate must then be in
    the service's transparency log with its card, against a checkpoint signed
    by the pinned log key and consistent with the last one kept, the log this
    service was pinned with; LogRefused (verifier_client.log_check) otherwise.
    With `trusted_auditors`, the card must carry an attestation by one of them
    (served at /v1/models/{id}/attestations); a card such an auditor attested
    may replace the pinned one, and is re-pinned.
    """
    attestations: tuple[Attestation, ...] = ()
    card = _card(client, model_id)
    if trusted_auditors:
        attestations = client.attestations(model_id).attestations
    pin = pins.check(client.base_url, card, accept_update=accept_card_update,  # first: a swapped model matters most
                     attested_by=_attested(card, attestations, trusted_auditors))
    query = encode_record(card, record)  # before sending: a record the card refuses gets no decision
    persistence_delta(card, delta)  # before sending: a box the card cannot prove is not asked for
    accepted = client.submit(model_id, record, delta, idempotency_key=new_idempotency_key())
    if accepted.model_id != model_id:
        raise ServiceError(None, f"submitted to model {model_id!r}, the service answered for {accepted.model_id!r}")
    job = client.wait(accepted.job_id, accepted.job_token, on_progress, poll_interval, timeout)
    if job.status != "succeeded":
        raise ServiceError(None, f"certificate job {job.job_id} failed: {job.error or job.stage}")
    if not job.certificate_id:
        raise ServiceError(None, f"certificate job {job.job_id} succeeded without naming its certificate")
    bundle = client.certificate(job.certificate_id, accepted.job_token)
    if bundle.card_digest != card.digest():
        # Issued under another card (the bank may have set up a new circuit bucket meanwhile): that card
        # must pass the pin like any other, so an unannounced change is refused unless the user accepts it.
        refreshed = _card(client, model_id)
        if refreshed.digest() == bundle.card_digest:
            if trusted_auditors:
                attestations = client.attestations(model_id).attestations
            pin = pins.check(client.base_url, refreshed, accept_update=accept_card_update,
                             attested_by=_attested(refreshed, attestations, trusted_auditors))
            card = refreshed
    try:
        expected = persistence_delta(card, delta)  # under the card the certificate was issued under
    except ServiceError as exc:
        verdict = Verdict(False, (str(exc),), code="customer.box")
    else:
        verdict = check_certificate(bundle, card, query, accepted, backend,
                                    trusted_contributors=trusted_contributors, persistence_delta=expected,
                                    trusted_auditors=trusted_auditors, attestations=attestations)
    log = None
    if verdict:
        log = check_log_evidence(bundle, card, bundle.log, pins, log_key=log_key,
                                 fetch_log_key=lambda: _log_key(client), witnesses=witnesses,
                                 consistency=client.consistency, newest=True, service_url=client.base_url)
    return CertificateResult(verdict, card, pin, query, accepted, bundle, log)


def _attested(card: ModelCard, attestations: Sequence[Attestation], trusted_auditors: Sequence[str]) -> tuple[str, ...]:
    """The trusted auditors whose attestation covers `card` (none: the pin decides alone)."""
    attested = card_attestation_problem(card, card.digest(), attestations, trusted_auditors)
    return () if isinstance(attested, str) else attested


def _log_key(client: ServiceClient) -> str:
    return client.log_key().verifier_key


def _card(client: ServiceClient, model_id: str) -> ModelCard:
    card = client.card(model_id)
    if card.model_id != model_id:
        raise ServiceError(None, f"asked for the card of model {model_id!r}, got the card of {card.model_id!r}")
    return card


def persistence_delta(card: ModelCard, delta: float | None) -> int | None:
    """The persistence box a certificate under `card` must state for a request naming `delta`
    (`ModelCard.persistence_box`, rounded as the service rounds it); ServiceError when the card cannot
    prove it."""
    try:
        return card.persistence_box(delta)
    except ValueError as exc:
        raise ServiceError(None, str(exc)) from None


def check_certificate(bundle: CertificateBundle, card: ModelCard, query: tuple[int, ...],
                      accepted: DecisionAccepted | None = None, backend: CurveBackend | None = None, *,
                      trusted_contributors: Iterable[str] = (), persistence_delta: int | None = None,
                      trusted_auditors: Sequence[str] = (), attestations: Iterable[Attestation] = ()) -> Verdict:
    """verify_bundle for `query`, and the certificate states the decision the service announced and (when
    given) the persistence box `persistence_delta` the customer asked for."""
    if bundle.model_id != card.model_id or bundle.card_digest != card.digest():
        return Verdict(False, ("the certificate was issued under another model card than the pinned one",),
                       code="claims.card-digest")
    verdict = verify_bundle(bundle, card, backend, query=query, trusted_contributors=trusted_contributors,
                            trusted_auditors=trusted_auditors, attestations=attestations)
    if not verdict:
        return verdict
    claims = verdict.claims
    assert claims is not None  # verify_bundle sets them on every valid verdict
    if accepted is not None and claims.decision != accepted.decision:
        return Verdict(False, (f"the service announced decision {accepted.decision_label!r} but the certificate "
                               f"proves {claims.decision_label!r}",), code="customer.announced-decision")
    if persistence_delta is not None:
        problem = box_problem(claims, card, persistence_delta)
        if problem:
            return Verdict(False, (problem,), code="customer.box")
    return verdict


def box_problem(claims: Claims, card: ModelCard, expected: int) -> str | None:
    """Why a valid certificate's persistence bounds are not over the box of half-width `expected` (at the
    card's input scale) the customer asked for, or None."""
    ps = claims.persistence
    if ps is None or ps.delta != expected:
        stated = "no persistence bounds" if ps is None else f"delta {ps.delta} / 2^{ps.scale_bits}"
        return f"the certificate proves {stated}, not the box you asked for (delta {expected} / 2^{card.scale_bits})"
    return None
