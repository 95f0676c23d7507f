"""The customer's side over HTTP, against an in-process service serving a REAL card and REAL bundles.

A German Credit (4,2) model is committed and two customers' certificates are
proved by the bank's code; `httpx.MockTransport` serves them with the
service's wire format. Every acceptance has its refusal: a swapped model, a
forged or replayed certificate, a certificate about another record, and a
service that errs, stalls or answers garbage.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from commitments.api import JobView
from commitments.bundle import Radius, SnarkjsProof
from commitments.record import UnknownCategoryError, encode_record
from verifier_client.cli import main as verify_main
from verifier_client.pins import PinMismatch, PinStore
from verifier_client.service_client import ServiceClient, ServiceError, check_certificate, request_certificate
from verifier_client.verify import explain, verify_bundle

ROOT = Path(__file__).resolve().parents[1]


from bank_fixtures import MODEL, URL, FakeService, forged, run_cli  # noqa: E402


# --- acceptance ------------------------------------------------------------------------------


def test_customer_gets_a_valid_certificate_for_their_own_record(bank, tmp_path, capsys):
    service = FakeService(bank.card, bank.bundles[0])
    assert run_cli(service, bank.records[0], tmp_path) == 0
    out, err = capsys.readouterr()
    bundle = bank.bundles[0]
    assert out.startswith("VALID certificate") and f"Radius: eps >= {bundle.eps.decimal} is a lower bound (fast" in out
    assert explain(verify_bundle(bundle, bank.card).claims, bank.card) in out and bundle.decision_label in out
    assert "job job-1: queued" in err and "job job-1: running, proving (50%)" in err and "first use" in err
    assert service.posted_records() == [json.loads(json.dumps(bank.records[0]))]
    pin = PinStore(tmp_path / "pins.json").get(URL, MODEL)
    assert pin.commitment == bank.card.commitment and pin.card_digest == bank.card.digest()
    # The second decision under the same pin: no "first use" notice, still valid.
    assert run_cli(FakeService(bank.card, bank.bundles[0]), bank.records[0], tmp_path) == 0
    assert "first use" not in capsys.readouterr().err


def test_the_library_flow_returns_the_verdict_and_the_customer_query(bank, tmp_path):
    service = FakeService(bank.card, bank.bundles[1])
    seen: list[JobView] = []
    with ServiceClient(URL, transport=service.transport(), sleep=lambda s: None) as client:
        result = request_certificate(client, PinStore(tmp_path / "pins.json"), MODEL, bank.records[1],
                                     on_progress=seen.append, poll_interval=0)
        listed = client.models().models
    assert [m.model_id for m in listed] == [MODEL] and listed[0].commitment == bank.card.commitment
    assert result.verdict.valid and result.query == bank.bundles[1].query == encode_record(bank.card, bank.records[1])
    assert [v.status for v in seen] == ["queued", "running", "succeeded"] and result.pin.first_use


# --- refusals ---------------------------------------------------------------------------------


def test_a_different_model_than_the_pinned_one_is_refused_before_submitting(bank, tmp_path, capsys):
    other = bank.card.model_copy(update={"commitment": str(int(bank.card.commitment) + 1)})
    PinStore(tmp_path / "pins.json").check(URL, other)  # the customer first saw another model
    service = FakeService(bank.card, bank.bundles[0])
    assert run_cli(service, bank.records[0], tmp_path) == 1
    err = capsys.readouterr().err
    assert "REFUSED" in err and bank.card.commitment in err and other.commitment in err
    assert service.posted_records() == []  # the record never left the customer's machine
    with ServiceClient(URL, transport=service.transport()) as client, pytest.raises(PinMismatch):
        request_certificate(client, PinStore(tmp_path / "pins.json"), MODEL, bank.records[0])


@pytest.mark.parametrize("tamper", ["eps", "decision", "proof"])
def test_a_tampered_certificate_is_refused(bank, tmp_path, capsys, tamper):
    bundle = bank.bundles[0]
    if tamper == "eps":
        bad = forged(bundle, eps=Radius(numerator=bundle.eps.numerator * 2 + 1, scale_bits=bundle.eps.scale_bits))
        decision = None
    elif tamper == "decision":
        other = 1 - bundle.decision
        bad = forged(bundle, decision=other, decision_label=bank.card.architecture.class_labels[other])
        decision = other  # the service announces the forged decision too
    else:
        proof = bundle.proof.model_dump(mode="json")
        proof["pi_a"] = [proof["pi_c"][0], proof["pi_c"][1], "1"]
        bad, decision = bundle.model_copy(update={"proof": SnarkjsProof.model_validate(proof)}), None
    assert run_cli(FakeService(bank.card, bad, decision=decision), bank.records[0], tmp_path) == 1
    err = capsys.readouterr().err
    assert "INVALID certificate" in err and ("proof" in err or "public inputs" in err)


def test_a_genuine_certificate_about_another_record_is_refused(bank, tmp_path, capsys):
    assert verify_bundle(bank.bundles[1], bank.card)  # a real proof, only about someone else
    assert bank.bundles[0].query != bank.bundles[1].query
    assert run_cli(FakeService(bank.card, bank.bundles[1]), bank.records[0], tmp_path) == 1
    assert "another customer's record" in capsys.readouterr().err
    assert run_cli(FakeService(bank.card, bank.bundles[1]), bank.records[1], tmp_path) == 0


def test_a_decision_announced_differently_from_the_proof_is_refused(bank, tmp_path, capsys):
    bundle = bank.bundles[0]
    service = FakeService(bank.card, bundle, decision=1 - bundle.decision)
    assert run_cli(service, bank.records[0], tmp_path) == 1
    assert "announced decision" in capsys.readouterr().err


def test_a_certificate_under_another_card_is_refused(bank):
    query = encode_record(bank.card, bank.records[0])
    renamed = bank.bundles[0].model_copy(update={"card_digest": "0" * 64})
    verdict = check_certificate(renamed, bank.card, query)
    assert not verdict and "another model card" in verdict.reasons[0]
    assert check_certificate(bank.bundles[0], bank.card, query)


def test_an_unusable_record_is_refused_before_submitting(bank, tmp_path, capsys):
    service = FakeService(bank.card, bank.bundles[0])
    assert run_cli(service, {**bank.records[0], "purpose": "A99"}, tmp_path) == 2
    assert "unknown category 'A99'" in capsys.readouterr().err and service.posted_records() == []
    with ServiceClient(URL, transport=service.transport()) as client, pytest.raises(UnknownCategoryError):
        request_certificate(client, PinStore(tmp_path / "pins.json"), MODEL, {**bank.records[0], "purpose": "A99"})
    (tmp_path / "broken.json").write_text("{")
    assert verify_main(["--url", URL, "--model", MODEL, "--record", str(tmp_path / "broken.json")],
                       transport=service.transport()) == 2
    assert "not valid JSON" in capsys.readouterr().err


# --- the service errs, stalls or answers garbage: exit 2 --------------------------------------


CARD_PATH = f"/v1/models/{MODEL}/card"


@pytest.mark.parametrize("where, answer, message", [
    (("GET", CARD_PATH), httpx.Response(404, json={"detail": f"no model {MODEL!r}"}), f"HTTP 404: no model '{MODEL}'"),
    (("POST", f"/v1/models/{MODEL}/decisions"),
     httpx.Response(422, json={"detail": [{"loc": ["body", "record", "age"], "msg": "Input should be a number"}]}),
     "HTTP 422: record.age: Input should be a number"),
    (("GET", "/v1/jobs/job-1"), httpx.Response(503, json={"detail": "store unavailable"}), "HTTP 503: store unavailable"),
    (("GET", CARD_PATH), httpx.Response(502, text="Bad Gateway"), "HTTP 502: Bad Gateway"),
    (("GET", CARD_PATH), httpx.ReadTimeout("timed out"), "did not answer in time"),
    (("GET", CARD_PATH), httpx.ConnectError("connection refused"), "service unreachable"),
    (("GET", CARD_PATH), httpx.Response(200, text="{not json"), "malformed ModelCard"),
    (("GET", "/v1/jobs/job-1"), httpx.Response(200, json={"job_id": "job-1", "status": "running"}), "malformed JobView"),
])
def test_service_failures_exit_2_with_the_reason(bank, tmp_path, capsys, where, answer, message):
    service = FakeService(bank.card, bank.bundles[0], overrides={where: answer})
    assert run_cli(service, bank.records[0], tmp_path) == 2
    err = capsys.readouterr().err
    assert "service error" in err and message in err


def test_a_malformed_certificate_response_exits_2(bank, tmp_path, capsys):
    data = json.loads(bank.bundles[0].model_dump_json())
    del data["proof"]
    path = f"/v1/certificates/{bank.bundles[0].certificate_id}"
    service = FakeService(bank.card, bank.bundles[0], overrides={("GET", path): httpx.Response(200, json=data)})
    assert run_cli(service, bank.records[0], tmp_path) == 2
    assert "malformed CertificateBundle" in capsys.readouterr().err


def test_a_failed_or_stalled_job_exits_2(bank, tmp_path, capsys):
    assert run_cli(FakeService(bank.card, bank.bundles[0], states=("queued", "failed")), bank.records[0], tmp_path) == 2
    assert "failed: worker ran out of memory" in capsys.readouterr().err
    stalled = FakeService(bank.card, bank.bundles[0], states=("running",))
    assert run_cli(stalled, bank.records[0], tmp_path, "--timeout", "0.01") == 2
    assert "did not finish within 0.01 s" in capsys.readouterr().err


def test_wait_polls_until_finished_and_gives_up_at_its_deadline(bank):
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    service = FakeService(bank.card, bank.bundles[0], states=("queued", "running", "running", "succeeded"))
    with ServiceClient(URL, transport=service.transport(), sleep=sleep, clock=lambda: now[0]) as client:
        assert client.wait("job-1", "token-1", poll_interval=2.0, timeout=60).status == "succeeded"
        assert sleeps == [2.0, 2.0, 2.0]
    sleeps.clear()
    stalled = FakeService(bank.card, bank.bundles[0], states=("running",))
    with ServiceClient(URL, transport=stalled.transport(), sleep=sleep, clock=lambda: now[0]) as client:
        with pytest.raises(ServiceError, match="did not finish within 5 s"):
            client.wait("job-1", "token-1", poll_interval=2.0, timeout=5)
    assert sleeps == [2.0, 2.0]  # polled at 0, 2 and 4 s; the next poll would be past the deadline


def test_ids_cannot_reach_another_endpoint(bank):
    service = FakeService(bank.card, bank.bundles[0])
    with ServiceClient(URL, transport=service.transport()) as client, pytest.raises(ServiceError, match="HTTP 404"):
        client.card("../../jobs/job-1")
    assert service.requests[-1].url.raw_path.decode() == "/v1/models/..%2F..%2Fjobs%2Fjob-1/card"


# --- command line: modes never mix ------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["b.json", "--url", URL, "--model", MODEL, "--record", "r.json"], "not both"),
    (["--url", URL, "--card", "c.json", "--model", MODEL, "--record", "r.json"], "not both"),
    (["--url", URL, "--model", MODEL], "--url needs --record"),
    (["b.json", "--card", "c.json", "--timeout", "5"], "--timeout: only with --url"),
    (["--url", URL, "--model", MODEL, "--record", "r.json", "--attestation", "a.json"],
     "--attestation: only with BUNDLE"),
    (["b.json"], "required: --card"),
    ([], "give a BUNDLE file"),
    (["--url", URL, "--model", MODEL, "--record", "r.json", "--timeout", "0"], "positive number of seconds"),
])
def test_usage_errors_are_clear(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        verify_main(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_an_unreachable_service_exits_2(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on: bound, then released
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    record = tmp_path / "r.json"
    record.write_text("{}")
    assert verify_main(["--url", f"http://127.0.0.1:{port}", "--model", MODEL, "--record", str(record),
                        "--pin-file", str(tmp_path / "pins.json"), "--timeout", "5"]) == 2
    assert "service unreachable" in capsys.readouterr().err


# --- the customer's install: no torch, scipy, database or prover code --------------------------


def test_the_client_imports_nothing_of_the_bank_side():
    blocked = ("audits", "fairness", "offline_precompute", "prover_service", "sqlalchemy", "scipy", "torch")
    # The one record encoder is shared with the bank: fairness.schema (pydantic and numpy) and its errors; and the
    # radius vocabulary (fairness.radius, standard library only).
    shared = ("fairness", "fairness.schema", "fairness.errors", "fairness.radius")
    script = textwrap.dedent(f"""
        import sys
        BLOCKED = {blocked!r}
        SHARED = {shared!r}

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED and name not in SHARED:
                    raise ImportError(f"the customer's client must not import {{name}}")
                return None

        sys.meta_path.insert(0, Block())
        import verifier_client.cli, verifier_client.service_client, verifier_client.pins, commitments.record
        import verifier_client.audit, verifier_client.output, verifier_client.solidity, commitments.audit
        leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED and m not in SHARED)
        assert not leaked, leaked
        print("ok")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    # The blocker itself works: importing the bank side through it fails.
    bad = subprocess.run([sys.executable, "-c", script.replace("commitments.record\n", "commitments.publish\n")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert bad.returncode != 0 and "must not import" in bad.stderr


# --- what a service may send back ---------------------------------------------------------------

class _Endless(httpx.SyncByteStream):
    """A body of `total` bytes produced 1 MB at a time; counts what the client pulled."""

    def __init__(self, total: int):
        self.total, self.sent = total, 0

    def __iter__(self):
        chunk = b"x" * (1 << 20)
        while self.sent < self.total:
            self.sent += len(chunk)
            yield chunk


def test_a_huge_response_is_refused_without_being_read_whole():
    from verifier_client.service_client import MAX_RESPONSE_BYTES

    for declared in (True, False):
        body = _Endless(200 * (1 << 20))
        headers = {"content-length": str(body.total)} if declared else {}
        transport = httpx.MockTransport(lambda request: httpx.Response(200, headers=headers, stream=body))
        with ServiceClient(URL, transport=transport) as client, pytest.raises(ServiceError, match="more than|exceeds"):
            client.models()
        assert body.sent <= MAX_RESPONSE_BYTES + (1 << 20)  # stopped at the cap, not at 200 MB


# A service that answers 200 MB to every request: chunked, or with its Content-Length declared (`/declared/`).
_HUGE_SERVER = """
import sys

import uvicorn

SIZE, CHUNK = 200 * (1 << 20), 1 << 20


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/ping":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = [(b"content-type", b"application/json")]
    if "/declared" in scope["path"]:
        headers.append((b"content-length", str(SIZE).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    block = b"[" + b" " * (CHUNK - 1)
    for _ in range(SIZE // CHUNK):
        await send({"type": "http.response.body", "body": block, "more_body": True})
        block = b" " * CHUNK
    await send({"type": "http.response.body", "body": b""})


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""

# The customer's client in a process of its own, so that its peak RSS is the client's alone.
_CLIENT = """
import json, sys

from verifier_client.service_client import ServiceClient, ServiceError

refusals = []
with ServiceClient(sys.argv[1]) as client:
    for call in (lambda: client.card("chunked"), lambda: client.card("declared"),
                 lambda: client.job("chunked", "t"), lambda: client.entries(0, 10)):
        try:
            call()
            refusals.append(None)
        except ServiceError as exc:
            refusals.append(str(exc))
# VmHWM: this process image's peak RSS (ru_maxrss would carry over the forking parent's peak across exec).
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"refusals": refusals, "max_rss_kb": peak}))
"""


def test_a_200_mb_response_keeps_the_client_under_100_mb_rss(tmp_path):
    """A real HTTP server (uvicorn) sends 200 MB; the client refuses it and its process never holds it."""
    import time

    from tests.service_fixtures import free_port

    port = free_port()
    with open(tmp_path / "server.log", "wb") as log:  # a file, not a pipe: nobody reads it while it runs
        server = subprocess.Popen([sys.executable, "-c", _HUGE_SERVER, str(port)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, \
                    (tmp_path / "server.log").read_text(errors="replace")[-2000:]
                time.sleep(0.1)
        done = subprocess.run([sys.executable, "-c", _CLIENT, f"http://127.0.0.1:{port}"], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=120)
    finally:
        server.kill()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    chunked, declared, job, entries = report["refusals"]
    for refusal in (chunked, job, entries):
        assert refusal and "exceeds the" in refusal, refusal  # read up to the cap, then refused
    assert declared and "the response is 209715200 bytes, more than" in declared  # refused before reading
    assert report["max_rss_kb"] < 100 * 1024, f"client peak RSS {report['max_rss_kb'] / 1024:.0f} MB"


def test_a_redirect_is_refused_with_where_it_points():
    transport = httpx.MockTransport(lambda request: httpx.Response(302, headers={"location": "https://elsewhere.example/v1/models"}))
    with ServiceClient(URL, transport=transport) as client, pytest.raises(ServiceError) as refused:
        client.models()
    assert refused.value.status == 302 and "redirects" in str(refused.value) and "elsewhere.example" in str(refused.value)


def test_the_client_comes_back_when_a_full_queue_says_so():
    accepted = {"job_id": "0" * 32, "model_id": "m", "decision": 1, "decision_label": "good", "status": "queued",
                "job_url": "/v1/jobs/x", "job_token": "t"}
    answers = iter([httpx.Response(429, headers={"retry-after": "7"}, json={"detail": "queue full"}),
                    httpx.Response(503, headers={"retry-after": "20"}, json={"detail": "republishing"}),
                    httpx.Response(202, json=accepted)])
    slept = []
    transport = httpx.MockTransport(lambda request: next(answers))
    with ServiceClient(URL, transport=transport, sleep=slept.append, clock=lambda: sum(slept)) as client:
        assert client.submit("m", {"duration": 1}).job_id == "0" * 32
    assert slept == [7.0, 20.0]
    # Without Retry-After the refusal is the answer; a longer wait asked for is capped, then the refusal stands.
    from verifier_client.service_client import MAX_RETRY_AFTER

    for headers, waits in (({}, []), ({"retry-after": "99999"}, [MAX_RETRY_AFTER])):
        transport = httpx.MockTransport(lambda request: httpx.Response(429, headers=headers, json={"detail": "full"}))
        slept.clear()
        with ServiceClient(URL, transport=transport, sleep=slept.append, clock=lambda: sum(slept)) as client, \
                pytest.raises(ServiceError, match="429"):
            client.submit("m", {"duration": 1})
        assert slept == waits
