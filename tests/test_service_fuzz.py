"""Schema fuzzing: every operation of the OpenAPI description, with generated
requests (valid and invalid), against the real service. None may answer 5xx.

No workers run here, so accepted decisions and precompute jobs stay queued:
the fuzzing exercises the API, not the prover.
"""
from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.service_fixtures import ADMIN_KEY, copy_models_dir, running, serve


@pytest.fixture(scope="module")
def live(service_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    models = copy_models_dir(service_models, root)
    with running(serve(models, f"sqlite:///{root / 'service.sqlite'}", root / "serve.log",
                       FAIRPROOF_WORKERS="0")) as service:
        yield service


def _operations(url: str) -> list:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


def test_no_operation_answers_5xx(live):
    operations = _operations(live.url)
    assert len(operations) >= 9  # every endpoint of the API is fuzzed
    failures: dict[str, str] = {}
    for operation in operations:
        @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def no_server_error(case) -> None:
            response = case.call(base_url=live.url, headers={"X-API-Key": ADMIN_KEY}, timeout=30)
            case.validate_response(response, checks=[not_a_server_error])

        try:
            no_server_error()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # collect every operation's failure, not only the first
            failures[operation.label] = f"{type(exc).__name__}: {str(exc)[:500]}"
    assert not failures, failures


def test_the_service_still_serves_after_fuzzing(live):
    assert httpx.get(f"{live.url}/v1/ready").status_code == 200
    assert httpx.get(f"{live.url}/v1/models").json()["models"]
