"""The verification page: one self-contained HTML file that checks a certificate in the browser.

The page holds everything it runs: the verifier's JavaScript modules of this package (each a twin of a
Python check, tested against it), the JSON Schemas of the bundle, card and attestation models (so its
strict reading is the models' by construction), snarkjs's browser build for the pairing, and optionally the model card it
was made for. Its Content-Security-Policy admits exactly those inline scripts (by hash) and no connection
at all, or, when the bank's service serves it, only to that service (for the card).

snarkjs's browser build and the `canonicalize` package (RFC 8785, for the card digest) come from npm
(package-lock.json pins the versions) and are copied beside these modules at build time
(`scripts/setup.sh`, the Dockerfile); each is read only if its SHA-256 is the one pinned here, never
fetched.

A page is a pure function of the package and its inputs: the same card gives byte-identical pages, so a
regulator can publish the SHA-256 of the page a customer should use. A page served by the bank is only as
trustworthy as the bank; one obtained elsewhere (or checked against a published hash) is not.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from string import Template

from commitments.attestation import Attestation, AttestationStatement
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard

PAGE_DIR = Path(__file__).resolve().parent
# In dependency order: each module may use the ones before it.
MODULES = ("canonical.js", "schema.js", "claims.js", "curve.js", "record.js", "explain.js", "attestation.js", "verify.js",
           "ui.js")

SNARKJS_VERSION = "0.7.6"
SNARKJS_BROWSER_SHA256 = "3f61bbd9ac0a10173902eaef65b510fa4e9a2c057f759c7f18a6d0446b20fd06"  # build/snarkjs.min.js
SNARKJS_BROWSER_ENV = "FAIRPROOF_SNARKJS_BROWSER"
CANONICALIZE_VERSION = "5.1.0"
CANONICALIZE_SHA256 = "c1d0195af2a0748454b06af8f218e5c90415c19d39154d0058fee8229c12d859"  # lib/canonicalize.js


class PageError(RuntimeError):
    """The page cannot be built (snarkjs's browser build is missing or is not the pinned file)."""


def snarkjs_browser_candidates() -> list[Path]:
    """Where the browser build is looked for: $FAIRPROOF_SNARKJS_BROWSER, the copy beside these modules,
    then a source checkout's node_modules."""
    found = [Path(os.environ[SNARKJS_BROWSER_ENV])] if os.environ.get(SNARKJS_BROWSER_ENV) else []
    return [*found, PAGE_DIR / "vendor" / "snarkjs.min.js",
            PAGE_DIR.parents[1] / "node_modules" / "snarkjs" / "build" / "snarkjs.min.js"]


def _pinned_file(candidates: list[Path], sha256: str, name: str, install_hint: str) -> str:
    """The text of the first of `candidates` that exists, if its SHA-256 is `sha256` (PageError otherwise)."""
    for path in candidates:
        if not path.is_file():
            continue
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise PageError(f"{path} is not {name} (SHA-256 {digest}, expected {sha256})")
        return data.decode("utf-8")
    raise PageError(f"{name} is not installed: {install_hint}")


def snarkjs_browser_build() -> str:
    """The pinned snarkjs browser build's text (PageError if absent or different)."""
    return _pinned_file(snarkjs_browser_candidates(), SNARKJS_BROWSER_SHA256, f"snarkjs {SNARKJS_VERSION}'s browser build",
                        "run `npm ci` in the source tree (scripts/setup.sh does), or set " + SNARKJS_BROWSER_ENV)


def canonicalize_candidates() -> list[Path]:
    """Where `canonicalize` is looked for: the copy beside these modules, then a source checkout's node_modules."""
    return [PAGE_DIR / "vendor" / "canonicalize.js",
            PAGE_DIR.parents[1] / "node_modules" / "canonicalize" / "lib" / "canonicalize.js"]


def canonicalize_script() -> str:
    """The `canonicalize` package's module as a page script: its one `export default` made a global
    (`globalThis.canonicalize`, which canonical.js reads). PageError if absent or not the pinned file."""
    source = _pinned_file(canonicalize_candidates(), CANONICALIZE_SHA256, f"canonicalize {CANONICALIZE_VERSION}",
                          "run `npm ci` in the source tree (scripts/setup.sh does)")
    source = source.replace("export default function canonicalize", "function canonicalize", 1)
    return f"(function () {{\n{source}\nglobalThis.canonicalize = canonicalize;\n}})();\n"


def page_schemas() -> dict[str, object]:
    """The JSON Schemas the page reads documents by: the models' own (an attestation's signed statement too)."""
    return {"bundle": CertificateBundle.model_json_schema(), "card": ModelCard.model_json_schema(),
            "attestation": Attestation.model_json_schema(),
            "attestation_statement": AttestationStatement.model_json_schema()}


def _json_in_html(value: object) -> str:
    """JSON for a <script type="application/json"> element: '<' only ever inside strings, escaped there."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")


def _module_script(name: str) -> str:
    # Each module in its own function scope: their top-level names (R, num, ...) stay their own.
    return f"(function () {{\n{(PAGE_DIR / name).read_text(encoding='utf-8')}\n}})();\n"


def _source_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


@dataclass(frozen=True)
class VerificationPage:
    html: str
    csp: str  # the Content-Security-Policy its <meta> states (a server sends it as a header too)

    @property
    def digest(self) -> str:
        """The SHA-256 the page is published under."""
        return hashlib.sha256(self.html.encode("utf-8")).hexdigest()


def build_page(card: ModelCard | None = None, *, card_url: str | None = None) -> VerificationPage:
    """The page. `card`: the card it checks against (embedded; the customer cannot swap it).
    Without one, the customer gives the card, or with `card_url` (a path with {model_id}, for the page the
    service serves) the page fetches the card the bundle names from the origin that served it."""
    scripts = [snarkjs_browser_build(), canonicalize_script(), *(_module_script(name) for name in MODULES)]
    try:
        version = metadata.version("fairproof")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without an installation
        version = "source"
    connect = "'self'" if card_url is not None and card is None else "'none'"
    csp = "; ".join([
        "default-src 'none'", f"script-src {' '.join(_source_hash(s) for s in scripts)} 'wasm-unsafe-eval'",
        "worker-src blob:", "style-src 'unsafe-inline'", f"connect-src {connect}", "img-src 'none'",
        "base-uri 'none'", "form-action 'none'"])
    if card is not None:
        card_note = (f"This page checks certificates of model <b>{_escape(card.model_id)}</b> against the card it "
                     f"was made with (digest <code>{card.digest()}</code>).")
        card_inputs = ""
        card_script = f'<script type="application/json" id="fairproof-card">{card.canonical_json().replace("<", chr(92) + "u003c")}</script>'
    else:
        card_note = ("The model card is fetched from the service that served this page, for the model the bundle "
                     "names; compare its digest with the one you were given." if card_url is not None else
                     "Give the model card too (the bank publishes it; compare its digest with the one you were given).")
        card_inputs = ('<label for="card-text">The model card' + (" (optional: otherwise fetched from this service)"
                                                                   if card_url is not None else "") + "</label>\n"
                       '<input type="file" id="card-file" accept=".json,application/json">\n'
                       '<textarea id="card-text" spellcheck="false"></textarea>')
        card_script = ""
    provenance = (f"Built by fairproof {_escape(version)} from its verifier's own modules and snarkjs "
                  f"{SNARKJS_VERSION} (browser build, SHA-256 {SNARKJS_BROWSER_SHA256}). A page served by the bank "
                  "is only as trustworthy as the bank: for an independent check, use a copy whose SHA-256 someone "
                  "you trust published.")
    template = Template((PAGE_DIR / "page.html").read_text(encoding="utf-8"))
    return VerificationPage(csp=csp, html=template.substitute(
        csp=csp, card_note=card_note, card_inputs=card_inputs, card_script=card_script, provenance=provenance,
        config=_json_in_html({"card_url": card_url if card is None else None}), schemas=_json_in_html(page_schemas()),
        scripts="\n".join(f"<script>{s}</script>" for s in scripts)))
