"""Offline enumeration into the store: exactness of stored facts, completeness, resumption."""
from __future__ import annotations

import json
import random

import pytest

from fairness import farkas as fk
from fairness.codes import ActivationCode
from fairness.regions import LPRegionOracle, RationalPoint, SliceGeometry, class_system, facet_system, free_box
from fairness_toy_models import random_model
from offline_precompute import store as st
from offline_precompute.db import open_database
from offline_precompute.enumerate import precompute
from offline_precompute.oracle import StoreRegionOracle
from store_fixtures import database, open_test_store, store_spec  # noqa: F401  (fixtures)

MODEL = random_model(11, n_inputs=3, hidden=(3, 2))  # 2 slices, 9 regions: fast


class Interrupt(Exception):
    pass


def canon(value) -> str:
    return json.dumps(value, sort_keys=True)  # JSONB reorders keys; compare canonical text


def snapshot(db, digest):
    """Every stored fact of a model, independent of row ids and discovery order."""
    with db.sessions() as s:
        regions = {(r.slice_index, r.code, r.expanded, canon(r.point)) for r in st.regions(s, digest)}
        facets = {(f.slice_index, f.code, f.neuron, f.nonempty, canon(f.point), canon(f.certificate))
                  for f in st.facets(s, digest)}
        claims = {(c.slice_index, c.code, c.label, c.other, c.holds, canon(c.point), canon(c.certificate))
                  for c in st.class_claims(s, digest)}
        counts = st.counts(s, digest)
    assert counts.regions == len(regions) and counts.facets == len(facets) and counts.class_claims == len(claims)
    return regions, facets, claims


@pytest.fixture(scope="module")
def reference():
    """One uninterrupted run in an in-memory store."""
    db = open_database("sqlite://")
    summary = precompute(db, MODEL)
    snap = snapshot(db, summary.digest)
    db.dispose()
    return summary, snap


def test_stored_facts_are_exact(reference):
    summary, (regions, facets, claims) = reference
    assert summary.regions == len(regions) > 1 and summary.lps > 0
    box = free_box(MODEL)
    hidden = MODEL.net.hidden_sizes
    geos = [SliceGeometry(MODEL, v) for v in MODEL.slices()]
    for si, code, expanded, point in regions:
        assert expanded
        region = geos[si].region(ActivationCode.parse(code, hidden))
        p = RationalPoint.from_json(json.loads(point))
        assert p.in_box(box) and region.contains_rational(p)
    n_certs = 0
    for si, code, k, nonempty, point, cert in facets:
        region = geos[si].region(ActivationCode.parse(code, hidden))
        if nonempty:
            neighbour = ActivationCode.parse(code, hidden).flip(k).key
            assert (si, neighbour, True) in {(r[0], r[1], r[2]) for r in regions}  # adjacency closed
            if point != "null":
                p = RationalPoint.from_json(json.loads(point))
                assert region.contains_rational(p) and p.form_value(region.neurons[k]) == 0
        elif cert != "null":
            n_certs += 1
            assert fk.verify(*facet_system(region, k), box, fk.FarkasCertificate.from_json(json.loads(cert)))
    for si, code, y, j, holds, point, cert in claims:
        region = geos[si].region(ActivationCode.parse(code, hidden))
        if not holds and cert != "null":
            n_certs += 1
            assert fk.verify(*class_system(region, y, j), box, fk.FarkasCertificate.from_json(json.loads(cert)))
    assert n_certs > 0


def test_enumeration_is_complete(reference):
    """The codes of random points of the box are all stored regions."""
    _, (regions, _, _) = reference
    stored = {(si, code) for si, code, *_ in regions}
    rng = random.Random(5)
    box = free_box(MODEL)
    for si, values in enumerate(MODEL.slices()):
        geo = SliceGeometry(MODEL, values)
        for _ in range(300):
            u = [rng.randint(lo, hi) for lo, hi in zip(box.lower, box.upper)]
            assert (si, geo.code_of(u).key) in stored


def test_agrees_with_the_lp_oracle(reference):
    """The stored answers are the answers `LPRegionOracle` gives GeoCert."""
    _, (regions, facets, claims) = reference
    lp = LPRegionOracle(MODEL)
    geos = [SliceGeometry(MODEL, v) for v in MODEL.slices()]
    hidden = MODEL.net.hidden_sizes
    for si, code, k, nonempty, *_ in sorted(facets)[:60]:
        assert lp.facet(geos[si].region(ActivationCode.parse(code, hidden)), k).nonempty == nonempty
    for si, code, y, j, holds, *_ in sorted(claims)[:30]:
        assert lp.no_class(geos[si].region(ActivationCode.parse(code, hidden)), y, j).reachable == holds


@pytest.mark.parametrize("batch_size, stop_after", [(2, 3), (3, 5)])
def test_interrupted_run_resumes_to_the_same_rows(database, reference, batch_size, stop_after):
    ref_summary, ref_snap = reference
    seen = {"n": 0}

    def die(progress):
        seen["n"] += 1
        if seen["n"] == stop_after:
            raise Interrupt

    interruptions = 0
    last = -1
    while True:  # interrupt every `stop_after` regions (a batch commits in between) until a run completes
        seen["n"] = 0
        try:
            summary = precompute(database, MODEL, batch_size=batch_size, progress=die)
            break
        except Interrupt:
            interruptions += 1
            with database.sessions() as s:
                partial = st.counts(s, ref_summary.digest)
            assert partial.regions < ref_summary.regions or partial.facets < ref_summary.facets
            assert partial.facets > last  # every interrupted run still committed whole batches
            last = partial.facets
    assert interruptions >= 2
    assert summary.digest == ref_summary.digest
    assert snapshot(database, summary.digest) == ref_snap
    # a further run finds everything complete and solves nothing
    again = precompute(database, MODEL)
    assert again.lps == 0 and again.slices_skipped == again.n_slices
    assert snapshot(database, summary.digest) == ref_snap


def test_progress_reports_counts(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 's.db'}")
    events = []
    summary = precompute(db, MODEL, progress=events.append)
    assert len(events) == summary.regions
    assert events[-1].lps == summary.lps and events[-1].rate > 0
    assert [e.regions_expanded for e in events if e.slice_index == 0] == list(range(1, 1 + sum(e.slice_index == 0 for e in events)))


def test_models_share_a_store_without_mixing(database):
    other = random_model(12, n_inputs=3, hidden=(3, 2))
    a = precompute(database, MODEL)
    b = precompute(database, other)
    assert a.digest != b.digest
    with database.sessions() as s:
        assert st.counts(s, a.digest).regions == a.regions
        assert st.counts(s, b.digest).regions == b.regions
        codes_b = {r.code for r in st.regions(s, b.digest)}
    snap_a = snapshot(database, a.digest)
    assert snap_a == snapshot(database, precompute(database, MODEL).digest)
    assert codes_b  # and each model's rows stay its own


def test_store_oracle_serves_then_caches(database):
    """Cold store: answers are computed and cached; warm: served, identical, no LP."""
    oracle = StoreRegionOracle(database, MODEL)
    geo = SliceGeometry(MODEL, MODEL.slices()[0])
    box = free_box(MODEL)
    region = geo.region(geo.code_of([(lo + hi) // 2 for lo, hi in zip(box.lower, box.upper)]))
    n = len(region.neurons)
    cold = [oracle.facet(region, k) for k in range(n)] + [oracle.no_class(region, 0, 1), oracle.no_class(region, 1, 0)]
    assert oracle.stats.misses == n + 2 and oracle.flush() == n + 2
    with StoreRegionOracle(database, MODEL) as warm_oracle:
        lps = warm_oracle.computer.lps
        warm = [warm_oracle.facet(region, k) for k in range(n)] + [warm_oracle.no_class(region, 0, 1),
                                                                   warm_oracle.no_class(region, 1, 0)]
        assert warm_oracle.pending == 0
    assert warm == cold
    assert warm_oracle.stats.hits == n + 2 and warm_oracle.stats.misses == 0 and warm_oracle.computer.lps == lps


def test_store_oracle_rejects_corrupt_rows(database):
    summary = precompute(database, MODEL)
    with database.sessions.begin() as s:
        rows = s.query(st.FacetRow).filter(st.FacetRow.model_digest == summary.digest,
                                           st.FacetRow.certificate.is_not(None)).all()
        victim = rows[0]
        cert = dict(victim.certificate)
        cert["multipliers"] = [0 for _ in cert["multipliers"]]  # no longer proves emptiness
        cert["extra"] = 1
        victim.certificate = cert
        key = (victim.slice_index, victim.code, victim.neuron)
    oracle = StoreRegionOracle(database, MODEL)
    region = SliceGeometry(MODEL, MODEL.slices()[key[0]]).region(ActivationCode.parse(key[1], MODEL.net.hidden_sizes))
    info = oracle.facet(region, key[2])
    assert oracle.stats.rejected == 1 and oracle.stats.misses == 1
    assert info.farkas is not None and fk.verify(*facet_system(region, key[2]), free_box(MODEL), info.farkas)
    oracle.flush()
    with database.sessions() as s:
        (fixed,) = [f for f in st.facets(s, summary.digest, key[0], key[1]) if f.neuron == key[2]]
    assert fixed.certificate == info.farkas.to_json()


def test_two_stores_for_one_model_are_independent(tmp_path):
    """A second SQLite file starts empty: nothing leaks between stores."""
    a = open_database(f"sqlite:///{tmp_path / 'a.db'}")
    b = open_database(f"sqlite:///{tmp_path / 'b.db'}")
    precompute(a, MODEL)
    with b.sessions() as s:
        assert st.counts(s, st.model_digest(MODEL)).rows == 0


def test_concurrent_certifiers_on_a_cold_store(tmp_path):
    """Two certifiers fill the same cold store at once: same certificates, no duplicate rows,
    and a third one afterwards is served entirely from the store."""
    import threading

    from fairness_toy_models import random_query
    from offline_precompute.certify import Certifier

    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    query = random_query(MODEL, random.Random(3))
    certs, errors = [], []

    def run() -> None:
        try:
            db = open_database(url)  # both also race to create the tables
            try:
                certs.append(Certifier(db, MODEL).certify(query).certificate.to_json())
            finally:
                db.dispose()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(certs) == 2 and certs[0] == certs[1]
    db = open_database(url)
    digest = st.model_digest(MODEL)
    with db.sessions() as s:
        facets = st.facets(s, digest)
    assert facets and len({(f.slice_index, f.code, f.neuron) for f in facets}) == len(facets)
    warm = Certifier(db, MODEL).certify(query)
    assert warm.stats.misses == 0 and warm.certificate.to_json() == certs[0]


def test_two_workers_precompute_one_model_at_once(store_spec, reference):
    """Two concurrent precompute runs on one store: same rows as a single run, nothing duplicated."""
    import threading

    url, schema = store_spec
    ref_summary, ref_snap = reference
    errors = []

    def work() -> None:
        try:
            db = open_database(url, schema=schema)
            try:
                precompute(db, MODEL, batch_size=2)
            finally:
                db.dispose()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    db = open_database(url, schema=schema)
    try:
        assert snapshot(db, ref_summary.digest) == ref_snap
    finally:
        db.dispose()


def test_memo_certifier_is_safe_across_threads(tmp_path):
    """A service shares one memoising certifier between request threads: answers stay identical."""
    import threading

    from fairness_toy_models import random_query
    from offline_precompute.certify import Certifier

    db = open_database(f"sqlite:///{tmp_path / 'memo.sqlite'}")
    certifier = Certifier(db, MODEL, keep_memo=True)
    rng = random.Random(9)
    queries = [random_query(MODEL, rng) for _ in range(6)]
    expected = [Certifier(open_database("sqlite://"), MODEL).certify(q).certificate.to_json() for q in queries]
    got: dict[int, dict] = {}
    errors = []

    def work(i: int) -> None:
        try:
            got[i] = certifier.certify(queries[i]).certificate.to_json()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and [got[i] for i in range(len(queries))] == expected
