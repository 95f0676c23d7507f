// The customer's verifier in the browser: verifier_client/verify.py `verify_bundle`, check for check, with
// snarkjs's browser build for the pairing. Nothing is fetched or sent: the inputs are texts the customer
// gave the page (or the card the page was built with).
//
// A verdict is VALID only when every check below passes, in this order (the first failure is the reason):
//   documents   the card and the bundle parse strictly (UTF-8 without a BOM, no lone surrogate escape, no
//               number beyond a double: commitments/canonical.py's reading) and have the models' shapes
//               (schema.js), the card is consistent (as ModelCard's validators, its feature schema's and the
//               schema's binding to the statement), and the customer's inputs are well formed (their record,
//               trusted keys and hashes, lenses, box);
//   pin         the card is the one the customer pinned, if they did;
//   claims      the bundle names this card and one of its buckets; every claim comes from the public signals
//               and the card (claims.js), and every readable field of the bundle equals its claim;
//   customer    the lenses they require, their own record's query, an attestation of this very card by an
//               auditor they trust (attestation.js), if they name any, the contributors they trust;
//   keys        each bucket key is a valid, non-degenerate key matching its digest on the card;
//   proofs      each proof's JSON points are group elements, proof_hex is exactly their compression, and
//               snarkjs's Groth16 check holds for the signals.
// Refusals are "unusable" (a document that does not parse or has the wrong shape; fairproof-verify exits 2)
// or "invalid" (a well-formed certificate that does not verify; it exits 1).

"use strict";

const lib = typeof module !== "undefined"
  ? { canonical: require("./canonical.js"), schema: require("./schema.js"), claims: require("./claims.js"),
    curve: require("./curve.js"), record: require("./record.js"), explain: require("./explain.js"),
    attestation: require("./attestation.js") }
  : { canonical: globalThis.FairProofCanonical, schema: globalThis.FairProofSchema, claims: globalThis.FairProofClaims,
    curve: globalThis.FairProofCurve, record: globalThis.FairProofRecord, explain: globalThis.FairProofExplain,
    attestation: globalThis.FairProofAttestation };

const MAX_DOCUMENT_CHARS = 64 * 1024 * 1024;
const MAX_NUMBER_CHARS = 80;
const LENSES = ["radius", "spread", "persistence"];

// `code`: an invalid verdict's stable reason code (docs/VERIFYING.md), the one fairproof-verify reports.
class Refusal extends Error {
  constructor(kind, message, code = null) { super(message); this.kind = kind; this.code = code; }
}
const unusable = (message) => new Refusal("unusable", message);
const invalid = (message, code) => new Refusal("invalid", message, code);
const num = (v) => Number(v);

// ------------------------------------------------------------------------------------- documents
// One strict reading of text, commitments/canonical.py's (`decode_text`, `check_values`): a file or a link
// is UTF-8 without a byte-order mark, and no JSON string or key holds a lone surrogate ("\ud800" alone).
const BOM_MESSAGE = "begins with a byte-order mark (save it as UTF-8 without one)";
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

class TextError extends Error {}

// The text of a document's bytes (a file, a link's payload, a fetched card): TextError unless UTF-8 without a BOM.
function decodeText(bytes, what) {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (view.length >= 3 && view[0] === 0xef && view[1] === 0xbb && view[2] === 0xbf) throw new TextError(`${what}: ${BOM_MESSAGE}`);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(view);
  } catch (e) {
    throw new TextError(`${what}: not UTF-8 text`);
  }
}

const where = (path) => (path.length ? path.join(".") : "document");

// The first place a parsed value holds a lone surrogate (in a string or a key), or null.
function textProblem(value) {
  const stack = [[value, []]];
  while (stack.length) {
    const [v, path] = stack.pop();
    if (typeof v === "string") {
      if (LONE_SURROGATE.test(v)) return `${where(path)}: a lone surrogate escape is not text`;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], [...path, i]]);
    } else if (v !== null && typeof v === "object" && !(v instanceof lib.canonical.PyFloat)) {
      const keys = Object.keys(v);
      if (keys.some((k) => LONE_SURROGATE.test(k))) return `${where(path)}: a lone surrogate escape is not text (in a key)`;
      for (let i = keys.length - 1; i >= 0; i--) stack.push([v[keys[i]], [...path, keys[i]]]);
    }
  }
  return null;
}

// parseJson, then the text rules above; SyntaxError naming the defect.
function parseStrictText(text, what) {
  if (text.startsWith("\ufeff")) throw new SyntaxError(BOM_MESSAGE);
  const value = lib.canonical.parseJson(text, MAX_NUMBER_CHARS);
  const problem = textProblem(value);
  if (problem) throw new SyntaxError(problem);
  return value;
}

// commitments.card.LEGACY_CARD_MESSAGE
const LEGACY_CARD_MESSAGE = "model card: card_version 2 is from before card digests were RFC 8785 canonical JSON; "
  + "the bank re-publishes the same card as version 3 (`fairproof card migrate`)";

function readDocument(text, schema, what) {
  if (typeof text !== "string" || text.length > MAX_DOCUMENT_CHARS) throw unusable(`${what}: not a document this page reads`);
  let value;
  try {
    value = parseStrictText(text, what);
  } catch (e) {
    throw unusable(`malformed ${what}: ${e.message}`);
  }
  if (what === "card" && value !== null && typeof value === "object" && value.card_version === 2n) {
    throw unusable(LEGACY_CARD_MESSAGE);
  }
  try {
    lib.schema.checkShape(schema, value, what);
  } catch (e) {
    if (e instanceof lib.schema.ShapeError) throw unusable(`malformed ${e.message}`);
    throw e;
  }
  return value;
}

// ModelCard.from_json with its validators: the card and its RFC 8785 text (what its digest hashes), or an
// unusable Refusal naming the defect (an integer JSON cannot hold exactly among them).
function readCard(text, schema) {
  const card = readDocument(text, schema, "card");
  let canonicalText;
  try {
    canonicalText = lib.canonical.canonicalCard(card);
  } catch (e) {
    if (e instanceof RangeError) throw unusable(`malformed card: ${e.message}`);
    throw e;
  }
  const problem = cardProblem(card);
  if (problem) throw unusable(`malformed card: ${problem}`);
  return { card, canonicalText };
}

// commitments/card_circuits.py: bucket_name, or tree_bucket_name for a tree-ensemble statement.
function bucketName(shape) {
  if (shape.kind === "tree-ensemble") return `t${shape.n_trees}-d${shape.depth}-bound`;
  const radius = shape.radius === "exact" ? "-exact" : shape.radius === "bound" ? "-bound" : "";
  return `k${shape.region_slots}-f${shape.farkas_slots}${radius}${shape.per_slice === true ? "-slice" : ""}`;
}

// SensitiveFeatureCard's validators: exactly one of `column` (each value an integer) and `columns` (distinct
// inputs, each value a point: one integer per column), one label per value, the values distinct.
function sensitiveFeatureProblem(f) {
  const name = `sensitive feature ${lib.explain.pyRepr(f.name)}`;
  if ((f.column != null) === (f.columns != null)) return `${name}: give either column (one input) or columns (several), not both nor neither`;
  if (!f.values.length || f.values.length !== f.labels.length) return `${name}: one label per domain value`;
  if (f.columns != null) {
    const width = f.columns.length;
    if (!width || new Set(f.columns.map(String)).size !== width) return `${name}: its columns must be distinct (at least one)`;
    const wrong = f.values.findIndex((v) => !Array.isArray(v) || v.length !== width);
    if (wrong >= 0) {
      return `${name}: value ${lib.explain.pyRepr(f.labels[wrong])} must be a list of ${width} integers, one per column [${f.columns.join(", ")}]`;
    }
  } else if (f.values.some((v) => Array.isArray(v))) return `${name}: a one-column attribute's values are integers`;
  if (new Set(f.values.map((v) => (Array.isArray(v) ? v.join(",") : String(v)))).size !== f.values.length) {
    return `${name}: two values are the same`;
  }
  return null;
}

// ModelCard's validators (commitments/card.py), its feature schema's (fairness/schema.py) and the schema's
// binding to the statement: a card the Python verifier cannot load is refused here too. Returns the first
// problem, or null.
function cardProblem(card) {
  const a = card.architecture;
  const n = num(a.n_inputs);
  if (card.feature_schema != null) {
    const problem = lib.schema.featureSchemaProblem(card.feature_schema);
    if (problem) return problem;
  }
  if (a.class_labels.length !== num(a.n_classes)) return "one class label per class";
  if (a.hidden_sizes.some((h) => h <= 0n)) return "hidden layer sizes must be positive";
  const trees = a.kind === "tree-ensemble";
  if (trees && a.hidden_sizes.length) return "a tree ensemble has no hidden layers";
  for (const f of card.sensitive) {
    const problem = sensitiveFeatureProblem(f);
    if (problem) return problem;
  }
  if (card.feature_names.length !== n || card.box_lower.length !== n || card.box_upper.length !== n) {
    return `feature names and domain box must have ${n} entries`;
  }
  const features = card.features || [];
  if (features.length && features.length !== n) return `feature encodings must have ${n} entries`;
  if (card.box_lower.some((lo, i) => lo > card.box_upper[i])) return "domain box has a lower bound above its upper bound";
  const columns = lib.claims.sensitiveColumns(card);
  if (new Set(columns).size !== columns.length || columns.some((c) => c >= n)) return "sensitive columns must be distinct input indices (no column in two attributes)";
  if (card.feature_schema != null) {
    if (features.length) return "a card publishes its preprocessing either as feature encodings or as a schema, not both";
    const problem = lib.schema.schemaBindingProblem(card, card.feature_schema);
    if (problem) return problem;
  }
  if (card.spread != null && card.spread.favourable_class >= a.n_classes) return "the spread lens's favourable class is not a class of the model";
  const lens = card.persistence;
  if (lens != null) {
    if (num(a.n_classes) !== 2) return "the persistence lens needs a two-class model (its margin is linear)";
    if (lens.favourable_class >= 2n) return "the persistence lens's favourable class is not a class of the model";
    if (card.spread != null && card.spread.favourable_class !== lens.favourable_class) return "the spread and persistence lenses must name the same favourable class";
    const cols = lens.columns.map(num);
    if (cols.some((c, i) => (i > 0 && c <= cols[i - 1]) || c >= n || columns.includes(c))) {
      return "the persistence lens's columns must be distinct non-sensitive inputs, in order";
    }
    const cap = cols.reduce((m, j) => (card.box_upper[j] - card.box_lower[j] > m ? card.box_upper[j] - card.box_lower[j] : m), 0n);
    if (cap === 0n) return "the persistence lens needs a column the domain box lets move";
    if (lens.default_delta > cap) return "the persistence lens's default delta exceeds the widest moved column of the domain box";
  }
  const audits = card.audit_circuits || [];
  // ModelCard._buckets_fit_kind: a network's buckets prove network statements, a tree ensemble's tree ones,
  // and a tree ensemble's card proves the radius alone.
  const kind = trees ? "tree-ensemble" : "relu-network";
  for (const c of card.circuits) {
    if ((c.shape.kind === "tree-ensemble") !== trees) {
      return `bucket ${c.bucket}: a ${kind}'s card lists only ${trees ? "tree-ensemble" : "network"} statements`;
    }
  }
  if (trees && (card.spread != null || card.persistence != null || audits.length)) {
    return "a tree ensemble's card proves the radius alone: no lens and no audit circuit";
  }
  const names = [...card.circuits.map((c) => c.bucket), ...audits.map((c) => c.name)];
  if (new Set(names).size !== names.length) return "circuit bucket names must be unique";
  for (const c of card.circuits) {
    if (c.shape.per_slice === true && c.shape.radius !== "exact") return "per-slice statements prove the exact radius only";
    if (c.bucket !== bucketName(c.shape)) return `bucket ${c.bucket} does not name its shape (${bucketName(c.shape)})`;
  }
  for (const c of audits) {
    if (c.name !== `groups-n${c.n_rows}-c${c.favourable_class}`) return `audit circuit ${c.name} does not name its rows and favourable class`;
    if (c.favourable_class >= a.n_classes) return `audit circuit ${c.name}: its favourable class is not a class of the model`;
    if (c.weight_bits.length !== a.hidden_sizes.length + 1 || c.bias_bits.length !== c.weight_bits.length) {
      return `audit circuit ${c.name}: one weight and bias bound per layer`;
    }
  }
  const keyed = [...card.circuits, ...audits];
  for (const c of keyed) {
    const vk = c.verifying_key;
    if (BigInt(vk.IC.length) !== vk.nPublic + 1n) return `IC has ${vk.IC.length} points, nPublic + 1 = ${vk.nPublic + 1n} expected`;
    if (vk.nPublic !== c.n_public) return "the verifying key's nPublic differs from the bucket's n_public";
    const s = c.setup;
    if (s.method === "ceremony") {
      if (["phase1_digest", "phase1_power", "circuit_hash", "transcript_digest"].some((k) => s[k] == null) || !s.contributions.length) {
        return "a ceremony setup names its phase 1, circuit hash, transcript and contributions";
      }
    } else if ((s.contributions || []).length || s.circuit_hash != null) return "a single-party setup has no contributions";
  }
  for (const [what, values] of [["verifying key", keyed.map((c) => c.verifying_key_digest)],
    ["R1CS digest", keyed.map((c) => c.r1cs_digest)],
    ["circuit hash", keyed.map((c) => c.setup.circuit_hash).filter((h) => h != null)]]) {
    if (new Set(values).size !== values.length) return `two circuit buckets share one ${what}: each bucket's statement has its own`;
  }
  return null;
}

// --------------------------------------------------------------------------------------- claims
function derivedClaims(signals, card, bucketName, sliceIndex) {
  try {
    const c = lib.claims.claimsFromSignals(signals, card, bucketName, sliceIndex);
    const labels = card.architecture.class_labels;
    if (c.spread) {
      c.spread.slice_labels = lib.claims.slices(card).map((_, s) => lib.claims.sliceLabels(card, s)[1]);
      c.spread.readable = {
        decisions: c.spread.decisions, decision_labels: c.spread.decisions.map((d) => labels[num(d)]),
        distinct_decisions: BigInt(new Set(c.spread.decisions.map(String)).size), score_buckets: c.spread.score_buckets,
      };
    }
    if (c.persistence) c.persistence.readable = readablePersistence(c, card);
    return c;
  } catch (e) {
    if (e instanceof lib.claims.ClaimError) throw invalid(e.message, e.code);
    throw e;
  }
}

// The persistence bundle field these claims stand for (PersistenceClaims.readable).
function readablePersistence(claims, card) {
  const c = lib.claims;
  return {
    delta: claims.persistence.delta,
    bounds: c.persistencePairs(card).map(([a, point], i) => {
      const [lower, upper] = claims.persistence.bounds[i];
      const f = card.sensitive[a];
      const own = c.samePoint(c.queryPoint(f, claims.query), point);
      const status = own ? "own" : lower > 0n ? "favoured" : upper < 0n ? "disfavoured" : "inconclusive";
      // A one-input feature's value is its integer, a wider one's its point.
      const value = f.columns != null ? point : point[0];
      return { attribute: f.name, value, label: f.labels[c.pointIndex(f, point)], lower, upper, status };
    }),
  };
}

const canonical = (v) => (v === undefined ? "null" : lib.canonical.canonicalJson(v));

// commitments.claims.contradiction: the first readable field that says something else than its signals.
function contradiction(bundle, c) {
  const eps = bundle.eps;
  const checks = [
    ["bucket", bundle.bucket, c.bucket],
    ["decision", bundle.decision, c.decision],
    ["decision_label", bundle.decision_label, c.decision_label],
    ["status", bundle.status, c.status],
    ["eps.numerator", eps.numerator, c.eps_numerator],
    ["eps.scale_bits", eps.scale_bits, c.eps_scale_bits],
    ["eps.capped", eps.capped === undefined ? false : eps.capped, c.capped],
    ["flip_slice", bundle.flip_slice === undefined ? null : bundle.flip_slice, c.flip],
    ["query", bundle.query, c.query],
    ["spread", bundle.spread === undefined ? null : bundle.spread, c.spread ? c.spread.readable : null],
    ["persistence", bundle.persistence === undefined ? null : bundle.persistence, c.persistence ? c.persistence.readable : null],
  ];
  for (const [name, stated, derived] of checks) {
    if (canonical(stated) !== canonical(derived)) {
      return `bundle field ${name} says ${short(canonical(stated))}, its public signals and the card say ${short(canonical(derived))}`;
    }
  }
  return null;
}

const short = (text) => (text.length <= 60 ? text : `${text.slice(0, 57)}...`);

// commitments.claims.bundle_claims, with its per-slice parts.
function bundleClaims(bundle, card, digest) {
  if (bundle.model_id !== card.model_id) throw invalid(`bundle is for model ${bundle.model_id}, the card is for ${card.model_id}`, "claims.model");
  if (bundle.card_digest !== digest) throw invalid("bundle was issued under another model card (card digest differs from the card's)", "claims.card-digest");
  const bucket = card.circuits.find((b) => b.bucket === bundle.bucket);
  if (bucket === undefined) throw invalid(`model card has no circuit bucket ${bundle.bucket}`, "claims.bucket");
  const claims = derivedClaims(bundle.public_signals, card, bundle.bucket, 0);
  claims.eps_scale_bits = BigInt(card.eps_scale_bits);
  claims.part_buckets = [];
  const problem = contradiction(bundle, claims);
  if (problem) throw invalid(problem, "claims.contradiction");
  const parts = bundle.parts || [];
  if (bucket.shape.per_slice !== true) {
    if (parts.length) throw invalid(`bucket ${bucket.bucket} proves every slice at once: the bundle has no slice parts`, "claims.parts");
    return claims;
  }
  const nSlices = lib.claims.slices(card).length;
  const indices = parts.map((p) => num(p.slice_index));
  if (indices.length !== nSlices - 1 || indices.some((v, i) => v !== i + 1)) {
    throw invalid(`a per-slice certificate has one proof per slice: parts for slices 1..${nSlices - 1} in order`, "claims.parts");
  }
  const whole = canonical({ ...claims, bucket: null, part_buckets: null });
  for (const p of parts) {
    const partBucket = card.circuits.find((b) => b.bucket === p.bucket);
    if (partBucket === undefined) throw invalid(`model card has no circuit bucket ${p.bucket}`, "claims.parts");
    if (partBucket.shape.per_slice !== true) throw invalid(`the proof of slice ${p.slice_index} names bucket ${p.bucket}, which is not per-slice`, "claims.parts");
    if (partBucket.shape.eps_cap !== bucket.shape.eps_cap || partBucket.shape.radius !== bucket.shape.radius) {
      throw invalid(`the proof of slice ${p.slice_index} names bucket ${p.bucket}, whose cap or radius differs from bucket ${bucket.bucket}'s`, "claims.parts");
    }
    const part = derivedClaims(partSignals(bundle, p.slice_index), card, p.bucket, p.slice_index);
    part.eps_scale_bits = claims.eps_scale_bits;
    if (canonical({ ...part, bucket: null, part_buckets: null }) !== whole) {
      throw invalid(`the proof of slice ${p.slice_index} claims something else than slice 0's`, "claims.parts");
    }
  }
  claims.part_buckets = parts.map((p) => p.bucket);
  return claims;
}

const partSignals = (bundle, sliceIndex) => [...bundle.public_signals.slice(0, -1), String(sliceIndex)];

// ------------------------------------------------------------------------------------- customer
function lensProblem(claims, required) {
  for (const lens of required) {
    if (!LENSES.includes(lens)) return `unknown lens ${lens} (this verifier knows ${LENSES.join(", ")})`;
    if (lens === "spread" && claims.spread == null) return "the certificate does not prove the counterfactual spread, which you require";
    if (lens === "persistence" && claims.persistence == null) return "the certificate does not prove persistent bias, which you require";
  }
  return null;
}

// The customer's inputs, read as fairproof-verify reads its arguments: a malformed one is unusable input (D3).
function readTrusted(hashes) {
  const trusted = hashes.map((h) => h.trim().toLowerCase()).filter((h) => h);
  for (const h of trusted) {
    if (!/^[0-9a-f]{128}$/.test(h)) throw unusable(`trusted contributor '${h.slice(0, 20)}': a contribution hash is 128 hex digits`);
  }
  return trusted;
}

function readLenses(required) {
  for (const lens of required) {
    if (!LENSES.includes(lens)) throw unusable(`unknown lens ${lens} (this verifier knows ${LENSES.join(", ")})`);
  }
  return required;
}

function readDelta(delta) {
  if (delta !== undefined && delta !== null && !(typeof delta === "number" && delta >= 0 && delta <= 100)) {
    throw unusable("delta must be a number of standard deviations between 0 and 100");
  }
}

function readRecord(card, text) {
  try {
    return lib.record.encodeRecord(card, parseStrictText(text, "record"));
  } catch (e) {
    if (e instanceof lib.record.RecordError || e instanceof SyntaxError) throw unusable(`your record: ${e.message}`);
    throw e;
  }
}

function setupTrustProblem(bucket, trusted) {
  if (!trusted.length) return null;
  const setup = bucket.setup;
  const name = `bucket ${bucket.bucket}`;
  if (setup.method !== "ceremony") {
    return `the keys of ${name} were set up by the bank alone (no ceremony), and you require a trusted contributor`;
  }
  if (!setup.contributions.some((c) => trusted.includes(c.hash))) {
    const names = setup.contributions.map((c) => c.name || c.hash.slice(0, 16)).join(", ");
    return `none of your trusted contributors took part in the key setup of ${name} (contributors: ${names})`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------- proofs
const plain = (v) => (typeof v === "bigint" ? Number(v) : Array.isArray(v) ? v.map(plain)
  : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)])) : v);

async function checkedKey(bucket) {
  const what = `verifying key of bucket ${bucket.bucket}`;
  let vk;
  try {
    vk = lib.curve.verifyingKeyFromJson(bucket.verifying_key, what);
  } catch (e) {
    if (e instanceof lib.curve.CurveError) throw invalid(e.message, "key.invalid");
    throw e;
  }
  if (BigInt(vk.nPublic) !== bucket.n_public) throw invalid(`${what}: ${vk.nPublic} public inputs, the bucket declares ${bucket.n_public}`, "key.invalid");
  if (await lib.curve.verifyingKeyDigest(vk) !== bucket.verifying_key_digest) throw invalid(`${what} does not match its digest on the card`, "key.invalid");
  return plain(bucket.verifying_key);
}

async function checkProof(snarkjs, key, proofJson, proofHex, signals, whose) {
  try {
    lib.curve.proofFromJson(proofJson, proofHex, "proof");
  } catch (e) {
    if (e instanceof lib.curve.CurveError) throw invalid(`${e.message}${whose}`, "proof.malformed");
    throw e;
  }
  const ok = await snarkjs.groth16.verify(key, [...signals], plain(proofJson));
  if (ok !== true) throw invalid(`proof rejected${whose}: the pairing check fails`, "proof.rejected");
}

// --------------------------------------------------------------------------------------- attestations
// The customer's trusted auditors (verifier keys) and the attestations they gave, read as fairproof-verify
// reads --trust-auditor and --attestation: a malformed key or document is unusable input.
async function readAuditors(keys) {
  const verifiers = [];
  for (const key of keys) {
    try {
      verifiers.push(await lib.attestation.parseAuditorKey(key));
    } catch (e) {
      if (e instanceof lib.attestation.AttestationError) throw unusable(e.message);
      throw e;
    }
  }
  return verifiers;
}

function readAttestations(texts, schema) {
  return texts.map((text, i) => readDocument(text, schema, texts.length > 1 ? `attestation ${i + 1}` : "attestation"));
}

// The persistence box the customer asks for (`delta` in standard deviations; the card's default when absent):
// ModelCard.persistence_box and verifier_client/service_client.py box_problem, word for word.
function boxProblem(claims, card, delta) {
  const asked = delta !== undefined && delta !== null;
  const lens = card.persistence;
  if (lens == null) {
    return asked ? `model ${card.model_id} does not prove persistent bias: it takes no delta` : null;
  }
  const scaleBits = num(card.scale_bits);
  const one = 2 ** scaleBits;
  let expected = BigInt(lens.default_delta);
  if (asked) {
    if (typeof delta !== "number" || !Number.isFinite(delta) || delta < 0) {
      return `delta must be a non-negative number of standard deviations, not ${delta}`;
    }
    expected = BigInt(Math.ceil(delta * one));  // exact: a double times a power of two, rounded up as Python's ceil
    const cap = lib.claims.persistenceDeltaCap(card);
    if (expected > cap) {
      return `delta ${lib.explain.formatG(Number(expected) / one, 6)} exceeds ${lib.explain.formatG(Number(cap) / one, 6)} `
        + "standard deviations, the widest moved feature's domain";
    }
  }
  const ps = claims.persistence;
  if (ps == null || BigInt(ps.delta) !== expected) {
    const stated = ps == null ? "no persistence bounds" : `delta ${ps.delta} / 2^${scaleBits}`;
    return `the certificate proves ${stated}, not the box you asked for (delta ${expected} / 2^${scaleBits})`;
  }
  return null;
}

// --------------------------------------------------------------------------------------- verdict
// inputs: { bundleText, cardText, recordText?, pinnedDigest?, trusted?: [hex], requiredLenses?: [name],
//           trustedAuditors?: [verifier key], attestations?: [attestation document text],
//           delta?: number (the persistence box asked for, standard deviations; the card's default otherwise) }
// env: { snarkjs, schemas: { bundle, card, attestation, attestation_statement } (parsed JSON Schemas) }
// Returns { valid: true, claims, report, cardDigest, recordChecked, auditors, card } or
// { valid: false, kind, reason, cardDigest? }. `auditors`: the trusted auditors whose attestation covers the card.
async function verifyBundle(inputs, env) {
  let cardDigest = null;
  try {
    const { card, canonicalText } = readCard(inputs.cardText, env.schemas.card);
    cardDigest = await lib.canonical.sha256Hex(canonicalText);
    // Every document and customer input is read before any rule is checked (D first, as fairproof-verify).
    const bundle = readDocument(inputs.bundleText, env.schemas.bundle, "bundle");
    const verifiers = await readAuditors((inputs.trustedAuditors || []).map((k) => k.trim()).filter((k) => k));
    const attestations = readAttestations(inputs.attestations || [], env.schemas.attestation);
    const trusted = readTrusted(inputs.trusted || []);
    const required = readLenses(inputs.requiredLenses || []);
    readDelta(inputs.delta);
    const query = inputs.recordText && inputs.recordText.trim() ? readRecord(card, inputs.recordText) : null;
    const pinned = (inputs.pinnedDigest || "").trim().toLowerCase();
    if (pinned && pinned !== cardDigest) throw invalid(`the card is not the one you pinned (its digest is ${cardDigest})`, "card.pin-mismatch");
    const claims = bundleClaims(bundle, card, cardDigest);
    const missing = lensProblem(claims, required);
    if (missing) throw invalid(missing, "customer.lens");
    if (query !== null) {
      const differing = card.feature_names.filter((_, i) => query[i] !== claims.query[i]);
      if (differing.length) {
        const which = differing.slice(0, 5).join(", ") + (differing.length > 5 ? "..." : "");
        throw invalid(`the certificate is about another customer's record, not yours (query differs in: ${which})`, "customer.record");
      }
    }
    const recordChecked = query !== null;
    const attested = await lib.attestation.checkAttestations(card, cardDigest, attestations, verifiers,
      env.schemas.attestation_statement);
    if (attested.problem !== null) throw invalid(attested.problem, "customer.auditor");
    const proofs = [[claims.bucket, bundle.proof, bundle.proof_hex, bundle.public_signals, ""],
      ...(bundle.parts || []).map((p) => [p.bucket, p.proof, p.proof_hex, partSignals(bundle, p.slice_index), ` (slice ${p.slice_index})`])];
    const bucketOf = (name) => card.circuits.find((b) => b.bucket === name);
    for (const [name] of proofs) {
      const trustProblem = setupTrustProblem(bucketOf(name), trusted);
      if (trustProblem) throw invalid(trustProblem, "customer.contributor");
    }
    const keys = new Map();
    for (const [name, proofJson, proofHex, signals, whose] of proofs) {
      if (!keys.has(name)) keys.set(name, await checkedKey(bucketOf(name)));
      await checkProof(env.snarkjs, keys.get(name), proofJson, proofHex, signals, whose);
    }
    const box = boxProblem(claims, card, inputs.delta);
    if (box) throw invalid(box, "customer.box");
    return { valid: true, claims, cardDigest, recordChecked, report: lib.explain.validReport(claims, card), card,
      auditors: attested.auditors };
  } catch (e) {
    if (e instanceof Refusal) return { valid: false, kind: e.kind, reason: e.message, code: e.code, cardDigest };
    return { valid: false, kind: "unusable", reason: `this page could not check the documents (${e.message})`, cardDigest };
  }
}

const FairProofVerify = { verifyBundle, readCard, cardProblem, contradiction, derivedClaims, decodeText, textProblem, parseStrictText,
  TextError };
if (typeof module !== "undefined") module.exports = FairProofVerify;
else globalThis.FairProofVerify = FairProofVerify;
