"""503 only for outages: a value out of a column's range, or refused by the database, is the request's fault.

`GET /v1/admin/audit?after=2147483648` was answered 503 "database unavailable" with Retry-After (AuditEntry.seq is
a 32-bit column and every DBAPIError was an outage), so a client retried forever. Integer query parameters are now
bounded by their columns (a 422 before the database sees them); data and integrity errors the database raises are
4xx in plain words; connection and operational errors stay 503 with Retry-After.
"""
from __future__ import annotations

import psycopg
import psycopg_pool
import pytest
from sqlalchemy import exc as sa

ADMIN = {"X-API-Key": "worker-errors-admin-key"}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from fastapi.testclient import TestClient

    from prover_service.service.app import create_app
    from prover_service.service.settings import Settings

    root = tmp_path_factory.mktemp("worker-errors")
    (root / "models").mkdir()
    app = create_app(Settings(models_dir=root / "models", workers=0, admin_api_key=ADMIN["X-API-Key"],
                              database_url=f"sqlite:///{root / 'service.db'}", log_key_file=root / "log.key"))

    failures = {
        "out-of-range": sa.DataError("SELECT ... WHERE seq > %(after)s::INTEGER", {"after": 2**31},
                                     psycopg.errors.NumericValueOutOfRange("integer out of range")),
        "duplicate": sa.IntegrityError("INSERT ...", {}, psycopg.errors.UniqueViolation("duplicate key value")),
        "server-gone": sa.OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed the connection")),
        "disk-full": sa.OperationalError("INSERT ...", {}, psycopg.errors.DiskFull("could not extend file")),
        "interface": sa.InterfaceError("SELECT 1", {}, psycopg.InterfaceError("connection already closed")),
        "pool-timeout": sa.TimeoutError("QueuePool limit of size 5 overflow 10 reached"),
        "bug": sa.ProgrammingError("SELEC 1", {}, psycopg.errors.SyntaxError("syntax error at or near SELEC")),
    }

    @app.get("/test-only/raise/{kind}")
    def raise_(kind: str):
        raise failures[kind]

    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("query", [
    {"after": 2**31}, {"after": 2**63}, {"after": 10**30}, {"after": -1}, {"limit": 0}, {"limit": 1001},
    {"limit": 2**31}, {"after": "1e3"},
])
def test_an_out_of_range_audit_cursor_is_422_before_the_database_sees_it(client, query):
    r = client.get("/v1/admin/audit", params=query, headers=ADMIN)
    assert r.status_code == 422, r.text
    assert "retry-after" not in r.headers
    assert r.json()["detail"].startswith("invalid request: query.")


def test_the_largest_audit_cursor_its_column_holds_is_answered(client):
    r = client.get("/v1/admin/audit", params={"after": 2**31 - 1, "limit": 1000}, headers=ADMIN)
    assert r.status_code == 200 and r.json() == {"entries": []}, r.text


@pytest.mark.parametrize("query", [
    {"start": 2**63, "end": 2**63}, {"start": -1, "end": 1}, {"start": 0, "end": 0},
])
def test_out_of_range_log_positions_are_422(client, query):
    r = client.get("/v1/log/entries", params=query)
    assert r.status_code == 422, r.text


def test_every_integer_query_parameter_is_bounded_both_ways(client):
    """No integer query parameter of the API is unbounded (an unbounded one reaches the database as it came)."""
    spec = client.get("/openapi.json").json()
    integers = [(path, p["name"], p["schema"]) for path, ops in spec["paths"].items() for op in ops.values()
                for p in op.get("parameters", []) if p["in"] == "query" and p["schema"].get("type") == "integer"]
    assert integers
    for path, name, schema in integers:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        assert low is not None and high is not None, (path, name, schema)
        assert -(2**63) <= low and high <= 2**63, (path, name, schema)
    audit = {name: schema for path, name, schema in integers if path == "/v1/admin/audit"}
    assert audit["after"]["maximum"] == 2**31 - 1  # AuditEntry.seq is a 32-bit INTEGER


@pytest.mark.parametrize("kind, status", [("out-of-range", 422), ("duplicate", 409), ("bug", 500)])
def test_a_value_the_database_refuses_is_not_an_outage(client, kind, status):
    r = client.get(f"/test-only/raise/{kind}")
    assert r.status_code == status, r.text
    assert "retry-after" not in r.headers
    assert "unavailable" not in r.json()["detail"]


@pytest.mark.parametrize("kind", ["server-gone", "disk-full", "interface", "pool-timeout"])
def test_an_outage_is_503_with_retry_after(client, kind):
    r = client.get(f"/test-only/raise/{kind}")
    assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
    assert r.json()["detail"] == "the service's database is unavailable; retry shortly"


def test_outages_are_told_from_bad_input_through_wrappers():

    from prover_service.service.errors import is_outage
    from prover_service.service.runner import is_outage as job_outage

    from tests.service_fixtures import connector_error as wrapped

    outages = [psycopg_pool.PoolTimeout("couldn't get a connection after 3.00 sec"),
               psycopg.errors.DiskFull("could not extend file"), psycopg.errors.AdminShutdown("terminating"),
               psycopg.errors.CannotConnectNow("the database system is starting up"),
               sa.OperationalError("SELECT 1", {}, psycopg.OperationalError("connection refused")),
               OSError(28, "No space left on device")]
    refusals = [psycopg.errors.NumericValueOutOfRange("integer out of range"),
                psycopg.errors.UniqueViolation("duplicate key"), psycopg.errors.ForeignKeyViolation("fk"),
                sa.DataError("SELECT", {}, psycopg.errors.InvalidTextRepresentation("bad")),
                sa.IntegrityError("INSERT", {}, psycopg.errors.NotNullViolation("null")), ValueError("x")]
    for exc in outages:
        assert is_outage(exc) and is_outage(wrapped(exc)) and job_outage(exc), exc
    for exc in refusals:
        assert not is_outage(exc) and not is_outage(wrapped(exc)) and not job_outage(exc), exc
