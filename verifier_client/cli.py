"""`fairproof-verify`: check a fairness certificate, from files or straight from the bank's service.

    fairproof-verify BUNDLE.json --card CARD.json [--record customer.json]
    fairproof-verify --url URL --model ID --record customer.json [--pin-file F] [--timeout S]
    fairproof-verify GROUPS.json --card CARD.json --dataset AUDIT.json

The third form checks a proof of the committed model's decision counts per
group on a public audit dataset (verifier_client.audit) and prints the
verified selection rates, disparate impact, statistical parity and equal
opportunity as exact fractions.

The first form checks a bundle against a card the customer already holds;
with --record it also checks that the certificate is about that record,
without it prints the query the certificate covers. The second submits the
customer's record to the service, waits for the certificate (progress on
stderr), pins the model's card on first use and checks the certificate
against the pinned card and the customer's own encoding of the record.

Trust roots. In every mode the card is pinned by model id on first use (the
verifier says so) and a card that differs from the pinned one is refused,
unless an auditor you trust attested it (it is then re-pinned) or you pass
--accept-card-update and it only ADDS circuit buckets (the changes are
printed). --trust-auditor VKEY (repeatable, or `trusted_auditors` in the pin
file) refuses a card that no such auditor attested: an attestation is the
auditor's signature over what `fairproof audit-keys` checked on exactly this
card (from --attestation FILE, or from the service). --trust-contributor
HASH (repeatable, or `trusted_contributors` in the pin file) requires the
card to list one of these contributions for the bucket's keys: the card's
own list, which is the bank's word unless a trusted auditor attested the
card. The log a service (or a model) was first checked with is pinned too:
another log origin or key from it is refused.

Everything printed about the certificate is derived from the proof's public
signals and the card, never read from the bundle's own fields; whether eps is
exact ("eps = ... (exact: ...)") or a lower bound ("eps >= ... is a lower
bound (fast ...)") is the radius of the bucket whose key verified the proof.

Exit status 0 when the certificate is valid (a summary in plain words is
printed), 1 when it is not (one line says why; a model other than the pinned
one, or a certificate about another record, is invalid), 2 on unusable input
(a file that is not a canonical bundle, card or record), an unreachable
service or a service error.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from commitments.api import JobView
from commitments.attestation import Attestation, AttestationError, parse_auditor_key
from commitments.bundle import CertificateBundle
from commitments.canonical import NonCanonical
from commitments.card import ModelCard
from commitments.record import RecordError, describe_query, encode_record, read_record_file

from .log_check import LogRefused, check_log_evidence, parse_witness_key
from .output import CertificateReport, GroupCountsReport, certificate_report, group_counts_report
from .pins import PIN_FILE_ENV, PinCheck, PinFileError, PinMismatch, PinStore
from .service_client import (DEFAULT_TIMEOUT, DEFAULT_WAIT, ServiceClient, ServiceError, box_problem,
                             persistence_delta, request_certificate)
from .verify import (LENSES, Verdict, card_trust_summary, explain, lens_problem, persistence_summary, radius_summary,
                     setup_summary, spread_summary, verify_bundle)

if TYPE_CHECKING:  # for annotations only: the backends load when a check needs them
    import httpx

    from circuits.backends import CurveBackend

MAX_INPUT_BYTES = 64 * 1024 * 1024
_T = TypeVar("_T", covariant=True)


class _FromJson(Protocol[_T]):
    """A document class with a strict `from_json` (ModelCard, CertificateBundle, the audit documents)."""

    def from_json(self, text: str | bytes) -> _T: ...


class _Unreadable(Exception):
    pass


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise _Unreadable(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise _Unreadable(f"{what} {path} is larger than {MAX_INPUT_BYTES >> 20} MiB")
    return data


def _load(model: _FromJson[_T], path: str, what: str) -> _T:
    try:
        return model.from_json(_read(path, what))
    except NonCanonical as exc:
        raise _Unreadable(f"{what} {path} is malformed: {exc}") from None


def _fail(message: str, code: int) -> int:
    print(f"fairproof-verify: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairproof-verify",
        description="Verify a FairProof certificate bundle against the bank's public model card, "
                    "or request one from the bank's service and verify it.",
    )
    parser.add_argument("bundle", nargs="?", metavar="BUNDLE",
                        help="certificate bundle (JSON) received with the decision, or with --dataset a proof of "
                             "group counts")
    parser.add_argument("--card", help="the model card (JSON) the bank published (with BUNDLE)")
    parser.add_argument("--dataset", metavar="AUDIT.json",
                        help="BUNDLE is a proof of group counts on this public audit dataset (an auditor's check)")
    parser.add_argument("--record", help="your record (JSON object: attribute name -> raw value); with BUNDLE, "
                                         "the certificate must be about it")
    parser.add_argument("--trust-auditor", action="append", default=[], metavar="VKEY",
                        help="an auditor's verifier key you trust (repeatable): the card must carry that "
                             "auditor's attestation that it checked every key on exactly this card "
                             "(fairproof audit-keys --attest)")
    parser.add_argument("--attestation", action="append", default=[], metavar="FILE",
                        help="with BUNDLE: an auditor's attestation of the card (JSON, repeatable); with --url "
                             "the service's attestations are used")
    parser.add_argument("--trust-contributor", action="append", default=[], metavar="HASH",
                        help="a phase-2 contribution hash you trust (repeatable): the card must list it among "
                             "the contributions to the bucket's keys. That list is the bank's word unless an "
                             "auditor you trust attested the card (--trust-auditor), whose audit ties it to the key")
    parser.add_argument("--pin-file", metavar="FILE", help=f"pinned cards and logs, trusted auditors and contributors (default "
                                           f"${PIN_FILE_ENV} or ~/.config/fairproof/pins.json)")
    parser.add_argument("--require-lens", action="append", default=[], choices=LENSES, metavar="LENS",
                        help="refuse a certificate whose proof does not cover LENS (radius, spread, persistence); "
                             "repeatable")
    service = parser.add_argument_group("asking the bank's service (instead of BUNDLE)")
    service.add_argument("--url", help="base URL of the bank's FairProof service, e.g. https://bank.example")
    service.add_argument("--model", metavar="ID", help="model id, as the service lists it")
    service.add_argument("--timeout", type=_positive_seconds, default=None, metavar="S",
                         help=f"seconds to wait for the certificate (default {DEFAULT_WAIT:g}); "
                              f"each request gives up after at most {DEFAULT_TIMEOUT:g} s")
    parser.add_argument("--delta", type=_delta, default=None, metavar="D",
                         help="persistent bias: move the numeric features by up to D standard deviations, for you "
                              "and each counterfactual alike (default: the card's); the certificate must prove "
                              "exactly that box")
    parser.add_argument("--accept-card-update", action="store_true",
                        help="accept a card that differs from the pinned one if it only adds circuit buckets "
                             "(every other field, bucket, key and cap unchanged; the changes are printed) and "
                             "pin it; any other change needs a trusted auditor's attestation")
    parser.add_argument("--json", action="store_true",
                        help="print the verdict as one JSON document (schemas in docs/schemas/verify-*.schema.json); "
                             "the exit status is the same")
    parser.add_argument("--backend", choices=("mcl", "reference"), default=None,
                        help="curve backend for the pairing check (default: fast one if available)")
    log = parser.add_argument_group("the bank's transparency log")
    log.add_argument("--log-key", metavar="VKEY",
                     help="the log's verifier key (name+id+key, from /v1/log/key or the bank's notice); "
                          "default: the key pinned for the log, pinned on first use through --url")
    log.add_argument("--trust-witness", action="append", default=[], metavar="VKEY",
                     help="a witness whose cosignature every checkpoint must carry (repeatable)")
    log.add_argument("--log-url", metavar="URL",
                     help="with BUNDLE: the bank's service, to fetch consistency proofs between checkpoints")
    log.add_argument("--require-log", action="store_true",
                     help="with BUNDLE: refuse a bundle that carries no transparency-log evidence "
                          "(always so with --url or --log-key)")
    parser.usage = usage(parser)
    return parser


# The command's three forms (the module docstring): the arguments each requires, and the options it does not
# take (refused by `_check_mode`, or meaningful with BUNDLE only). Every other option is offered in every form.
FORMS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("bundle", "--card"), ("--url", "--model", "--timeout", "--dataset")),
    (("--url", "--model", "--record"), ("bundle", "--card", "--dataset", "--attestation", "--log-url", "--require-log")),
    (("bundle", "--card", "--dataset"),
     ("--url", "--model", "--timeout", "--record", "--delta", "--require-lens", "--log-key", "--log-url")),
)
USAGE_WIDTH = 110


def usage(parser: argparse.ArgumentParser) -> str:
    """One usage line per form, made from `parser`'s own arguments as argparse spells them, so that an option
    added to the parser is shown without anyone writing it down."""
    formatter = parser._get_formatter()
    spelled: dict[str, str] = {}
    for action in parser._actions:
        name = action.option_strings[0] if action.option_strings else action.dest
        spelled[name] = formatter._format_actions_usage([action], []).removeprefix("[").removesuffix("]")
    margin = " " * len("usage: ")  # argparse's prefix of the first line
    lines = []
    for required, excluded in FORMS:
        words = [parser.prog, *(spelled[name] for name in required)]
        words += [f"[{text}]" for name, text in spelled.items() if name not in required and name not in excluded]
        lines.append(_wrap(words, margin))
    return ("\n" + margin).join(lines)


def _wrap(words: list[str], margin: str) -> str:
    """`words` joined by spaces after `margin`, broken between words (never inside one) so that no line is
    wider than USAGE_WIDTH; continuation lines are indented four more columns."""
    indent = margin + "    "
    lines = [margin + words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) > USAGE_WIDTH:
            lines.append(indent + word)
        else:
            lines[-1] += " " + word
    return "\n".join(lines).removeprefix(margin)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("the timeout must be a positive number of seconds")
    return value


def _delta(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of standard deviations") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("delta must be a number of standard deviations between 0 and 100")
    return value


def _check_mode(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """BUNDLE (with --card) and --url (with --model and --record) are two modes; never mixed."""
    if args.url is not None:
        if args.attestation:
            parser.error("--attestation: only with BUNDLE (with --url the service's attestations are checked)")
        if args.bundle is not None or args.card is not None:
            parser.error("give either BUNDLE with --card, or --url with --model and --record, not both "
                         "(with --url the card comes from the service and is checked against the pinned one)")
        missing = [flag for flag, value in (("--model", args.model), ("--record", args.record)) if not value]
        if missing:
            parser.error(f"--url needs {' and '.join(missing)}")
        return
    service_only = [flag for flag, value in (("--model", args.model), ("--timeout", args.timeout)) if value is not None]
    if service_only:
        parser.error(f"{', '.join(service_only)}: only with --url (BUNDLE mode takes --card)")
    if args.bundle is None:
        parser.error("give a BUNDLE file with --card, or --url with --model and --record")
    if args.card is None:
        parser.error("the following arguments are required: --card")
    if args.dataset is not None:
        customer_only = [flag for flag, value in (("--record", args.record), ("--delta", args.delta),
                                                  ("--require-lens", args.require_lens or None),
                                                  ("--log-key", args.log_key), ("--log-url", args.log_url))
                         if value is not None]
        if customer_only:
            parser.error(f"{', '.join(customer_only)}: not with --dataset (a group-counts proof has no record or lens)")


def _backend(name: str | None) -> CurveBackend | None:
    if not name:
        return None
    from circuits.backends import get_backend

    return get_backend(name)


def _trusted(args: argparse.Namespace, pins: PinStore) -> list[str]:
    """Contribution hashes from the command line and the pin file (128 hex digits each)."""
    trusted = [h.strip().lower() for h in args.trust_contributor]
    for h in trusted:
        if len(h) != 128 or any(c not in "0123456789abcdef" for c in h):
            raise _Unreadable(f"--trust-contributor {h[:20]!r}: a contribution hash is 128 hex digits")
    return trusted + pins.trusted_contributors()


def _auditors(args: argparse.Namespace, pins: PinStore) -> list[str]:
    """Auditors' verifier keys from the command line and the pin file, each well formed."""
    keys = [k.strip() for k in args.trust_auditor] + pins.trusted_auditors()
    for key in keys:
        try:
            parse_auditor_key(key)
        except AttestationError as exc:
            raise _Unreadable(f"--trust-auditor: {exc}") from None
    return keys


def _attestations(args: argparse.Namespace) -> list[Attestation]:
    return [_load(Attestation, path, "attestation") for path in args.attestation]


def main(argv: list[str] | None = None, *, transport: httpx.BaseTransport | None = None) -> int:
    """`transport` (an httpx transport) lets tests serve the service in process."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_mode(parser, args)
    try:
        if args.url is not None:
            return _from_service(args, transport)
        if args.dataset is not None:
            return _group_counts(args)
        return _from_files(args)
    except BrokenPipeError:
        return _reader_gone()


def _box_problem(verdict: Verdict, card: ModelCard, delta: float) -> str | None:
    """Why a valid certificate does not prove the persistence box of `delta` the customer asks for."""
    assert verdict.claims is not None  # verify_bundle sets them on every valid verdict
    try:
        expected = persistence_delta(card, delta)
        assert expected is not None  # a delta given: an int, or ServiceError
        return box_problem(verdict.claims, card, expected)
    except ServiceError as exc:
        return str(exc)


def _reader_gone() -> int:
    """Whoever read our output went away (`| head`): stop quietly, with the status a
    program killed by SIGPIPE has, so that nothing reads it as a verdict."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's final flush
    except (OSError, ValueError, AttributeError):
        pass
    return 141


def _from_files(args: argparse.Namespace) -> int:
    pins = PinStore(args.pin_file)
    try:
        card = _load(ModelCard, args.card, "model card")
        bundle = _load(CertificateBundle, args.bundle, "bundle")
        trusted, auditors, attestations = _trusted(args, pins), _auditors(args, pins), _attestations(args)
        query = encode_record(card, _read_record(args.record)) if args.record else None
    except (_Unreadable, PinFileError) as exc:
        return _fail(str(exc), 2)
    except RecordError as exc:
        return _fail(f"your record cannot be used with model {card.model_id!r}: {exc}", 2)

    try:  # a card other than the pinned one is refused before anything else; pinned once the verdict is valid
        _pin_file_card(args, pins, card, _attested_names(card, auditors, attestations), record=False)
    except PinMismatch as exc:
        return _invalid(args, "REFUSED: ", str(exc), "card.pin-mismatch")
    except PinFileError as exc:
        return _fail(str(exc), 2)
    verdict = verify_bundle(bundle, card, _backend(args.backend), query=query, trusted_contributors=trusted,
                            required_lenses=args.require_lens, trusted_auditors=auditors, attestations=attestations)
    if not verdict:
        return _invalid(args, "INVALID certificate: ", "; ".join(verdict.reasons), verdict.code)
    claims = verdict.claims
    assert claims is not None  # verify_bundle sets them on every valid verdict
    if card.persistence is not None or args.delta is not None:  # the card's default box unless one is asked for
        problem = _box_problem(verdict, card, args.delta)
        if problem:
            return _invalid(args, "INVALID certificate: ", problem, "customer.box")
    try:
        pin = _pin_file_card(args, pins, card, verdict.auditors)
        log_words = _file_log_check(args, bundle, card, pins)
    except PinMismatch as exc:
        return _invalid(args, "REFUSED: ", str(exc), "card.pin-mismatch")
    except LogRefused as exc:
        return _invalid(args, "REFUSED (transparency log): ", str(exc), "log.refused")
    except PinFileError as exc:
        return _fail(str(exc), 2)
    except ServiceError as exc:
        return _fail(f"transparency log unreachable: {exc}", 2)
    trust = card_trust_summary(card, pin, verdict.auditors, bool(auditors))
    if args.json:
        return _print_json(certificate_report(claims, card, _setup_words(verdict, card),
                                              None if query is None else True, log_words, trust))
    _print_valid(verdict, card)
    print(log_words)
    print(trust.text())
    if query is None:
        print("The certificate is about this record (check that it is yours, or pass --record):")
        for name, value in describe_query(card, claims.query):
            print(f"  {name} = {value}")
    else:
        print("The certificate is about your record.")
    return 0


def _pin_file_card(args: argparse.Namespace, pins: PinStore, card: ModelCard, attested_by: tuple[str, ...], *,
                   record: bool = True) -> PinCheck:
    """The card of a file-mode verdict against the pins of its model id (PinMismatch if it differs);
    pinned (and said so) only with `record`."""
    pin = pins.check(None, card, accept_update=args.accept_card_update, attested_by=attested_by, record=record)
    if record:
        _say_pin(pins, pin)
    return pin


def _say_pin(pins: PinStore, pin: PinCheck) -> None:
    """First use and re-pinning are never silent: one line on stderr."""
    if pin.first_use or pin.updated:
        print(f"fairproof-verify: {pin.describe()} (in {pins.path})", file=sys.stderr)


def _group_counts(args: argparse.Namespace) -> int:
    from commitments.audit import AuditDataset, GroupCountsBundle

    from .audit import describe, verify_group_counts

    pins = PinStore(args.pin_file)
    try:
        card = _load(ModelCard, args.card, "model card")
        bundle = _load(GroupCountsBundle, args.bundle, "group-counts bundle")
        dataset = _load(AuditDataset, args.dataset, "audit dataset")
        trusted, auditors, attestations = _trusted(args, pins), _auditors(args, pins), _attestations(args)
    except (_Unreadable, PinFileError) as exc:
        return _fail(str(exc), 2)
    attested = _attested_names(card, auditors, attestations)
    try:
        _pin_file_card(args, pins, card, attested, record=False)
        verdict = verify_group_counts(bundle, card, dataset, _backend(args.backend), trusted_contributors=trusted,
                                      trusted_auditors=auditors, attestations=attestations)
        problem, code = (None, None) if verdict else (f"INVALID group-counts proof: {verdict.reason}", verdict.code)
        if problem is None:
            _pin_file_card(args, pins, card, attested)
    except PinMismatch as exc:
        problem, code = f"REFUSED: {exc}", "card.pin-mismatch"
    except PinFileError as exc:
        return _fail(str(exc), 2)
    if problem is not None:
        if args.json:
            _print_json(GroupCountsReport(valid=False, reason=problem, reason_code=code))
            return 1
        return _fail(f"{problem} [{code}]", 1)
    assert verdict.metrics is not None  # verify_group_counts sets them on every valid verdict
    circuit = card.audit_circuit(bundle.circuit)
    if args.json:
        return _print_json(group_counts_report(verdict.metrics, card, circuit.name, dataset.sha256(),
                                               len(dataset.rows), bundle.favourable_label))
    print(f"VALID proof of group counts: model {card.model_id} (the committed weights) on the audit dataset "
          f"{dataset.sha256()[:16]}... ({len(dataset.rows)} rows), selecting {bundle.favourable_label!r}")
    for line in describe(verdict.metrics, card, bundle.circuit):
        print(f"  {line}")
    print(setup_summary(circuit))
    return 0


def _attested_names(card: ModelCard, auditors: list[str], attestations: list[Attestation]) -> tuple[str, ...]:
    from .verify import card_attestation_problem

    attested = card_attestation_problem(card, card.digest(), attestations, auditors)
    return () if isinstance(attested, str) else attested


def _file_log_check(args: argparse.Namespace, bundle: CertificateBundle, card: ModelCard, pins: PinStore) -> str:
    """The log evidence of a bundle file: checked when present; required with --require-log or --log-key."""
    if bundle.log is None:
        if args.require_log or args.log_key:
            raise LogRefused("the certificate carries no transparency-log evidence")
        return "Transparency log: none (this bundle carries no log evidence; --require-log refuses such bundles)"
    witnesses = [parse_witness_key(k) for k in args.trust_witness]
    if args.log_url is None:
        return check_log_evidence(bundle, card, bundle.log, pins, log_key=args.log_key,
                                  witnesses=witnesses, file_mode=True).describe()
    with ServiceClient(args.log_url, timeout=DEFAULT_TIMEOUT) as client:
        return check_log_evidence(bundle, card, bundle.log, pins, log_key=args.log_key,
                                  fetch_log_key=lambda: client.log_key().verifier_key, witnesses=witnesses,
                                  consistency=client.consistency, service_url=client.base_url,
                                  file_mode=True).describe()


def _invalid(args: argparse.Namespace, prefix: str, reason: str, code: str | None) -> int:
    """A refusal (exit 1): one line on stderr ending in the rule's reason code, or the JSON verdict on stdout
    with --json."""
    if args.json:
        _print_json(CertificateReport(valid=False, reason=prefix + reason, reason_code=code))
        return 1
    return _fail(prefix + reason + (f" [{code}]" if code else ""), 1)


def _print_json(report: CertificateReport | GroupCountsReport) -> int:
    print(report.model_dump_json(indent=1))
    return 0 if report.valid else 1


def _setup_words(verdict: Verdict, card: ModelCard) -> str:
    claims = verdict.claims
    assert claims is not None  # a valid verdict's
    return " ".join(setup_summary(card.bucket(name)) for name in dict.fromkeys((claims.bucket, *claims.part_buckets)))


def _print_valid(verdict: Verdict, card: ModelCard) -> None:
    claims = verdict.claims
    assert claims is not None  # a valid verdict's
    print("VALID certificate")
    print(radius_summary(claims))
    print(explain(claims, card))
    for lens in (spread_summary(claims, card), persistence_summary(claims, card)):
        if lens:
            print(lens)
    for name in dict.fromkeys((claims.bucket, *claims.part_buckets)):  # one bucket per slice when proved so
        print(setup_summary(card.bucket(name)))
    if card.import_check is not None:
        # The bank's own account of how it imported its network: on the pinned card, not shown by the proof.
        print(f"Model import (the bank's statement on its card, not proved): {card.import_check}")


def _from_service(args: argparse.Namespace, transport: httpx.BaseTransport | None) -> int:
    pins = PinStore(args.pin_file)
    try:
        record = _read_record(args.record)
        trusted, auditors = _trusted(args, pins), _auditors(args, pins)
    except (_Unreadable, PinFileError) as exc:
        return _fail(str(exc), 2)
    wait = args.timeout if args.timeout is not None else DEFAULT_WAIT
    try:
        with ServiceClient(args.url, timeout=min(wait, DEFAULT_TIMEOUT), transport=transport) as client:
            result = request_certificate(client, pins, args.model, record, on_progress=_ProgressLine(),
                                         timeout=wait, backend=_backend(args.backend),
                                         trusted_contributors=trusted, accept_card_update=args.accept_card_update,
                                         log_key=args.log_key, delta=args.delta,
                                         witnesses=[parse_witness_key(k) for k in args.trust_witness],
                                         trusted_auditors=auditors)
    except RecordError as exc:
        return _fail(f"your record cannot be used with model {args.model!r}: {exc}", 2)
    except PinMismatch as exc:
        return _invalid(args, "REFUSED: ", str(exc), "card.pin-mismatch")
    except LogRefused as exc:
        return _invalid(args, "REFUSED (transparency log): ", str(exc), "log.refused")
    except PinFileError as exc:
        return _fail(str(exc), 2)
    except ServiceError as exc:
        return _fail(f"service error: {exc}", 2)

    if result.pin.first_use:
        print(f"fairproof-verify: first use of model {args.model!r} at {result.pin.pin.service}: pinned card "
              f"{result.pin.pin.card_digest[:16]}... (commitment {result.pin.pin.commitment[:16]}...) "
              f"in {pins.path}", file=sys.stderr)
    elif result.pin.updated:
        _say_pin(pins, result.pin)
    if not result.verdict:
        return _invalid(args, "INVALID certificate: ", "; ".join(result.verdict.reasons), result.verdict.code)
    claims = result.verdict.claims
    assert claims is not None and result.log is not None  # both set on a valid verdict (request_certificate)
    missing = lens_problem(claims, args.require_lens)
    if missing:
        return _invalid(args, "INVALID certificate: ", missing, "customer.lens")
    trust = card_trust_summary(result.card, result.pin, result.verdict.auditors, bool(auditors))
    if args.json:
        return _print_json(certificate_report(claims, result.card, _setup_words(result.verdict, result.card), True,
                                              result.log.describe(), trust))
    _print_valid(result.verdict, result.card)
    print(result.log.describe())
    print(trust.text())
    print(f"Bank's reference: certificate {result.bundle.certificate_id}, issued {result.bundle.issued_at} "
          "(not covered by the proof)")
    print("The certificate is about your record.")
    return 0


def _read_record(path: str) -> dict[str, Any]:
    """The customer's record, read exactly as `fairproof prove --record` reads it (commitments.record)."""
    try:
        return read_record_file(path, MAX_INPUT_BYTES)
    except RecordError as exc:
        raise _Unreadable(str(exc)) from None


class _ProgressLine:
    """The job's progress on stderr, one line per change."""

    def __init__(self) -> None:
        self._last: tuple[str, str, int] | None = None

    def __call__(self, job: JobView) -> None:
        state = (job.status, job.stage, int(job.progress * 100))
        if state != self._last:
            self._last = state
            print(f"  job {job.job_id}: {job.status}, {job.stage} ({state[2]}%)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
