// BN254 in the browser, as much as the page needs beside snarkjs's pairing: points read from snarkjs JSON
// (canonical decimals below q, affine), the curve equations, the order-r subgroup check of G2, and the
// compressed encodings of circuits/groth16/encoding.py, so that the page checks what the Python verifier
// checks before the pairing: proof_hex is exactly the JSON proof compressed, every key and proof point is a
// group element, the key is not degenerate and matches its digest on the card.
//
// Plain BigInt arithmetic, written for reading rather than speed: a subgroup check is one scalar
// multiplication by r (about 250 doublings), a few milliseconds.

"use strict";

const Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;
const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const HALF_Q = (Q - 1n) / 2n;
// The twist's b = 3 / (9 + u).
const B2 = [19485874751759354771024239261021720505790618469301721065564631296452457478373n,
  266929791119991161246907387137283842545076965332900288569378510910307636690n];

class CurveError extends Error {}

// --------------------------------------------------------------------------------- Fq and Fq2
const mod = (a) => { const m = a % Q; return m < 0n ? m + Q : m; };
const f2 = {
  add: (a, b) => [mod(a[0] + b[0]), mod(a[1] + b[1])],
  sub: (a, b) => [mod(a[0] - b[0]), mod(a[1] - b[1])],
  mul: (a, b) => [mod(a[0] * b[0] - a[1] * b[1]), mod(a[0] * b[1] + a[1] * b[0])],  // u^2 = -1
  neg: (a) => [mod(-a[0]), mod(-a[1])],
  eq: (a, b) => a[0] === b[0] && a[1] === b[1],
  isZero: (a) => a[0] === 0n && a[1] === 0n,
};
f2.sqr = (a) => f2.mul(a, a);
f2.double = (a) => f2.add(a, a);

// ------------------------------------------------------------------------------- snarkjs JSON
function coordinate(text, what) {
  if (typeof text !== "string" || !/^(0|[1-9][0-9]*)$/.test(text)) throw new CurveError(`${what}: not a canonical decimal`);
  const v = BigInt(text);
  if (v >= Q) throw new CurveError(`${what}: coordinate out of range [0, Q)`);
  return v;
}

function g1OnCurve([x, y]) {
  return mod(y * y) === mod(x * x * x + 3n);
}

function g2OnCurve([x, y]) {
  return f2.eq(f2.sqr(y), f2.add(f2.mul(f2.sqr(x), x), B2));
}

// A G1 point from ["x", "y", "1"]; G1 has cofactor 1, so on the curve means in the group.
function g1FromJson(value, what) {
  if (!Array.isArray(value) || value.length !== 3 || value[2] !== "1") {
    throw new CurveError(`${what}: expected affine ["x", "y", "1"]`);
  }
  const p = [coordinate(value[0], `${what}[0]`), coordinate(value[1], `${what}[1]`)];
  if (!g1OnCurve(p)) throw new CurveError(`${what}: point is not on the BN254 G1 curve`);
  return p;
}

// A G2 point from [["x0", "x1"], ["y0", "y1"], ["1", "0"]]: on the twist; in the order-r subgroup when asked.
function g2FromJson(value, what, checkSubgroup = true) {
  const pair = (v, w) => {
    if (!Array.isArray(v) || v.length !== 2) throw new CurveError(`${w}: expected two coordinates`);
    return [coordinate(v[0], `${w}[0]`), coordinate(v[1], `${w}[1]`)];
  };
  if (!Array.isArray(value) || value.length !== 3 || !Array.isArray(value[2]) || value[2].length !== 2
      || value[2][0] !== "1" || value[2][1] !== "0") {
    throw new CurveError(`${what}: expected affine [[x0, x1], [y0, y1], ["1", "0"]]`);
  }
  const p = [pair(value[0], `${what}[0]`), pair(value[1], `${what}[1]`)];
  if (!g2OnCurve(p)) throw new CurveError(`${what}: point is not on the BN254 G2 twist`);
  if (checkSubgroup && !g2InSubgroup(p)) throw new CurveError(`${what}: point is not in the order-r subgroup of G2`);
  return p;
}

// ---------------------------------------------------------------------------- G2 subgroup check
// Jacobian coordinates (X, Y, Z) over Fq2 for y^2 = x^3 + b (a = 0); Z = 0 is the point at infinity.
function jacDouble([X, Y, Z]) {
  if (f2.isZero(Z) || f2.isZero(Y)) return [[1n, 0n], [1n, 0n], [0n, 0n]];
  const A = f2.sqr(X), B = f2.sqr(Y), C = f2.sqr(B);
  const D = f2.double(f2.sub(f2.sub(f2.sqr(f2.add(X, B)), A), C));
  const E = f2.add(f2.double(A), A), F = f2.sqr(E);
  const X3 = f2.sub(F, f2.double(D));
  const Y3 = f2.sub(f2.mul(E, f2.sub(D, X3)), f2.double(f2.double(f2.double(C))));
  return [X3, Y3, f2.double(f2.mul(Y, Z))];
}

// (X, Y, Z) + affine (x, y).
function jacAddAffine(P, [x, y]) {
  const [X, Y, Z] = P;
  if (f2.isZero(Z)) return [x, y, [1n, 0n]];
  const ZZ = f2.sqr(Z);
  const H = f2.sub(f2.mul(x, ZZ), X);
  const rr = f2.sub(f2.mul(y, f2.mul(Z, ZZ)), Y);
  if (f2.isZero(H)) return f2.isZero(rr) ? jacDouble(P) : [[1n, 0n], [1n, 0n], [0n, 0n]];
  const HH = f2.sqr(H), HHH = f2.mul(H, HH), V = f2.mul(X, HH);
  const X3 = f2.sub(f2.sub(f2.sqr(rr), HHH), f2.double(V));
  const Y3 = f2.sub(f2.mul(rr, f2.sub(V, X3)), f2.mul(Y, HHH));
  return [X3, Y3, f2.mul(Z, H)];
}

// r P = O exactly when P (on the twist) lies in the order-r subgroup.
function g2InSubgroup(p) {
  let acc = [[1n, 0n], [1n, 0n], [0n, 0n]];
  for (const bit of R.toString(2)) {
    acc = jacDouble(acc);
    if (bit === "1") acc = jacAddAffine(acc, p);
  }
  return f2.isZero(acc[2]);
}

// --------------------------------------------------------------------------- compressed encodings
const FLAG_SMALLER = 0b10 << 6;
const FLAG_LARGER = 0b11 << 6;

function bytes32(v) {
  const hex = v.toString(16).padStart(64, "0");
  return Uint8Array.from(hex.match(/../g), (h) => parseInt(h, 16));
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

const fqIsLarger = (y) => y > HALF_Q;
const fq2IsLarger = (y) => (y[1] === 0n ? fqIsLarger(y[0]) : fqIsLarger(y[1]));

function encodeG1([x, y]) {
  const out = bytes32(x);
  out[0] |= fqIsLarger(y) ? FLAG_LARGER : FLAG_SMALLER;
  return out;
}

// x.c1 || x.c0, the flags in the first byte (EIP-197's order, as encoding.py).
function encodeG2([[x0, x1], y]) {
  const out = concat([bytes32(x1), bytes32(x0)]);
  out[0] |= fq2IsLarger(y) ? FLAG_LARGER : FLAG_SMALLER;
  return out;
}

const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

// A || B || C, 128 bytes, as circuits.groth16.proof_to_bytes.
function proofHex(proof) {
  return toHex(concat([encodeG1(proof.a), encodeG2(proof.b), encodeG1(proof.c)]));
}

// ------------------------------------------------------------------------------- verifying keys
// Read and check a card's snarkjs verifying key as circuits/groth16 check_verifying_key does: every point a
// group element, none at infinity (affine JSON cannot spell it), and delta != +-gamma (a degenerate key
// whose maker can prove anything).
function verifyingKeyFromJson(doc, what) {
  if (doc.protocol !== "groth16" || doc.curve !== "bn128") throw new CurveError(`${what}: not a groth16 bn128 key`);
  if (!Array.isArray(doc.IC) || doc.IC.length === 0) throw new CurveError(`${what}: IC must be a non-empty list`);
  const vk = {
    nPublic: Number(doc.nPublic),
    alpha: g1FromJson(doc.vk_alpha_1, `${what}: vk_alpha_1`),
    beta: g2FromJson(doc.vk_beta_2, `${what}: vk_beta_2`),
    gamma: g2FromJson(doc.vk_gamma_2, `${what}: vk_gamma_2`),
    delta: g2FromJson(doc.vk_delta_2, `${what}: vk_delta_2`),
    ic: doc.IC.map((p, i) => g1FromJson(p, `${what}: IC[${i}]`)),
  };
  if (BigInt(vk.ic.length) !== BigInt(doc.nPublic) + 1n) {
    throw new CurveError(`${what}: nPublic is ${doc.nPublic} but IC has ${vk.ic.length} points`);
  }
  const [gx, gy] = vk.gamma;
  const [dx, dy] = vk.delta;
  if (f2.eq(dx, gx) && (f2.eq(dy, gy) || f2.eq(dy, f2.neg(gy)))) {
    throw new CurveError(`${what}: delta equals +-gamma (degenerate key: proofs of anything verify)`);
  }
  return vk;
}

// b"FPVK" || version 1 || n_public (u32 BE) || alpha || beta || gamma || delta || ic, compressed:
// circuits.groth16.vk_to_bytes, whose SHA-256 is the digest a card lists beside the key.
function verifyingKeyBytes(vk) {
  const n = vk.nPublic;
  const head = Uint8Array.from([0x46, 0x50, 0x56, 0x4b, 1, (n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  return concat([head, encodeG1(vk.alpha), encodeG2(vk.beta), encodeG2(vk.gamma), encodeG2(vk.delta),
    ...vk.ic.map(encodeG1)]);
}

async function verifyingKeyDigest(vk) {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", verifyingKeyBytes(vk));
  return toHex(new Uint8Array(digest));
}

// ------------------------------------------------------------------------------------- proofs
// A bundle's proof read once from its JSON; `hex` must be exactly its compressed form (compression is a
// bijection, so equal bytes mean proof_hex names these very points). B's subgroup check is made here.
function proofFromJson(doc, hex, what) {
  if (doc.protocol !== "groth16" || doc.curve !== "bn128") throw new CurveError(`${what}: not a groth16 bn128 proof`);
  const proof = {
    a: g1FromJson(doc.pi_a, `${what}: pi_a`),
    b: g2FromJson(doc.pi_b, `${what}: pi_b`),
    c: g1FromJson(doc.pi_c, `${what}: pi_c`),
  };
  if (proofHex(proof) !== hex) throw new CurveError(`${what}: the compressed proof and the JSON proof differ`);
  return proof;
}

const FairProofCurve = {
  Q, R, CurveError, g1OnCurve, g2OnCurve, g2InSubgroup, g1FromJson, g2FromJson, proofHex, proofFromJson,
  verifyingKeyFromJson, verifyingKeyBytes, verifyingKeyDigest,
};
if (typeof module !== "undefined") module.exports = FairProofCurve;
else globalThis.FairProofCurve = FairProofCurve;
