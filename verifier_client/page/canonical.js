// Canonical forms in the browser.
//
// The model card's digest is SHA-256 over the RFC 8785 (JSON Canonicalization Scheme) form of the card
// exactly as published, written by the npm `canonicalize` package (the same scheme `ModelCard.digest()`
// computes with the PyPI `rfc8785` package, commitments/card.py): nothing filled in, nothing dropped. The
// parser here keeps integers as BigInt and floats as PyFloat (so the schema can tell 1 from 1.0); for the
// digest they become JavaScript numbers, and an integer beyond 2^53 - 1, which JSON cannot hold exactly, is
// refused, as Python refuses it.
//
// `canonicalJson` is Python's json.dumps(..., sort_keys=True, separators=(",", ":")) with ensure_ascii,
// the one line an attestation's statement is written as (commitments/attestation.py).

"use strict";

// RFC 8785 by the `canonicalize` package: inlined before this module in the page, required in node.
const jcs = typeof module !== "undefined"
  ? ((m) => m.default || m)(require("./vendor/canonicalize.js")) : globalThis.canonicalize;

class PyFloat {
  constructor(value) { this.value = value; }
}

// ---------------------------------------------------------------------------------------- parsing
// maxNumberChars: refuse longer number literals (commitments/canonical.py's bound; none by default).
function parseJson(text, maxNumberChars = Infinity) {
  let i = 0;
  const fail = (what) => { throw new SyntaxError(`JSON: ${what} at offset ${i}`); };
  const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  function value() {
    ws();
    const c = text[i];
    if (c === "{") return object();
    if (c === "[") return array();
    if (c === '"') return string();
    if (c === "t" && text.startsWith("true", i)) { i += 4; return true; }
    if (c === "f" && text.startsWith("false", i)) { i += 5; return false; }
    if (c === "n" && text.startsWith("null", i)) { i += 4; return null; }
    return number();
  }
  function object() {
    const out = Object.create(null);
    i++; ws();
    if (text[i] === "}") { i++; return out; }
    for (;;) {
      ws();
      if (text[i] !== '"') fail("expected a key");
      const key = string();
      if (key in out) fail(`duplicate key ${JSON.stringify(key)}`);
      ws();
      if (text[i++] !== ":") fail("expected ':'");
      out[key] = value();
      ws();
      if (text[i] === ",") { i++; continue; }
      if (text[i] === "}") { i++; return out; }
      fail("expected ',' or '}'");
    }
  }
  function array() {
    const out = [];
    i++; ws();
    if (text[i] === "]") { i++; return out; }
    for (;;) {
      out.push(value());
      ws();
      if (text[i] === ",") { i++; continue; }
      if (text[i] === "]") { i++; return out; }
      fail("expected ',' or ']'");
    }
  }
  function string() {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i));
  }
  function number() {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
    if (!match) fail("unexpected character");
    if (match[0].length > maxNumberChars) fail(`a number of ${match[0].length} characters is longer than any field allows`);
    i += match[0].length;
    if (match[2] === undefined && match[3] === undefined) return BigInt(match[0]);
    const x = Number(match[0]);
    if (!Number.isFinite(x)) fail("a number out of range");
    return new PyFloat(x);
  }
  const out = value();
  ws();
  if (i !== text.length) fail("trailing characters");
  return out;
}

// The exact value of a double as numerator / 2^k (k >= 0).
function exactDyadic(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const negative = bits >> 63n === 1n;
  const exponent = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  let e;
  if (exponent === 0) e = -1074;
  else { mantissa |= 1n << 52n; e = exponent - 1075; }
  const sign = negative ? -1n : 1n;
  return e >= 0 ? [sign * (mantissa << BigInt(e)), 0n] : [sign * mantissa, BigInt(-e)];
}

// ---------------------------------------------------------------------------------------- writing
// Python's repr of a float: the shortest digits that round-trip (as JavaScript's), written fixed when the
// decimal exponent is in [-4, 16), else as d.ddde+XX with at least two exponent digits.
function pyFloatRepr(x) {
  if (!Number.isFinite(x)) throw new RangeError("a card holds no NaN or infinity");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const e = Number(exp);
  const sign = x < 0 ? "-" : "";
  if (e < -4 || e >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  const fraction = digits.slice(e + 1);
  return `${sign}${whole}.${fraction || "0"}`;
}

function pyString(s) {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (code < 0x20 || (code > 0x7e && code < 0x10000)) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else if (code >= 0x10000) {
      const v = code - 0x10000;
      out += `\\u${(0xd800 + (v >> 10)).toString(16)}\\u${(0xdc00 + (v & 0x3ff)).toString(16)}`;
    } else out += ch;
  }
  return out + '"';
}

function canonicalJson(v) {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "bigint") return v.toString();
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (typeof v === "string") return pyString(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(v).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${pyString(k)}:${canonicalJson(v[k])}`).join(",")}}`;
}

const I_JSON_MAX = 2n ** 53n - 1n;

// The parsed card as JavaScript values for `canonicalize`: BigInt within I-JSON to a number, PyFloat to its
// double; RangeError naming the place of an integer beyond 2^53 - 1 (commitments.canonical.canonical_bytes).
function jcsValue(v, path = []) {
  if (typeof v === "bigint") {
    if (v > I_JSON_MAX || v < -I_JSON_MAX) {
      throw new RangeError(`${path.join(".") || "document"}: the integer ${v} is beyond 2^53 - 1, which JSON cannot hold exactly (RFC 7493, RFC 8785)`);
    }
    return Number(v);
  }
  if (v instanceof PyFloat) return v.value;
  if (Array.isArray(v)) return v.map((x, i) => jcsValue(x, [...path, i]));
  if (v !== null && typeof v === "object") {
    const out = Object.create(null);
    for (const k of Object.keys(v)) out[k] = jcsValue(v[k], [...path, k]);
    return out;
  }
  return v;
}

// RFC 8785 text of a parsed card (or any value canonical.js parsed).
const canonicalCard = (card) => jcs(jcsValue(card));

async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text);
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// The digest of a card: of its parsed value, or of its text.
async function cardDigest(card) {
  return sha256Hex(canonicalCard(typeof card === "string" ? parseJson(card) : card));
}

const FairProofCanonical = { PyFloat, exactDyadic, parseJson, pyFloatRepr, canonicalJson, jcsValue, canonicalCard,
  sha256Hex, cardDigest };
if (typeof module !== "undefined") module.exports = FairProofCanonical;
else globalThis.FairProofCanonical = FairProofCanonical;
