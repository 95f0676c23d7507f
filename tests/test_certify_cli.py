"""`fairproof precompute` and `fairproof certify` end to end on a German Credit-shaped model."""
from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from fairness.certificate import Certificate
from fairness.checker import check_certificate
from fairness.errors import CertificationError
from prover_service.cli import main
from store_fixtures import open_test_store


def _german():
    from fairness.datasets import load_dataset
    from fairness.errors import DataError

    try:
        return load_dataset("german")
    except (DataError, FileNotFoundError) as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")


@pytest.fixture(scope="module")
def german():
    return _german()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, german):
    """A random 20 -> (3, 2) -> 2 network with the German schema, precomputed into its default store."""
    from fairness.model import FloatMLP, artifact_from_dataset, save_artifact

    rng = np.random.default_rng(5)  # both classes occur on the test split, and some flips
    sizes = [german.n_features, 3, 2, 2]
    ws = [rng.normal(0, 0.6, (sizes[i + 1], sizes[i])) for i in range(3)]
    bs = [rng.normal(0, 0.3, sizes[i + 1]) for i in range(3)]
    ws[0][:, german.sensitive[0].column] *= 4  # a strongly group-dependent model: some decisions flip
    d = tmp_path_factory.mktemp("german-model")
    save_artifact(artifact_from_dataset(FloatMLP(ws, bs), german), d)
    return d


@pytest.fixture(autouse=True)
def no_store_env(monkeypatch):
    monkeypatch.delenv("FAIRPROOF_STORE_URL", raising=False)


def load_cert(path) -> Certificate:
    doc = json.loads(path.read_text())
    assert doc["scale_bits"] == 16 and len(doc["model_digest"]) == 64
    return Certificate.from_json(doc["certificate"])


def fixed(model_dir):
    from offline_precompute.certify import load_fixed_point

    return load_fixed_point(model_dir)


def agreeing_indices(model_dir, german) -> list[int]:
    """Test rows whose decision is the same on every slice (so GeoCert has work to do)."""
    from fairness.fixed_point import quantise_query

    _, model = fixed(model_dir)
    out = []
    for i, x in enumerate(german.X_test):
        q = quantise_query(model, [float(v) for v in x])
        if len({model.net.decision(model.with_slice(q, s)) for s in model.slices()}) == 1:
            out.append(i)
    return out


def test_precompute_then_certify_from_warm_store(model_dir, german, tmp_path, capsys):
    assert main(["precompute", "--model", str(model_dir), "--batch", "4"]) == 0
    out, err = capsys.readouterr()
    assert "regions" in out and "LPs solved" in out and "LP/s" in err  # summary and progress
    assert (model_dir / "precompute.sqlite").is_file()  # default store lives next to the model
    # a second run resumes a complete store: nothing to solve
    assert main(["precompute", "--model", str(model_dir), "--quiet"]) == 0
    assert "LPs solved 0 " in capsys.readouterr().out

    cert_path = tmp_path / "cert.json"
    index = agreeing_indices(model_dir, german)[0]
    assert main(["certify", "--model", str(model_dir), "--index", str(index), "--out", str(cert_path)]) == 0
    out = capsys.readouterr().out
    assert "decision: class" in out and "eps: " in out and "exact" in out and "covering set" in out
    assert "computed 0 " in out and "store answers 0," not in out  # every answer came from the store
    assert "exact radius:" in out and "(value " in out  # the hybrid default gives the exact radius here
    # its twin: a fast radius is never called exact (eps's dyadic value is its "value")
    assert main(["certify", "--model", str(model_dir), "--index", str(index), "--radius", "fast"]) == 0
    fast = capsys.readouterr().out
    assert "eps: " in fast and "(value " in fast and "exact" not in fast
    cert = load_cert(cert_path)
    _, model = fixed(model_dir)
    check_certificate(model, cert)
    # the rejecting twin: a larger eps than the covers support is refused
    forged = Certificate.from_json({**cert.to_json(), "eps": {**cert.to_json()["eps"], "E": cert.eps + 1}})
    with pytest.raises(CertificationError):
        check_certificate(model, forged)


def test_record_and_index_give_the_same_certificate(model_dir, german, tmp_path):
    record = tmp_path / "record.json"
    record.write_text(json.dumps(dict(german.records_test[5])))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["certify", "--model", str(model_dir), "--record", str(record), "--out", str(a)]) == 0
    assert main(["certify", "--model", str(model_dir), "--index", "5", "--out", str(b)]) == 0
    assert load_cert(a).to_json() == load_cert(b).to_json()


def test_cold_store_computes_then_caches(model_dir, german, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAIRPROOF_STORE_URL", f"sqlite:///{tmp_path / 'cold.sqlite'}")
    index = str(agreeing_indices(model_dir, german)[1])
    assert main(["certify", "--model", str(model_dir), "--index", index]) == 0
    first = capsys.readouterr().out
    assert "computed 0 " not in first and "(cached 0)" not in first and (tmp_path / "cold.sqlite").is_file()
    assert main(["certify", "--model", str(model_dir), "--index", index]) == 0
    second = capsys.readouterr().out
    assert "computed 0 " in second and "store answers 0," not in second


def test_counterfactual_flip_is_reported(model_dir, german, tmp_path, capsys):
    """Find a test row whose decision depends on the sensitive feature alone: eps = 0 and the flip is named."""
    from fairness.fixed_point import quantise_query

    _, model = fixed(model_dir)
    for i, x in enumerate(german.X_test):
        q = quantise_query(model, [float(v) for v in x])
        decisions = {model.net.decision(model.with_slice(q, s)) for s in model.slices()}
        if len(decisions) > 1:
            break
    else:
        raise AssertionError("the fixture model should have a counterfactual flip on the test split")
    out_path = tmp_path / "flip.json"
    assert main(["certify", "--model", str(model_dir), "--index", str(i), "--out", str(out_path)]) == 0
    out = capsys.readouterr().out
    assert "counterfactual flip" in out and "eps: 0.000000" in out
    cert = load_cert(out_path)
    assert cert.status == "flip" and cert.eps == 0
    check_certificate(model, cert)


@pytest.mark.postgres
def test_postgres_store_by_url(model_dir, german, tmp_path, capsys):
    url, schema, cleanup = open_test_store("postgres", tmp_path)
    try:
        pg = f"{url}?options=-csearch_path%3D{schema}"
        assert main(["precompute", "--model", str(model_dir), "--store", pg, "--quiet"]) == 0
        capsys.readouterr()
        index = str(agreeing_indices(model_dir, german)[0])
        assert main(["certify", "--model", str(model_dir), "--index", index, "--store", pg]) == 0
        out = capsys.readouterr().out
        assert "computed 0 " in out and "store answers 0," not in out
    finally:
        cleanup()


@pytest.mark.parametrize("make_args, message", [
    (lambda d, t: ["certify", "--model", str(t / "nope"), "--index", "0"], "does not exist"),
    (lambda d, t: ["precompute", "--model", str(t / "nope")], "does not exist"),
    (lambda d, t: ["certify", "--model", str(d), "--record", _write(t, "{not json")], "not valid JSON"),
    (lambda d, t: ["certify", "--model", str(d), "--record", _write(t, '{"age": 3}')], "missing feature"),
    (lambda d, t: ["certify", "--model", str(d), "--record", _write(t, json.dumps([1e6] * 20))], "not a list of model inputs"),
    (lambda d, t: ["certify", "--model", str(d), "--record", _write(t, '"x"')], "JSON object"),
    (lambda d, t: ["certify", "--model", str(d), "--index", "100000"], "out of range"),
    (lambda d, t: ["certify", "--model", str(d), "--index", "0", "--store", "mysql://u@h/db"], "unknown store URL scheme"),
    (lambda d, t: ["precompute", "--model", str(d), "--store", "redis://h"], "unknown store URL scheme"),
    (lambda d, t: ["certify", "--model", str(d), "--index", "0", "--scale-bits", "0"], "scale bits"),
])
def test_bad_input_is_one_clear_line(model_dir, tmp_path, capsys, make_args, message):
    assert main(make_args(model_dir, tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("fairproof: error:") and message in err and "\n" not in err


def _write(tmp_path, text: str) -> str:
    p = tmp_path / f"{uuid.uuid4().hex}.json"
    p.write_text(text)
    return str(p)


def test_certify_states_the_hybrid_radius_by_default_and_fast_only_when_asked(model_dir, german, capsys):
    """No --radius: region enumeration finishes on this small model, so the radius is the exact one, equal to
    `--radius exact`'s; `--radius fast` still gives the projection lower bound, never above it."""
    assert main(["precompute", "--model", str(model_dir), "--quiet"]) == 0
    capsys.readouterr()
    index = str(agreeing_indices(model_dir, german)[0])

    def certify(*extra: str) -> tuple[dict, str]:
        assert main(["certify", "--model", str(model_dir), "--index", index, "--json", *extra]) == 0
        out, err = capsys.readouterr()
        return json.loads(out), err

    default, err = certify()
    exact, _ = certify("--radius", "exact")
    fast, _ = certify("--radius", "fast")
    assert "the exact radius" in err
    assert default["radius"]["kind"] == exact["radius"]["kind"] == "exact"
    assert default["radius"]["numerator"] == exact["radius"]["numerator"]
    assert fast["radius"]["kind"] == "fast" and fast["radius"]["numerator"] <= exact["radius"]["numerator"]


def test_hybrid_falls_back_to_the_bound_radius_when_enumeration_overruns(model_dir, german, tmp_path, capsys):
    """A cold store and a budget no enumeration meets: the bound radius, said to be one."""
    index = str(agreeing_indices(model_dir, german)[0])
    cold = f"sqlite:///{tmp_path / 'cold.sqlite'}"
    assert main(["certify", "--model", str(model_dir), "--index", index, "--json", "--store", cold,
                 "--exact-budget", "0.001"]) == 0
    out, err = capsys.readouterr()
    assert "no exact radius within 0.001 s: the bound radius instead" in err
    assert json.loads(out)["radius"]["kind"] in ("bound", "cap", "flip")


def _parent_hears(model_dir, german, budgets) -> tuple[list[str], list[bool]]:
    """Run `certify_within` at each budget from a worker thread of an asyncio loop that handles SIGTERM, as the
    service's workers do: (the signals the loop heard, whether each call gave a certificate)."""
    import asyncio
    import signal

    from offline_precompute.certify import certify_within
    from fairness.fixed_point import quantise_query

    _, model = fixed(model_dir)
    query = quantise_query(model, [float(v) for v in german.X_test[0]])
    store = f"sqlite:///{model_dir / 'precompute.sqlite'}"

    async def run():
        loop = asyncio.get_running_loop()
        heard: list[str] = []
        loop.add_signal_handler(signal.SIGTERM, lambda: heard.append("SIGTERM"))
        try:
            found = [await loop.run_in_executor(None, certify_within, store, model, query, b) is not None
                     for b in budgets]
            await asyncio.sleep(0.3)  # a signal written to the loop's wakeup fd is read by now
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
        return heard, found

    return asyncio.run(run())


def test_a_child_stopped_at_its_deadline_never_signals_its_parent(model_dir, german, monkeypatch):
    """The hybrid mode's enumeration child is terminated at the deadline; the service's event loop, whose
    wakeup fd the forked child shares, must not take that SIGTERM for its own (it would stop the worker)."""
    assert main(["precompute", "--model", str(model_dir), "--quiet"]) == 0
    heard, found = _parent_hears(model_dir, german, (0.0001, 0.001, 0.01, 120))
    assert heard == [] and found[-1]
    # the twin: a child that keeps its parent's signal handling is heard by the parent's loop
    import signal

    import offline_precompute.certify as certify_module

    monkeypatch.setattr(certify_module, "_own_signals",
                        lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, certify_module.CHILD_SIGNALS))
    heard, _ = _parent_hears(model_dir, german, (0.0001, 0.001, 0.01))
    assert "SIGTERM" in heard

