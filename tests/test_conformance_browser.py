"""The conformance corpus (tests/vectors/) in headless Chromium: a sample, one vector of each verdict and
reason code the page's own fields can hold (no box asked for, only the lenses it has boxes for), each typed
or chosen in the page a customer opens from disk and Verify pressed. The page must show the vector's verdict
and code (`data-verdict`, `data-code` of its verdict). The whole corpus runs through the same verify.js in
node (tests/test_conformance.py). The one-hot (tests/vectors/v1-onehot) and tree-ensemble (tests/vectors/v1-trees)
families run whole: they are small."""
from __future__ import annotations

import pytest

from conformance import browser_verdicts, load_vectors

SAMPLE = 15


def sample(vectors):
    """The first VALID vector, the first VALID one with an auditor's attestation (a file chosen in the page), the
    first UNUSABLE one, and the first of each refusal code in the order of docs/VERIFYING.md's rules, spread
    evenly over them: at most SAMPLE vectors, each of which the page's fields can express."""
    firsts = {}
    for v in vectors:
        o = v.options
        if v.applies_to("page") and "delta" not in o and set(o.get("require_lens", ())) <= {"spread", "persistence"}:
            firsts.setdefault((v.verdict, v.code or "", bool(o.get("attestations")) and v.verdict == "VALID"), v)
    refusals = sorted((c for c in firsts if c[0] == "INVALID"), key=lambda c: RULE_ORDER(firsts[c].rule))
    step = -(-len(refusals) // (SAMPLE - 3))
    return [firsts[("VALID", "", False)], firsts[("VALID", "", True)], firsts[("UNUSABLE", "", False)],
            *(firsts[c] for c in refusals[::step])]


def RULE_ORDER(rule: str) -> tuple[int, int]:
    return "DPCUKLG".index(rule[0]), int(rule[1:])


def test_the_page_in_chromium_gives_a_sample_of_the_corpus_its_verdicts_and_codes(tmp_path):
    chosen = sample(load_vectors("v1"))
    assert 10 <= len(chosen) <= SAMPLE and {v.verdict for v in chosen} == {"VALID", "INVALID", "UNUSABLE"}
    got = browser_verdicts(chosen, tmp_path)
    wrong = [f"{v.id} {v.description}: Chromium {g['verdict']} [{g['code']}] ({g['reason'][:120]}), expected "
             f"{v.verdict} [{v.code}]" for v, g in zip(chosen, got) if (g["verdict"], g["code"]) != (v.verdict, v.code)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("family, at_least", [("v1-onehot", 12), ("v1-trees", 10)])
def test_the_page_in_chromium_gives_a_small_family_its_verdicts_and_codes(family, at_least, tmp_path):
    """Every vector of a small family the page's fields can express, in Chromium: its verdict and code (the
    one-hot family: a sensitive attribute over three inputs; the tree family: a bank's XGBoost ensemble)."""
    chosen = [v for v in load_vectors(family) if v.applies_to("page") and "delta" not in v.options
              and set(v.options.get("require_lens", ())) <= {"spread", "persistence"}]
    assert len(chosen) >= at_least and {v.verdict for v in chosen} == {"VALID", "INVALID", "UNUSABLE"}
    got = browser_verdicts(chosen, tmp_path)
    wrong = [f"{v.id} {v.description}: Chromium {g['verdict']} [{g['code']}] ({g['reason'][:120]}), expected "
             f"{v.verdict} [{v.code}]" for v, g in zip(chosen, got) if (g["verdict"], g["code"]) != (v.verdict, v.code)]
    assert not wrong, "\n".join(wrong)
