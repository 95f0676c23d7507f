// What a certificate says, from its public signals and the card alone: the browser's twin of
// commitments/claims.py `claims_from_signals`, rule for rule, so that a page refuses exactly the signals the
// Python verifier refuses (tests/test_page_claims.py runs both on the same forgeries). Cards come from
// canonical.js's parser: every integer is a BigInt.

"use strict";

const { pyRepr } = typeof module !== "undefined" ? require("./schema.js") : globalThis.FairProofSchema;

const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const HALF_R = (R - 1n) / 2n;
const HEAD_SIGNALS = 5;
const PERSISTENCE_BOUND_LIMIT = 1n << 250n;
const STATUS_NAMES = ["certified", "counterfactual_flip"];

// `code`: the rule's stable reason code (docs/VERIFYING.md), as commitments/claims.py's ClaimError carries it.
class ClaimError extends Error {
  constructor(message, code) { super(message); this.code = code; }
}

function parseDecimal(text, what) {
  if (typeof text !== "string" || !/^(0|[1-9][0-9]*)$/.test(text)) {
    throw new ClaimError(`${what}: not a canonical decimal`, "claims.signal-encoding");
  }
  const v = BigInt(text);
  if (v >= R) throw new ClaimError(`${what}: not below the field modulus`, "claims.signal-encoding");
  return v;
}

const signed = (v) => (v <= HALF_R ? v : v - R);
const num = (v) => Number(v);  // small card integers (sizes, indices)

// A sensitive feature of the card spans one input (`column`, each value an integer) or several (`columns`,
// each value a point: one integer per column, a bank's one-hot encoding). Both read as columns and points.
const featureColumns = (f) => (f.columns != null ? f.columns.map(num) : [num(f.column)]);
const featurePoints = (f) => (f.columns != null ? f.values : f.values.map((v) => [v]));
const samePoint = (p, q) => p.length === q.length && p.every((v, i) => v === q[i]);
// The query's values at the feature's inputs.
const queryPoint = (f, query) => featureColumns(f).map((c) => query[c]);
// Which of the feature's points `point` is (-1: none).
const pointIndex = (f, point) => featurePoints(f).findIndex((p) => samePoint(p, point));

// Integer tuples in lexicographic order (shorter first on a common prefix), as Python sorts tuples.
function lexicographic(p, q) {
  for (let i = 0; i < Math.min(p.length, q.length); i++) if (p[i] !== q[i]) return p[i] < q[i] ? -1 : 1;
  return p.length - q.length;
}

// The inputs every slice sets: each feature's columns, in feature order (ModelCard's sensitive_columns).
const sensitiveColumns = (card) => card.sensitive.flatMap(featureColumns);

// Every combination of the features' points, in product order, each the concatenation of its chosen points
// (flat over sensitiveColumns): ModelCard.slices.
function slices(card) {
  let out = [[]];
  for (const f of card.sensitive) out = out.flatMap((prefix) => featurePoints(f).map((p) => [...prefix, ...p]));
  return out;
}

// Slice `index`'s values and the label of each feature's point in it.
function sliceLabels(card, index) {
  const values = slices(card)[index];
  let at = 0;
  const labels = card.sensitive.map((f) => {
    const width = featureColumns(f).length;
    const point = values.slice(at, at + width);
    at += width;
    return f.labels[pointIndex(f, point)];
  });
  return [values, labels];
}

// (feature index, point) for every point of every feature, each feature's points sorted: the order of the
// persistence lens's bounds.
function persistencePairs(card) {
  if (card.persistence == null) return [];
  const out = [];
  card.sensitive.forEach((f, a) => [...featurePoints(f)].sort(lexicographic).forEach((p) => out.push([a, p])));
  return out;
}

function persistenceDeltaCap(card) {
  if (card.persistence == null) return 0n;
  let cap = 0n;
  for (const j of card.persistence.columns) {
    const w = card.box_upper[num(j)] - card.box_lower[num(j)];
    if (w > cap) cap = w;
  }
  return cap;
}

function claimsFromSignals(signals, card, bucketName, sliceIndex = 0) {
  const bucket = card.circuits.find((b) => b.bucket === bucketName);
  if (bucket === undefined) throw new ClaimError(`model card has no circuit bucket ${bucketName}`, "claims.bucket");
  const perSlice = bucket.shape.per_slice === true;
  const n = num(card.architecture.n_inputs);
  const nSlices = slices(card).length;
  const nSpread = card.spread != null ? nSlices + 1 : 0;
  const nPersistence = card.persistence != null ? 1 + 2 * persistencePairs(card).length : 0;
  const expected = HEAD_SIGNALS + n + nSpread + nPersistence + (perSlice ? 1 : 0);
  if (num(bucket.n_public) !== expected) {
    throw new ClaimError(`bucket ${bucketName} has ${bucket.n_public} public inputs, this model's statement has ${expected}`, "claims.signal-count");
  }
  if (signals.length !== expected) {
    throw new ClaimError(`the proof has ${signals.length} public signals, this model's statement has ${expected}`, "claims.signal-count");
  }
  let values = signals.map((s, i) => parseDecimal(s, `public signal ${i}`));
  if (perSlice) {
    if (values[values.length - 1] !== BigInt(sliceIndex)) {
      throw new ClaimError(`public signal ${expected - 1} (the slice the proof covers) is not ${sliceIndex}`, "claims.parts");
    }
    values = values.slice(0, -1);
  }
  const [commitment, decision, eps, status, flipIndex] = values;
  if (commitment !== parseDecimal(card.commitment, "card commitment")) {
    throw new ClaimError("public signal 0 is not the card's commitment", "claims.commitment");
  }
  const labels = card.architecture.class_labels;
  if (decision >= BigInt(labels.length)) throw new ClaimError(`public signal 1 (decision ${decision}) is not a class of this model`, "claims.decision");
  if (eps > bucket.shape.eps_cap) throw new ClaimError(`public signal 2 (E = ${eps}) exceeds the cap ${bucket.shape.eps_cap}`, "claims.eps-cap");
  if (status > 1n) throw new ClaimError(`public signal 3 (status ${status}) is neither certified (0) nor flip (1)`, "claims.status");
  let flip = null;
  if (status === 0n) {
    if (flipIndex !== 0n) throw new ClaimError("public signal 4 (flip slice) must be 0 on a certified radius", "claims.flip");
  } else {
    if (eps !== 0n) throw new ClaimError("a counterfactual flip certifies radius 0, public signal 2 is not 0", "claims.flip");
    if (flipIndex >= BigInt(nSlices)) throw new ClaimError(`public signal 4 (flip slice ${flipIndex}) is not one of the ${nSlices} sensitive slices`, "claims.flip");
    const [v, l] = sliceLabels(card, num(flipIndex));
    flip = { index: flipIndex, values: v, labels: l };
  }
  const query = values.slice(HEAD_SIGNALS, HEAD_SIGNALS + n).map(signed);
  query.forEach((v, i) => {
    if (!(card.box_lower[i] <= v && v <= card.box_upper[i])) {
      throw new ClaimError(`public signal ${HEAD_SIGNALS + i} (feature ${card.feature_names[i]}) lies outside the model's input domain box`, "claims.query-box");
    }
  });
  for (const f of card.sensitive) {
    if (pointIndex(f, queryPoint(f, query)) < 0) {
      const columns = featureColumns(f);
      const where = columns.map((c) => HEAD_SIGNALS + c).join(", ");
      const [s, is] = columns.length > 1 ? ["s", "are"] : ["", "is"];
      throw new ClaimError(`public signal${s} ${where} (sensitive feature ${pyRepr(f.name)}) ${is} not a value of its domain`, "claims.sensitive-value");
    }
  }
  let spread = null;
  let persistence = null;
  if (card.spread != null) spread = spreadClaims(values.slice(HEAD_SIGNALS + n), card, query, decision, status);
  if (card.persistence != null) persistence = persistenceClaims(values.slice(HEAD_SIGNALS + n + nSpread), card, query, nSpread);
  return {
    model_id: card.model_id, bucket: bucketName, commitment, decision, decision_label: labels[num(decision)],
    status: STATUS_NAMES[num(status)], eps_numerator: eps, eps_scale_bits: card.eps_scale_bits,
    capped: status === 0n && eps === bucket.shape.eps_cap, flip, query, radius: bucket.shape.radius || "fast",
    spread, persistence, model_kind: card.architecture.kind || "relu-network",
  };
}

function spreadClaims(values, card, query, decision, status) {
  const all = slices(card);
  const first = HEAD_SIGNALS + num(card.architecture.n_inputs);
  const labels = card.architecture.class_labels;
  const decisions = values.slice(0, all.length);
  const count = values[all.length];
  decisions.forEach((d, s) => {
    if (d >= BigInt(labels.length)) throw new ClaimError(`public signal ${first + s} (the decision with slice ${s}) is not a class of this model`, "claims.spread");
  });
  if (!(1n <= count && count <= BigInt(all.length))) {
    throw new ClaimError(`public signal ${first + all.length} (${count} margin buckets) is not between 1 and the ${all.length} slices`, "claims.spread");
  }
  const ownValues = sensitiveColumns(card).map((c) => query[c]);
  const own = all.findIndex((s) => samePoint(s, ownValues));
  if (decisions[own] !== decision) {
    throw new ClaimError(`public signal ${first + own} (the decision with the query's own sensitive values) differs from the decision`, "claims.spread");
  }
  if (status === 0n && decisions.some((d) => d !== decision)) {
    throw new ClaimError("a certified radius means every slice decides the same, the spread signals say otherwise", "claims.spread");
  }
  return { decisions, decision_labels: decisions.map((d) => labels[num(d)]), score_buckets: count };
}

function persistenceClaims(values, card, query, nSpread) {
  const first = HEAD_SIGNALS + num(card.architecture.n_inputs) + nSpread;
  const delta = values[0];
  const cap = persistenceDeltaCap(card);
  if (delta > cap) throw new ClaimError(`public signal ${first} (delta ${delta}) exceeds ${cap}, the widest moved column of the domain box`, "claims.persistence");
  const bounds = [];
  persistencePairs(card).forEach(([a, point], i) => {
    const at = first + 1 + 2 * i;
    const lower = signed(values[1 + 2 * i]);
    const upper = signed(values[2 + 2 * i]);
    for (const [position, bound] of [[at, lower], [at + 1, upper]]) {
      if ((bound < 0n ? -bound : bound) >= PERSISTENCE_BOUND_LIMIT) {
        throw new ClaimError(`public signal ${position} (a persistence bound) is no integer a proof can state`, "claims.persistence");
      }
    }
    if (lower > upper) throw new ClaimError(`public signals ${at} and ${at + 1} (persistence bounds) have lower above upper`, "claims.persistence");
    if (samePoint(queryPoint(card.sensitive[a], query), point) && !(lower <= 0n && 0n <= upper)) {
      throw new ClaimError(`public signals ${at} and ${at + 1} (the customer's own value, where the gap is 0) do not contain 0`, "claims.persistence");
    }
    bounds.push([lower, upper]);
  });
  return { delta, bounds };
}

const FairProofClaims = { R, ClaimError, parseDecimal, signed, slices, sliceLabels, claimsFromSignals, persistenceDeltaCap,
  persistencePairs, featureColumns, featurePoints, samePoint, queryPoint, pointIndex, sensitiveColumns };
if (typeof module !== "undefined") module.exports = FairProofClaims;
else globalThis.FairProofClaims = FairProofClaims;
