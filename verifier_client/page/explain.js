// A valid certificate in plain words, from its verified claims and the card only: the lines
// `fairproof-verify` prints (verifier_client/verify.py explain, radius_summary, spread_summary,
// persistence_summary, setup_summary), character for character, numbers formatted as Python formats them
// (exact decimal rounding, half to even), so the page and the command line say the same thing.

"use strict";

const { exactDyadic } = typeof module !== "undefined" ? require("./canonical.js") : globalThis.FairProofCanonical;
const { featureInputs } = typeof module !== "undefined" ? require("./schema.js") : globalThis.FairProofSchema;

// ------------------------------------------------------------------------------ Python's numbers
const pow10 = (k) => 10n ** BigInt(k);

// round(num / den) to an integer, halves to even (num, den > 0).
function roundHalfEven(num, den) {
  const q = num / den;
  const twice = 2n * (num - q * den);
  if (twice > den || (twice === den && q % 2n === 1n)) return q + 1n;
  return q;
}

// |num / den| to `digits` significant digits: [digit string, decimal exponent of its first digit].
function significant(num, den, digits) {
  if (num < 0n) num = -num;
  let e = num.toString().length - den.toString().length;
  const atLeast = (k) => (k >= 0 ? num >= pow10(k) * den : num * pow10(-k) >= den);
  while (!atLeast(e)) e -= 1;
  while (atLeast(e + 1)) e += 1;
  const shift = digits - 1 - e;
  let n = shift >= 0 ? roundHalfEven(num * pow10(shift), den) : roundHalfEven(num, den * pow10(-shift));
  if (n === pow10(digits)) { n = pow10(digits - 1); e += 1; }
  return [n.toString(), e];
}

// Python's format(x, f".{p}g") (and "+.{p}g" with sign = true).
function formatG(x, p, sign = false) {
  const lead = x < 0 || Object.is(x, -0) ? "-" : sign ? "+" : "";
  if (x === 0) return `${lead}0`;
  const [num, shift] = exactDyadic(x);
  const den = 1n << shift;
  const [digits, e] = significant(num, den, p);
  const strip = (s) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  if (e >= -4 && e < p) {
    let body;
    if (e >= 0) body = `${digits.slice(0, e + 1)}.${digits.slice(e + 1)}`;
    else body = `0.${"0".repeat(-e - 1)}${digits}`;
    return lead + strip(body);
  }
  const mantissa = strip(`${digits[0]}.${digits.slice(1)}`);
  return `${lead}${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

// str(Decimal(numerator) / Decimal(2) ** scale_bits) at 30 digits, normalised: commitments.bundle.radius_decimal.
function radiusDecimal(numerator, scaleBits) {
  if (numerator === 0n) return "0";
  const [raw, e] = significant(numerator, 1n << BigInt(scaleBits), 30);
  const digits = raw.replace(/0+$/, "");
  const exponent = e - digits.length + 1;  // value = digits * 10^exponent
  if (exponent <= 0 && e >= -6) {
    const point = digits.length + exponent;
    if (exponent === 0) return digits;
    return point > 0 ? `${digits.slice(0, point)}.${digits.slice(point)}` : `0.${"0".repeat(-point)}${digits}`;
  }
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${mantissa}E${e < 0 ? "-" : "+"}${Math.abs(e)}`;
}

// ------------------------------------------------------------------------------------ the text
const num = (v) => Number(v);
// The logits' fixed-point scale: inputs and weights at 2^s, one more 2^s per layer (ModelCard.logit_scale_bits).
const logitScaleBits = (card) => num(card.scale_bits) * (card.architecture.hidden_sizes.length + 2);

// How a bound radius is reached, by the card's model kind (commitments/claims.py BOUND_METHOD, BOUND_EXPLAINED,
// COMMITTED).
const BOUND_METHOD = { "relu-network": "linear bound propagation", "tree-ensemble": "the worst reachable leaf of each tree" };
const BOUND_EXPLAINED = {
  "relu-network": "linear bound propagation through the network",
  "tree-ensemble": "the worst leaf each tree can reach within eps, summed",
};
const COMMITTED = { "relu-network": "the weights", "tree-ensemble": "the trees" };

function epsStatement(claims) {
  const t = claims.eps_scale_bits;
  const eps = radiusDecimal(claims.eps_numerator, t);
  if (claims.capped) return `eps >= ${eps}, the whole input domain (the cap; ${claims.radius} statement)`;
  if (claims.radius === "exact") return `eps = ${eps} (exact: the true radius rounded down to 2^-${t})`;
  if (claims.radius === "bound") return `eps >= ${eps} is a lower bound (bound: ${BOUND_METHOD[claims.model_kind]}; the true radius may be larger)`;
  return `eps >= ${eps} is a lower bound (fast: the true radius may be larger)`;
}

function radiusSummary(claims) {
  const eps = radiusDecimal(claims.eps_numerator, claims.eps_scale_bits);
  if (claims.status === "counterfactual_flip") return `Radius: eps = ${eps} (a counterfactual flip)`;
  return `Radius: ${epsStatement(claims)} [eps = ${claims.eps_numerator} / 2^${claims.eps_scale_bits}]`;
}

function explain(claims, card) {
  const sensitive = card.sensitive.map((f) => f.name).join(", ") || "sensitive attributes";
  const t = claims.eps_scale_bits;
  const lines = [`Decision: ${claims.decision_label} (model ${card.model_id}, commitment ${card.commitment.slice(0, 12)}...)`];
  if (claims.status === "counterfactual_flip") {
    const labels = claims.flip ? claims.flip.labels.join(", ") : "another value";
    lines.push(`Not certified fair: with ${sensitive} set to ${labels} and nothing else changed, `
      + "the model would have decided differently.");
  } else {
    const bound = claims.capped ? "at least the whole input domain" : `eps = ${radiusDecimal(claims.eps_numerator, t)}`;
    lines.push(`Certified: whatever the value of ${sensitive}, and with your other features moved by up to `
      + `${bound} (Euclidean distance in standardised units, inside the model's input domain), `
      + "the decision would have been the same.");
    if (!claims.capped && claims.radius === "exact") {
      lines.push(`This eps is exact (the true radius rounded down to 2^-${t}): the proof `
        + `also exhibits a change of ${sensitive} and of your other features by less than `
        + `eps + 2^-${t} at which another decision at least ties yours.`);
    } else if (!claims.capped && claims.radius === "bound") {
      lines.push(`This eps is a lower bound (bound radius: ${BOUND_EXPLAINED[claims.model_kind]}): `
        + "the decision may stay the same for larger changes too.");
    } else if (!claims.capped) {
      lines.push("This eps is a lower bound (fast radius): the decision may stay the same for larger "
        + "changes too.");
    }
  }
  lines.push(`The proof shows this was computed from ${COMMITTED[claims.model_kind]} the bank committed to.`);
  return lines.join("\n");
}

function spreadSummary(claims, card) {
  const sp = claims.spread;
  if (sp == null) return null;
  const names = card.sensitive.map((f) => f.name).join(", ");
  const favourable = card.architecture.class_labels[num(card.spread.favourable_class)];
  const width = BigInt(card.spread.bucket_width);  // a decimal string on the card (wider than 2^53)
  const logitBits = logitScaleBits(card);
  const lines = [`Counterfactual spread: with every combination of ${names} and nothing else changed, the model decides:`];
  sp.slice_labels.forEach((labels, i) => lines.push(`  ${labels.join(", ")}: ${sp.decision_labels[i]}`));
  const distinct = new Set(sp.decisions.map(String)).size;
  lines.push(`  ${distinct} distinct decision(s); the score for ${pyRepr(favourable)} (its logit margin) `
    + `falls in ${sp.score_buckets} distinct bucket(s) of width ${formatG(Number(radiusDecimal(width, logitBits)), 6)} logits `
    + `[${width} / 2^${logitBits}].`);
  return lines.join("\n");
}

// Python's repr() of a str, as Python 3 writes it: quotes, escapes, and non-printable characters (Unicode's
// Other and Separator categories but the ASCII space) as \xNN, \uNNNN or \UNNNNNNNN. The text quotes labels
// with it (the f-strings' !r), and the attestation checks name keys and characters with it.
const NONPRINTABLE = /^[\p{C}\p{Z}]$/u;
const hexDigits = (n, width) => n.toString(16).padStart(width, "0");
function pyRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const code = ch.codePointAt(0);
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch !== " " && NONPRINTABLE.test(ch)) {
      out += code <= 0xff ? `\\x${hexDigits(code, 2)}` : code <= 0xffff ? `\\u${hexDigits(code, 4)}`
        : `\\U${hexDigits(code, 8)}`;
    } else out += ch;
  }
  return out + quote;
}

// (name, std, unit) of a numeric model input, from the card's preprocessing, if it says.
function columnStd(card, column) {
  if (card.feature_schema != null) {
    let first = 0;
    for (const f of card.feature_schema.features) {
      if (first === column && f.kind === "numeric") return [f.name, floatOf(f.std, 1.0), f.unit || ""];
      first += featureInputs(f).length;
    }
    return null;
  }
  const features = card.features || [];
  if (features.length && features[column].kind === "numeric") return [features[column].name, floatOf(features[column].std, 1.0), ""];
  return null;
}

const floatOf = (v, fallback) => (v === undefined ? fallback : typeof v === "bigint" ? Number(v) : v.value);

function persistenceSummary(claims, card) {
  const ps = claims.persistence;
  if (ps == null) return null;
  const scaleBits = card.scale_bits;
  const delta = Number(ps.delta) / 2 ** num(scaleBits);
  const favourable = card.architecture.class_labels[num(card.persistence.favourable_class)];
  const moved = card.persistence.columns.map((j) => {
    const described = columnStd(card, num(j));
    if (described === null) return `${card.feature_names[num(j)]} +-${formatG(delta, 4)}`;
    const [name, std, unit] = described;
    return `${name} +-${formatG(delta * std, 4)}${unit ? " " + unit : ""}`;
  });
  const lines = [`Persistent bias: with the same changes to ${moved.join(", ")} `
    + `(delta = ${formatG(delta, 4)} standard deviations [${ps.delta} / 2^${scaleBits}]) made to you and `
    + `to someone identical but for one sensitive attribute, the score for ${pyRepr(favourable)} `
    + "(its logit margin) differs by:"];
  const logitBits = logitScaleBits(card);
  const scale = 2 ** num(logitBits);
  const words = { favoured: "you are favoured everywhere in the box", disfavoured: "you are disfavoured everywhere "
    + "in the box", inconclusive: "no persistent direction proved" };
  ps.readable.bounds.forEach((b) => {
    if (b.status === "own") return;
    lines.push(`  ${b.attribute} = ${b.label}: between ${formatG(Number(b.lower) / scale, 4, true)} and `
      + `${formatG(Number(b.upper) / scale, 4, true)} logits (${words[b.status]}) [${b.lower}, ${b.upper}] / 2^${logitBits}`);
  });
  return lines.join("\n");
}

function setupSummary(bucket) {
  const setup = bucket.setup;
  const what = `bucket ${bucket.bucket}`;
  if (setup.method !== "ceremony") return `Keys of ${what}: set up by the bank alone (no ceremony).`;
  const people = setup.contributions.map((c) => `${c.name || "anonymous"} (${c.hash.slice(0, 16)}...)`).join(", ");
  return `Keys of ${what}: phase 1 of 2^${setup.phase1_power}, contributions by ${people}.`;
}

// What `fairproof-verify` prints for a valid certificate, line for line.
function validReport(claims, card) {
  const lines = ["VALID certificate", radiusSummary(claims), explain(claims, card)];
  for (const lens of [spreadSummary(claims, card), persistenceSummary(claims, card)]) if (lens) lines.push(lens);
  for (const name of new Set([claims.bucket, ...claims.part_buckets])) {
    lines.push(setupSummary(card.circuits.find((b) => b.bucket === name)));
  }
  if (card.import_check != null) {
    lines.push(`Model import (the bank's statement on its card, not proved): ${card.import_check}`);
  }
  return lines.join("\n");
}

const FairProofExplain = { formatG, radiusDecimal, radiusSummary, explain, validReport, pyRepr };
if (typeof module !== "undefined") module.exports = FairProofExplain;
else globalThis.FairProofExplain = FairProofExplain;
