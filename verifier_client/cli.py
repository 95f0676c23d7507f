"""`fairproof-verify`: check a fairness certificate, from files or straight from the bank's service.

    fairproof-verify BUNDLE.json --card CARD.json
    fairproof-verify --url URL --model ID --record customer.json [--pin-file F] [--timeout S]

The first form checks a bundle against a card the customer already holds.
The second submits the customer's record to the service, waits for the
certificate (progress on stderr), pins the model's commitment on first use
and checks the certificate against the pinned card and the customer's own
encoding of the record.

Exit status 0 when the certificate is valid (a summary in plain words is
printed), 1 when it is not (the reason is printed; a model other than the
pinned one, or a certificate about another record, is invalid), 2 on
unusable input, an unreachable service or a service error.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from commitments.api import JobView
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.record import RecordError

from .pins import PIN_FILE_ENV, PinFileError, PinMismatch, PinStore
from .service_client import DEFAULT_TIMEOUT, DEFAULT_WAIT, ServiceClient, ServiceError, request_certificate
from .verify import explain, verify_bundle


class _Unreadable(Exception):
    pass


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise _Unreadable(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _Unreadable(f"{what} {path} is not UTF-8 text") from None


def _load(model, path: str, what: str):
    try:
        return model.model_validate_json(_read(path, what))
    except ValidationError as exc:
        raise _Unreadable(f"{what} {path} is malformed: {_first_error(exc)}") from None


def _fail(message: str, code: int) -> int:
    print(f"fairproof-verify: {message}", file=sys.stderr)
    return code


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "document"
    return f"{where}: {err.get('msg')}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairproof-verify",
        description="Verify a FairProof certificate bundle against the bank's public model card, "
                    "or request one from the bank's service and verify it.",
        usage="%(prog)s BUNDLE --card CARD [--backend B]\n"
              "       %(prog)s --url URL --model ID --record RECORD [--pin-file F] [--timeout S] [--backend B]",
    )
    parser.add_argument("bundle", nargs="?", help="certificate bundle (JSON) received with the decision")
    parser.add_argument("--card", help="the model card (JSON) the bank published (with BUNDLE)")
    service = parser.add_argument_group("asking the bank's service (instead of BUNDLE)")
    service.add_argument("--url", help="base URL of the bank's FairProof service, e.g. https://bank.example")
    service.add_argument("--model", help="model id, as the service lists it")
    service.add_argument("--record", help="your record (JSON object: attribute name -> raw value)")
    service.add_argument("--pin-file", help=f"where model commitments are pinned (default ${PIN_FILE_ENV} "
                                            "or ~/.config/fairproof/pins.json)")
    service.add_argument("--timeout", type=_positive_seconds, default=None,
                         help=f"seconds to wait for the certificate (default {DEFAULT_WAIT:g}); "
                              f"each request gives up after at most {DEFAULT_TIMEOUT:g} s")
    parser.add_argument("--backend", choices=("mcl", "reference"), default=None,
                        help="curve backend for the pairing check (default: fast one if available)")
    return parser


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("the timeout must be a positive number of seconds")
    return value


def _check_mode(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """BUNDLE (with --card) and --url (with --model and --record) are two modes; never mixed."""
    if args.url is not None:
        if args.bundle is not None or args.card is not None:
            parser.error("give either BUNDLE with --card, or --url with --model and --record, not both "
                         "(with --url the card comes from the service and is checked against the pinned one)")
        missing = [flag for flag, value in (("--model", args.model), ("--record", args.record)) if not value]
        if missing:
            parser.error(f"--url needs {' and '.join(missing)}")
        return
    service_only = [flag for flag, value in (("--model", args.model), ("--record", args.record),
                                             ("--pin-file", args.pin_file), ("--timeout", args.timeout))
                    if value is not None]
    if service_only:
        parser.error(f"{', '.join(service_only)}: only with --url (BUNDLE mode takes --card)")
    if args.bundle is None:
        parser.error("give a BUNDLE file with --card, or --url with --model and --record")
    if args.card is None:
        parser.error("the following arguments are required: --card")


def _backend(name: str | None):
    if not name:
        return None
    from circuits.backends import get_backend

    return get_backend(name)


def main(argv: list[str] | None = None, *, transport=None) -> int:
    """`transport` (an httpx transport) lets tests serve the service in process."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_mode(parser, args)
    if args.url is not None:
        return _from_service(args, transport)
    return _from_files(args)


def _from_files(args: argparse.Namespace) -> int:
    try:
        card = _load(ModelCard, args.card, "model card")
        bundle = _load(CertificateBundle, args.bundle, "bundle")
    except _Unreadable as exc:
        return _fail(str(exc), 2)

    verdict = verify_bundle(bundle, card, _backend(args.backend))
    if not verdict:
        return _fail("INVALID certificate: " + "; ".join(verdict.reasons), 1)
    print("VALID certificate")
    print(explain(bundle, card))
    return 0


def _from_service(args: argparse.Namespace, transport) -> int:
    try:
        record = _read_record(args.record)
    except _Unreadable as exc:
        return _fail(str(exc), 2)
    pins = PinStore(args.pin_file)
    wait = args.timeout if args.timeout is not None else DEFAULT_WAIT
    try:
        with ServiceClient(args.url, timeout=min(wait, DEFAULT_TIMEOUT), transport=transport) as client:
            result = request_certificate(client, pins, args.model, record, on_progress=_ProgressLine(),
                                         timeout=wait, backend=_backend(args.backend))
    except RecordError as exc:
        return _fail(f"your record cannot be used with model {args.model!r}: {exc}", 2)
    except PinMismatch as exc:
        return _fail(f"REFUSED: {exc}", 1)
    except PinFileError as exc:
        return _fail(str(exc), 2)
    except ServiceError as exc:
        return _fail(f"service error: {exc}", 2)

    if result.pin.first_use:
        print(f"fairproof-verify: first use of model {args.model!r} at {result.pin.pin.service}: pinned commitment "
              f"{result.pin.pin.commitment[:16]}... in {pins.path}", file=sys.stderr)
    if not result.verdict:
        return _fail("INVALID certificate: " + "; ".join(result.verdict.reasons), 1)
    bundle = result.bundle
    print("VALID certificate")
    print(f"Certificate {bundle.certificate_id}, issued {bundle.issued_at}")
    print(f"Radius: eps = {bundle.eps.decimal} (exactly {bundle.eps.numerator} / 2^{bundle.eps.scale_bits}"
          f"{', capped at the input domain' if bundle.eps.capped else ''})")
    print(explain(bundle, result.card))
    return 0


def _read_record(path: str) -> dict:
    text = _read(path, "record")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"record {path} is not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise _Unreadable(f"record {path} must be a JSON object of attribute name -> value")
    return record


class _ProgressLine:
    """The job's progress on stderr, one line per change."""

    def __init__(self) -> None:
        self._last: tuple | None = None

    def __call__(self, job: JobView) -> None:
        state = (job.status, job.stage, int(job.progress * 100))
        if state != self._last:
            self._last = state
            print(f"  job {job.job_id}: {job.status}, {job.stage} ({state[2]}%)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
