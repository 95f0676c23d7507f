"""Signed notes, checkpoints and cosignatures (transparency.note, .checkpoint, .cosignature).

Known-answer vectors come from:
  golang/mod            sumdb/note/note_test.go (PeterNeumann, EnochRoot)
  C2SP/C2SP             signed-note.md, tlog-checkpoint.md, tlog-cosignature.md
  transparency-dev/formats  note/note_cosigv1_test.go (type 0x04 vkey, timestamp)
  florolf/tlog-scales   tests/test_signing.py (a real checkpoint with a witness cosignature)
"""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from transparency import note
from transparency.checkpoint import Checkpoint, CheckpointError
from transparency.cosignature import (
    CosignatureError,
    CosignatureSigner,
    CosignatureVerifier,
    signed_message,
    timestamp_of,
)
from transparency.note import (
    BadSignature,
    MalformedKey,
    MalformedNote,
    NoteError,
    Signature,
    Signer,
    UnverifiedNote,
    Verifier,
)

# golang/mod sumdb/note/note_test.go
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
PETER_B64 = "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
ENOCH_B64 = "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ="
PETER_SIG = f"— PeterNeumann {PETER_B64}\n"
ENOCH_SIG = f"— EnochRoot {ENOCH_B64}\n"

# C2SP/C2SP signed-note.md, "Example"
FOO_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
FOO_NOTE = (
    "This is an example message.\n\n— example.com/foo "
    "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)
# C2SP/C2SP signed-note.md, opening example (no key given): its text has an empty line.
QUASIMODO_TEXT = "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n"
QUASIMODO_SIG = (
    "— quasimodo.example/salvatore "
    "NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n"
)
# C2SP/C2SP tlog-checkpoint.md and tlog-cosignature.md (no keys given)
SOFA_BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
SOFA_LOG_SIG = (
    "— example.com/behind-the-sofa "
    "Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
)
SOFA_WITNESS_SIG = (
    "— witness.example.com/w1 "
    "jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n"
)

# florolf/tlog-scales tests/test_signing.py: a staging CT log checkpoint with
# its own Ed25519 (0x01) and RFC 6962 (0x05) signatures and four witnesses'
# cosignatures (0x04); the remora.n621.de vkey also appears in
# transparency-dev/formats note/note_cosigv1_test.go.
ARCHE_VKEY = "arche2025h1.staging.ct.transparency.dev+ba2f06c0+AU0vHmlGCS/PdN8b2OaGmKprLI8HKM+dJ472xgFYh15f"
REMORA_VKEY = "remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2"
ARCHE_NOTE = """arche2025h1.staging.ct.transparency.dev
1432088532
U7WM79jrzyhGZ5/GUBTpM7NzwdyfFx61t3RovgcC4Ro=

— arche2025h1.staging.ct.transparency.dev zTM8sQAAAZ5W0WdjBAMARjBEAiBjW5IQf9pvsYLfQFX6hoGREPMHbdQ3urbllzalApkptQIgIpwtEroeW2BXaHAI4kJXFbon5Ch9MNL5zRNZ55lvGt0=
— arche2025h1.staging.ct.transparency.dev ui8GwCF1+kWqZrxGdhj4aX3gcw7XUlXQQabg/27lefwhUkzbC3NygNI75MdhL1bfTW9g8Ei59RA23oHP7Ry1k3ZFWwQ=
— transparency.dev/DEV:witness-little-garden 2AQqhwAAAABqEiEgzgFIqqhbUoDwjMWE6UP8nd8/KYTzwZ2rhIgcqoXHAwVkjZr4AscylP3v7sEodkRAErumC2q44vdgJY096st5BQ==
— witness1.smartit.nu/witness1 pIyCDwAAAABqEiEghIp82KWebrw7/oHQwlTAm3g2RKS4+eebl8eO0WH+/iEcxZ75W3u5hNI7TOQtmJbqmNWVuE0tgh0XwzdZsDsUAQ==
— remora.n621.de 2net5wAAAABqEiEgPlfF3V06o0Y+fHM+J5J9s27wgxxcOVSpZ/2g/KSiXCg9DEZI+aVCIobWX9sXTynk5XeU/zZ0WBxtqB0DrAWfBw==
— witness.stagemole.eu Z/euoAAAAABqEiEgw0i+7g2ENfDAWHmtRzCfKTHSDwYDJA2NmKeGi9Y8FtEyOUvVr+AJmIY/2TUFucgKi7lI7cUiOvKFYe/TmN9DAg==
"""


def sig_of(name: str, b64: str) -> Signature:
    raw = base64.b64decode(b64)
    return Signature(name, int.from_bytes(raw[:4], "big"), raw[4:])


def tamper_b64(line: str, index: int) -> str:
    """Flip one bit of byte `index` of a signature line's decoded bytes and re-encode it."""
    head, b64 = line.rstrip("\n").rsplit(" ", 1)
    raw = bytearray(base64.b64decode(b64))
    raw[index] ^= 0x01
    return f"{head} {base64.b64encode(bytes(raw)).decode()}\n"


# -- known answers -----------------------------------------------------------


def test_go_keys_parse_and_reencode() -> None:
    v = Verifier.from_key(PETER_VKEY)
    assert (v.name, v.key_id) == ("PeterNeumann", 0xC74F20A3)
    assert v.vkey() == PETER_VKEY
    s = Signer.from_key(PETER_SKEY)
    assert (s.name, s.key_id) == ("PeterNeumann", 0xC74F20A3)
    assert s.skey() == PETER_SKEY
    assert s.verifier().vkey() == PETER_VKEY
    assert Verifier.from_key(ENOCH_VKEY).key_id == 0xAF0CFE78


def test_go_sign_is_byte_for_byte() -> None:
    # Ed25519 is deterministic, so the Go output is reproducible exactly.
    assert note.sign(TEXT, [Signer.from_key(PETER_SKEY)]) == TEXT + "\n" + PETER_SIG


def test_go_open_one_verified_one_not() -> None:
    peter, enoch = Verifier.from_key(PETER_VKEY), Verifier.from_key(ENOCH_VKEY)
    msg = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    n = note.open(msg, [peter])
    assert n.text == TEXT
    assert n.verified == [sig_of("PeterNeumann", PETER_B64)]
    assert n.unverified == [sig_of("EnochRoot", ENOCH_B64)]
    n = note.open(msg.encode("utf-8"), [peter, enoch])
    assert [s.name for s in n.verified] == ["PeterNeumann", "EnochRoot"] and n.unverified == []
    assert n.verified[0].line() == PETER_SIG


def test_go_open_no_known_key_is_unverified_note() -> None:
    with pytest.raises(UnverifiedNote) as e:
        note.open(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [])
    assert e.value.note.verified == []
    assert [s.key_id for s in e.value.note.unverified] == [0xC74F20A3, 0xAF0CFE78]


def test_go_open_inserted_bytes_fail_known_key() -> None:
    # note_test.go "Invalid signature": four base64 characters spliced into Peter's signature.
    bad = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(BadSignature, match="PeterNeumann\\+c74f20a3"):
        note.open(TEXT + "\n" + bad, [Verifier.from_key(PETER_VKEY)])


@pytest.mark.parametrize(
    "msg",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n— Bad Name " + PETER_B64,
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
    ],
)
def test_go_malformed_messages(msg: str) -> None:
    with pytest.raises(MalformedNote):
        note.open(msg, [Verifier.from_key(PETER_VKEY)])


def test_go_invalid_utf8_rejected() -> None:
    with pytest.raises(MalformedNote, match="UTF-8"):
        note.open(b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), [Verifier.from_key(PETER_VKEY)])


@pytest.mark.parametrize("key, parse", [(PETER_VKEY, Verifier.from_key), (PETER_SKEY, Signer.from_key)])
def test_go_key_manglings_rejected(key: str, parse) -> None:
    # note_test.go TestNewVerifier/TestNewSigner: every proper substring and
    # every single-character increment must fail to parse.
    bad = {key[i:j] for i in range(len(key) + 1) for j in range(i + 1, len(key) + 1)} - {key}
    bad |= {key[:i] + chr(ord(key[i]) + 1) + key[i + 1:] for i in range(len(key))}
    accepted = []
    for k in bad:
        try:
            parse(k)
        except MalformedKey:
            continue
        accepted.append(k)
    assert accepted == []


def test_go_vkeys_with_adjusted_hash_rejected() -> None:
    # note_test.go: the key ID is right for the bytes, but the bytes are wrong.
    # Wrong length key; its base64 is also non-canonical ("Y==" leaves bits set), which
    # Go tolerates and this module rejects first.
    with pytest.raises(MalformedKey, match="non-canonical"):
        Verifier.from_key("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==")
    key = base64.b64decode(PETER_VKEY.split("+", 2)[2]) + b"\x00"
    kid = note.key_id("PeterNeumann", key[0], key[1:])
    with pytest.raises(MalformedKey, match="33 bytes"):
        Verifier.from_key(f"PeterNeumann+{kid:08x}+{base64.b64encode(key).decode()}")
    with pytest.raises(MalformedKey, match="type 0x65"):  # unknown algorithm
        Verifier.from_key("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")


def test_c2sp_signed_note_example() -> None:
    v = Verifier.from_key(FOO_VKEY)
    assert v.key_id == 0x530D903A
    assert v.public_key.hex() == "e932791ae6e7a840a46164c904786426d5e7821dd8b29a00d61cae72afdd4da4"
    n = note.open(FOO_NOTE, [v])
    assert n.text == "This is an example message.\n" and len(n.verified) == 1


def test_c2sp_text_ends_at_last_blank_line() -> None:
    with pytest.raises(UnverifiedNote) as e:
        note.open(QUASIMODO_TEXT + "\n" + QUASIMODO_SIG, [Verifier.from_key(FOO_VKEY)])
    assert e.value.note.text == QUASIMODO_TEXT
    [s] = e.value.note.unverified
    assert s.name == "quasimodo.example/salvatore" and len(s.sig) == 64


def test_c2sp_checkpoint_example_parses() -> None:
    cp = Checkpoint.parse(SOFA_BODY)
    assert (cp.origin, cp.size, cp.extensions) == ("example.com/behind-the-sofa", 20852163, ())
    assert cp.root_hash == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert cp.body() == SOFA_BODY
    with pytest.raises(UnverifiedNote) as e:
        note.open(SOFA_BODY + "\n" + SOFA_LOG_SIG + SOFA_WITNESS_SIG, [Verifier.from_key(PETER_VKEY)])
    assert Checkpoint.parse(e.value.note.text) == cp


def test_c2sp_cosignature_example_timestamp_and_message() -> None:
    # The witness line's timestamp is the one in the spec's signed-message example.
    raw = base64.b64decode(SOFA_WITNESS_SIG.split()[-1])
    s = Signature("witness.example.com/w1", int.from_bytes(raw[:4], "big"), raw[4:])
    assert timestamp_of(s) == 1679315147
    assert signed_message(SOFA_BODY, 1679315147) == (
        b"cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\n"
        b"CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    )


def test_transparency_dev_cosignature_vectors() -> None:
    v = CosignatureVerifier.from_key(REMORA_VKEY)
    assert (v.name, v.key_id, v.vkey()) == ("remora.n621.de", 0xDA77ADE7, REMORA_VKEY)
    # note_cosigv1_test.go TestCoSigV1Timestamp
    s = sig_of("x", "ZGhGuQAAAABm/qTPeyKXD+R2rzyQsxPiP8mXum7qq/iF0u4vanlqJyocWODBt97w9uL+8qT7S5gxEHWWOworDcFiEBYJXORmnFBOBA==")
    assert timestamp_of(s) == 1727964367
    with pytest.raises(CosignatureError):  # a plain 64-byte Ed25519 signature
        timestamp_of(sig_of("x", "eQjRQm6eSKzFoiYalgwCPXu2y3ijtg68is9M46JKxuZB+dRfTmeQeDBoXnvxZx2ugnkyV+MUMLXpWs1hPb/W/4xkNQY="))


def test_real_cosigned_checkpoint() -> None:
    log, witness = Verifier.from_key(ARCHE_VKEY), CosignatureVerifier.from_key(REMORA_VKEY)
    n = note.open(ARCHE_NOTE, [log, witness])
    assert [(s.name, s.key_id) for s in n.verified] == [(log.name, 0xBA2F06C0), (witness.name, 0xDA77ADE7)]
    # The log's 0x05 signature has the log's name but another key ID: unverified.
    assert len(n.unverified) == 4 and n.unverified[0].name == log.name
    assert witness.verified_timestamp(n) == 0x6A122120
    assert Checkpoint.parse(n.text).size == 1432088532


def test_real_cosigned_checkpoint_tampered() -> None:
    log, witness = Verifier.from_key(ARCHE_VKEY), CosignatureVerifier.from_key(REMORA_VKEY)
    with pytest.raises(BadSignature, match="remora"):
        note.open(ARCHE_NOTE.replace("1432088532", "1432088533"), [witness])
    line = next(x + "\n" for x in ARCHE_NOTE.splitlines() if x.startswith("— remora"))
    with pytest.raises(BadSignature, match="remora"):  # last timestamp byte changed
        note.open(ARCHE_NOTE.replace(line, tamper_b64(line, 4 + 7)), [log, witness])


# -- round trips -------------------------------------------------------------


def test_generate_sign_open() -> None:
    skey, vkey = note.generate_key("example.com/log")
    assert skey.startswith("PRIVATE+KEY+example.com/log+") and vkey.startswith("example.com/log+")
    signer, verifier = Signer.from_key(skey), Verifier.from_key(vkey)
    assert signer.verifier().vkey() == vkey
    msg = note.sign("hello\n", [signer])
    n = note.open(msg, [verifier])
    assert n.text == "hello\n" and [s.key_id for s in n.verified] == [verifier.key_id]


def test_multiple_signers_and_unknown_key() -> None:
    a, b, c = (Signer(f"example.com/{x}", Ed25519PrivateKey.generate()) for x in "abc")
    msg = note.sign("multi\n\nsigned\n", [a, b, c])
    assert msg.count("\n— ") == 3
    n = note.open(msg, [a.verifier(), c.verifier()])
    assert [s.name for s in n.verified] == ["example.com/a", "example.com/c"]
    assert [s.name for s in n.unverified] == ["example.com/b"]
    assert n.text == "multi\n\nsigned\n"


def test_repeated_lines_kept_once() -> None:
    n = note.open(TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG, [Verifier.from_key(PETER_VKEY)])
    assert len(n.verified) == 1 and len(n.unverified) == 1


def test_cosign_round_trip() -> None:
    log = Signer("example.com/log", Ed25519PrivateKey.generate())
    witness = CosignatureSigner("witness.example/w", Ed25519PrivateKey.generate())
    body = Checkpoint("example.com/log", 5, bytes(range(32)), ("ext",)).body()
    msg = note.sign(body, [log]) + witness.cosign(body, 1_700_000_000)
    wv = CosignatureVerifier.from_key(witness.verifier().vkey())
    n = note.open(msg, [log.verifier(), wv])
    assert len(n.verified) == 2 and wv.verified_timestamp(n) == 1_700_000_000
    # note.sign() with a cosigner stamps the current time.
    n = note.open(note.sign(body, [witness]), [wv])
    assert wv.verified_timestamp(n) > 1_700_000_000
    assert CosignatureSigner.from_key(witness.skey()).key_id == witness.key_id


# -- rejections --------------------------------------------------------------


def test_tampered_text_one_byte() -> None:
    msg = TEXT + "\n" + PETER_SIG
    with pytest.raises(BadSignature):
        note.open(msg.replace("problem,", "problem;"), [Verifier.from_key(PETER_VKEY)])


def test_tampered_signature() -> None:
    with pytest.raises(BadSignature):
        note.open(TEXT + "\n" + tamper_b64(PETER_SIG, 20), [Verifier.from_key(PETER_VKEY)])


def test_tampered_key_id_is_unknown_key() -> None:
    with pytest.raises(UnverifiedNote):
        note.open(TEXT + "\n" + tamper_b64(PETER_SIG, 3), [Verifier.from_key(PETER_VKEY)])


def test_same_name_other_key_is_unverified() -> None:
    impostor = Signer("PeterNeumann", Ed25519PrivateKey.generate())
    assert impostor.key_id != 0xC74F20A3
    with pytest.raises(UnverifiedNote) as e:
        note.open(note.sign(TEXT, [impostor]), [Verifier.from_key(PETER_VKEY)])
    assert e.value.note.unverified[0].name == "PeterNeumann"


def test_same_key_id_wrong_key_bytes_fails() -> None:
    # An attacker can grind a key whose ID collides with Peter's; name and ID
    # then match, so the signature must be checked, and fails.
    colliding = Verifier("PeterNeumann", Signer("x", Ed25519PrivateKey.generate()).public_key)
    colliding.key_id = 0xC74F20A3
    with pytest.raises(BadSignature):
        note.open(TEXT + "\n" + PETER_SIG, [colliding])


def test_missing_blank_line() -> None:
    with pytest.raises(MalformedNote, match="blank line"):
        note.open(TEXT + PETER_SIG, [Verifier.from_key(PETER_VKEY)])


@pytest.mark.parametrize("text", ["", "no newline", "a\n\x01b\n", "tab\there\n", "cr\r\n", "x\ud800\n"])
def test_sign_rejects_bad_text(text: str) -> None:
    with pytest.raises(MalformedNote):
        note.sign(text, [Signer.from_key(PETER_SKEY)])


@pytest.mark.parametrize("ch", ["\x00", "\t", "\r", "\x1f"])
def test_open_rejects_control_characters(ch: str) -> None:
    with pytest.raises(MalformedNote, match="control character"):
        note.open(TEXT.replace(" ", ch, 1) + "\n" + PETER_SIG, [Verifier.from_key(PETER_VKEY)])


def test_signature_count_limit() -> None:
    peter = Verifier.from_key(PETER_VKEY)
    assert len(note.open(TEXT + "\n" + PETER_SIG * 100, [peter]).verified) == 1
    with pytest.raises(MalformedNote, match="101 signatures"):
        note.open(TEXT + "\n" + PETER_SIG * 101, [peter])
    with pytest.raises(MalformedNote, match="101 signatures"):
        note.open(TEXT + "\n" + PETER_SIG * 101, [])


@pytest.mark.parametrize(
    "b64",
    [
        PETER_B64[:-1],  # missing padding
        PETER_B64[:-2] + "N=",  # non-zero padding bits: same bytes, non-canonical
        PETER_B64.replace("/", "_"),  # URL alphabet
        PETER_B64[:10] + " " + PETER_B64[10:],
        PETER_B64 + "=",
        "",
    ],
)
def test_malformed_signature_base64(b64: str) -> None:
    with pytest.raises(MalformedNote):
        note.open(f"{TEXT}\n— PeterNeumann {b64}\n", [Verifier.from_key(PETER_VKEY)])


@pytest.mark.parametrize("raw", [b"\xc7O ", b"\xc7O \xa3"])
def test_signature_too_short_for_key_id(raw: bytes) -> None:
    b64 = base64.b64encode(raw).decode()
    with pytest.raises(MalformedNote, match="too short"):
        note.open(f"{TEXT}\n— PeterNeumann {b64}\n", [Verifier.from_key(PETER_VKEY)])


@pytest.mark.parametrize(
    "line",
    [
        "- PeterNeumann " + PETER_B64,  # hyphen, not em dash
        "—PeterNeumann " + PETER_B64,
        "— PeterNeumann  " + PETER_B64,
        "—  PeterNeumann " + PETER_B64,
        "— Peter+Neumann " + PETER_B64,
        "— PeterNeumann",
    ],
)
def test_malformed_signature_line(line: str) -> None:
    with pytest.raises(MalformedNote):
        note.open(f"{TEXT}\n{line}\n", [Verifier.from_key(PETER_VKEY)])


@pytest.mark.parametrize("name", ["", "a b", "a+b", "a\u00a0b", "a\u2028b", "a\u3000b", "a\nb", "a\x01b"])
def test_bad_key_names(name: str) -> None:
    with pytest.raises(MalformedKey):
        note.generate_key(name)
    with pytest.raises(MalformedKey):
        Signer(name, Ed25519PrivateKey.generate())


def test_bad_vkey_and_skey_strings() -> None:
    pub = base64.b64decode(PETER_VKEY.split("+", 2)[2])[1:]
    seed = base64.b64decode(PETER_SKEY.split("+", 4)[4])[1:]

    def vkey(name: str, typ: int, key: bytes, kid: int | None = None) -> str:
        kid = note.key_id(name, typ, key) if kid is None else kid
        return f"{name}+{kid:08x}+{base64.b64encode(bytes([typ]) + key).decode()}"

    assert Verifier.from_key(vkey("PeterNeumann", 1, pub)).vkey() == PETER_VKEY
    with pytest.raises(MalformedKey, match="type 0x04"):  # right hash, cosignature type
        Verifier.from_key(vkey("PeterNeumann", 4, pub))
    with pytest.raises(MalformedKey, match="does not match"):  # bad hash
        Verifier.from_key(vkey("PeterNeumann", 1, pub, 0xC74F20A4))
    with pytest.raises(MalformedKey, match="lowercase hex"):
        Verifier.from_key(PETER_VKEY.replace("c74f20a3", "C74F20A3"))
    with pytest.raises(MalformedKey):  # '+' in the name shifts the fields
        Verifier.from_key(vkey("Peter+Neumann", 1, pub))
    with pytest.raises(MalformedKey, match="contains ' '"):
        Verifier.from_key(vkey("Peter Neumann", 1, pub))
    with pytest.raises(MalformedKey, match="type 0x02"):
        Signer.from_key("PRIVATE+KEY+" + vkey("PeterNeumann", 2, seed, 0xC74F20A3))
    with pytest.raises(MalformedKey, match="does not match"):  # seed of another key
        Signer.from_key("PRIVATE+KEY+" + vkey("PeterNeumann", 1, bytes(32), 0xC74F20A3))
    with pytest.raises(MalformedKey, match="PRIVATE"):
        Signer.from_key(PETER_VKEY)
    with pytest.raises(MalformedKey):
        Verifier.from_key(PETER_SKEY)
    assert issubclass(MalformedKey, NoteError) and issubclass(NoteError, ValueError)


def test_cosignature_keys_are_domain_separated() -> None:
    key = Ed25519PrivateKey.generate()
    plain, cosigner = Signer("w", key), CosignatureSigner("w", key)
    assert plain.key_id != cosigner.key_id
    with pytest.raises(MalformedKey, match="type 0x01"):
        CosignatureVerifier.from_key(plain.verifier().vkey())
    with pytest.raises(MalformedKey, match="type 0x04"):
        Verifier.from_key(cosigner.verifier().vkey())
    body = Checkpoint("o", 1, bytes(32)).body()
    # A plain note signature by the same key is not a cosignature: unknown key ID.
    with pytest.raises(UnverifiedNote):
        note.open(note.sign(body, [plain]), [cosigner.verifier()])


def test_cosignature_tampered_timestamp() -> None:
    witness = CosignatureSigner("witness.example/w", Ed25519PrivateKey.generate())
    body = Checkpoint("example.com/log", 7, bytes(32)).body()
    line = witness.cosign(body, 1_700_000_000)
    assert note.open(body + "\n" + line, [witness.verifier()]).verified
    with pytest.raises(BadSignature):
        note.open(body + "\n" + tamper_b64(line, 4 + 7), [witness.verifier()])


def test_cosign_rejects_bad_input() -> None:
    witness = CosignatureSigner("w", Ed25519PrivateKey.generate())
    body = Checkpoint("o", 1, bytes(32)).body()
    for t in (-1, 2**63, 1.5):
        with pytest.raises(CosignatureError, match="timestamp"):
            witness.cosign(body, t)  # type: ignore[arg-type]
    with pytest.raises(CosignatureError, match="not a checkpoint"):
        witness.cosign("hello\n", 1)
    assert witness.cosign(body, 2**63 - 1)
    with pytest.raises(CosignatureError, match="no verified cosignature"):
        witness.verifier().verified_timestamp(note.open(TEXT + "\n" + PETER_SIG, [Verifier.from_key(PETER_VKEY)]))


# -- checkpoints -------------------------------------------------------------

ROOT = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="


def test_checkpoint_round_trip_with_extensions() -> None:
    cp = Checkpoint("example.com/log", 0, bytes(32), ("one", "two"))
    assert cp.body() == f"example.com/log\n0\n{base64.b64encode(bytes(32)).decode()}\none\ntwo\n"
    assert Checkpoint.parse(cp.body()) == cp


@pytest.mark.parametrize(
    "text, why",
    [
        (f"o\n020852163\n{ROOT}\n", "leading zeros"),
        (f"o\n00\n{ROOT}\n", "leading zeros"),
        (f"o\n-1\n{ROOT}\n", "leading zeros"),
        (f"o\n+1\n{ROOT}\n", "leading zeros"),
        (f"o\n 1\n{ROOT}\n", "leading zeros"),
        (f"o\n1_000\n{ROOT}\n", "leading zeros"),
        (f"o\n\uff11\n{ROOT}\n", "leading zeros"),  # fullwidth digit one
        (f"o\n{'9' * 21}\n{ROOT}\n", "leading zeros"),
        (f"o\n{2**64}\n{ROOT}\n", "2\\^64"),
        (f"o\n1\n{ROOT[:-2]}J=\n", "canonical"),  # same 32 bytes, non-zero padding bits
        (f"o\n1\n{ROOT[:-1]}\n", "not base64"),
        (f"o\n1\n{base64.b64encode(bytes(31)).decode()}\n", "31 bytes"),
        (f"o\n1\n{base64.b64encode(bytes(33)).decode()}\n", "33 bytes"),
        (f"\n1\n{ROOT}\n", "origin is empty"),
        (f"o\n1\n{ROOT}", "newline"),
        (f"o\n1\n{ROOT}\n\n", "extension line is empty"),
        ("o\n1\n", "at least 3"),
        (f"o\tx\n1\n{ROOT}\n", "contains"),
    ],
)
def test_checkpoint_rejections(text: str, why: str) -> None:
    with pytest.raises(CheckpointError, match=why):
        Checkpoint.parse(text)


def test_checkpoint_constructor_checks_fields() -> None:
    for args in [("", 1, bytes(32)), ("o", -1, bytes(32)), ("o", True, bytes(32)), ("o", 1, bytes(31)), ("o\n", 1, bytes(32))]:
        with pytest.raises(CheckpointError):
            Checkpoint(*args)
    with pytest.raises(CheckpointError):
        Checkpoint("o", 1, bytes(32), ("",))
