// The page's controls: read what the customer drops or pastes, run verify.js, show the verdict.
// Nothing is sent anywhere: the only request this page can make is, when it is served by the bank's
// service and carries no card, GET of the card the bundle names from that same service.

"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const { parseJson } = globalThis.FairProofCanonical;
  const config = parseJson($("fairproof-config").textContent);
  const schemas = parseJson($("fairproof-schemas").textContent);
  const embeddedCard = $("fairproof-card") ? $("fairproof-card").textContent : null;

  // Every file, link and fetched card is read as fairproof-verify reads a file (verify.js `decodeText`): UTF-8
  // without a byte-order mark, never repaired (File.text() would drop a BOM and replace bad bytes). A file
  // that is not such text leaves its field empty and is the verdict's reason until the field is edited.
  const { decodeText } = globalThis.FairProofVerify;
  const unreadable = new Map();  // textarea id -> why its file could not be read
  const readText = async (file, what) => decodeText(await file.arrayBuffer(), what);

  function load(textarea, file, what) {
    return readText(file, what).then((text) => { textarea.value = text; unreadable.delete(textarea.id); },
      (e) => { textarea.value = ""; unreadable.set(textarea.id, e.message); });
  }
  function readFileInto(input, textarea, what) {
    textarea.addEventListener("input", () => unreadable.delete(textarea.id));
    input.addEventListener("change", () => {
      const file = input.files && input.files[0];
      if (file) load(textarea, file, what);
    });
  }
  readFileInto($("bundle-file"), $("bundle-text"), "bundle");
  readFileInto($("record-file"), $("record-text"), "record");
  if ($("card-file")) readFileInto($("card-file"), $("card-text"), "card");

  // A bundle dropped anywhere on the page.
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    const file = e.dataTransfer.files && e.dataTransfer.files[0];
    if (file) load($("bundle-text"), file, "bundle").then(() => verify());
  });

  function fieldText(id) {
    if (unreadable.has(id)) throw new Error(unreadable.get(id));
    return $(id) ? $(id).value : "";
  }

  async function cardText(bundleText) {
    if (embeddedCard !== null) return embeddedCard;
    const given = fieldText("card-text");
    if (given.trim()) return given;
    if (!config.card_url) throw new Error("give the model card (a file or its text)");
    let modelId;
    try {
      modelId = parseJson(bundleText).model_id;
    } catch (e) {
      modelId = null;
    }
    if (typeof modelId !== "string") throw new Error("the bundle names no model, so its card cannot be fetched");
    const response = await fetch(config.card_url.replace("{model_id}", encodeURIComponent(modelId)), { credentials: "omit" });
    if (!response.ok) throw new Error(`the service has no card for model ${modelId} (HTTP ${response.status})`);
    return decodeText(await response.arrayBuffer(), "card");
  }

  function show(verdict, milliseconds) {
    const box = $("verdict");
    const report = $("report");
    box.className = verdict.valid ? "valid" : "refused";
    box.dataset.verdict = verdict.valid ? "VALID" : verdict.kind === "unusable" ? "UNUSABLE" : "INVALID";
    box.dataset.code = verdict.valid || verdict.kind === "unusable" ? "" : verdict.code || "";  // docs/VERIFYING.md
    if (verdict.valid) {
      box.textContent = "VALID certificate";
      const lines = verdict.report.split("\n").slice(1);
      lines.push("Transparency log: not checked by this page (fairproof-verify checks it against the log key you pin).");
      lines.push(verdict.auditors && verdict.auditors.length
        ? `The card is attested by ${verdict.auditors.join(", ")} (an auditor you trust checked every key on it).`
        : "The card is attested by no auditor you named (give an auditor's key under \"What you choose to trust\" to require one).");
      lines.push(verdict.recordChecked ? "The certificate is about your record."
        : "Your record was not checked: give it to make sure the certificate is about you.");
      report.textContent = lines.join("\n");
    } else {
      box.textContent = verdict.kind === "unusable" ? "REFUSED: unusable document" : "INVALID certificate";
      report.textContent = verdict.reason;
    }
    $("card-digest").textContent = verdict.cardDigest || "(no card read)";
    $("timing").textContent = `checked in the browser in ${milliseconds.toFixed(0)} ms`;
    $("timing").dataset.milliseconds = milliseconds.toFixed(1);
  }

  // The attestation files chosen, read when the customer presses Verify.
  function attestationTexts() {
    const input = $("attestation-files");
    const files = Array.from((input && input.files) || []);
    return Promise.all(files.map((file, i) => readText(file, files.length > 1 ? `attestation ${i + 1}` : "attestation")));
  }

  async function verify() {
    $("verdict").className = "working";
    $("verdict").dataset.verdict = "WORKING";
    $("verdict").textContent = "checking...";
    $("report").textContent = "";
    const started = performance.now();
    let verdict;
    try {
      const bundleText = fieldText("bundle-text");
      const recordText = fieldText("record-text");
      verdict = await globalThis.FairProofVerify.verifyBundle({
        bundleText, cardText: await cardText(bundleText), recordText,
        pinnedDigest: $("pinned-digest").value,
        trusted: $("trusted").value.split(/[\s,]+/),
        trustedAuditors: $("trusted-auditors").value.split("\n"),
        attestations: await attestationTexts(),
        requiredLenses: Array.from(document.querySelectorAll("input[name=lens]:checked"), (c) => c.value),
      }, { snarkjs: globalThis.snarkjs, schemas });
    } catch (e) {
      verdict = { valid: false, kind: "unusable", reason: e.message, cardDigest: null };
    }
    show(verdict, performance.now() - started);
  }

  $("verify").addEventListener("click", verify);

  // A bundle in the URL's fragment (#bundle=<base64url JSON>): the fragment never leaves the browser.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.has("bundle")) {
    let text = null;
    try {
      const b64 = fragment.get("bundle").replace(/-/g, "+").replace(/_/g, "/");
      text = decodeText(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)), "the link's bundle");
    } catch (e) {
      const reason = e instanceof globalThis.FairProofVerify.TextError ? e.message : "the link's bundle is not base64url JSON";
      show({ valid: false, kind: "unusable", reason, cardDigest: null }, 0);
    }
    if (text !== null) {
      $("bundle-text").value = text;
      verify();
    }
  }
})();
