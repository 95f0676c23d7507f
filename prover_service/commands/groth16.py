"""`fairproof groth16 ...`: Groth16 keys and proofs over snarkjs-compatible files.

  setup CIRCUIT.r1cs KEYDIR [--seed S] [--backend mcl|reference]
  contribute KEYDIR [--name NAME]
  verify-contributions KEYDIR
  prove KEYDIR WITNESS.wtns OUTDIR          -> OUTDIR/proof.json, OUTDIR/public.json
  verify VK.json PROOF.json PUBLIC.json     -> "OK" and exit 0, else exit 1
  import-ptau PTAU [--check-power P]        check a snarkjs powers-of-tau file (exit 2 if unusable)
  dev-ptau POWER OUT.ptau [--name NAME]     write a DEVELOPMENT phase 1 (one party's secrets; exit 2 on bad arguments)

KEYDIR holds circuit.r1cs (the relation the key is for), circuit.rows/ (the
same relation in the arrays the prover maps, made from circuit.r1cs and naming
its SHA-256; rebuilt from circuit.r1cs whenever that does not match),
seal.json (a seal over circuit.r1cs and those arrays: circuits.groth16.key_seal),
proving_key/ (the current proving key's raw arrays and its own seal, written by
circuits.groth16.keys),
initial_proving_key/ (the key as setup made it, which the contribution chain
is checked against), verification_key.json (snarkjs's format, usable with
`snarkjs groth16 verify`) and transcript.json (the phase-2 transcript).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

CIRCUIT_FILE = "circuit.r1cs"
PROVING_KEY_DIR = "proving_key"
INITIAL_KEY_DIR = "initial_proving_key"
VK_FILE = "verification_key.json"
TRANSCRIPT_FILE = "transcript.json"
ROWS_DIR = "circuit.rows"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("groth16", help="Groth16 setup, contributions, proving and verification (snarkjs formats)")
    commands = parser.add_subparsers(dest="groth16_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])

    p = commands.add_parser("setup", help="circuit-specific setup for an .r1cs file")
    p.add_argument("circuit", type=Path, help="constraint system (.r1cs, circom/snarkjs format)")
    p.add_argument("keydir", type=Path, help="directory to write the keys into (created)")
    p.add_argument("--seed", help="derive the secrets from this seed: TESTS ONLY, the key is forgeable by anyone who knows it")
    _backend_option(p)
    add_json_argument(p)
    p.set_defaults(handler=_setup)

    p = commands.add_parser("contribute", help="add a phase-2 contribution (re-randomises delta)")
    p.add_argument("keydir", type=Path, help="key directory (from `groth16 setup`)")
    p.add_argument("--name", default="", help="contributor's name, recorded in the transcript")
    _backend_option(p)
    add_json_argument(p)
    p.set_defaults(handler=_contribute)

    p = commands.add_parser("verify-contributions", help="check the phase-2 transcript against the keys")
    p.add_argument("keydir", type=Path, help="key directory (from `groth16 setup`)")
    _backend_option(p)
    add_json_argument(p)
    p.set_defaults(handler=_verify_contributions)

    p = commands.add_parser("prove", help="prove a witness (.wtns) for the key's circuit")
    p.add_argument("keydir", type=Path, help="key directory (from `groth16 setup`)")
    p.add_argument("witness", type=Path, help="witness file (.wtns, snarkjs format)")
    p.add_argument("outdir", type=Path, help="directory for proof.json and public.json (created)")
    _backend_option(p)
    p.add_argument("--check-key-points", action="store_true",
                   help="also check every key point on its curve (by default only the files' SHA-256 against the "
                        "key's header: proving with one's own key)")
    add_json_argument(p)
    p.set_defaults(handler=_prove)

    p = commands.add_parser("verify", help="verify a proof (snarkjs JSON files)")
    p.add_argument("vk", type=Path, help="verification_key.json")
    p.add_argument("proof", type=Path, help="proof.json")
    p.add_argument("public", type=Path, help="public.json")
    _backend_option(p)
    add_json_argument(p)
    p.set_defaults(handler=_verify)

    p = commands.add_parser("import-ptau", help="check a snarkjs powers-of-tau file (.ptau) for use as phase 1")
    p.add_argument("ptau", type=Path, help="powers-of-tau file (snarkjs .ptau, bn128)")
    p.add_argument("--check-power", type=int, metavar="P",
                   help="check the Lagrange points only for a 2^P domain (and 2^(P+1) for H), not for every power")
    _backend_option(p)
    add_json_argument(p)
    p.set_defaults(handler=_import_ptau)

    p = commands.add_parser("dev-ptau", help="write a DEVELOPMENT powers-of-tau file: one party's secrets, forgeable by whoever ran it")
    p.add_argument("power", metavar="POWER", help="the file serves circuits of up to 2^POWER rows")
    p.add_argument("out", type=Path, metavar="OUT.ptau", help="file to write (prepared for phase 2; must not exist)")
    p.add_argument("--name", help="contribution name recorded in the file (default: development phase 1)")
    _backend_option(p)
    add_json_argument(p)
    p.set_defaults(handler=_dev_ptau)


def _backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("mcl", "reference"), help="curve backend (default: mcl if it loads)")


def add_json_argument(parser) -> None:
    from prover_service.commands.json_option import add_json_argument as add

    add(parser)


def _progress(prefix: str):
    start = time.perf_counter()

    def report(stage: str, done: int, total: int) -> None:
        print(f"{prefix}: [{done}/{total}] {stage} ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)

    return report


def _setup(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from circuits.groth16 import save_proving_key, setup
    from circuits.snarkjs import read_r1cs, write_verifying_key

    r1cs = read_r1cs(args.circuit)
    backend = get_backend(args.backend)
    print(
        f"setup: {r1cs.n_constraints} constraints, {r1cs.n_wires} wires, {r1cs.n_public} public, backend {backend.name}",
        file=sys.stderr,
    )
    if args.seed is not None:
        print("setup: WARNING: seeded secrets; this key is for tests only", file=sys.stderr)
    pk, vk = setup(r1cs, backend, seed=args.seed, progress=_progress("setup"))
    keydir: Path = args.keydir
    keydir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.circuit, keydir / CIRCUIT_FILE)
    load_relation_arrays(keydir)
    save_proving_key(pk, keydir / PROVING_KEY_DIR, backend)
    save_proving_key(pk, keydir / INITIAL_KEY_DIR, backend)
    write_verifying_key(keydir / VK_FILE, vk)
    _start_transcript(keydir, pk, backend)
    print(f"setup: keys written to {keydir}", file=sys.stderr)
    if args.json:
        from prover_service.outputs import Groth16SetupOutput, emit

        emit(Groth16SetupOutput(keydir=str(keydir), constraints=r1cs.n_constraints, wires=r1cs.n_wires,
                                public=r1cs.n_public, backend=backend.name, seeded=args.seed is not None))
    return 0


def _start_transcript(keydir: Path, pk, backend) -> None:
    from circuits.groth16 import phase2

    phase2.start_transcript(pk, backend).save(keydir / TRANSCRIPT_FILE)


def _load_key(keydir: Path, backend_name: str | None, subdir: str = PROVING_KEY_DIR, *, check_points: bool = True):
    from circuits.backends import get_backend
    from circuits.errors import MalformedArtifact
    from circuits.groth16.keys import load_proving_key, read_key_header

    if not (keydir / subdir).is_dir():
        raise MalformedArtifact(f"{keydir} is not a key directory (no {subdir}/; run `fairproof groth16 setup` first)")
    header = read_key_header(keydir / subdir)
    backend = get_backend(backend_name or (header.get("backend") if header.get("storage") == "raw" else None))
    return load_proving_key(keydir / subdir, backend, check_points=check_points), backend


def _read_transcript(keydir: Path):
    from circuits.errors import MalformedArtifact
    from circuits.groth16.phase2 import Transcript

    path = keydir / TRANSCRIPT_FILE
    if not path.is_file():
        raise MalformedArtifact(f"{keydir} has no {TRANSCRIPT_FILE}; run `fairproof groth16 setup` first")
    return Transcript.load(path)


def _contribute(args: argparse.Namespace) -> int:
    from circuits.groth16 import phase2, save_proving_key
    from circuits.snarkjs import write_verifying_key

    pk, backend = _load_key(args.keydir, args.backend)
    transcript = _read_transcript(args.keydir)
    print(f"contribute: re-randomising delta ({len(transcript.contributions)} earlier contribution(s))", file=sys.stderr)
    new_pk, new_transcript = phase2.contribute(pk, transcript, backend, name=args.name, progress=_progress("contribute"))
    save_proving_key(new_pk, args.keydir / PROVING_KEY_DIR, backend)
    write_verifying_key(args.keydir / VK_FILE, new_pk.vk)
    new_transcript.save(args.keydir / TRANSCRIPT_FILE)
    print(f"contribute: contribution {len(new_transcript.contributions)} recorded (its secret was never stored)", file=sys.stderr)
    if args.json:
        from prover_service.outputs import Groth16ContributeOutput, emit

        emit(Groth16ContributeOutput(keydir=str(args.keydir), contributions=len(new_transcript.contributions)))
    return 0


def _verify_contributions(args: argparse.Namespace) -> int:
    from circuits.groth16 import phase2
    from circuits.snarkjs import read_verifying_key

    final_pk, backend = _load_key(args.keydir, args.backend)
    initial_pk, _ = _load_key(args.keydir, backend.name, INITIAL_KEY_DIR)
    transcript = _read_transcript(args.keydir)
    from prover_service.outputs import Groth16ContributionsOutput, emit

    if read_verifying_key(args.keydir / VK_FILE) != final_pk.vk:
        reason = f"{VK_FILE} does not match the proving key"
        if args.json:
            emit(Groth16ContributionsOutput(ok=False, reason=reason))
        print(f"fairproof: {reason}", file=sys.stderr)
        return 1
    # Raises MalformedArtifact naming the first failed check.
    report = phase2.verify_contribution_chain(initial_pk, final_pk, transcript, backend)
    if args.json:
        emit(Groth16ContributionsOutput(ok=True, contributions=report.contributions, names=list(report.names)))
        return 0
    names = ", ".join(name or "(anonymous)" for name in report.names) or "none"
    print(f"OK: {report.contributions} contribution(s) verified ({names})")
    return 0


def load_relation_arrays(keydir: Path):
    """The key's circuit in arrays, mapped from ROWS_DIR. While KEYDIR's seal holds (circuit.r1cs and
    the arrays unchanged since the arrays were made from it or checked against it) nothing is read,
    hashed or checked; otherwise circuit.r1cs is hashed, the arrays are checked against its digest (or
    decoded from it and saved again) and the seal is renewed."""
    from circuits.groth16 import key_seal, relation_files
    from circuits.snarkjs.binfile import read_file_bytes

    rows = keydir / ROWS_DIR
    sealed_files = [CIRCUIT_FILE, *(f"{ROWS_DIR}/{name}" for name in relation_files.ARRAY_FILES)]
    header_name = f"{ROWS_DIR}/{relation_files.HEADER_FILE}"
    header = relation_files.read_header(rows)
    if header is not None and key_seal.seal_holds(keydir, sealed_files, {header_name: key_seal.sha256_hex(header)}):
        relation = relation_files.map_relation(rows, header, None, checked=False)
        if relation is not None:
            return relation
    path = keydir / CIRCUIT_FILE
    try:
        stamps = {name: key_seal.file_stamp(keydir / name) for name in sealed_files}
    except OSError:
        stamps = None  # arrays missing: made below, and their stamps are taken then
    data = read_file_bytes(path, "r1cs file")
    digest = key_seal.sha256_hex(data)
    relation = None if header is None else relation_files.map_relation(rows, header, digest, checked=True)
    if relation is None:
        from circuits.snarkjs import decode_r1cs_arrays

        relation = decode_r1cs_arrays(data, what=f"r1cs file {path}")
        try:
            header = relation_files.save_relation(rows, relation, digest)
        except OSError:
            return relation  # a read-only key directory: decode again next time
        stamps = {CIRCUIT_FILE: stamps[CIRCUIT_FILE]} if stamps else None
    key_seal.write_seal(keydir, sealed_files, {header_name: key_seal.sha256_hex(header)}, stamps=stamps)
    return relation


def _prove(args: argparse.Namespace) -> int:
    # The prover does no linear algebra: numpy need not start OpenBLAS's thread pool (a tenth of the
    # import's cost). Set before numpy is first imported, and only for this command.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from circuits.errors import MalformedArtifact
    from circuits.groth16.prove import prove
    from circuits.snarkjs.json_formats import write_proof, write_public
    from circuits.snarkjs.wtns import read_wtns_limbs

    keydir: Path = args.keydir
    if not (keydir / CIRCUIT_FILE).is_file():
        raise MalformedArtifact(f"{keydir} has no {CIRCUIT_FILE}; run `fairproof groth16 setup` first")
    r1cs = load_relation_arrays(keydir)
    limbs = read_wtns_limbs(args.witness)
    if len(limbs) != r1cs.n_wires:
        raise MalformedArtifact(f"witness {args.witness} has {len(limbs)} values, the circuit has {r1cs.n_wires} wires")
    print(f"prove: loading the proving key from {keydir}", file=sys.stderr)
    # Proving with one's own key: mapped in place, its files' seal (or, when that does not hold, their
    # SHA-256) against the header, no per-point checks; the proof is verified against the key's
    # verifying key before it is written (a contribution or an audit loads the key with every check).
    pk, backend = _load_key(keydir, args.backend, check_points=args.check_key_points)
    witness = backend.scalar_vector_from_limbs(limbs)
    proof = prove(pk, r1cs, witness, backend, progress=_progress("prove"), self_check=True)
    args.outdir.mkdir(parents=True, exist_ok=True)
    write_proof(args.outdir / "proof.json", proof)
    raw = limbs[1:r1cs.n_public + 1].tobytes()
    public = [int.from_bytes(raw[i:i + 32], "little") for i in range(0, len(raw), 32)]
    write_public(args.outdir / "public.json", public)
    print(f"prove: wrote {args.outdir / 'proof.json'} and {args.outdir / 'public.json'}", file=sys.stderr)
    if args.json:
        from prover_service.outputs import Groth16ProveOutput, emit

        emit(Groth16ProveOutput(proof_file=str(args.outdir / "proof.json"), public_file=str(args.outdir / "public.json"),
                                public_signals=[str(v) for v in public]))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from circuits.groth16 import check_proof
    from circuits.snarkjs import read_proof, read_public, read_verifying_key

    vk = read_verifying_key(args.vk)
    proof = read_proof(args.proof)
    public = read_public(args.public)
    result = check_proof(vk, public, proof, get_backend(args.backend))
    if args.json:
        from prover_service.outputs import Groth16VerifyOutput, emit

        emit(Groth16VerifyOutput(valid=result.ok, reason=None if result.ok else result.reason))
        return 0 if result.ok else 1
    if result.ok:
        print("OK")
        return 0
    print(f"fairproof: proof is INVALID: {result.reason}", file=sys.stderr)
    return 1


def _import_ptau(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from circuits.errors import MalformedArtifact
    from circuits.snarkjs.ptau import read_ptau, verify_ptau

    backend = get_backend(args.backend)
    start = time.perf_counter()

    def report(message: str) -> None:
        print(f"import-ptau: {message} ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)

    try:
        ptau = read_ptau(args.ptau)
        powers = None
        if args.check_power is not None:
            if not 0 <= args.check_power <= ptau.power:
                raise MalformedArtifact(f"ptau {args.ptau}: has power {ptau.power}, cannot serve a 2^{args.check_power} domain")
            if not ptau.prepared:
                raise MalformedArtifact(
                    f"ptau {args.ptau}: not prepared for phase 2, no Lagrange points for 2^{args.check_power}"
                )
            powers = [args.check_power, args.check_power + 1]
        verify_ptau(ptau, backend, report, lagrange_powers=powers)
    except MalformedArtifact as exc:
        if args.json:
            from prover_service.outputs import PtauOutput, emit

            emit(PtauOutput(ok=False, reason=str(exc), file=str(args.ptau)))
        print(f"fairproof: unusable powers-of-tau file: {exc}", file=sys.stderr)
        return 2
    names = ", ".join(c.name or "(anonymous)" for c in ptau.contributions)
    checked = "all powers" if powers is None else f"powers {powers[0]} and {powers[1]}"
    if args.json:
        from prover_service.outputs import PtauOutput, emit

        emit(PtauOutput(ok=True, file=str(args.ptau), power=ptau.power, ceremony_power=ptau.ceremony_power,
                        contributions=[c.name or "(anonymous)" for c in ptau.contributions], prepared=ptau.prepared,
                        lagrange_checked=checked if ptau.prepared else None))
        return 0
    print(f"OK: {args.ptau}")
    print(f"power: {ptau.power} (up to {1 << ptau.power} rows)")
    print(f"ceremony power: {ptau.ceremony_power}")
    print(f"contributions: {len(ptau.contributions)} ({names})")
    if ptau.prepared:
        print(f"prepared for phase 2: yes (Lagrange points checked at {checked})")
    else:
        print("prepared for phase 2: no (run `snarkjs powersoftau prepare phase2` before `zkey new`)")
    return 0


DEV_PTAU_WARNING = (
    "dev-ptau: WARNING: DEVELOPMENT phase 1, made by this machine alone: whoever ran it could forge proofs for every "
    "key derived from it. Production keys come from a public Perpetual Powers of Tau file (such as snarkjs's "
    "powersOfTau28_hez_final_NN.ptau), checked with `fairproof groth16 import-ptau`."
)


def _dev_ptau(args: argparse.Namespace) -> int:
    from circuits.backends import get_backend
    from circuits.snarkjs.ptau_dev import DEFAULT_NAME, MAX_POWER, check_arguments, write_dev_ptau

    name = DEFAULT_NAME if args.name is None else args.name
    out: Path = args.out
    try:
        if not args.power.strip().isdigit():
            raise ValueError(f"power must be an integer 1..{MAX_POWER}, got {args.power!r}")
        power = int(args.power)
        check_arguments(power, name)
        if out.exists():
            raise ValueError(f"{out} already exists; remove it or choose another file")
        if not out.parent.is_dir():
            raise ValueError(f"directory {out.parent} does not exist")
    except ValueError as exc:
        print(f"fairproof: dev-ptau: {exc}", file=sys.stderr)
        return 2
    print(DEV_PTAU_WARNING, file=sys.stderr, flush=True)
    summary = write_dev_ptau(out, power, get_backend(args.backend), name=name,
                             progress=lambda message: print(message, file=sys.stderr, flush=True))
    if args.json:
        from prover_service.outputs import DevPtauOutput, emit

        emit(DevPtauOutput(file=str(summary.path), power=summary.power, size=summary.size, seconds=summary.seconds,
                           next_challenge=summary.next_challenge.hex()))
        return 0
    print(f"wrote {summary.path}: power {summary.power}, {summary.size} bytes, {summary.seconds:.1f} s")
    print(f"next challenge hash: {summary.next_challenge.hex()}")
    return 0
