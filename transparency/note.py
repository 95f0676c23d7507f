"""C2SP signed notes with Ed25519 keys: https://c2sp.org/signed-note

A note is a UTF-8 text ending in a newline, a blank line, and one or more
signature lines "— <key name> base64(key ID || signature)". This module signs
with signature type 0x01 (Ed25519 over the text) and opens notes against a
list of trusted verifiers. Key strings are those of golang.org/x/mod's
sumdb/note package:

    vkey  <name>+<hex key ID>+base64(type || 32-byte public key)
    skey  PRIVATE+KEY+<name>+<hex key ID>+base64(type || 32-byte seed)

Only the vkey form is in the spec; the skey form is the Go package's.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Self

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

SIG_ED25519 = 0x01
MAX_SIGNATURES = 100  # the spec requires at least 16; Go's package stops at 100

_DASH = "\u2014 "  # em dash and space open every signature line
_PRIVATE = "PRIVATE+KEY+"


class NoteError(ValueError):
    """Base of every error in this module: something is malformed or unsigned."""


class MalformedKey(NoteError):
    """A key name, vkey or skey string is not well formed."""


class MalformedNote(NoteError):
    """A note (or a text to sign) breaks the signed-note format."""


class BadSignature(NoteError):
    """A signature by a known key (name and key ID match) does not verify."""


class UnverifiedNote(NoteError):
    """A well-formed note with no signature from any known key."""

    def __init__(self, note: Note) -> None:
        super().__init__("note has no signature by a known key")
        self.note = note


# -- names, key IDs and key strings ------------------------------------------


def check_name(name: str) -> None:
    """Key names: non-empty, no Unicode spaces, no '+' (and, for notes, no control characters)."""
    if not isinstance(name, str) or name == "":
        raise MalformedKey("key name is empty")
    for c in name:
        # str.isspace() covers every character Go's unicode.IsSpace does.
        if c.isspace() or c == "+" or ord(c) < 0x20:
            raise MalformedKey(f"key name {name!r} contains {c!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedKey(f"key name {name!r} is not valid UTF-8") from None


def key_id(name: str, sig_type: int, public_key: bytes) -> int:
    """SHA-256(name || 0x0A || type || public key)[:4] as a big-endian uint32."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([sig_type]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def b64decode_strict(s: str) -> bytes:
    """Standard padded base64, canonical only: one string per byte sequence."""
    try:
        raw = base64.b64decode(s, validate=True)
    except ValueError:  # binascii.Error, or non-ASCII text
        raise NoteError(f"malformed base64 {s[:16]!r}") from None
    # Python ignores non-zero padding bits; re-encoding catches them.
    if base64.b64encode(raw).decode("ascii") != s:
        raise NoteError(f"non-canonical base64 {s[:16]!r}")
    return raw


def encode_vkey(name: str, sig_type: int, public_key: bytes) -> str:
    check_name(name)
    kid = key_id(name, sig_type, public_key)
    return f"{name}+{kid:08x}+{base64.b64encode(bytes([sig_type]) + public_key).decode('ascii')}"


def _split_key(s: str, what: str) -> tuple[str, int, int, bytes]:
    """'name+hhhhhhhh+base64' -> (name, key ID, type byte, key material)."""
    # The name has no '+' and the ID is hex, so the first two '+' split it;
    # the base64 part may itself contain '+'.
    name, sep1, rest = s.partition("+")
    hex_id, sep2, b64 = rest.partition("+")
    if not (sep1 and sep2):
        raise MalformedKey(f"{what} is not name+keyid+key")
    check_name(name)
    if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
        raise MalformedKey(f"{what} key ID {hex_id!r} is not 8 lowercase hex digits")
    try:
        raw = b64decode_strict(b64)
    except NoteError as e:
        raise MalformedKey(f"{what} key: {e}") from None
    if len(raw) < 2:
        raise MalformedKey(f"{what} key material is empty")
    return name, int(hex_id, 16), raw[0], raw[1:]


def decode_vkey(vkey: str, sig_type: int, key_len: int = 32) -> tuple[str, bytes]:
    """Parse a vkey of the given signature type; return (name, public key)."""
    name, kid, typ, key = _split_key(vkey, "vkey")
    if typ != sig_type:
        raise MalformedKey(f"vkey type 0x{typ:02x}, want 0x{sig_type:02x}")
    if len(key) != key_len:
        raise MalformedKey(f"vkey public key is {len(key)} bytes, want {key_len}")
    if kid != key_id(name, typ, key):
        raise MalformedKey(f"vkey key ID {kid:08x} does not match its key")
    return name, key


def decode_skey(skey: str, sig_type: int) -> tuple[str, Ed25519PrivateKey]:
    """Parse PRIVATE+KEY+name+id+base64(type || seed); the ID must match the derived public key."""
    if not skey.startswith(_PRIVATE):
        raise MalformedKey("skey does not start with PRIVATE+KEY+")
    name, kid, typ, seed = _split_key(skey[len(_PRIVATE):], "skey")
    if typ != sig_type:
        raise MalformedKey(f"skey type 0x{typ:02x}, want 0x{sig_type:02x}")
    if len(seed) != 32:
        raise MalformedKey(f"skey seed is {len(seed)} bytes, want 32")
    private_key = Ed25519PrivateKey.from_private_bytes(seed)
    if kid != key_id(name, typ, _public_bytes(private_key)):
        raise MalformedKey(f"skey key ID {kid:08x} does not match its key")
    return name, private_key


def _public_bytes(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


# -- verifiers and signers ---------------------------------------------------


class Verifier:
    """A trusted public key. open() uses only name, key_id and verify(), so a
    subclass may change the signature type and the signed message (see
    transparency.cosignature); this base class verifies plain Ed25519 (0x01)."""

    SIG_TYPE = SIG_ED25519

    def __init__(self, name: str, public_key: bytes) -> None:
        check_name(name)
        if len(public_key) != 32:
            raise MalformedKey(f"Ed25519 public key is {len(public_key)} bytes, want 32")
        self.name = name
        self.public_key = bytes(public_key)
        self.key_id = key_id(name, self.SIG_TYPE, self.public_key)
        self._key = Ed25519PublicKey.from_public_bytes(self.public_key)

    @classmethod
    def from_key(cls, vkey: str) -> Self:
        name, public_key = decode_vkey(vkey, cls.SIG_TYPE)
        return cls(name, public_key)

    def vkey(self) -> str:
        return encode_vkey(self.name, self.SIG_TYPE, self.public_key)

    def verify(self, msg: bytes, sig: bytes) -> bool:
        return ed25519_verify(self._key, msg, sig)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, key_id={self.key_id:08x})"


def ed25519_verify(key: Ed25519PublicKey, msg: bytes, sig: bytes) -> bool:
    if len(sig) != 64:
        return False
    try:
        key.verify(sig, msg)
    except InvalidSignature:
        return False
    return True


class Signer:
    """An Ed25519 private key under a name, signing with type 0x01."""

    SIG_TYPE = SIG_ED25519

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        check_name(name)
        self.name = name
        self._key = private_key
        self.public_key = _public_bytes(private_key)
        self.key_id = key_id(name, self.SIG_TYPE, self.public_key)

    @classmethod
    def from_key(cls, skey: str) -> Self:
        name, private_key = decode_skey(skey, cls.SIG_TYPE)
        return cls(name, private_key)

    def skey(self) -> str:
        seed = self._key.private_bytes_raw()
        b64 = base64.b64encode(bytes([self.SIG_TYPE]) + seed).decode("ascii")
        return f"{_PRIVATE}{self.name}+{self.key_id:08x}+{b64}"

    def verifier(self) -> Verifier:
        return Verifier(self.name, self.public_key)

    def sign(self, msg: bytes) -> bytes:
        return self._key.sign(msg)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, key_id={self.key_id:08x})"


def generate_key(name: str) -> tuple[str, str]:
    """A fresh Ed25519 key pair: (skey, vkey). Keep the skey secret."""
    signer = Signer(name, Ed25519PrivateKey.generate())
    return signer.skey(), signer.verifier().vkey()


# -- notes -------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """One signature line: key name, key ID, and the signature bytes after the ID."""

    name: str
    key_id: int
    sig: bytes

    def line(self) -> str:
        return signature_line(self.name, self.key_id, self.sig)


@dataclass
class Note:
    """An opened note: its text, the signatures by known keys, and the others."""

    text: str
    verified: list[Signature] = field(default_factory=list)
    unverified: list[Signature] = field(default_factory=list)


def signature_line(name: str, kid: int, sig: bytes) -> str:
    """'— name base64(key ID || sig)\\n'."""
    check_name(name)
    b64 = base64.b64encode(kid.to_bytes(4, "big") + sig).decode("ascii")
    return f"{_DASH}{name} {b64}\n"


def _check_chars(s: str) -> None:
    for c in s:
        if ord(c) < 0x20 and c != "\n":
            raise MalformedNote(f"note contains control character {c!r}")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedNote("note is not valid UTF-8") from None


def sign(text: str, signers: Iterable[Signer]) -> str:
    """text + blank line + one signature line per signer (in order)."""
    if text == "" or not text.endswith("\n"):
        raise MalformedNote("note text must be non-empty and end in a newline")
    _check_chars(text)
    msg = text.encode("utf-8")
    lines = [signature_line(s.name, s.key_id, s.sign(msg)) for s in signers]
    if not lines:
        raise MalformedNote("a note needs at least one signer")
    return text + "\n" + "".join(lines)


def _parse_signature(line: str) -> Signature:
    if not line.startswith(_DASH):
        raise MalformedNote(f"signature line does not start with an em dash: {line[:40]!r}")
    name, sep, b64 = line[len(_DASH):].partition(" ")
    if not sep:
        raise MalformedNote(f"signature line has no space after the name: {line[:40]!r}")
    try:
        check_name(name)
        raw = b64decode_strict(b64)
    except NoteError as e:
        raise MalformedNote(f"signature line: {e}") from None
    if len(raw) < 5:  # a 4-byte key ID and at least one signature byte
        raise MalformedNote(f"signature by {name} is {len(raw)} bytes, too short for a key ID and a signature")
    return Signature(name, int.from_bytes(raw[:4], "big"), raw[4:])


def open(message: str | bytes, verifiers: Iterable[Verifier]) -> Note:
    """Parse a signed note and check it against trusted verifiers.

    A signature whose (name, key ID) matches no verifier is kept in
    Note.unverified; one that matches must verify, or BadSignature is raised.
    With no verified signature at all, UnverifiedNote is raised (it carries
    the parsed note). Repeated identical lines are kept once, and each key
    appears at most once in Note.verified.
    """
    if isinstance(message, (bytes, bytearray)):
        try:
            message = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedNote("note is not valid UTF-8") from None
    _check_chars(message)

    # The text ends at the last blank line; signature lines are never empty.
    split = message.rfind("\n\n")
    if split < 0:
        raise MalformedNote("note has no blank line before its signatures")
    text, block = message[: split + 1], message[split + 2:]
    if block == "" or not block.endswith("\n"):
        raise MalformedNote("note must end in one or more newline-terminated signature lines")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNote(f"note has {len(lines)} signatures, more than {MAX_SIGNATURES}")
    sigs = [_parse_signature(line) for line in lines]

    known: dict[tuple[str, int], Verifier] = {}
    for v in verifiers:
        k = (v.name, v.key_id)
        if k in known and known[k] is not v:
            raise NoteError(f"two verifiers for key {v.name}+{v.key_id:08x}")
        known[k] = v

    note = Note(text)
    msg = text.encode("utf-8")
    seen: set[Signature] = set()
    for s in sigs:
        if s in seen:
            continue
        seen.add(s)
        v = known.get((s.name, s.key_id))
        if v is None:
            note.unverified.append(s)
            continue
        # A known key must verify every time, even if it already has.
        if not v.verify(msg, s.sig):
            raise BadSignature(f"invalid signature by known key {s.name}+{s.key_id:08x}")
        if all((x.name, x.key_id) != (s.name, s.key_id) for x in note.verified):
            note.verified.append(s)
    if not note.verified:
        raise UnverifiedNote(note)
    return note
