// Strict shape of a document, from the JSON Schema the Python models publish (pydantic's
// model_json_schema, embedded in the page when it is built): the page refuses what `parse_strict` refuses.
// Values come from canonical.js's parser, so types are exact: integers are BigInt, floats PyFloat, and
// pydantic's strict mode is followed (no "1" for 1, no 1.0 for 1, no true for 1; an int is a float).
//
// The subset pydantic writes: $ref/$defs, type, properties/required/additionalProperties, const, enum,
// numeric bounds, string lengths (in code points, as Python counts) and patterns, items/prefixItems and
// their counts, anyOf/oneOf; plus `x-fairproof-below`, the bound of a canonical decimal string
// (commitments/canonical.py).

"use strict";

class ShapeError extends Error {}

function typeOk(type, v) {
  switch (type) {
    case "object": return v !== null && typeof v === "object" && !Array.isArray(v) && !isFloat(v);
    case "array": return Array.isArray(v);
    case "string": return typeof v === "string";
    case "integer": return typeof v === "bigint";
    case "number": return typeof v === "bigint" || isFloat(v);
    case "boolean": return typeof v === "boolean";
    case "null": return v === null;
    default: throw new ShapeError(`schema type ${type} is not supported`);
  }
}

const isFloat = (v) => v !== null && typeof v === "object" && v.constructor && v.constructor.name === "PyFloat";
const numeric = (v) => (typeof v === "bigint" ? v : v.value);
const less = (a, b) => (typeof a === "bigint" && typeof b === "bigint" ? a < b : Number(numeric(a)) < Number(numeric(b)));
const same = (a, b) => (isFloat(a) || isFloat(b) ? false : a === b);

function check(schema, value, where, root) {
  if (schema.$ref !== undefined) {
    const name = schema.$ref.replace(/^#\/\$defs\//, "");
    if (!root.$defs || !(name in root.$defs)) throw new ShapeError(`schema: unknown reference ${schema.$ref}`);
    return check(root.$defs[name], value, where, root);
  }
  if (schema.anyOf !== undefined || schema.oneOf !== undefined) {
    const options = schema.anyOf || schema.oneOf;
    const errors = [];
    let matches = 0;
    for (const option of options) {
      try { check(option, value, where, root); matches += 1; } catch (e) { if (!(e instanceof ShapeError)) throw e; errors.push(e.message); }
    }
    if (matches === 0 || (schema.oneOf !== undefined && matches > 1)) {
      throw new ShapeError(matches ? `${where}: matches more than one form` : errors[errors.length - 1] || `${where}: no form matches`);
    }
    return;
  }
  if (schema.type !== undefined && !typeOk(schema.type, value)) {
    throw new ShapeError(`${where}: expected ${schema.type}`);
  }
  if (schema.const !== undefined && !same(schema.const, value)) throw new ShapeError(`${where}: must be ${String(schema.const)}`);
  if (schema.enum !== undefined && !schema.enum.some((e) => same(e, value))) {
    throw new ShapeError(`${where}: must be one of ${schema.enum.join(", ")}`);
  }
  if (typeof value === "bigint" || isFloat(value)) {
    if (schema.minimum !== undefined && less(value, schema.minimum)) throw new ShapeError(`${where}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && less(schema.maximum, value)) throw new ShapeError(`${where}: above ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && !less(schema.exclusiveMinimum, value)) throw new ShapeError(`${where}: must exceed ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && !less(value, schema.exclusiveMaximum)) throw new ShapeError(`${where}: must be below ${schema.exclusiveMaximum}`);
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < Number(schema.minLength)) throw new ShapeError(`${where}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && length > Number(schema.maxLength)) throw new ShapeError(`${where}: longer than ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) throw new ShapeError(`${where}: not in its canonical form`);
    if (schema["x-fairproof-below"] !== undefined && !(BigInt(value) < BigInt(schema["x-fairproof-below"]))) {
      throw new ShapeError(`${where}: not below the field modulus`);
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < Number(schema.minItems)) throw new ShapeError(`${where}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > Number(schema.maxItems)) throw new ShapeError(`${where}: more than ${schema.maxItems} items`);
    const prefix = schema.prefixItems || [];
    value.forEach((item, i) => {
      const itemSchema = i < prefix.length ? prefix[i] : schema.items;
      if (itemSchema === false || (itemSchema === undefined && prefix.length)) throw new ShapeError(`${where}: too many items`);
      if (itemSchema !== undefined) check(itemSchema, item, `${where}.${i}`, root);
    });
  }
  if (typeOk("object", value) && (schema.properties !== undefined || schema.additionalProperties !== undefined)) {
    const properties = schema.properties || {};
    for (const name of schema.required || []) {
      if (!(name in value)) throw new ShapeError(`${where === "" ? "" : where + "."}${name}: field required`);
    }
    for (const [name, v] of Object.entries(value)) {
      const at = where === "" ? name : `${where}.${name}`;
      if (name in properties) check(properties[name], v, at, root);
      else if (schema.additionalProperties === false) throw new ShapeError(`${at}: extra field not permitted`);
      else if (typeof schema.additionalProperties === "object") check(schema.additionalProperties, v, at, root);
    }
  }
}

// Refuses (ShapeError, naming the field) unless `value` has the shape `schema` describes.
function checkShape(schema, value, what) {
  try {
    check(schema, value, "", schema);
  } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${what}: ${e.message.replace(/^: /, "")}`);
    throw e;
  }
}

// ------------------------------------------------------------------------------ feature schemas
// fairness/schema.py's FeatureSchema validators (what its JSON Schema cannot say), rule for rule and in
// pydantic's order, with Python's words; and ModelCard._schema_binds_statement (commitments/card.py): the
// schema's inputs, classes, domain box (at the card's scale, rounded outward) and sensitive attributes must
// be the statement's. Values come from the strict parser: numbers are BigInt (JSON integers) or PyFloat.

const canonicalLib = typeof module !== "undefined" ? require("./canonical.js") : globalThis.FairProofCanonical;

// A schema number as Python's `_double` reads it (float(int) rounds to nearest, as Number(BigInt) does).
const toDouble = (v) => (typeof v === "bigint" ? Number(v) : isFloat(v) ? v.value : Number(v));
// Python's str.isspace() characters (what str.strip() removes): not JavaScript's trim() set.
const PY_SPACE = /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/;
const pyStripped = (s) => s.length === 0 || (!PY_SPACE.test(s[0]) && !PY_SPACE.test(s[s.length - 1]));
const byCodePoint = (a, b) => {
  const x = [...a].map((c) => c.codePointAt(0));
  const y = [...b].map((c) => c.codePointAt(0));
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
};

// Python's repr of a string (printable text as is, quotes as Python chooses them).
function pyRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const code = ch.codePointAt(0);
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return out + quote;
}
const pyFloat = (x) => canonicalLib.pyFloatRepr(x);

function distinctProblem(name, values) {
  if (new Set(values).size !== values.length) return `${pyRepr(name)}: values repeated`;
  if (values.some((v) => !v || !pyStripped(v))) return `${pyRepr(name)}: values must be non-empty text without surrounding spaces`;
  return null;
}

function labelsProblem(name, values, labels) {
  if (labels == null) return null;
  if (labels.length !== values.length) return `${pyRepr(name)}: ${labels.length} labels for ${values.length} values`;
  if (new Set(labels).size !== labels.length) return `${pyRepr(name)}: labels repeated`;
  return null;
}

const meanOf = (f) => (f.mean === undefined ? 0 : toDouble(f.mean));
const stdOf = (f) => (f.std === undefined ? 1 : toDouble(f.std));
const present = (v) => v !== undefined && v !== null;
// A categorical feature is `ordinal` unless it says otherwise, a sensitive attribute `code`.
const encodingOf = (f) => (present(f.encoding) ? f.encoding : f.kind === "sensitive" ? "code" : "ordinal");
// CategoricalFeature.ordinal_codes (doubles) and SensitiveAttribute.value_codes (BigInt).
const ordinalCodes = (f) => (present(f.codes) ? f.codes.map(toDouble) : f.categories.map((_, i) => i));
const valueCodes = (f) => (present(f.codes) ? f.codes : f.values.map((_, i) => BigInt(i)));
const valueLabels = (f) => (present(f.labels) && f.labels.length ? f.labels : f.values);

// The values a one-hot encoding gives inputs to (all but the dropped one), and each value's point over them:
// 1 at its own input, 0 elsewhere, all 0 for the dropped value (schema.py's _one_hot_points, as BigInt).
const keptValues = (values, drop) => values.filter((v) => !present(drop) || v !== drop);
const oneHotPoints = (values, drop) => {
  const kept = keptValues(values, drop);
  return values.map((v) => kept.map((k) => (k === v ? 1n : 0n)));
};
// SensitiveAttribute.points: each value as the integers its inputs hold (unscaled).
const valuePoints = (f) => (encodingOf(f) === "one_hot" ? oneHotPoints(f.values, f.drop) : valueCodes(f).map((c) => [c]));

// _drop_fits: only a one-hot encoding drops a value, and one of its own.
function dropProblem(f, values) {
  if (!present(f.drop)) return null;
  if (encodingOf(f) !== "one_hot") return `${pyRepr(f.name)}: only a one-hot encoding drops a value`;
  if (!values.includes(f.drop)) return `${pyRepr(f.name)}: the dropped value ${pyRepr(f.drop)} is not one of its values`;
  return null;
}

function featureProblem(f) {
  const name = pyRepr(f.name);
  if (f.kind === "numeric") {
    const [min, max, mean, std] = [toDouble(f.min), toDouble(f.max), meanOf(f), stdOf(f)];
    if (![min, max, mean, std].every(Number.isFinite)) return `numeric feature ${name}: min, max, mean and std must be finite`;
    if (!(std > 0)) return `numeric feature ${name}: std must be positive`;
    if (min > max) return `numeric feature ${name}: min ${pyFloat(min)} lies above max ${pyFloat(max)}`;
    return null;
  }
  if (f.kind === "categorical") {
    const problem = distinctProblem(f.name, f.categories) || labelsProblem(f.name, f.categories, f.labels)
      || dropProblem(f, f.categories);
    if (problem) return problem;
    const [mean, std] = [meanOf(f), stdOf(f)];
    if (encodingOf(f) === "one_hot") {
      if (present(f.codes) || mean !== 0 || std !== 1) return `categorical feature ${name}: a one-hot encoding takes no codes, mean or std`;
      return null;
    }
    if (present(f.codes) && f.codes.length !== f.categories.length) {
      return `categorical feature ${name}: ${f.codes.length} codes for ${f.categories.length} categories`;
    }
    if (![...ordinalCodes(f), mean, std].every(Number.isFinite) || !(std > 0)) {
      return `categorical feature ${name}: codes, mean and std must be finite, std positive`;
    }
    return null;
  }
  if (f.kind === "sensitive") {
    const problem = distinctProblem(f.name, f.values) || labelsProblem(f.name, f.values, f.labels) || dropProblem(f, f.values);
    if (problem) return problem;
    if (present(f.codes)) {
      if (encodingOf(f) === "one_hot") return `sensitive attribute ${name}: a one-hot encoding takes no codes`;
      if (f.codes.length !== f.values.length) return `sensitive attribute ${name}: ${f.codes.length} codes for ${f.values.length} values`;
      if (new Set(f.codes.map(String)).size !== f.codes.length) return `sensitive attribute ${name}: codes must be distinct`;
    }
    return null;
  }
  return `feature ${name}: unknown kind`;
}

// Model input names, in order (a one-hot attribute gives 'name=value' per value but the dropped one).
function featureInputs(f) {
  if (f.kind === "numeric" || encodingOf(f) !== "one_hot") return [f.name];
  return keptValues(f.kind === "categorical" ? f.categories : f.values, f.drop).map((v) => `${f.name}=${v}`);
}
const schemaInputs = (fs) => fs.features.flatMap(featureInputs);

// The first problem FeatureSchema's validators (and its features' and label's) find, or null.
function featureSchemaProblem(fs) {
  for (const f of fs.features) {
    const problem = featureProblem(f);
    if (problem) return problem;
  }
  const label = fs.label;
  const problem = distinctProblem(label.column, label.values) || labelsProblem(label.column, label.values, label.labels);
  if (problem) return problem;
  const names = fs.features.map((f) => f.name);
  const repeated = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))].sort(byCodePoint);
  if (repeated.length) return `attribute(s) named twice: ${repeated.join(", ")}`;
  if (names.includes(label.column)) return `the label column ${pyRepr(label.column)} is also a feature`;
  if (!fs.features.some((f) => f.kind === "sensitive")) return "a schema needs at least one sensitive attribute";
  const inputs = schemaInputs(fs);
  if (new Set(inputs).size !== inputs.length) return "two model inputs have the same name (a one-hot input collides with an attribute)";
  return null;
}

// FeatureSchema.domain_box: the raw domain as doubles per model input.
function featureBox(f) {
  if (f.kind === "numeric") {
    const [mean, std] = [meanOf(f), stdOf(f)];
    return [[(toDouble(f.min) - mean) / std, (toDouble(f.max) - mean) / std]];
  }
  if (f.kind === "categorical") {
    if (encodingOf(f) === "one_hot") return featureInputs(f).map(() => [0, 1]);
    const [mean, std] = [meanOf(f), stdOf(f)];
    const scaled = ordinalCodes(f).map((c) => (c - mean) / std);
    return [[Math.min(...scaled), Math.max(...scaled)]];
  }
  // Per input, the least and greatest of the attribute's points there.
  const points = valuePoints(f);
  return featureInputs(f).map((_, i) => {
    const at = points.map((p) => p[i]);
    return [Number(at.reduce((m, c) => (c < m ? c : m))), Number(at.reduce((m, c) => (c > m ? c : m)))];
  });
}

// floor(value * 2^bits), exactly (fairness.schema.quantise_floor).
function quantiseFloor(value, bits) {
  const [numerator, shift] = canonicalLib.exactDyadic(value);
  const s = shift - BigInt(bits);
  if (s <= 0n) return numerator << -s;
  const d = 1n << s;
  const q = numerator / d;
  return numerator % d < 0n ? q - 1n : q;
}
const quantiseCeil = (value, bits) => -quantiseFloor(-value, bits);

function quantisedBox(fs, bits) {
  const bounds = fs.features.flatMap(featureBox);
  return [bounds.map(([lo]) => quantiseFloor(lo, bits)), bounds.map(([, hi]) => quantiseCeil(hi, bits))];
}

const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// ModelCard._schema_binds_statement, but for "either encodings or a schema" (the caller checks that first).
function schemaBindingProblem(card, fs) {
  if (!sameList(schemaInputs(fs), card.feature_names)) return "the feature schema's model inputs differ from the card's feature names";
  const classes = present(fs.label.labels) && fs.label.labels.length ? fs.label.labels : fs.label.values;
  if (!sameList(classes, card.architecture.class_labels)) return "the feature schema's classes differ from the card's class labels";
  const bits = BigInt(card.scale_bits);
  const [lower, upper] = quantisedBox(fs, bits);
  if (!sameList(lower, card.box_lower) || !sameList(upper, card.box_upper)) {
    return "the domain box differs from the feature schema's raw domain at the card's scale";
  }
  // Each sensitive attribute's name, its inputs' columns, its points at the card's scale and its labels.
  const expected = [];
  let column = 0;
  for (const f of fs.features) {
    const width = featureInputs(f).length;
    if (f.kind === "sensitive") {
      const columns = Array.from({ length: width }, (_, i) => column + i);
      expected.push([f.name, columns, valuePoints(f).map((p) => p.map((c) => c << bits)), valueLabels(f)]);
    }
    column += width;
  }
  const published = card.sensitive;
  const samePoints = (a, b) => a.length === b.length && a.every((p, i) => sameList(p, b[i]));
  const same = expected.length === published.length && expected.every(([name, columns, points, labels], i) => {
    const p = published[i];
    const publishedColumns = p.columns != null ? p.columns.map(Number) : [Number(p.column)];
    const publishedPoints = p.columns != null ? p.values : p.values.map((v) => [v]);
    return p.name === name && sameList(columns, publishedColumns) && samePoints(points, publishedPoints)
      && sameList(labels, p.labels);
  });
  if (!same) return "the sensitive attributes differ from the feature schema's (name, columns, values, labels)";
  return null;
}

const FairProofSchema = { ShapeError, checkShape, featureSchemaProblem, schemaBindingProblem, quantisedBox, pyRepr,
  pyStripped, toDouble, featureInputs, ordinalCodes, valueCodes, valueLabels, valuePoints, oneHotPoints, meanOf, stdOf,
  encodingOf };
if (typeof module !== "undefined") module.exports = FairProofSchema;
else globalThis.FairProofSchema = FairProofSchema;
