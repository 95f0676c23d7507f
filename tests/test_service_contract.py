"""The service's HTTP contract: /openapi.json says what each operation takes, answers and needs, and the real
service (`fairproof serve`) keeps to it.

Schemathesis runs every check it has (status codes, content types, response schemas and headers, schema-valid
data accepted, schema-violating data refused, missing headers, methods and Allow headers, authentication
ignored, resources created then missing, use after free...) in every phase (the description's examples,
coverage, fuzzing, and stateful sequences over the description's links), with the admin key and without, a
bounded number of cases per operation; it must find nothing. Its rejection twins run the same checks on
descriptions made wrong on purpose, and must find what is wrong.

No workers run here, so accepted decisions and precompute jobs stay queued: the contract is tested, not
the prover.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import httpx
import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from tests.service_fixtures import ADMIN_KEY, MODEL_DIRECTORY, copy_models_dir, customer_records, running, serve

MAX_EXAMPLES = 25  # per operation and phase: the whole module takes a minute or two on two cores
STATEFUL_STEPS = 30
RECORD = f"Record_{MODEL_DIRECTORY}"

# Whether these requests are accepted depends on what the service holds (the log's size, which checkpoints it
# signed) or on signatures, which a request's shape cannot show: their descriptions say so under 422, and a
# schema-valid request answered 422 is no finding there. Everywhere else it is.
STATE_DEPENDENT_422 = {
    "GET /v1/log/entries": "beyond the log's size",
    "GET /v1/log/proof/inclusion": "beyond the log's size",
    "GET /v1/log/proof/consistency": "beyond the log's size",
    "POST /v1/log/cosignatures": "cannot be told from the request's shape",
    "POST /v1/models/{model_id}/attestations": "cannot be told from the request's shape",
}
# 413 refuses a body longer than FAIRPROOF_MAX_BODY_BYTES, which no JSON Schema can bound (it counts bytes):
# a refusal, whatever the body's schema says.
NEGATIVE_STATUSES = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
POSITIVE_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]

# Each operation's statuses: what its handler, its dependencies and the body checks can answer, and no other.
ANSWERS = {
    "GET /v1/health": {200},
    "GET /v1/ready": {200, 503},
    "GET /v1/models": {200, 503},
    "GET /v1/models/{model_id}/card": {200, 404, 422, 503},
    "POST /v1/models/{model_id}/decisions": {200, 202, 400, 404, 409, 413, 422, 429, 503},
    "GET /v1/jobs/{job_id}": {200, 401, 404, 422, 503},
    "GET /v1/certificates/{certificate_id}": {200, 401, 404, 422, 503},
    "POST /v1/admin/models": {201, 400, 401, 403, 404, 409, 413, 422, 503},
    "POST /v1/admin/models/{model_id}/card": {200, 201, 401, 403, 404, 409, 422, 503},
    "POST /v1/admin/models/{model_id}/precompute": {202, 400, 401, 403, 404, 413, 422, 429, 503},
    "GET /v1/admin/audit": {200, 401, 403, 422, 503},
    "GET /v1/log/key": {200},
    "GET /v1/log/checkpoint": {200, 503},
    "GET /v1/log/entries": {200, 422, 503},
    "GET /v1/log/proof/inclusion": {200, 404, 422, 503},
    "GET /v1/log/proof/consistency": {200, 422, 503},
    "GET /v1/log/cards/{card_digest}": {200, 404, 422, 503},
    "POST /v1/log/cosignatures": {201, 400, 413, 422, 503},
    "GET /v1/models/{model_id}/attestations": {200, 404, 422, 503},
    "POST /v1/models/{model_id}/attestations": {200, 201, 400, 401, 403, 404, 409, 413, 422, 503},
}


@pytest.fixture(scope="module")
def live(service_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("contract")
    models = copy_models_dir(service_models, root)
    # Queue caps out of reach: the runs' accepted decisions must not turn the direct tests' requests into 429s.
    with running(serve(models, f"sqlite:///{root / 'service.sqlite'}", root / "serve.log", FAIRPROOF_WORKERS="0",
                       FAIRPROOF_MAX_QUEUED_PER_MODEL="100000", FAIRPROOF_MAX_QUEUED_JOBS="100000")) as service:
        yield service


@pytest.fixture(scope="module")
def described(live) -> dict:
    return httpx.get(f"{live.url}/openapi.json", timeout=30).json()


def _operations(doc: dict) -> dict[str, dict]:
    return {f"{method.upper()} {path}": operation for path, item in doc["paths"].items()
            for method, operation in item.items()}


# ------------------------------------------------------------------ schemathesis
@dataclass
class Run:
    operations: int = 0
    cases: dict[str, int] = field(default_factory=dict)  # by phase
    findings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def codes(self, operation: str) -> set[str]:
        return {f.split(" ", 3)[2] for f in self.findings if f.startswith(operation + " ")}


def _config(url: str, *, admin: bool, max_examples: int, phases: tuple[str, ...], seed: int, **extra) -> dict:
    data: dict = {
        "base-url": url, "seed": seed, "workers": 1, "cache": {"enabled": False},
        "generation": {"max-examples": max_examples, "database": "none"},
        "checks": {"enabled": True,  # every check schemathesis has
                   "negative_data_rejection": {"expected-statuses": NEGATIVE_STATUSES},
                   "positive_data_acceptance": {"expected-statuses": POSITIVE_STATUSES}},
        "phases": {**{name: {"enabled": name in phases} for name in ("examples", "coverage", "fuzzing", "stateful")},
                   "stateful": {"enabled": "stateful" in phases, "max-steps": STATEFUL_STEPS}},
        "operations": [{
            "include-path-regex": "^(" + "|".join(
                op.split(" ", 1)[1].replace("{", r"\{").replace("}", r"\}") for op in STATE_DEPENDENT_422) + ")$",
            "checks": {"positive_data_acceptance": {"expected-statuses": [*POSITIVE_STATUSES, "422"]}}}],
        **extra,
    }
    if admin:
        data["auth"] = {"openapi": {"AdminKey": {"api_key": ADMIN_KEY}}}
    return data


def run_schemathesis(url: str, *, admin: bool, doc: dict | None = None, max_examples: int = MAX_EXAMPLES,
                     phases: tuple[str, ...] = ("examples", "coverage", "fuzzing", "stateful"), seed: int = 20240,
                     **extra) -> Run:
    """Every check, in these phases, against the service at `url` described by its own /openapi.json (or by
    `doc`); what it found."""
    config = schemathesis.Config.from_dict(_config(url, admin=admin, max_examples=max_examples, phases=phases,
                                                   seed=seed, **extra))
    schema = (schemathesis.openapi.from_dict(doc, config=config) if doc is not None
              else schemathesis.openapi.from_url(f"{url}/openapi.json", config=config))
    run = Run(operations=len(list(schema.get_all_operations())))
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            run.cases[event.phase.value] = run.cases.get(event.phase.value, 0) + len(event.recorder.cases)
            for checks in event.recorder.checks.values():
                for check in checks:
                    if check.status == Status.FAILURE and check.failure_info is not None:
                        failure = check.failure_info.failure
                        run.findings.append(f"{failure.operation} {failure.code} {failure.title}: "
                                            f"{failure.message[:300]} | {check.failure_info.code_sample[:300]}")
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            run.errors.append(f"{type(event).__name__} {getattr(event, 'label', '')}: {event.info.message[:300]}")
        elif isinstance(event, events.EngineFinished):
            run.findings.extend(f"after the run {f.code} {f.title}: {f.message[:300]}" for f in event.failures)
    run.seconds = time.monotonic() - started
    return run


def test_every_check_is_on():
    """Every check schemathesis has is run, but the response-time one (a performance bound, not a contract)."""
    config = schemathesis.Config.from_dict(_config("http://127.0.0.1", admin=True, max_examples=1, seed=1,
                                                   phases=("examples", "coverage", "fuzzing", "stateful")))
    checks = config.projects.get_default().checks
    names = {"not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance",
             "response_headers_conformance", "positive_data_acceptance", "negative_data_rejection", "use_after_free",
             "ensure_resource_availability", "missing_required_header", "ignored_auth", "object_level_authorization",
             "unsupported_method", "allow_header_conformance"}
    assert {name for name in names if getattr(checks, name).enabled} == names
    assert not checks.max_response_time.enabled


@pytest.mark.parametrize("admin", [True, False], ids=["admin-key", "no-key"])
def test_schemathesis_finds_nothing(live, admin):
    run = run_schemathesis(live.url, admin=admin)
    print(f"\nschemathesis ({'admin key' if admin else 'no key'}): {run.operations} operations, "
          f"{sum(run.cases.values())} cases {run.cases}, {len(run.findings)} findings, {run.seconds:.0f} s")
    assert run.operations == len(ANSWERS)
    assert all(run.cases.get(phase) for phase in ("coverage", "fuzzing", "stateful")), run.cases
    assert not run.errors, run.errors
    assert not run.findings, "\n".join(run.findings)


def _only(doc: dict, path: str) -> dict:
    """The description with this one path (a copy, to be made wrong)."""
    return {**copy.deepcopy(doc), "paths": {path: copy.deepcopy(doc["paths"][path])}}


def test_a_status_the_description_omits_is_found(live, described):
    """Rejection twin: without the key every admin operation answers 401; a description that omits it is
    reported by the same checks."""
    wrong = _only(described, "/v1/admin/audit")
    del wrong["paths"]["/v1/admin/audit"]["get"]["responses"]["401"]
    run = run_schemathesis(live.url, admin=False, doc=wrong, max_examples=5, phases=("coverage", "fuzzing"))
    assert "ST103" in run.codes("GET /v1/admin/audit"), run.findings  # a status the description omits


def test_a_record_range_wider_than_the_model_is_found(live, described):
    """Rejection twin of the record's description: a numeric attribute documented without its maximum lets
    schema-valid records through that the model refuses (422), which the same checks report."""
    wrong = _only(described, "/v1/models/{model_id}/decisions")
    duration = wrong["components"]["schemas"][RECORD]["properties"]["duration"]
    del duration["maximum"]
    duration["type"] = "number"
    duration.pop("pattern")
    run = run_schemathesis(live.url, admin=False, doc=wrong, max_examples=MAX_EXAMPLES, phases=("fuzzing",), seed=7,
                           parameters={"model_id": MODEL_DIRECTORY})
    assert "ST202" in run.codes("POST /v1/models/{model_id}/decisions"), run.findings  # valid data refused


def test_the_service_still_serves_after_the_runs(live):
    assert httpx.get(f"{live.url}/v1/ready", timeout=30).status_code == 200
    assert httpx.get(f"{live.url}/v1/models", timeout=30).json()["models"]


# ------------------------------------------------------------------ the description itself
def test_security_schemes_and_who_needs_which_key(described):
    schemes = described["components"]["securitySchemes"]
    assert schemes["AdminKey"] == {**schemes["AdminKey"], "type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert schemes["JobToken"] == {**schemes["JobToken"], "type": "apiKey", "in": "header", "name": "X-Job-Token"}
    security = {name: operation.get("security") for name, operation in _operations(described).items()}
    for name, needs in security.items():
        if name.split(" ", 1)[1].startswith("/v1/admin/"):
            assert needs == [{"AdminKey": []}], name
        elif name in ("GET /v1/jobs/{job_id}", "GET /v1/certificates/{certificate_id}"):
            assert needs == [{"JobToken": []}, {"AdminKey": []}], name
        elif name == "POST /v1/models/{model_id}/attestations":  # an auditor the deployment names needs no key
            assert needs == [{"AdminKey": []}, {}], name
        else:
            assert needs is None, name
    # The keys are security schemes, not parameters any operation lists.
    assert not [p for operation in _operations(described).values() for p in operation.get("parameters", ())
                if p["name"].lower() in ("x-api-key", "x-job-token")]


def test_each_operation_lists_what_it_can_answer_and_nothing_else(described):
    operations = _operations(described)
    assert set(operations) == set(ANSWERS)
    for name, operation in operations.items():
        assert {int(code) for code in operation["responses"]} == ANSWERS[name], name
        for code, response in operation["responses"].items():
            assert response["description"], (name, code)
            if code in ("429", "503") and name != "GET /v1/ready":
                assert response["headers"]["Retry-After"]["required"] is True, (name, code)
            if int(code) >= 400 and name != "GET /v1/ready":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (name, code)
    for name, reason in STATE_DEPENDENT_422.items():  # the 422 of a schema-valid request is said in words
        assert reason in operations[name]["responses"]["422"]["description"], name
    assert "UTF-8" in operations["POST /v1/models/{model_id}/decisions"]["responses"]["400"]["description"]


def test_typed_answers_and_links(described):
    schemas = described["components"]["schemas"]
    operations = _operations(described)
    audit = operations["GET /v1/admin/audit"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert audit == {"$ref": "#/components/schemas/AuditPage"}
    assert set(schemas["AuditRecord"]["properties"]) >= {"seq", "at", "job_id", "certificate_id", "eps_numerator"}
    result = schemas["JobView"]["properties"]["result"]["anyOf"]
    assert {"$ref": "#/components/schemas/PrecomputeResult"} in result and {"type": "null"} in result
    assert {"$ref": "#/components/schemas/RetryHint"} in result
    decided = operations["POST /v1/models/{model_id}/decisions"]["responses"]
    assert decided["202"]["links"]["GetJob"]["operationId"] == "job_status"
    assert decided["202"]["links"]["GetJob"]["parameters"] == {"job_id": "$response.body#/job_id"}
    assert operations["POST /v1/admin/models"]["responses"]["201"]["links"]["RequestDecision"]["parameters"] == \
        {"model_id": "$response.body#/model_id"}


def test_the_record_of_the_served_model_is_described_from_its_card(live, described):
    card = httpx.get(f"{live.url}/v1/models/{MODEL_DIRECTORY}/card", timeout=30).json()
    record = described["components"]["schemas"][RECORD]
    assert record["required"] == list(record["properties"]) == [f["name"] for f in card["features"]]
    assert record["additionalProperties"] is False
    unit = 1 << card["scale_bits"]
    for column, feature in enumerate(card["features"]):
        described_feature = record["properties"][feature["name"]]
        assert described_feature["x-kind"] == feature["kind"], feature["name"]
        if feature["kind"] == "numeric":
            # Its range is the card's box in the customer's units, to the last double.
            low = feature["mean"] + feature["std"] * card["box_lower"][column] / unit
            high = feature["mean"] + feature["std"] * card["box_upper"][column] / unit
            assert math.isclose(described_feature["minimum"], low, rel_tol=1e-4, abs_tol=feature["std"] / unit)
            assert math.isclose(described_feature["maximum"], high, rel_tol=1e-4, abs_tol=feature["std"] / unit)
            assert described_feature["type"] == ["number", "string"] and described_feature["pattern"]
        else:
            assert set(described_feature["enum"]) <= set(feature["categories"]) and described_feature["enum"]
    body = described["paths"]["/v1/models/{model_id}/decisions"]["post"]["requestBody"]["content"]
    assert body["application/json"]["schema"] == {"$ref": f"#/components/schemas/DecisionRequest_{MODEL_DIRECTORY}"}
    request = described["components"]["schemas"][f"DecisionRequest_{MODEL_DIRECTORY}"]
    assert request["properties"]["record"] == {"$ref": f"#/components/schemas/{RECORD}"}
    assert request["properties"]["delta"]["type"] == "null"  # no persistence lens on this card: no delta
    assert set(request["properties"]["lenses"]["items"]["enum"]) == {"radius", *card_lenses(card)}


def card_lenses(card: dict) -> set[str]:
    return {name for name in ("spread", "persistence") if card.get(name)}


def test_the_records_ranges_are_exactly_the_models_domain(service_models):
    """Each numeric range ends at the last double the service's preprocessing takes into the box, and each
    category listed is one it takes: one double or category beyond, and the service refuses the record."""
    from prover_service.service.errors import BadRequest
    from prover_service.service.record_contract import NumericRule, record_contract
    from prover_service.service.registry import LoadedModel
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(service_models / MODEL_DIRECTORY)
    card = workspace.card()
    loaded = LoadedModel(card.model_id, card.commitment, workspace, workspace.fixed_point())
    contract = record_contract(card)
    base = customer_records(1)[0]

    def decided(record: dict) -> bool:
        try:
            loaded.decide(record)
            return True
        except BadRequest:
            return False

    def described(record: dict) -> bool:
        try:
            contract.check(record)
            return True
        except BadRequest:
            return False

    checked = 0
    for rule, feature in zip(contract.rules, card.features):
        if isinstance(rule, NumericRule):
            values = [rule.minimum, rule.maximum, math.nextafter(rule.minimum, -math.inf),
                      math.nextafter(rule.maximum, math.inf), str(math.ceil(rule.minimum)),
                      str(math.floor(rule.maximum))]
        else:
            values = list(feature.categories)
        for value in values:
            record = {**base, rule.name: value}
            assert described(record) == decided(record), (rule.name, value)
            checked += 1
    assert checked > 60
    assert described(contract.example()) and decided(contract.example())


def test_a_persistence_card_takes_a_delta_up_to_its_widest_feature(bank, tmp_path):
    """The bank's card proves the persistence lens: its decision request takes a delta, described up to the
    widest moved feature of its box, and the service takes exactly that (in process, no workers)."""
    from bank_fixtures import MODEL
    from service_fixtures import bank_app

    key = "contract-test-admin-key-" + "0" * 8
    with bank_app(bank, tmp_path, key) as client:
        request = client.get("/openapi.json").json()["components"]["schemas"][f"DecisionRequest_{MODEL}"]
        delta = request["properties"]["delta"]
        assert delta["type"] == ["number", "null"] and delta["minimum"] == 0
        assert delta["maximum"] == min(100.0, bank.card.persistence_delta_cap / (1 << bank.card.scale_bits))
        assert set(request["properties"]["lenses"]["items"]["enum"]) == {"radius", "spread", "persistence"}
        record = bank.records[0]
        url = f"/v1/models/{MODEL}/decisions"
        for value, status in ((delta["maximum"], 202), (None, 202), (0, 202),
                              (math.nextafter(delta["maximum"], math.inf), 422), (-1e-300, 422)):
            r = client.post(url, json={"record": record, "delta": value, "lenses": ["persistence"]})
            assert r.status_code == status, (value, r.text)


# ------------------------------------------------------------------ what the description promises, asked directly
def test_a_body_that_is_not_utf8_or_nested_too_deeply_is_400(live):
    url = f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions"
    for body in (b'{"record": {"duration": "\xff"}}', b"\xef\xbb\xbf{}", b"[" * 40 + b"]" * 40):
        r = httpx.post(url, content=body, headers={"content-type": "application/json"}, timeout=30)
        assert r.status_code == 400 and set(r.json()) == {"detail"}, (body[:20], r.text)
    r = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 422, r.text  # JSON, but not well-formed: refused like any other malformed request


def test_an_unauthenticated_admin_post_is_401_whatever_its_body(live):
    for path in ("/v1/admin/models", f"/v1/admin/models/{MODEL_DIRECTORY}/precompute"):
        for body in (b"\xff\xfe", b"{not json", b"[" * 100 + b"]" * 100, b'{"directory": 5}'):
            for headers in ({}, {"X-API-Key": "wrong-" + ADMIN_KEY}):
                r = httpx.post(f"{live.url}{path}", content=body, timeout=30,
                               headers={"content-type": "application/json", **headers})
                assert r.status_code == 401, (path, body[:10], headers, r.text)
        # With the key, the same body is refused for what it is.
        r = httpx.post(f"{live.url}{path}", content=b"\xff\xfe", timeout=30,
                       headers={"content-type": "application/json", "X-API-Key": ADMIN_KEY})
        assert r.status_code == 400, r.text


def test_a_job_is_401_without_its_key_whether_it_exists_or_not(live):
    accepted = httpx.post(f"{live.url}/v1/models/{MODEL_DIRECTORY}/decisions",
                          json={"record": customer_records(1)[0]}, timeout=30)
    assert accepted.status_code == 202, accepted.text
    job, token = accepted.json()["job_id"], accepted.json()["job_token"]
    unknown = "00000000-0000-0000-0000-000000000000"
    answers = {}
    for job_id in (job, unknown):
        for headers in ({}, {"X-Job-Token": "x" * 43}, {"X-API-Key": "wrong-" + ADMIN_KEY}):
            r = httpx.get(f"{live.url}/v1/jobs/{job_id}", headers=headers, timeout=30)
            answers[job_id == job, tuple(headers)] = (r.status_code, r.json()["detail"].replace(job_id, "ID"))
    assert {status for status, _ in answers.values()} == {401}
    for (_, headers), answer in answers.items():  # the existing job's refusal is the unknown one's, word for word
        assert answer == answers[False, headers]
    assert httpx.get(f"{live.url}/v1/jobs/{job}", headers={"X-Job-Token": token}, timeout=30).status_code == 200
    assert httpx.get(f"{live.url}/v1/jobs/{job}", headers={"X-API-Key": ADMIN_KEY}, timeout=30).status_code == 200
    assert httpx.get(f"{live.url}/v1/jobs/{unknown}", headers={"X-API-Key": ADMIN_KEY}, timeout=30).status_code == 404


def test_a_method_not_allowed_names_every_method_of_the_path(live):
    r = httpx.delete(f"{live.url}/v1/models/{MODEL_DIRECTORY}/attestations", timeout=30)
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST", r.headers
