"""The conformance corpus (tests/vectors/, docs/VERIFYING.md): every verifier gives every vector its verdict.

`fairproof-verify` must give each vector's verdict and reason code; the verification page (in node, its
modules as the page inlines them) its verdict. The corpus is committed, so these tests need no trained
model: they are the fast, shared definition of a verdict.
"""
from __future__ import annotations

from collections import Counter

import pytest

from conformance import load_vectors, page_verdicts, python_verdict


@pytest.fixture(scope="module")
def vectors():
    return load_vectors("v1")


def test_the_corpus_covers_every_verdict_and_many_rules(vectors):
    verdicts = Counter(v.verdict for v in vectors)
    assert verdicts["VALID"] >= 10 and verdicts["INVALID"] >= 30 and verdicts["UNUSABLE"] >= 20
    assert len({v.code for v in vectors if v.code}) >= 12
    assert len({v.id for v in vectors}) == len(vectors)


def test_fairproof_verify_gives_every_vector_its_verdict_and_code(vectors, tmp_path):
    wrong = []
    for v in vectors:
        verdict, code, reason = python_verdict(v, tmp_path / v.id)
        if (verdict, code) != (v.verdict, v.code):
            wrong.append(f"{v.id} {v.description}: {verdict} [{code}] ({reason[:120]}), expected {v.verdict} [{v.code}]")
    assert not wrong, "\n".join(wrong)


def test_the_page_gives_every_vector_its_verdict_and_code(vectors):
    got = page_verdicts(vectors)
    wrong = [f"{v.id} {v.description}: page {g['verdict']} [{g['code']}] ({g['reason'][:120]}), expected "
             f"{v.verdict} [{v.code}]" for v, g in zip(vectors, got) if (g["verdict"], g["code"]) != (v.verdict, v.code)]
    assert not wrong, "\n".join(wrong)


def test_a_vector_with_another_expectation_is_caught(vectors, tmp_path):
    """The runner can fail: a valid vector expected INVALID is reported."""
    honest = next(v for v in vectors if v.verdict == "VALID")
    verdict, code, _ = python_verdict(honest, tmp_path / "honest")
    assert (verdict, code) == ("VALID", None) != ("INVALID", "proof.rejected")
