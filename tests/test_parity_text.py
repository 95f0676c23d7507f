"""One strict reading of text on both sides: the same bytes of a card, a bundle, a record or an attestation
are refused by the verifier (commitments/canonical.py) and by the page (verify.js `decodeText` and
`parseStrictText`, used by its file inputs, its link and its text fields) alike: a byte-order mark, bytes
that are not UTF-8, a lone surrogate escape ("\\ud800" or "\\udc00" alone) in any string or key. What is
text (é, a surrogate pair, a U+FEFF inside a string) is accepted by both."""
from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from commitments.attestation import Attestation
from commitments.bundle import CertificateBundle
from commitments.canonical import NonCanonical, load_json
from commitments.card import ModelCard
from node_runner import run_node
from page_cases import PageCase, node_verdicts
from test_parity_schema import schema_card
from verifier_client.page import PAGE_DIR, build_page, page_schemas

RUNNER = """
const lib = {};
for (const m of ['canonical', 'schema', 'verify']) lib[m] = require(process.argv[1] + '/' + m + '.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', () => {
  const job = JSON.parse(input);
  const schemas = lib.canonical.parseJson(job.schemas);
  const out = job.docs.map(([kind, b64, path]) => {
    try {
      const bytes = Buffer.from(b64, 'base64');
      // A file or a link: the bytes; a text field: the text a paste gives (a BOM and all, nothing repaired).
      const text = path === 'file' ? lib.verify.decodeText(new Uint8Array(bytes), kind)
        : new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
      const value = lib.verify.parseStrictText(text, kind);
      if (kind !== 'record') {
        lib.schema.checkShape(schemas[kind], value, kind);
        if (kind === 'card') { const p = lib.verify.cardProblem(value); if (p) throw new Error(p); }
      }
      return null;
    } catch (e) { return e.message || String(e); }
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def page_refusals(docs: list[tuple[str, bytes, str]]) -> list[str | None]:
    job = {"schemas": json.dumps(page_schemas()),
           "docs": [[kind, base64.b64encode(data).decode(), path] for kind, data, path in docs]}
    return run_node(RUNNER, job, str(PAGE_DIR))


READERS: dict[str, Callable[[bytes], Any]] = {
    "card": ModelCard.from_json, "bundle": CertificateBundle.from_json, "attestation": Attestation.from_json,
    "record": lambda data: load_json(data, "record"),  # fairproof-verify --record reads it so (cli._read_record)
}


def python_refusal(kind: str, data: bytes | str) -> str | None:
    try:
        READERS[kind](data)  # type: ignore[arg-type]
    except (NonCanonical, ValueError) as exc:
        return str(exc)
    return None


MARK = "FAIRPROOF-TEXT-MARK"

# (name, bytes in place of the marked string's content (inside its quotes), refused?, words of the refusal)
STRING_CONTENTS = [
    ("plain", b"abc", False, ""),
    ("accented", "caf\u00e9".encode(), False, ""),
    ("astral", "\U0001f600".encode(), False, ""),
    ("surrogate pair escaped", b"\\ud83d\\ude00", False, ""),
    ("U+FEFF inside a string", "\ufeffabc".encode(), False, ""),
    ("lone high surrogate", b"\\ud800", True, "lone surrogate"),
    ("lone low surrogate", b"\\udc00", True, "lone surrogate"),
    ("lone high surrogate in text", b"x\\uD800y", True, "lone surrogate"),
    ("reversed pair", b"\\udc00\\ud800", True, "lone surrogate"),
    ("two high surrogates", b"\\ud800\\ud800", True, "lone surrogate"),
    ("high surrogate at the end of a pair", b"\\ud83d\\ude00\\ud83d", True, "lone surrogate"),
    ("invalid byte", b"\xff", True, "not UTF-8"),
    ("overlong slash", b"\xc0\xaf", True, "not UTF-8"),
    ("encoded surrogate", b"\xed\xa0\x80", True, "not UTF-8"),
    ("truncated sequence", b"\xe2\x82", True, "not UTF-8"),
    ("beyond U+10FFFF", b"\xf4\x90\x80\x80", True, "not UTF-8"),
    ("Latin-1 e-acute", b"caf\xe9", True, "not UTF-8"),
]


def _marked(kind: str, bank) -> str:
    """The honest document of `kind` with one free-text string marked (the card's description, the
    bundle's decision label, the attestation's note, a record value)."""
    if kind == "card":
        return json.dumps({**schema_card(), "description": MARK})
    if kind == "bundle":
        return json.dumps({**json.loads(bank.bundles[0].model_dump_json()), "decision_label": MARK})
    if kind == "attestation":
        return json.dumps({"auditor_key": "auditor.example+01234567+AQ", "note": MARK})
    return json.dumps({**bank.records[0], "purpose": MARK})


def _variants(kind: str, bank) -> list[tuple[str, bytes, bool, str]]:
    text = _marked(kind, bank)
    honest = text.replace(MARK, "x").encode()
    head, tail = text.encode().split(MARK.encode())
    out = [(name, head + content + tail, refused, words) for name, content, refused, words in STRING_CONTENTS]
    out += [
        ("BOM", b"\xef\xbb\xbf" + honest, True, "byte-order mark"),
        ("two BOMs", b"\xef\xbb\xbf\xef\xbb\xbf" + honest, True, "byte-order mark"),
        ("BOM after the first brace", honest[:1] + b"\xef\xbb\xbf" + honest[1:], True, ""),
        ("UTF-16 with its BOM", honest.decode().encode("utf-16"), True, ""),
        ("UTF-16 without a BOM", honest.decode().encode("utf-16-le"), True, ""),
        ("a lone surrogate in a key", honest[:1] + b'"\\udc00": 1, ' + honest[1:], True, ""),
        ("NUL after the document", honest + b"\x00", True, ""),
    ]
    return out


@pytest.mark.parametrize("kind", ["card", "bundle", "record", "attestation"])
def test_the_same_bytes_are_read_alike(bank, kind):
    variants = _variants(kind, bank)
    docs = [(kind, data, path) for _, data, _, _ in variants for path in ("file", "field")]
    got = page_refusals(docs)
    problems = []
    for i, (name, data, refused, words) in enumerate(variants):
        python = python_refusal(kind, data)
        file, field = got[2 * i], got[2 * i + 1]
        if (python is not None) != refused:
            problems.append((name, "Python", python))
        if (file is not None) != refused:
            problems.append((name, "page file", file))
        if words and not (python and words in python and file and words in file):
            problems.append((name, "words", python, file))
        # A text field holds what a paste gives: invalid bytes cannot be pasted (they arrive repaired as
        # U+FFFD), the rest is refused or accepted as from a file.
        if "not UTF-8" not in words and (field is not None) != refused:
            problems.append((name, "page text field", field))
    assert not problems, problems


def test_a_text_field_holding_a_bom_or_a_lone_surrogate_is_refused_as_python_refuses_the_string(bank):
    """The text fields (and the page bound to a card's text): a string, as Python's `check_json(str)`."""
    honest = bank.card.canonical_json()
    for text in ("\ufeff" + honest, honest.replace('"description":""', '"description":"\\ud800"')):
        assert text != honest
        assert python_refusal("card", text) is not None
        result = node_verdicts([PageCase("text", bank.bundles[0].model_dump_json(), text)])[0]
        assert result["verdict"] == "UNUSABLE" and "malformed card" in result["reason"], result


def _cli(tmp_path: Path, capsys, card: bytes, bundle: bytes, record: bytes | None = None) -> tuple[int, str]:
    from verifier_client.cli import main

    (tmp_path / "card.json").write_bytes(card)
    (tmp_path / "bundle.json").write_bytes(bundle)
    pins = tmp_path / "pins"
    pins.unlink(missing_ok=True)
    args = [str(tmp_path / "bundle.json"), "--card", str(tmp_path / "card.json"), "--pin-file", str(pins)]
    if record is not None:
        (tmp_path / "record.json").write_bytes(record)
        args += ["--record", str(tmp_path / "record.json")]
    capsys.readouterr()
    code = main(args)
    return code, capsys.readouterr().err


def test_verdicts_of_the_cli_and_the_page_on_the_same_files(bank, tmp_path, capsys):
    """End to end: fairproof-verify on the files, the page's verifier on the texts its file input reads."""
    card, bundle = bank.card.canonical_json().encode(), bank.bundles[0].model_dump_json().encode()
    record = json.dumps(bank.records[0]).encode()
    bom = b"\xef\xbb\xbf"
    lone = json.dumps({**bank.records[0], "purpose": "\ud800"}).encode("utf-8", "surrogatepass")
    assert b"\\ud800" in lone  # json.dumps escapes it: the lone escape reaches the reader
    cases = {"honest": (card, bundle, record, 0), "BOM card": (bom + card, bundle, record, 2),
             "BOM bundle": (card, bom + bundle, record, 2), "BOM record": (card, bundle, bom + record, 2),
             "record with a lone surrogate": (card, bundle, lone, 2),
             "record not UTF-8": (card, bundle, record.replace(b'"A4', b'"\xff4', 1), 2)}
    assert cases["record not UTF-8"][2] != record
    page_docs = []
    for name, (c, b, r, expected) in cases.items():
        code, err = _cli(tmp_path, capsys, c, b, r)
        assert code == expected, (name, err)
        page_docs.append((c, b, r))
    # The page reads each file with decodeText first: what it refuses there never reaches the verifier.
    decoded = page_refusals([(kind, data, "file") for c, b, r in page_docs
                             for kind, data in (("card", c), ("bundle", b), ("record", r))])
    verdicts = node_verdicts([PageCase(name, b.decode("utf-8", "replace"), c.decode("utf-8", "replace"),
                                       r.decode("utf-8", "replace")) for name, (c, b, r) in zip(cases, page_docs)])
    for i, (name, (_, _, _, expected)) in enumerate(zip(cases, cases.values())):
        refused_on_reading = any(decoded[3 * i + j] is not None for j in range(3))
        page = "UNUSABLE" if refused_on_reading else verdicts[i]["verdict"]
        assert page == {0: "VALID", 2: "UNUSABLE"}[expected], (name, decoded[3 * i:3 * i + 3], verdicts[i])


# ------------------------------------------------------------------------------------------ Chromium


def test_the_pages_file_inputs_and_link_read_text_strictly(bank, tmp_path):
    """In headless Chromium, through the page's own controls: a card file with a BOM, a bundle file that is
    not UTF-8 and a link whose bundle has a BOM are refused; the honest files read from disk are VALID."""
    from browser_fixtures import chromium
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = tmp_path / "verify.html"
    page.write_text(build_page().html)
    card, bundle = bank.card.canonical_json().encode(), bank.bundles[0].model_dump_json().encode()
    files = {"card": card, "bundle": bundle, "bom-card": b"\xef\xbb\xbf" + card,
             "latin1-bundle": bundle.replace(b'"', b'"\xe9', 1)}
    for name, data in files.items():
        (tmp_path / f"{name}.json").write_bytes(data)
    driver = chromium()

    def verdict() -> tuple[str, str]:
        box = driver.find_element(By.ID, "verdict")
        WebDriverWait(driver, 120).until(lambda d: box.get_attribute("data-verdict") not in ("NONE", "WORKING"))
        return box.get_attribute("data-verdict"), driver.find_element(By.ID, "report").text

    def with_files(card_file: str, bundle_file: str) -> tuple[str, str]:
        driver.get(page.as_uri())
        driver.find_element(By.ID, "card-file").send_keys(str(tmp_path / f"{card_file}.json"))
        driver.find_element(By.ID, "bundle-file").send_keys(str(tmp_path / f"{bundle_file}.json"))
        time.sleep(1.0)  # the files are read asynchronously
        driver.find_element(By.ID, "verify").click()
        return verdict()

    def link(data: bytes) -> tuple[str, str]:
        driver.get("about:blank")  # a new fragment alone would not load the page again
        driver.get(page.as_uri() + "#bundle=" + base64.urlsafe_b64encode(data).decode().rstrip("="))
        return verdict()

    try:
        assert with_files("card", "bundle")[0] == "VALID"
        got = with_files("bom-card", "bundle")
        assert got[0] == "UNUSABLE" and "card: begins with a byte-order mark" in got[1], got
        got = with_files("card", "latin1-bundle")
        assert got[0] == "UNUSABLE" and "bundle: not UTF-8 text" in got[1], got
        got = link(b"\xef\xbb\xbf" + bundle)
        assert got[0] == "UNUSABLE" and "byte-order mark" in got[1], got
        got = link(bundle.replace(b'"', b'"\xff', 1))
        assert got[0] == "UNUSABLE" and "not UTF-8 text" in got[1], got
        got = link(bundle)  # the honest link, no card given: refused for want of a card, not for its text
        assert got[0] == "UNUSABLE" and "give the model card" in got[1], got
    finally:
        driver.quit()
