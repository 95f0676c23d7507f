// A customer's record -> the query, in the browser: commitments/record.py's `encode_record`, operation for
// operation ((v - mean) / std in doubles, then the exact rational value of that double times 2^s, halves
// up), for cards that publish feature encodings and for cards under a feature schema (fairness/schema.py's
// `FeatureSchema.encode`: numeric, ordinal, one-hot and sensitive codes, the raw domain checked).
// A record's values follow one grammar, the Python verifier's (commitments/record.py's docstring):
//   a number    is a JSON number, or a string that spells a JSON number exactly (ASCII digits, optional
//               "-", no "+", no leading zero, no ".5" or "5.", no "_", no space, control character or BOM);
//               its value is the double nearest to it, and it must be finite;
//   a category  is a string equal to one of the categories (nothing stripped: a string that begins or ends
//               with whitespace, a control or a format character such as a BOM is refused), or an integral
//               JSON number naming one by its decimal text (1 and 1.0 both name "1"; 1.5 names nothing).
// Anything this encoder is unsure of it refuses (RecordError); it never guesses.

"use strict";

const { exactDyadic } = typeof module !== "undefined" ? require("./canonical.js") : globalThis.FairProofCanonical;
const schemaLib = typeof module !== "undefined" ? require("./schema.js") : globalThis.FairProofSchema;
const claimsLib = typeof module !== "undefined" ? require("./claims.js") : globalThis.FairProofClaims;

class RecordError extends Error {}

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const EDGE = /^[\p{Cc}\p{Cf}\p{Z}]|[\p{Cc}\p{Cf}\p{Z}]$/u;
const isFloat = (v) => v !== null && typeof v === "object" && v.constructor && v.constructor.name === "PyFloat";

function categoryKey(name, value) {
  if (typeof value === "string") {
    if (EDGE.test(value)) throw new RecordError(`feature ${name}: a category value with surrounding spaces or control characters`);
    return value;
  }
  if (typeof value === "boolean") throw new RecordError(`feature ${name}: boolean is not a category value`);
  if (typeof value === "bigint") return value.toString();
  if (isFloat(value)) value = value.value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RecordError(`feature ${name}: category value is not finite`);
    if (Number.isInteger(value)) return BigInt(value).toString();
    throw new RecordError(`feature ${name}: a fractional category value`);
  }
  throw new RecordError(`feature ${name}: unsupported category value`);
}

function numericValue(name, raw) {
  if (raw === null || raw === undefined) throw new RecordError(`feature ${name}: value is missing`);
  if (typeof raw === "boolean") throw new RecordError(`feature ${name}: boolean is not a number`);
  let value;
  if (typeof raw === "bigint") value = Number(raw);  // the nearest double, as Python's float(int)
  else if (isFloat(raw)) value = raw.value;
  else if (typeof raw === "number") value = raw;
  else if (typeof raw === "string" && NUMBER.test(raw)) value = Number(raw);
  else throw new RecordError(`feature ${name}: not a number`);
  if (!Number.isFinite(value)) throw new RecordError(`feature ${name}: not finite`);
  return value;
}

// FeatureSchema.encode: the record's doubles, in model input order (the raw domain checked).
function schemaInputs(fs, record) {
  const attributes = fs.features.map((f) => f.name);
  const missing = attributes.filter((n) => !(n in record));
  if (missing.length) throw new RecordError(`record is missing attribute(s): ${missing.join(", ")}`);
  const extra = Object.keys(record).filter((k) => !attributes.includes(k));
  if (extra.length) throw new RecordError(`record has unknown field(s): ${extra.join(", ")}`);
  const out = [];
  for (const f of fs.features) {
    const raw = record[f.name];
    if (f.kind === "numeric") {
      if (typeof raw === "string" && raw === "") throw new RecordError(`${f.name}: value is empty`);
      const v = numericValue(f.name, raw);
      if (!(schemaLib.toDouble(f.min) <= v && v <= schemaLib.toDouble(f.max))) {
        throw new RecordError(`${f.name} is outside the model's domain`);
      }
      out.push((v - schemaLib.meanOf(f)) / schemaLib.stdOf(f));
      continue;
    }
    if (raw === null || raw === undefined) throw new RecordError(`${f.name}: value is missing`);
    const key = categoryKey(f.name, raw);
    if (f.kind === "categorical") {
      const k = f.categories.indexOf(key);
      if (k < 0) throw new RecordError(`${f.name} is not one of ${f.categories.join(", ")}`);
      if (schemaLib.encodingOf(f) === "one_hot") out.push(...schemaLib.oneHotPoints(f.categories, f.drop)[k].map(Number));
      else out.push((schemaLib.ordinalCodes(f)[k] - schemaLib.meanOf(f)) / schemaLib.stdOf(f));
    } else {
      const k = f.values.indexOf(key);
      if (k < 0) throw new RecordError(`${f.name} is not one of ${f.values.join(", ")}`);
      out.push(...schemaLib.valuePoints(f)[k].map(Number));
    }
  }
  return out;
}

// round(value * 2^bits), halves up, from the double's exact rational value (Python's floor division).
function roundHalfUp(value, bits) {
  const [numerator, shift] = exactDyadic(value);
  const scaledShift = shift - BigInt(bits);
  if (scaledShift <= 0n) return numerator << -scaledShift;
  const denominator = 1n << scaledShift;
  let q = numerator / denominator;
  let r = numerator % denominator;
  if (r < 0n) { q -= 1n; r += denominator; }  // floor, as Python's divmod
  return 2n * r >= denominator ? q + 1n : q;
}

function encodeRecord(card, record) {
  if (record === null || typeof record !== "object" || Array.isArray(record) || isFloat(record)) {
    throw new RecordError("a record maps feature names to values");
  }
  if (card.feature_schema != null) {
    const query = schemaInputs(card.feature_schema, record).map((v, i) => {
      if (!Number.isFinite(v)) throw new RecordError(`${card.feature_names[i]}: its standardised value is not finite`);
      return roundHalfUp(v, Number(card.scale_bits));
    });
    if (!query.every((v, i) => card.box_lower[i] <= v && v <= card.box_upper[i])) {
      throw new RecordError("the record lies in the schema's domain but outside the card's box");
    }
    return query;
  }
  const features = card.features;
  if (!features || features.length === 0) throw new RecordError("the card does not publish its preprocessing");
  if (record === null || typeof record !== "object" || Array.isArray(record)) {
    throw new RecordError("a record maps feature names to values");
  }
  const names = features.map((f) => f.name);
  features.forEach((f, i) => {
    if (f.name !== card.feature_names[i]) throw new RecordError("the card's preprocessing names another input");
    const std = f.std.value ?? Number(f.std);
    const mean = f.mean.value ?? Number(f.mean);
    if (!(std > 0 && Number.isFinite(std) && Number.isFinite(mean))) throw new RecordError(`feature ${f.name}: unusable mean or std`);
  });
  const missing = names.filter((n) => !(n in record));
  if (missing.length) throw new RecordError(`record is missing feature(s): ${missing.join(", ")}`);
  const extra = Object.keys(record).filter((k) => !names.includes(k));
  if (extra.length) throw new RecordError(`record has unknown field(s): ${extra.join(", ")}`);
  const query = features.map((f) => {
    const raw = record[f.name];
    let unscaled;
    if (f.kind === "numeric") unscaled = numericValue(f.name, raw);
    else if (f.kind === "categorical" || f.kind === "sensitive") {
      if (raw === null || raw === undefined) throw new RecordError(`feature ${f.name}: value is missing`);
      const index = f.categories.indexOf(categoryKey(f.name, raw));
      if (index < 0) throw new RecordError(`feature ${f.name}: unknown category`);
      unscaled = index;
    } else throw new RecordError(`feature ${f.name}: unknown kind`);
    const scaled = (unscaled - (f.mean.value ?? Number(f.mean))) / (f.std.value ?? Number(f.std));
    if (!Number.isFinite(scaled)) throw new RecordError(`feature ${f.name}: too large`);
    return roundHalfUp(scaled, Number(card.scale_bits));
  });
  query.forEach((v, i) => {
    if (!(card.box_lower[i] <= v && v <= card.box_upper[i])) {
      throw new RecordError(`feature ${names[i]} lies outside the model's input domain`);
    }
  });
  for (const s of card.sensitive) {
    if (claimsLib.pointIndex(s, claimsLib.queryPoint(s, query)) < 0) throw new RecordError(`sensitive feature ${s.name}: not a value of its domain`);
  }
  return query;
}

const FairProofRecord = { RecordError, encodeRecord, roundHalfUp };
if (typeof module !== "undefined") module.exports = FairProofRecord;
else globalThis.FairProofRecord = FairProofRecord;
