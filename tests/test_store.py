"""The precompute store: schema, digest keying, idempotent writes, frontier, URL handling."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain
from offline_precompute import store as st
from offline_precompute.db import default_store_url, open_database, parse_store_url, resolve_store_url
from offline_precompute.errors import StoreError
from store_fixtures import database, store_spec  # noqa: F401  (fixtures)


def tiny_model(bias: int = 3) -> FixedPointModel:
    net = QuantisedMLP(
        scale_bits=2,
        weights=(((4, -4, 2), (1, 2, -3)), ((3, -1), (-2, 5))),
        biases=((bias, -1), (0, 1)),
    )
    sex = SensitiveDomain.scalar(name="sex", column=2, values=(0, 4), labels=("f", "m"))
    return FixedPointModel(net=net, box_lower=(0, 0, 0), box_upper=(4, 4, 4), sensitive=(sex,))


def test_digest_depends_on_every_part_of_the_model():
    base = tiny_model()
    assert st.model_digest(base) == st.model_digest(tiny_model())
    assert st.model_digest(base) != st.model_digest(tiny_model(bias=4))
    wider = FixedPointModel(net=base.net, box_lower=base.box_lower, box_upper=(4, 5, 4), sensitive=base.sensitive)
    assert st.model_digest(base) != st.model_digest(wider)
    other_domain = FixedPointModel(
        net=base.net, box_lower=base.box_lower, box_upper=base.box_upper,
        sensitive=(SensitiveDomain.scalar(name="sex", column=2, values=(0, 3), labels=("f", "m")),),
    )
    assert st.model_digest(base) != st.model_digest(other_domain)


def test_facet_neighbour_code():
    facet = st.FacetEntry(slice_index=0, code="101.01", neuron=0, nonempty=True)
    assert facet.neighbor_code == "001.01"
    assert st.FacetEntry(0, "101.01", 3, True).neighbor_code == "101.11"
    assert st.FacetEntry(0, "101.01", 3, False).neighbor_code is None
    with pytest.raises(IndexError):
        _ = st.FacetEntry(0, "101.01", 5, True).neighbor_code


def test_writes_are_idempotent_and_keyed_by_digest(database):
    model, other = tiny_model(), tiny_model(bias=5)
    with database.sessions.begin() as s:
        d = st.ensure_model(s, model)
        d2 = st.ensure_model(s, other)
        assert st.ensure_model(s, model) == d  # second registration is a no-op
    regions = [st.RegionEntry(0, "10.01"), st.RegionEntry(0, "11.01", depth=1), st.RegionEntry(1, "10.01")]
    facet = st.FacetEntry(0, "10.01", 1, True, point=[0.5, 1.25])
    empty = st.FacetEntry(0, "10.01", 0, False, certificate={"lambda": ["1", "2"]})
    claim = st.ClassClaimEntry(0, "10.01", 0, 1, False, certificate={"mu": "3"})
    for _ in range(2):  # the second pass must change nothing
        with database.sessions.begin() as s:
            st.add_regions(s, d, regions)
            st.add_facets(s, d, [facet, empty])
            st.add_class_claims(s, d, [claim])
    with database.sessions.begin() as s:
        st.add_regions(s, d2, [st.RegionEntry(0, "00.00")])
        st.add_facets(s, d2, [st.FacetEntry(0, "10.01", 1, False, certificate={"forged": True})])
    with database.sessions() as s:
        c = st.counts(s, d)
        assert (c.models, c.slices, c.regions, c.facets, c.class_claims) == (1, 2, 3, 2, 1)
        got = {f.neuron: f for f in st.facets(s, d, 0, "10.01")}
        assert got[1] == facet and got[1].neighbor_code == "11.01"
        assert got[0] == empty and got[0].neighbor_code is None
        assert st.class_claims(s, d, 0, "10.01") == [claim]
        # the other model's rows never show up under this digest, and vice versa
        assert {r.code for r in st.regions(s, d)} == {"10.01", "11.01"}
        assert [f.certificate for f in st.facets(s, d2)] == [{"forged": True}]
        assert st.counts(s, d2).regions == 1


def test_big_integers_survive_json_columns(database):
    model = tiny_model()
    huge = 2**200 + 12345
    with database.sessions.begin() as s:
        d = st.ensure_model(s, model)
        st.add_facets(s, d, [st.FacetEntry(0, "10.01", 0, False, certificate={"residual": str(huge), "lam": [huge]})])
    with database.sessions() as s:
        (f,) = st.facets(s, d)
    assert int(f.certificate["residual"]) == huge
    assert int(f.certificate["lam"][0]) == huge


def test_frontier_is_breadth_first_and_survives_expansion(database):
    with database.sessions.begin() as s:
        d = st.ensure_model(s, tiny_model())
        st.add_regions(s, d, [st.RegionEntry(0, "00.00"), st.RegionEntry(0, "01.00", 1), st.RegionEntry(0, "10.00", 1)])
        st.mark_expanded(s, d, 0, "00.00", [0.1, 0.2])
        st.update_slice(s, d, 0, status="running", add_lps=5, add_seconds=0.5)
    with database.sessions() as s:
        assert [r.code for r in st.frontier(s, d, 0)] == ["01.00", "10.00"]
        assert st.region(s, d, 0, "00.00").point == [0.1, 0.2]
        status = st.slice_status(s, d)[0]
        assert (status.status, status.n_regions, status.n_lps) == ("running", 3, 5)


def test_interrupted_transaction_leaves_no_partial_rows(database):
    with database.sessions.begin() as s:
        d = st.ensure_model(s, tiny_model())
    with pytest.raises(RuntimeError):
        with database.sessions.begin() as s:
            st.add_regions(s, d, [st.RegionEntry(0, "00.00")])
            raise RuntimeError("killed mid-batch")
    with database.sessions() as s:
        assert st.counts(s, d).regions == 0


def test_mismatched_model_row_is_refused(database):
    model = tiny_model()
    with database.sessions.begin() as s:
        d = st.ensure_model(s, model)
        row = s.get(st.ModelRow, d)
        row.description = {**row.description, "scale_bits": 99}
    with pytest.raises(StoreError, match="corrupt"):
        with database.sessions.begin() as s:
            st.ensure_model(s, model)


def test_delete_model_removes_only_its_rows(database):
    with database.sessions.begin() as s:
        d = st.ensure_model(s, tiny_model())
        d2 = st.ensure_model(s, tiny_model(bias=7))
        st.add_regions(s, d, [st.RegionEntry(0, "00.00")])
        st.add_regions(s, d2, [st.RegionEntry(0, "00.00")])
    with database.sessions.begin() as s:
        st.delete_model(s, d)
    with database.sessions() as s:
        assert st.counts(s, d).rows == 0
        assert st.counts(s, d2).regions == 1


def test_concurrent_writers_never_duplicate(database):
    """Several threads cache the same rows at once: one copy of each survives."""
    with database.sessions.begin() as s:
        d = st.ensure_model(s, tiny_model())
    entries = [st.FacetEntry(0, "10.01", n, n % 2 == 0, point=[n]) for n in range(4)]
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for e in entries:
                with database.sessions.begin() as s:
                    st.add_facets(s, d, [e])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with database.sessions() as s:
        n = s.scalar(select(func.count()).select_from(st.FacetRow).where(st.FacetRow.model_digest == d))
    assert n == 4


def test_store_url_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("FAIRPROOF_STORE_URL", raising=False)
    assert default_store_url(tmp_path) == f"sqlite:///{(tmp_path / 'precompute.sqlite').resolve()}"
    monkeypatch.setenv("FAIRPROOF_STORE_URL", "sqlite:///elsewhere.db")
    assert default_store_url(tmp_path) == "sqlite:///elsewhere.db"
    assert resolve_store_url("sqlite:///explicit.db", tmp_path) == "sqlite:///explicit.db"
    assert parse_store_url("postgresql://u@h/db").drivername == "postgresql+psycopg"


@pytest.mark.parametrize("url, message", [
    ("mysql://root@localhost/db", "unknown store URL scheme"),
    ("not a url", "malformed store URL"),
    ("postgresql+asyncpg://u@h/db", "unsupported PostgreSQL driver"),
])
def test_bad_store_urls_are_refused(url, message):
    with pytest.raises(StoreError, match=message):
        open_database(url)


def test_missing_sqlite_directory_is_refused(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        open_database(f"sqlite:///{tmp_path / 'no' / 'such' / 'store.db'}")


@pytest.mark.postgres
def test_unreachable_postgres_is_one_clear_error():
    with pytest.raises(StoreError, match="cannot open store"):
        open_database("postgresql+psycopg://postgres@127.0.0.1:1/none")
