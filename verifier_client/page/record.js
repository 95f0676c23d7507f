// A customer's record -> the query, in the browser: commitments/record.py's `encode_record` for cards that
// publish feature encodings, operation for operation ((v - mean) / std in doubles, then the exact rational
// value of that double times 2^s, halves up). Cards under a feature schema (imported models) are not
// encoded here: the page then shows the query for the customer to compare, and says so.
// Anything this encoder is unsure of it refuses (RecordError); it never guesses.

"use strict";

const { exactDyadic } = typeof module !== "undefined" ? require("./canonical.js") : globalThis.FairProofCanonical;

class RecordError extends Error {}

const NUMBER = /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/;

function categoryKey(name, value) {
  if (typeof value === "string") return value.trim();
  if (typeof value === "boolean") throw new RecordError(`feature ${name}: boolean is not a category value`);
  if (typeof value === "bigint") return value.toString();
  if (value && value.constructor && value.constructor.name === "PyFloat") value = value.value;
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
  if (typeof raw === "bigint") value = Number(raw);
  else if (raw && raw.constructor && raw.constructor.name === "PyFloat") value = raw.value;
  else if (typeof raw === "number") value = raw;
  else if (typeof raw === "string" && NUMBER.test(raw.trim())) value = Number(raw.trim());
  else throw new RecordError(`feature ${name}: not a number`);
  if (typeof raw === "bigint" && BigInt(value) !== raw) throw new RecordError(`feature ${name}: too many digits`);
  if (!Number.isFinite(value)) throw new RecordError(`feature ${name}: not finite`);
  return value;
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
  if (card.feature_schema != null) throw new RecordError("this card encodes records with its own schema");
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
    if (!s.values.some((v) => v === query[Number(s.column)])) throw new RecordError(`sensitive feature ${s.name}: not a value of its domain`);
  }
  return query;
}

const FairProofRecord = { RecordError, encodeRecord, roundHalfUp };
if (typeof module !== "undefined") module.exports = FairProofRecord;
else globalThis.FairProofRecord = FairProofRecord;
