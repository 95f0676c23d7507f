// An auditor's attestation of a card, in the browser: commitments/attestation.py `check_attestations`,
// with the C2SP signed notes of transparency/note.py (Ed25519 and SHA-256 through WebCrypto), check for
// check and word for word, so that the page refuses a card for the very reason fairproof-verify gives (but
// for pydantic's own words about a malformed statement, inside the parentheses of that refusal).
//
// A customer who names trusted auditors (verifier keys "name+hexkeyid+base64(0x01 || public key)") accepts
// a card only if some attestation opens under one of those keys (a signature line with the key's name and
// key ID that verifies over the note's text) and its statement (a header line and one line of canonical
// JSON) names exactly this card: its model, digest, commitment, circuits and lenses.

"use strict";

const att = typeof module !== "undefined"
  ? { canonical: require("./canonical.js"), schema: require("./schema.js"), explain: require("./explain.js") }
  : { canonical: globalThis.FairProofCanonical, schema: globalThis.FairProofSchema,
    explain: globalThis.FairProofExplain };

const HEADER = "fairproof-card-attestation/v1";
const SIG_ED25519 = 0x01;
const MAX_SIGNATURES = 100;
const DASH = "\u2014 "; // em dash and space open every signature line

// Errors of transparency/note.py (NoteError and its kinds) and commitments/attestation.py.
class NoteError extends Error {}
class UnverifiedNote extends NoteError {}
class AttestationError extends Error {}
class NotSignedBy extends AttestationError {}

// ---------------------------------------------------------------------------------------- Python's words
const pyRepr = (s) => att.explain.pyRepr(s);
const hex = (n, width) => n.toString(16).padStart(width, "0");
const codePoints = (s, n) => Array.from(s).slice(0, n).join(""); // s[:n], counted as Python counts
// str.isspace(): every character Python calls white space.
const PY_SPACE = new Set([0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
  0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000]);
const loneSurrogate = (code) => code >= 0xd800 && code <= 0xdfff;

// ---------------------------------------------------------------------------------------- bytes
const utf8 = (s) => new TextEncoder().encode(s);

async function sha256(bytes) {
  return new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", bytes));
}

function b64encode(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

// note.b64decode_strict: standard padded base64, canonical only. What decodes at all is what Python's
// base64.b64decode(s, validate=True) decodes (binascii's strict mode: ASCII alphabet only, no leading or
// discontinuous padding, nothing after a complete pad); anything that is not then the canonical encoding of
// its bytes (padding bits set, surplus '=') is refused as non-canonical.
const B64_ALPHABET = /^[A-Za-z0-9+/]$/;
function b64decodeStrict(s) {
  const malformed = () => new NoteError(`malformed base64 ${pyRepr(codePoints(s, 16))}`);
  if (s.startsWith("=")) throw malformed();
  let data = "";
  let quadPos = 0;
  let pads = 0;
  let padding = false;
  let complete = false;
  for (let i = 0; i < s.length && !complete; i++) {
    const c = s[i];
    if (c === "=") {
      padding = true;
      pads += 1;
      if (quadPos >= 2 && quadPos + pads >= 4) {
        if (i + 1 < s.length) throw malformed(); // excess data after padding
        complete = true;
      }
      continue;
    }
    if (!B64_ALPHABET.test(c) || padding) throw malformed();
    pads = 0;
    data += c;
    quadPos = (quadPos + 1) % 4;
  }
  if (!complete && quadPos !== 0) throw malformed(); // incorrect padding
  let raw;
  try {
    raw = Uint8Array.from(atob(data + "=".repeat((4 - (data.length % 4)) % 4)), (c) => c.charCodeAt(0));
  } catch (e) {
    throw malformed();
  }
  if (b64encode(raw) !== s) throw new NoteError(`non-canonical base64 ${pyRepr(codePoints(s, 16))}`);
  return raw;
}

// ---------------------------------------------------------------------------------------- keys
// note.check_name: non-empty, no Unicode spaces, no '+', no control characters, valid UTF-8.
function checkName(name) {
  if (typeof name !== "string" || name === "") throw new NoteError("key name is empty");
  let lone = false;
  for (const ch of name) {
    const code = ch.codePointAt(0);
    if (PY_SPACE.has(code) || ch === "+" || code < 0x20) throw new NoteError(`key name ${pyRepr(name)} contains ${pyRepr(ch)}`);
    if (loneSurrogate(code)) lone = true;
  }
  if (lone) throw new NoteError(`key name ${pyRepr(name)} is not valid UTF-8`);
}

// note.key_id: SHA-256(name || 0x0A || type || public key)[:4], as 8 hex digits.
async function keyId(name, sigType, publicKey) {
  const nameBytes = utf8(name);
  const message = new Uint8Array(nameBytes.length + 2 + publicKey.length);
  message.set(nameBytes, 0);
  message[nameBytes.length] = 0x0a;
  message[nameBytes.length + 1] = sigType;
  message.set(publicKey, nameBytes.length + 2);
  return Array.from((await sha256(message)).slice(0, 4), (b) => hex(b, 2)).join("");
}

// note.decode_vkey (through _split_key) for an Ed25519 key: { name, keyId (8 hex digits), publicKey }, or NoteError.
async function decodeVkey(vkey) {
  const first = vkey.indexOf("+");
  const second = first < 0 ? -1 : vkey.indexOf("+", first + 1);
  if (first < 0 || second < 0) throw new NoteError("vkey is not name+keyid+key");
  const name = vkey.slice(0, first);
  const hexId = vkey.slice(first + 1, second);
  checkName(name);
  if (!/^[0-9a-f]{8}$/.test(hexId)) throw new NoteError(`vkey key ID ${pyRepr(hexId)} is not 8 lowercase hex digits`);
  let raw;
  try {
    raw = b64decodeStrict(vkey.slice(second + 1));
  } catch (e) {
    if (e instanceof NoteError) throw new NoteError(`vkey key: ${e.message}`);
    throw e;
  }
  if (raw.length < 2) throw new NoteError("vkey key material is empty");
  if (raw[0] !== SIG_ED25519) throw new NoteError(`vkey type 0x${hex(raw[0], 2)}, want 0x${hex(SIG_ED25519, 2)}`);
  const publicKey = raw.slice(1);
  if (publicKey.length !== 32) throw new NoteError(`vkey public key is ${publicKey.length} bytes, want 32`);
  if (hexId !== await keyId(name, SIG_ED25519, publicKey)) throw new NoteError(`vkey key ID ${hexId} does not match its key`);
  return { name, keyId: hexId, publicKey };
}

// attestation.parse_auditor_key: an auditor's verifier key, or AttestationError if it is malformed.
async function parseAuditorKey(vkey) {
  try {
    return await decodeVkey(vkey.trim());
  } catch (e) {
    if (e instanceof NoteError) throw new AttestationError(`auditor key ${pyRepr(codePoints(vkey, 40))} is malformed: ${e.message}`);
    throw e;
  }
}

// Ed25519 over `message` (note.ed25519_verify): false for a signature of another length or a key WebCrypto
// will not take. A browser without Ed25519 cannot check attestations at all: that is an Error, not a verdict.
async function ed25519Verify(publicKey, message, sig) {
  if (sig.length !== 64) return false;
  let key;
  try {
    key = await globalThis.crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
  } catch (e) {
    if (e && e.name === "NotSupportedError") throw new Error("this browser's WebCrypto has no Ed25519, which attestations need");
    return false;
  }
  try {
    return await globalThis.crypto.subtle.verify({ name: "Ed25519" }, key, sig, message);
  } catch (e) {
    return false;
  }
}

// ---------------------------------------------------------------------------------------- notes
function checkChars(s) {
  let lone = false;
  for (const ch of s) {
    const code = ch.codePointAt(0);
    if (code < 0x20 && ch !== "\n") throw new NoteError(`note contains control character ${pyRepr(ch)}`);
    if (loneSurrogate(code)) lone = true;
  }
  if (lone) throw new NoteError("note is not valid UTF-8");
}

function parseSignature(line) {
  if (!line.startsWith(DASH)) throw new NoteError(`signature line does not start with an em dash: ${pyRepr(codePoints(line, 40))}`);
  const rest = line.slice(DASH.length);
  const space = rest.indexOf(" ");
  if (space < 0) throw new NoteError(`signature line has no space after the name: ${pyRepr(codePoints(line, 40))}`);
  const name = rest.slice(0, space);
  let raw;
  try {
    checkName(name);
    raw = b64decodeStrict(rest.slice(space + 1));
  } catch (e) {
    if (e instanceof NoteError) throw new NoteError(`signature line: ${e.message}`);
    throw e;
  }
  if (raw.length < 5) throw new NoteError(`signature by ${name} is ${raw.length} bytes, too short for a key ID and a signature`);
  return { name, keyId: Array.from(raw.slice(0, 4), (b) => hex(b, 2)).join(""), sig: raw.slice(4), line };
}

// note.open with one verifier: the note's text if a signature by the verifier's key holds (BadSignature, a
// NoteError, if one by that key does not), UnverifiedNote if none is by that key.
async function openNote(message, verifier) {
  checkChars(message);
  const split = message.lastIndexOf("\n\n");
  if (split < 0) throw new NoteError("note has no blank line before its signatures");
  const text = message.slice(0, split + 1);
  const block = message.slice(split + 2);
  if (block === "" || !block.endsWith("\n")) throw new NoteError("note must end in one or more newline-terminated signature lines");
  const lines = block.slice(0, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) throw new NoteError(`note has ${lines.length} signatures, more than ${MAX_SIGNATURES}`);
  const sigs = lines.map(parseSignature);
  const msg = utf8(text);
  const seen = new Set();
  let verified = false;
  for (const s of sigs) {
    if (seen.has(s.line)) continue; // an identical line (name, key ID and signature) counts once
    seen.add(s.line);
    if (s.name !== verifier.name || s.keyId !== verifier.keyId) continue;
    if (!await ed25519Verify(verifier.publicKey, msg, s.sig)) {
      throw new NoteError(`invalid signature by known key ${s.name}+${s.keyId}`);
    }
    verified = true;
  }
  if (!verified) throw new UnverifiedNote("note has no signature by a known key");
  return text;
}

// ---------------------------------------------------------------------------------------- statements
// AttestationStatement.from_text: the header line, then the statement as one line of canonical JSON.
function statementFromText(text, schema) {
  const newline = text.indexOf("\n");
  const header = newline < 0 ? text : text.slice(0, newline);
  const rest = newline < 0 ? "" : text.slice(newline + 1);
  const second = rest.indexOf("\n");
  const body = second < 0 ? rest : rest.slice(0, second);
  const tail = second < 0 ? "" : rest.slice(second + 1);
  if (header !== HEADER || tail !== "") {
    throw new AttestationError(`not a card attestation (the note must be '${HEADER}' and one JSON line)`);
  }
  let statement;
  try {
    statement = JSON.parse(body); // as pydantic reads it: a repeated key's last value; canonical form is checked below
    att.schema.checkShape(schema, statement, "statement");
  } catch (e) {
    if (!(e instanceof SyntaxError || e instanceof att.schema.ShapeError)) throw e;
    const where = e instanceof SyntaxError ? "statement: " : "";
    throw new AttestationError(`the attestation's statement is malformed (${where}${e.message})`);
  }
  if (`${HEADER}\n${att.canonical.canonicalJson(statement)}\n` !== text) {
    throw new AttestationError("the attestation's statement is not in canonical form (sorted keys, no spaces)");
  }
  return statement;
}

// attestation.open_attestation: the statement of an attestation signed by `verifier`'s key.
async function openAttestation(attestation, verifier, schema) {
  let text;
  try {
    text = await openNote(attestation.note, verifier);
  } catch (e) {
    if (e instanceof UnverifiedNote) throw new NotSignedBy(`not signed by ${verifier.name}`);
    if (e instanceof NoteError) throw new AttestationError(`the attestation is malformed or mis-signed: ${e.message}`);
    throw e;
  }
  return statementFromText(text, schema);
}

// (name, R1CS digest, key digest) of every bucket and audit circuit of the card, in the card's order.
const attestedCircuits = (card) => [...card.circuits.map((c) => [c.bucket, c.r1cs_digest, c.verifying_key_digest]),
  ...(card.audit_circuits || []).map((c) => [c.name, c.r1cs_digest, c.verifying_key_digest])];
const cardLenses = (card) => ["radius", ...(card.spread != null ? ["spread"] : []), ...(card.persistence != null ? ["persistence"] : [])];
const sameList = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// attestation.statement_mismatch: why the statement does not attest this card, or null.
function statementMismatch(statement, card, cardDigest) {
  if (statement.model_id !== card.model_id) return `it attests a card of model ${pyRepr(statement.model_id)}, not ${pyRepr(card.model_id)}`;
  if (statement.card_digest !== cardDigest) {
    return `it attests card ${statement.card_digest.slice(0, 16)}..., not this card ${cardDigest.slice(0, 16)}...`;
  }
  if (statement.commitment !== card.commitment) return "it names another commitment than the card's";
  const attested = statement.circuits.map((c) => [c.name, c.r1cs_digest, c.verifying_key_digest]);
  if (!sameList(attested, attestedCircuits(card))) return "the circuits it lists are not the card's";
  if (!sameList(statement.lenses, cardLenses(card))) return "the lenses it lists are not the card's";
  return null;
}

// attestation.check_attestations: { auditors: names of the trusted auditors whose attestation covers the
// card, problem: null, or why none does }. `verifiers` come from parseAuditorKey, `attestations` are
// documents read with the Attestation schema; `schema` is AttestationStatement's.
async function checkAttestations(card, cardDigest, attestations, verifiers, schema) {
  const auditors = [];
  const mismatches = [];
  for (const verifier of verifiers) {
    for (const attestation of attestations) {
      let statement;
      try {
        statement = await openAttestation(attestation, verifier, schema);
      } catch (e) {
        if (e instanceof NotSignedBy) continue;
        if (e instanceof AttestationError) {
          mismatches.push(`an attestation under ${verifier.name}'s key does not hold: ${e.message}`);
          continue;
        }
        throw e;
      }
      const mismatch = statementMismatch(statement, card, cardDigest);
      if (mismatch === null) {
        auditors.push(verifier.name);
        break;
      }
      mismatches.push(`${verifier.name}'s attestation does not cover this card: ${mismatch}`);
    }
  }
  if (auditors.length || !verifiers.length) return { auditors, problem: null };
  if (mismatches.length) return { auditors: [], problem: mismatches[0] };
  const names = verifiers.map((v) => v.name).join(", ");
  return { auditors: [], problem: `no auditor you trust (${names}) attested this card ${cardDigest.slice(0, 16)}... `
    + `of model ${pyRepr(card.model_id)}` };
}

const FairProofAttestation = { HEADER, AttestationError, pyRepr, keyId, parseAuditorKey, openNote, statementFromText,
  statementMismatch, checkAttestations };
if (typeof module !== "undefined") module.exports = FairProofAttestation;
else globalThis.FairProofAttestation = FairProofAttestation;
