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

const FairProofSchema = { ShapeError, checkShape };
if (typeof module !== "undefined") module.exports = FairProofSchema;
else globalThis.FairProofSchema = FairProofSchema;
