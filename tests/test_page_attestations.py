"""The verification page's attestation rule (verifier_client/page/attestation.js) against `fairproof-verify`:
a customer who trusts an auditor accepts a card only with that auditor's attestation of exactly this card.

Every case of tests/page_cases.py `attestation_cases` runs through `fairproof-verify --trust-auditor ...
--attestation ...` (a fresh pin file each) and through the page in node: the same verdict, and the page's
reason holds the verifier's. The signed-note reading itself (keys, notes, statements) is compared with
transparency/note.py and commitments/attestation.py word for word on malformed and altered inputs, and two
cases run in headless Chromium through the page's own fields."""
from __future__ import annotations

import base64
import json
import re
import random
from pathlib import Path

import pytest

from browser_fixtures import chromium, verify_in_page
from node_runner import run_node
from page_cases import AUDITOR, PageCase, attestation_cases, attested_statement, node_verdicts
from commitments.attestation import (Attestation, AttestationError, NotSignedBy, open_attestation, parse_auditor_key,
                                     sign_attestation)
from transparency import note
from verifier_client.cli import main as verify_main
from verifier_client.page import PAGE_DIR, build_page, page_schemas

EXIT_VERDICTS = {0: "VALID", 1: "INVALID", 2: "UNUSABLE"}
ATTESTED_LINE = f"The card is attested by {AUDITOR} (an auditor you trust checked every key on it)."


@pytest.fixture(scope="module")
def cases(bank) -> list[PageCase]:
    return attestation_cases(bank)


def cli_run(case: PageCase, where: Path, capsys) -> tuple[str, str, str]:
    """(verdict, reason, stdout) of `fairproof-verify BUNDLE --card CARD [--record] --trust-auditor ...
    --attestation ...`, with a pin file of its own in `where`."""
    where.mkdir(parents=True)
    (where / "bundle.json").write_text(case.bundle)
    (where / "card.json").write_text(case.card)
    args = [str(where / "bundle.json"), "--card", str(where / "card.json"), "--pin-file", str(where / "pins.json")]
    if case.record:
        (where / "record.json").write_text(case.record)
        args += ["--record", str(where / "record.json")]
    for key in case.auditors:
        args += ["--trust-auditor", key]
    for i, text in enumerate(case.attestations):
        (where / f"attestation-{i}.json").write_text(text)
        args += ["--attestation", str(where / f"attestation-{i}.json")]
    code = verify_main(args)
    out, err = capsys.readouterr()
    reason = err.strip().splitlines()[-1] if err.strip() else ""
    reason = reason.removeprefix("fairproof-verify: ").removeprefix("INVALID certificate: ")
    reason = re.sub(r" \[[a-z]+\.[a-z-]+\]$", "", reason)  # the reason code, compared on its own
    return EXIT_VERDICTS[code], reason, out


def test_the_page_in_node_and_the_verifier_agree_on_every_attestation_case(cases, tmp_path, capsys):
    assert sum(c.expected == "VALID" for c in cases) >= 4 and sum(c.expected == "INVALID" for c in cases) >= 8
    assert sum(c.expected == "UNUSABLE" for c in cases) >= 4
    got = node_verdicts(cases)
    for i, (case, page) in enumerate(zip(cases, got)):
        verdict, reason, out = cli_run(case, tmp_path / f"case-{i}", capsys)
        assert verdict == case.expected, (case.name, reason)
        assert page["verdict"] == case.expected, (case.name, page["reason"])
        if case.reason:
            assert case.reason in reason and case.reason in page["reason"], (case.name, reason, page["reason"])
        if verdict == "INVALID":
            assert reason and reason in page["reason"], (case.name, reason, page["reason"])
        elif verdict == "UNUSABLE" and reason.startswith("--trust-auditor: "):
            # The very words of Python's parse_auditor_key (and of transparency/note.py under it).
            assert reason.removeprefix("--trust-auditor: ") in page["reason"], (case.name, reason, page["reason"])
        elif verdict == "VALID":
            report = page["report"].splitlines()
            assert report == out.splitlines()[:len(report)], case.name  # line for line what the CLI prints
            named = [AUDITOR] if case.auditors else []
            assert page["auditors"] == named, case.name
            # Python: "<how the card was pinned> The card is attested by NAME (...)", after the lines compared.
            assert any(line.endswith(f" {ATTESTED_LINE}") for line in out.splitlines()) == bool(named), case.name


# ------------------------------------------------------------------------ signed notes, word for word

NOTE_RUNNER = """
const att = require(process.argv[1] + '/attestation.js');
const canonical = require(process.argv[1] + '/canonical.js');
let input = ''; process.stdin.on('data', d => input += d).on('end', async () => {
  const job = JSON.parse(input);
  const schemas = canonical.parseJson(job.schemas);
  const out = [];
  for (const [op, arg] of job.ops) {
    try {
      if (op === 'repr') out.push(att.pyRepr(arg));
      else if (op === 'key') out.push((await att.parseAuditorKey(arg)).name);
      else if (op === 'open') {
        const verifier = await att.parseAuditorKey(arg[0]);
        const card = { model_id: 'm', circuits: [], audit_circuits: [], spread: null, persistence: null };
        const r = await att.checkAttestations(card, '0'.repeat(64), [{ auditor_key: arg[0], note: arg[1] }], [verifier],
          schemas.attestation_statement);
        out.push(r.problem);
      } else throw new Error('unknown op ' + op);
    } catch (e) { out.push({ refused: e.message }); }
  }
  process.stdout.write(JSON.stringify(out));
});
"""


def run_attestation_js(ops: list) -> list:
    return run_node(NOTE_RUNNER, {"schemas": json.dumps(page_schemas()), "ops": ops}, str(PAGE_DIR))


def test_python_reprs_are_written_as_python_writes_them():
    strings = ["", "plain", "it's", 'say "hi"', "both ' and \"", "back\\slash", "tab\there", "new\nline", "\r",
               "\x00\x1f\x7f", "\x85\xa0\xad", "caf\u00e9", "\u2028\u2029\u200b\ufeff", "\U0001F600", "\U000E0001",
               "\ud800", "a\u0301", "\u3000x", "\u2014 name", "+", "\U0010FFFF"]
    assert run_attestation_js([["repr", s] for s in strings]) == [repr(s) for s in strings]


def _python_key(vkey: str):
    try:
        return parse_auditor_key(vkey).name
    except AttestationError as exc:
        return {"refused": str(exc)}


def test_trusted_keys_are_read_as_python_reads_them():
    _, vkey = note.generate_key(AUDITOR)
    name, key_id, b64 = vkey.split("+", 2)
    raw = note.b64decode_strict(b64)
    keys = [vkey, f"  {vkey}\n", AUDITOR, "", "+" * 3, f"{name}+{key_id}", f"+{key_id}+{b64}", f"a b+{key_id}+{b64}",
            f"{name}+{key_id.upper()}+{b64}", f"{name}+{key_id[:7]}+{b64}", f"{name}+{'0' * 8}+{b64}",
            f"{name}+{key_id}+{b64[:-1]}", f"{name}+{key_id}+{b64[:-2]}==", f"{name}+{key_id}+",
            f"{name}+{key_id}+AQ==", f"{name}+{key_id}+{base64.b64encode(bytes([2]) + raw[1:]).decode()}",
            f"{name}+{key_id}+{base64.b64encode(raw + b'x').decode()}", f"{name}+{key_id}+{b64} ",
            f"caf\u00e9+{key_id}+{b64}", f"x\u2003y+{key_id}+{b64}", f"x\x85y+{key_id}+{b64}", "x" * 600,
            f"{name}+{key_id}+{b64.replace('=', '')}", f"{name}+{key_id}+{b64[:-1]}B"]
    keys.append(note.encode_vkey("caf\u00e9", 1, raw[1:]))  # a well-formed key with a non-ASCII name
    rng = random.Random(4)  # base64 as binascii's strict mode reads it: padding, surplus, stray characters
    for _ in range(300):
        text = "".join(rng.choice("AQgw+/=\u00e9 ") for _ in range(rng.randrange(0, 10)))
        where = rng.randrange(len(b64) + 1)
        keys.append(f"{name}+{key_id}+{text if rng.random() < 0.5 else b64[:where] + text + b64[where:]}")
        tail = "".join(rng.choice("AQgw==") for _ in range(rng.randrange(0, 5)))
        keys.append(f"{name}+{key_id}+{b64[:len(b64) - rng.randrange(0, 5)]}{tail}")
    expected = [_python_key(k) for k in keys]
    assert sum(isinstance(e, str) for e in expected) >= 3 and sum(isinstance(e, dict) for e in expected) >= 15
    assert run_attestation_js([["key", k] for k in keys]) == expected


def _python_open(vkey: str, text: str):
    """What commitments.attestation.check_attestations says of one note for a card it cannot cover (model 'm')."""
    try:
        opened = open_attestation(Attestation(auditor_key=vkey, note=text), parse_auditor_key(vkey))
    except NotSignedBy:
        return f"no auditor you trust ({AUDITOR}) attested this card {'0' * 16}... of model 'm'"
    except AttestationError as exc:
        return f"an attestation under {AUDITOR}'s key does not hold: {exc}"
    return f"{AUDITOR}'s attestation does not cover this card: it attests a card of model " \
           f"{opened.statement.model_id!r}, not 'm'"


def _note_mutations(signed: str, rng: random.Random, n: int) -> list[str]:
    text, _, sigs = signed.rpartition("\n\n")
    pieces = ["\n", "\n\n", " ", "\u2014", "\u2014 ", "=", "+", "A", "\r", "\x00", "\t", "{", "}", '"', ",", "x",
              "\u00e9", "\U0001F600"]
    out = [signed, text + "\n", text + "\n\n", signed + "\n", signed + signed.rpartition("\n\n")[2],
           signed + sigs + "\n", signed.replace("\u2014 ", "- "), signed.replace(f"\u2014 {AUDITOR} ", f"\u2014 {AUDITOR}"),
           text + "\n\n" + "\u2014 " + AUDITOR + " AAAA\n", text + "\n\n" + (sigs + "\n") * 101,
           signed.replace(AUDITOR + " ", "other.example ", 1), signed.replace('"', " ", 1)]
    for _ in range(n):
        i = rng.randrange(len(signed))
        op = rng.random()
        if op < 0.4:
            out.append(signed[:i] + rng.choice(pieces) + signed[i:])
        elif op < 0.7:
            out.append(signed[:i] + signed[i + 1:])
        else:
            out.append(signed[:i] + rng.choice(pieces) + signed[i + 1:])
    return out


def test_altered_notes_are_refused_for_the_reasons_python_gives(bank):
    skey, vkey = note.generate_key(AUDITOR)
    signer = note.Signer.from_key(skey)
    statement = attested_statement(bank.card)
    signed = sign_attestation(statement, signer).note
    other = note.Signer.from_key(note.generate_key("other.example")[0])
    notes = _note_mutations(signed, random.Random(3), 300)
    notes.append(note.sign(statement.text(), [other, signer]))  # cosigned: its own signature still opens it
    notes.append(note.sign(statement.text(), [other]))
    notes.append(note.sign(statement.text().replace('{"card_digest"', '{"card_digest":"x","card_digest"'), [signer]))
    notes.append(note.sign(statement.text().replace('"date":"2026-11-28"', '"date":"28 Nov"'), [signer]))
    notes.append(note.sign(statement.text().replace('"date":"2026-11-28"', '"date":7'), [signer]))
    notes.append(note.sign(statement.text().replace('"date":"2026-11-28"', '"date":"2026-11-28","x":1'), [signer]))
    notes.append(note.sign(statement.text() + "second line\n", [signer]))
    notes.append(note.sign(statement.text().replace("v1", "v2"), [signer]))
    notes.append(note.sign(statement.text().replace("[\"radius\"", "[\"rad\\u0069us\""), [signer]))
    expected = [_python_open(vkey, t) for t in notes]
    got = run_attestation_js([["open", [vkey, t]] for t in notes])
    assert "does not cover this card: it attests a card of model" in expected[0]
    assert len({e.split(":")[0] for e in expected}) >= 3  # opened, unsigned and refused notes all occur
    # Python's pydantic words for a malformed statement are its own: the page names the same refusal.
    malformed = "the attestation's statement is malformed ("
    assert [(t, g, e) for t, g, e in zip(notes, got, expected)
            if not (g == e or (malformed in e and isinstance(g, str) and g.split("(")[0] == e.split("(")[0]))] == []


# -------------------------------------------------------------------------------------------- Chromium


def test_the_page_in_chromium_shows_the_auditor_and_refuses_an_attestation_of_another_card(cases, tmp_path):
    page = tmp_path / "verify-any-card.html"
    page.write_text(build_page().html)
    chosen = [next(c for c in cases if c.name == name) for name in
              ("attestation: attested honest card", "attestation: of another card digest")]
    node = node_verdicts(chosen)
    driver = chromium()
    try:
        from selenium.webdriver.common.by import By

        driver.get(page.as_uri())
        for i, (case, in_node) in enumerate(zip(chosen, node)):
            paths = []
            for j, text in enumerate(case.attestations):
                paths.append(tmp_path / f"attestation-{i}-{j}.json")
                paths[-1].write_text(text)
            driver.execute_script("document.getElementById('attestation-files').value = '';"
                                  "document.getElementById('trusted-auditors').value = arguments[0];",
                                  "\n".join(case.auditors))
            driver.find_element(By.ID, "attestation-files").send_keys("\n".join(str(p) for p in paths))
            result = verify_in_page(driver, case)
            assert result["verdict"] == case.expected, (case.name, result["text"])
            if case.expected == "VALID":
                assert ATTESTED_LINE in result["text"].splitlines(), result["text"]
                assert "The certificate is about your record." in result["text"]
            else:
                assert in_node["reason"] in result["text"] and case.reason in result["text"], result["text"]
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, errors
    finally:
        driver.quit()
