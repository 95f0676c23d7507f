"""The conformance corpus (tests/vectors/, docs/VERIFYING.md): every verifier gives every vector its verdict.

`fairproof-verify` and the page also give the one-hot family (tests/vectors/v1-onehot) its verdicts.

`fairproof-verify` and the verification page (in node, its modules as the page inlines them) must give each
vector that applies to them its verdict and reason code. The registry and headless Chromium run the corpus in
tests/test_conformance_registry.py and tests/test_conformance_browser.py. The corpus is committed, so these
tests need no trained model: they are the fast, shared definition of a verdict.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conformance import IMPLEMENTATIONS, VECTORS, load_vectors, page_verdicts, python_verdict

DOCS = Path(__file__).resolve().parents[1] / "docs" / "VERIFYING.md"
# Codes no file-mode vector can carry: every signal is read as a canonical decimal below r before any claim
# (so C5 is D2 there), and an announced decision exists in service mode only (U6).
NOT_EXPRESSIBLE = {"claims.signal-encoding", "customer.announced-decision"}


@pytest.fixture(scope="module")
def vectors():
    return load_vectors("v1")


def test_the_corpus_covers_every_rule_mode_lens_and_shape(vectors):
    documented = set(re.findall(r"`((?:claims|customer|card|key|proof|log|groups)\.[a-z-]+)`", DOCS.read_text()))
    codes = Counter(v.code for v in vectors if v.code)
    assert documented - NOT_EXPRESSIBLE <= set(codes), documented - NOT_EXPRESSIBLE - set(codes)
    assert set(codes) <= documented
    verdicts = Counter(v.verdict for v in vectors)
    assert len(vectors) >= 150 and verdicts["VALID"] >= 30 and verdicts["UNUSABLE"] >= 40
    documented_d = set(re.findall(r"^\| (D\d) \|", DOCS.read_text(), re.M))
    assert {v.rule for v in vectors if v.verdict == "UNUSABLE"} == documented_d >= {"D1", "D2", "D3"}
    index = json.loads((VECTORS / "v1" / "index.json").read_text())["vectors"]
    assert [e["id"] for e in index] == [v.id for v in vectors] and len({v.id for v in vectors}) == len(vectors)
    shapes = Counter((e["mode"], e["shape"]) for e in index)
    for mode, shape in (("fast", "whole"), ("exact", "whole"), ("bound", "whole"), ("exact", "per-slice"),
                        (None, "group counts")):
        assert shapes[(mode, shape)] >= 8, (mode, shape)
    assert {tuple(e["lenses"]) for e in index if e["lenses"] is not None} >= {(), ("spread", "persistence")}


def test_the_docs_give_the_corpus_its_size(vectors):
    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "customer.md"
    for doc in (DOCS, guide):
        assert f"{len(vectors)} vectors" in " ".join(doc.read_text().split()), doc.name


def test_each_vector_says_which_implementations_judge_it_and_why_not_the_others(vectors):
    index = json.loads((VECTORS / "v1" / "index.json").read_text())["vectors"]
    for v, e in zip(vectors, index):
        assert e["applies_to"] == [i for i in IMPLEMENTATIONS if v.applies_to(i)] and "fairproof-verify" in e["applies_to"]
        assert all(reason.strip() for reason in v.not_applicable.values()), v.id
        assert (e["expected"]["verdict"], e["expected"]["code"], e["rule"]) == (v.verdict, v.code, v.rule)
    applies = Counter(i for v in vectors for i in IMPLEMENTATIONS if v.applies_to(i))
    assert applies["page"] >= 150 and applies["registry"] >= 100


def test_fairproof_verify_gives_every_vector_its_verdict_and_code(vectors, tmp_path):
    wrong = _python_disagreements(vectors, tmp_path)
    assert not wrong, "\n".join(wrong)


def _python_disagreements(vectors, tmp_path) -> list[str]:
    wrong = []
    for v in vectors:
        verdict, code, reason = python_verdict(v, tmp_path / v.id)
        if (verdict, code) != (v.verdict, v.code):
            wrong.append(f"{v.id} {v.description}: {verdict} [{code}] ({reason[:120]}), expected {v.verdict} [{v.code}]")
    return wrong


# The one-hot family (tests/vectors/v1-onehot): a card whose sensitive attribute spans three inputs.

@pytest.fixture(scope="module")
def onehot_vectors():
    return load_vectors("v1-onehot")


def test_the_one_hot_family_covers_its_acceptances_and_refusals(onehot_vectors):
    index = json.loads((VECTORS / "v1-onehot" / "index.json").read_text())
    assert index["version"] == "v1-onehot" and [e["id"] for e in index["vectors"]] == [v.id for v in onehot_vectors]
    for v, e in zip(onehot_vectors, index["vectors"]):
        assert (e["expected"]["verdict"], e["expected"]["code"], e["rule"]) == (v.verdict, v.code, v.rule)
        if v.verdict == "VALID":  # race: three inputs, or two when it drops a value
            assert json.loads(v.card)["sensitive"][0]["columns"] in ([1, 2, 3], [1, 2])
    found = Counter((v.verdict, v.code) for v in onehot_vectors)
    for expected in (("VALID", None), ("INVALID", "claims.sensitive-value"), ("INVALID", "claims.persistence"),
                     ("INVALID", "proof.rejected"), ("UNUSABLE", None)):
        assert found[expected] >= 2, expected


def test_fairproof_verify_gives_every_one_hot_vector_its_verdict_and_code(onehot_vectors, tmp_path):
    wrong = _python_disagreements(onehot_vectors, tmp_path)
    assert not wrong, "\n".join(wrong)


# The tree-ensemble family (tests/vectors/v1-trees): a bank's XGBoost pipeline, committed and proved.

@pytest.fixture(scope="module")
def tree_vectors():
    return load_vectors("v1-trees")


def test_the_tree_family_covers_its_acceptances_and_refusals(tree_vectors):
    index = json.loads((VECTORS / "v1-trees" / "index.json").read_text())
    assert index["version"] == "v1-trees" and [e["id"] for e in index["vectors"]] == [v.id for v in tree_vectors]
    for v in tree_vectors:
        if v.verdict == "VALID":
            card = json.loads(v.card)
            assert card["architecture"]["kind"] == "tree-ensemble"
            assert all(b["shape"]["kind"] == "tree-ensemble" for b in card["circuits"])
    found = Counter((v.verdict, v.code) for v in tree_vectors)
    for expected in (("VALID", None), ("INVALID", "proof.rejected"), ("INVALID", "claims.card-digest"),
                     ("INVALID", "claims.commitment"), ("INVALID", "customer.record"), ("UNUSABLE", None)):
        assert found[expected] >= 1, expected
    assert found["VALID", None] >= 2 and found["UNUSABLE", None] >= 3


def test_fairproof_verify_gives_every_tree_vector_its_verdict_and_code(tree_vectors, tmp_path):
    wrong = _python_disagreements(tree_vectors, tmp_path)
    assert not wrong, "\n".join(wrong)


def test_the_page_gives_every_tree_vector_its_verdict_and_code(tree_vectors):
    assert sum(v.applies_to("page") for v in tree_vectors) == len(tree_vectors)
    wrong = _page_disagreements(tree_vectors)
    assert not wrong, "\n".join(wrong)


def test_the_page_gives_every_vector_its_verdict_and_code(vectors):
    wrong = _page_disagreements(vectors)
    assert not wrong, "\n".join(wrong)


def _page_disagreements(vectors) -> list[str]:
    mine = [v for v in vectors if v.applies_to("page")]
    got = page_verdicts(mine)
    return [f"{v.id} {v.description}: page {g['verdict']} [{g['code']}] ({g['reason'][:120]}), expected "
            f"{v.verdict} [{v.code}]" for v, g in zip(mine, got) if (g["verdict"], g["code"]) != (v.verdict, v.code)]


def test_the_page_gives_every_one_hot_vector_its_verdict_and_code(onehot_vectors):
    assert sum(v.applies_to("page") for v in onehot_vectors) >= 15
    wrong = _page_disagreements(onehot_vectors)
    assert not wrong, "\n".join(wrong)


def test_the_page_words_a_refused_box_as_fairproof_verify_does(vectors, tmp_path):
    boxes = [v for v in vectors if v.code == "customer.box" and v.applies_to("page")]
    assert len(boxes) >= 3
    for v, g in zip(boxes, page_verdicts(boxes)):
        assert g["reason"] in python_verdict(v, tmp_path / v.id)[2], v.id


def test_a_vector_with_another_expectation_is_caught(vectors, tmp_path):
    """The runner can fail: a valid vector expected INVALID is reported."""
    honest = next(v for v in vectors if v.verdict == "VALID")
    verdict, code, _ = python_verdict(honest, tmp_path / "honest")
    assert (verdict, code) == ("VALID", None) != ("INVALID", "proof.rejected")
