"""Write the conformance corpus (tests/vectors/README.md) from the project's forgery builders.

    python tests/vectors/generate.py [--out tests/vectors/v1] [--cache DIR]

Builds a German Credit (4,2) bank as the tests do, turns every case of tests/page_cases.py (the honest
certificates, the verifier's forgeries, proof tampering, auditors' attestations) and the customer's box
and lens requirements into vectors, asks `fairproof-verify` for each verdict and code, checks it against
the case's expectation, and writes the corpus.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1])]

from conformance import Vector, python_verdict  # noqa: E402


def vectors_from_cases(cases) -> list[Vector]:
    out = []
    for case in cases:
        expected = case.extra.get("page", case.expected) if case.pinned else case.expected
        options = {"record": case.record or None, "trusted_contributors": list(case.trusted),
                   "trusted_auditors": list(case.auditors), "attestations": list(case.attestations),
                   "pinned_digest": case.pinned or None}
        out.append(Vector(id="", description=case.name, card=case.card, bundle=case.bundle,
                          options={k: v for k, v in options.items() if v}, verdict=expected, code=None))
    return out


def requirement_vectors(bank) -> list[Vector]:
    """The customer's requirements: lenses and the persistence box (the card's default when none is asked)."""
    from offline_precompute.certify import query_from_record

    card, genuine = bank.card.model_dump_json(), bank.bundles[0].model_dump_json()
    zero = bank.prover.prove(query_from_record(bank.prover.workspace.artifact, bank.prover.model, bank.records[0]),
                             persistence_delta=0).bundle.model_dump_json()
    return [
        Vector("", "every lens required", card, genuine, {"require_lens": ["radius", "spread", "persistence"]},
               "VALID", None),
        Vector("", "the default box asked for explicitly", card, genuine, {"delta": 0.25}, "VALID", None),
        Vector("", "another box asked for", card, genuine, {"delta": 0.5}, "INVALID", None),
        Vector("", "a zero box, none asked for (the card's default applies)", card, zero, {}, "INVALID", None),
        Vector("", "a zero box, asked for", card, zero, {"delta": 0.0}, "VALID", None),
    ]


def signal_vectors(bank) -> list[Vector]:
    """The genuine bundle with one public signal (or the model id) changed: each claim rule's refusal."""
    from circuits.field import R
    from commitments.claims import HEAD_SIGNALS

    card, genuine = bank.card, bank.bundles[0]
    card_text = card.model_dump_json()
    n = card.architecture.n_inputs
    spread_at = HEAD_SIGNALS + n
    persistence_at = spread_at + card.n_spread_signals
    sensitive = card.sensitive[0].column
    free = next(i for i in range(n) if i != sensitive)

    def signal(index: int, value: int):
        return lambda d: d["public_signals"].__setitem__(index, str(value % R))

    edits = {
        "the commitment signal + 1": signal(0, int(card.commitment) + 1),
        "a decision that is no class": signal(1, card.architecture.n_classes),
        "E above the bucket's cap": signal(2, card.bucket(genuine.bucket).shape.eps_cap + 1),
        "status 2": signal(3, 2),
        "a certified radius with flip index 1": signal(4, 1),
        "a query value above the box": signal(HEAD_SIGNALS + free, card.box_upper[free] + 1),
        "a query value below the box (negative, mod r)": signal(HEAD_SIGNALS + free, card.box_lower[free] - 1),
        "a sensitive value outside its domain": signal(HEAD_SIGNALS + sensitive, max(card.sensitive[0].values) + 1),
        "a spread decision that is no class": signal(spread_at, card.architecture.n_classes),
        "a spread bucket count of 0": signal(spread_at + len(card.slices()), 0),
        "a persistence delta above the card's cap": signal(persistence_at, card.persistence_delta_cap + 1),
        "persistence bounds with lower above upper": lambda d: d["public_signals"].__setitem__(
            persistence_at + 1, str(10 ** 30)),
        "one signal too few": lambda d: d["public_signals"].pop(),
        "another model's id": lambda d: d.__setitem__("model_id", "another-model"),
    }
    out = []
    for name, edit in edits.items():
        data = json.loads(genuine.model_dump_json())
        edit(data)
        out.append(Vector("", f"signals: {name}", card_text, json.dumps(data), {}, "INVALID", None))
    return out


def mode_vectors(bank, workdir: Path) -> list[Vector]:
    """Honest certificates of every radius mode (fast, exact, bound) and a per-slice exact certificate, each
    under the card it was issued with, and the forgeries that are theirs: eps + 1 in fields and signals, a
    field outside the signals, a per-slice certificate missing, repeating or reordering a slice."""
    import shutil

    from bank_fixtures import forged
    from circuits.backends import get_backend
    from commitments.bundle import Radius
    from commitments.card import ModelCard
    from offline_precompute.certify import query_from_record
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace

    out: list[Vector] = []
    record = json.dumps(bank.records[0])
    for mode, per_slice in (("exact", False), ("bound", False), ("exact", True)):
        name = f"{mode}{' per-slice' if per_slice else ''}"
        root = workdir / f"model-{mode}-{int(per_slice)}"
        shutil.copytree(bank.prover.workspace.root, root)
        workspace = ModelWorkspace.open(root)
        db = open_database(resolve_store_url(None, root))
        prover = Prover(workspace, db, get_backend(), key_setup=SinglePartyKeySetup(), radius=mode,
                        per_slice=per_slice)
        print(f"proving {name} certificates...", file=sys.stderr, flush=True)
        bundles = [prover.prove(query_from_record(workspace.artifact, prover.model, r)).bundle
                   for r in bank.records]
        db.dispose()
        card = ModelCard.from_json(workspace.card_path.read_bytes())
        card_text = card.model_dump_json()
        # Each bundle under the card as it is now (a later bucket changes the card, not the statement).
        bundles = [b.model_copy(update={"card_digest": card.digest()}) for b in bundles]
        genuine = bundles[0]
        out.append(Vector("", f"{name}: honest", card_text, genuine.model_dump_json(), {"record": record},
                          "VALID", None))
        out.append(Vector("", f"{name}: honest, second customer", card_text, bundles[1].model_dump_json(), {},
                          "VALID", None))
        bigger = forged(genuine, eps=Radius(numerator=genuine.eps.numerator + 1, scale_bits=genuine.eps.scale_bits))
        out.append(Vector("", f"{name}: eps + 1 in fields and signals", card_text, bigger.model_dump_json(), {},
                          "INVALID", None))
        out.append(Vector("", f"{name}: a label the signals do not say", card_text,
                          genuine.model_copy(update={"decision_label": "a label the bank chose"}).model_dump_json(),
                          {}, "INVALID", None))
        if per_slice and genuine.parts:
            parts = genuine.parts
            out.append(Vector("", f"{name}: a slice's proof missing", card_text,
                              genuine.model_copy(update={"parts": parts[:-1]}).model_dump_json(), {}, "INVALID", None))
            out.append(Vector("", f"{name}: a slice repeated", card_text,
                              genuine.model_copy(update={"parts": (*parts, parts[-1])}).model_dump_json(), {},
                              "INVALID", None))
            out.append(Vector("", f"{name}: another customer's part", card_text,
                              genuine.model_copy(update={"parts": bundles[1].parts}).model_dump_json(), {},
                              "INVALID", None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "v1")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "fairproof-models")
    args = parser.parse_args()
    from bank_fixtures import Bank
    from page_cases import attestation_cases, page_cases

    with tempfile.TemporaryDirectory() as tmp:
        print("building the German (4,2) bank (train, commit, precompute, prove)...", file=sys.stderr, flush=True)
        bank = Bank(Path(tmp) / "bank", args.cache)
        vectors = (vectors_from_cases(page_cases(bank)) + vectors_from_cases(attestation_cases(bank))
                   + requirement_vectors(bank) + signal_vectors(bank) + mode_vectors(bank, Path(tmp)))
        bank.db.dispose()
        cards_dir = args.out / "cards"
        cards_dir.mkdir(parents=True, exist_ok=True)
        lines = []
        for number, vector in enumerate(vectors, 1):
            verdict, code, reason = python_verdict(vector, Path(tmp) / f"v{number}")
            if verdict != vector.verdict:
                raise SystemExit(f"{vector.description}: fairproof-verify says {verdict} ({reason}), "
                                 f"the case expects {vector.verdict}")
            name = hashlib.sha256(vector.card.encode("utf-8")).hexdigest() + ".json"
            (cards_dir / name).write_text(vector.card, encoding="utf-8")
            lines.append(json.dumps({"id": f"v1-{number:03d}", "description": vector.description,
                                     "card": f"cards/{name}", "bundle": vector.bundle, "options": vector.options,
                                     "expected": {"verdict": verdict, "code": code}}, sort_keys=True))
    (args.out / "vectors.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} vectors to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
