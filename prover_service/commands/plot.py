"""`fairproof plot`: eps histograms (fair against unfair, per model) from bundles or plaintext certificates.

    fairproof plot --out eps.png --card fair/card.json --card unfair/card.json \\
        "german fair=bundles/fair/*.json" "german unfair=bundles/unfair/*.json"

Each series is LABEL=GLOB. A file is a certificate bundle (its eps is what its proof states: the bundle is
verified against the card it names, among --card, and refused otherwise) or a plaintext certificate written
by `fairproof certify --out` (the bank's own computation, marked "plaintext" in the table). Counterfactual
flips and capped radii are counted, not drawn. Prints a table; --save-json writes it.
"""
from __future__ import annotations

import argparse
import glob
import json
import statistics
from fractions import Fraction
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "plot", help="eps histograms per series of bundles or plaintext certificates (fair vs unfair)",
        description="Each series is LABEL=GLOB. A file is a certificate bundle (its eps is what its proof states: "
                    "it is verified against the card it names, among --card, and refused otherwise) or a plaintext "
                    "certificate from `fairproof certify --out` (marked plaintext in the table). Flips and capped "
                    "radii are counted, not drawn.")
    p.add_argument("series", nargs="+", metavar="LABEL=GLOB", help="a series: its label and the files in it")
    p.add_argument("--card", action="append", default=[], metavar="CARD.json",
                   help="a model card the bundles may name (repeatable); bundles are verified against it")
    p.add_argument("--out", required=True, metavar="FILE.png", help="where to write the chart")
    p.add_argument("--save-json", metavar="FILE", help="also write the table as JSON to FILE")
    p.add_argument("--bins", type=int, default=30, metavar="N", help="histogram bins (default 30)")
    p.set_defaults(handler=run)


def _read_series(label: str, pattern: str, cards: dict) -> dict:
    from commitments.bundle import CertificateBundle
    from commitments.canonical import NonCanonical
    from fairness.certificate import CAP, FLIP, Certificate
    from fairness.errors import ModelError
    from verifier_client.verify import verify_bundle

    files = sorted(glob.glob(pattern))
    if not files:
        raise ModelError(f"series {label!r}: no file matches {pattern!r}")
    eps, flips, capped, sources = [], 0, 0, set()
    for name in files:
        text = Path(name).read_bytes()
        try:
            doc = json.loads(text)
        except ValueError:
            raise ModelError(f"{name} is not JSON") from None
        if isinstance(doc, dict) and "bundle_version" in doc:
            try:
                bundle = CertificateBundle.from_json(text)
            except NonCanonical as exc:
                raise ModelError(f"{name}: {exc}") from None
            card = cards.get(bundle.card_digest)
            if card is None:
                raise ModelError(f"{name} names card {bundle.card_digest[:16]}..., not one given with --card")
            verdict = verify_bundle(bundle, card)
            if not verdict:
                raise ModelError(f"{name} is not a valid certificate: {'; '.join(verdict.reasons)}")
            claims = verdict.claims
            sources.add("proved")
            if claims.status == "counterfactual_flip":
                flips += 1
            elif claims.capped:
                capped += 1
            else:
                eps.append(claims.eps)
        elif isinstance(doc, dict) and "certificate" in doc:
            try:
                cert = Certificate.from_json(doc["certificate"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ModelError(f"{name}: not a plaintext certificate ({exc})") from None
            sources.add("plaintext")
            if cert.status == FLIP:
                flips += 1
            elif cert.attainment is not None and cert.attainment.kind == CAP:
                capped += 1
            else:
                eps.append(cert.eps_value)
        else:
            raise ModelError(f"{name} is neither a certificate bundle nor a plaintext certificate")
    values = sorted(float(e) for e in eps)
    return {"label": label, "files": len(files), "source": "+".join(sorted(sources)), "drawn": len(values),
            "flips": flips, "capped": capped,
            "median": statistics.median(values) if values else None,
            "p10": values[int(0.1 * (len(values) - 1))] if values else None,
            "p90": values[int(0.9 * (len(values) - 1))] if values else None,
            "eps": [str(Fraction(e)) for e in eps], "_values": values}


def run(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from commitments.canonical import NonCanonical
    from commitments.card import ModelCard
    from fairness.errors import ModelError

    if args.bins < 1:
        raise ModelError("--bins must be at least 1")
    cards = {}
    for path in args.card:
        try:
            card = ModelCard.from_json(Path(path).read_bytes())
        except OSError as exc:
            raise ModelError(f"cannot read the card {path}: {exc.strerror or exc}") from None
        except NonCanonical as exc:
            raise ModelError(f"{path} is not a model card: {exc}") from None
        cards[card.digest()] = card
    rows = []
    for spec in args.series:
        label, sep, pattern = spec.partition("=")
        if not sep or not label or not pattern:
            raise ModelError(f"series {spec!r}: write LABEL=GLOB")
        rows.append(_read_series(label, pattern, cards))
    fig, ax = plt.subplots(figsize=(7, 4))
    every = [v for r in rows for v in r["_values"]]
    if every:
        lo, hi = min(every), max(every)
        edges = [lo + (hi - lo) * i / args.bins for i in range(args.bins + 1)] if hi > lo else args.bins
        for r in rows:
            if r["_values"]:
                ax.hist(r["_values"], bins=edges, alpha=0.55, label=f"{r['label']} (n={r['drawn']})")
        ax.legend()
    ax.set_xlabel("certified radius eps (standardised units)")
    ax.set_ylabel("customers")
    ax.set_title("eps per series (flips and capped radii counted in the table, not drawn)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    plt.close(fig)
    print(f"{'series':<24} {'source':<16} {'files':>6} {'drawn':>6} {'flips':>6} {'capped':>7} {'median':>10} "
          f"{'p10':>10} {'p90':>10}")
    for r in rows:
        def num(x):
            return "-" if x is None else f"{x:.4g}"
        print(f"{r['label'][:24]:<24} {r['source']:<16} {r['files']:>6} {r['drawn']:>6} {r['flips']:>6} "
              f"{r['capped']:>7} {num(r['median']):>10} {num(r['p10']):>10} {num(r['p90']):>10}")
    print(f"wrote {args.out}")
    if args.save_json:
        Path(args.save_json).write_text(json.dumps([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
                                              indent=1))
    return 0
