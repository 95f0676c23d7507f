// The model card's digest in the browser: the same SHA-256 over the same canonical JSON that
// `ModelCard.digest()` computes (commitments/card.py), so a page can check a card against the digest a
// bundle names or a customer pinned.
//
// Canonical JSON is Python's json.dumps(..., sort_keys=True, separators=(",", ":")) with ensure_ascii:
// integers exactly (JSON.parse would round those above 2^53, so the parser here keeps them as BigInt),
// floats as Python's repr writes them, keys sorted, non-ASCII escaped. A card the bank wrote any other
// way (an int where the card holds a float) gives another digest and is refused, never accepted.

"use strict";

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

// The card's own exclusions (ModelCard.canonical_json): optional parts it does not have are not written.
const OPTIONAL_CARD_FIELDS = ["feature_schema", "import_check", "spread", "persistence"];

function canonicalCard(card) {
  const out = Object.create(null);
  for (const [k, v] of Object.entries(card)) {
    if (OPTIONAL_CARD_FIELDS.includes(k) && v === null) continue;
    if (k === "audit_circuits" && Array.isArray(v) && v.length === 0) continue;
    out[k] = v;
  }
  return canonicalJson(out);
}

async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text);
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function cardDigest(cardText) {
  return sha256Hex(canonicalCard(parseJson(cardText)));
}

const FairProofCanonical = { PyFloat, exactDyadic, parseJson, pyFloatRepr, canonicalJson, canonicalCard, sha256Hex, cardDigest };
if (typeof module !== "undefined") module.exports = FairProofCanonical;
else globalThis.FairProofCanonical = FairProofCanonical;
