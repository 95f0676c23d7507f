"""The Groth16 proving key: in memory, on disk, and its canonical digest.

In memory the bulk queries are opaque backend vectors (see backends/base.py),
so a key belongs to one backend (`backend_name`); `convert_proving_key` moves
it to another through canonical points.

On disk a key is a directory:

    header.json   format, version, sizes, backend and storage form, the single
                  points, the verifying key, per-file SHA-256 and the
                  canonical digest
    a.bin b_g1.bin b_g2.bin l.bin h.bin
                  the five queries

Two storage forms:
- "raw": the backend's own bytes (`g1_vector_to_bytes`), loaded back with
  `g1_vector_from_bytes`, which validates every point. Fast; readable only
  by the same backend.
- "portable": EIP-196/197 uncompressed points (encoding.py), readable by any
  backend (slower to load: every point is parsed and validated in Python).

A raw key that `save_proving_key` wrote, or that was once loaded with every
file's SHA-256 checked, carries a seal (key_seal.py): later loads of the
prover's own key (`check_points=False`) compare file stamps instead of
hashing a hundred MiB, and map the files into memory instead of reading them
(the MSMs read the mapped points in place). Files are replaced by renaming,
never rewritten in place, so a process that has a key mapped keeps the
version it mapped.

The canonical digest identifies a key independently of backend and storage
form: SHA-256 over the shape, the single points and the SHA-256 of each query
in portable encoding (see `proving_key_digest`).

Two bases for the H query (`h_basis`), which cannot be converted into each
other without the toxic waste:
- MONOMIAL_Z: [tau^i Z(tau) / delta]_1, i < n - 1; the prover forms the
  quotient h = (A*B - C) / Z and uses its coefficients. Our own setup's default.
- ODD_COSET_LAGRANGE: [L'_{2j+1}(tau) / delta]_1, j < n, L' the Lagrange basis
  of the 2n-th roots of unity; the prover uses the values of A*B - C at the odd
  2n-th roots. snarkjs's .zkey section 9, so keys from a snarkjs ceremony.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from ..errors import CircuitError, MalformedArtifact
from . import key_seal
from .encoding import (
    G1_UNCOMPRESSED,
    G2_UNCOMPRESSED,
    decode_g1_uncompressed,
    decode_g2_uncompressed,
    encode_g1_compressed,
    encode_g1_uncompressed,
    encode_g2_uncompressed,
    g1_from_json,
    g1_to_json,
    vk_from_dict,
    vk_to_bytes,
    vk_to_dict,
)
from .types import G1Affine, G2Affine, VerifyingKey

HBasis = Literal["monomial_z", "odd_coset_lagrange"]
MONOMIAL_Z: HBasis = "monomial_z"
ODD_COSET_LAGRANGE: HBasis = "odd_coset_lagrange"
H_BASES: tuple[HBasis, ...] = (MONOMIAL_Z, ODD_COSET_LAGRANGE)

KEY_FORMAT = "fairproof-groth16-proving-key"
KEY_VERSION = 1
HEADER_FILE = "header.json"

# name -> (group, file name); the order is the digest's order.
QUERIES = {
    "a_query": ("g1", "a.bin"),
    "b_g1_query": ("g1", "b_g1.bin"),
    "b_g2_query": ("g2", "b_g2.bin"),
    "l_query": ("g1", "l.bin"),
    "h_query": ("g1", "h.bin"),
}


@dataclass(frozen=True)
class ProvingKey:
    """Everything the prover needs; scalars never appear here.

    For wire i with QAP polynomials u_i, v_i, w_i (qap.py) and toxic values
    tau, alpha, beta, gamma, delta:
      a_query[i]    = [u_i(tau)]_1                     i < n_wires
      b_g1_query[i] = [v_i(tau)]_1, b_g2_query[i] = [v_i(tau)]_2
      l_query[k]    = [(beta u_i + alpha v_i + w_i)(tau) / delta]_1, i = n_public + 1 + k
      h_query[i]    = [tau^i Z(tau) / delta]_1          i < domain_size - 1   (h_basis MONOMIAL_Z)
      h_query[j]    = [L'_{2j+1}(tau) / delta]_1        j < domain_size       (h_basis ODD_COSET_LAGRANGE)
      vk.ic[i]      = [(beta u_i + alpha v_i + w_i)(tau) / gamma]_1, i <= n_public
    """

    backend_name: str
    n_wires: int
    n_public: int
    domain_size: int
    r1cs_digest: str
    vk: VerifyingKey
    beta_g1: G1Affine
    delta_g1: G1Affine
    a_query: Any
    b_g1_query: Any
    b_g2_query: Any
    l_query: Any
    h_query: Any
    h_basis: HBasis = MONOMIAL_Z

    @property
    def n_private(self) -> int:
        return self.n_wires - 1 - self.n_public

    @property
    def alpha_g1(self) -> G1Affine:
        return self.vk.alpha_g1

    @property
    def beta_g2(self) -> G2Affine:
        return self.vk.beta_g2

    @property
    def delta_g2(self) -> G2Affine:
        return self.vk.delta_g2

    def expected_lengths(self) -> dict[str, int]:
        return {
            "a_query": self.n_wires,
            "b_g1_query": self.n_wires,
            "b_g2_query": self.n_wires,
            "l_query": self.n_private,
            "h_query": self.domain_size if self.h_basis == ODD_COSET_LAGRANGE else self.domain_size - 1,
        }

    def with_changes(self, **changes: Any) -> "ProvingKey":
        return dataclasses.replace(self, **changes)


def check_shape(pk: ProvingKey, backend: Any) -> None:
    """Raise MalformedArtifact if the queries' lengths disagree with the header."""
    if pk.h_basis not in H_BASES:
        raise MalformedArtifact(f"proving key: unknown H basis {pk.h_basis!r}")
    if pk.vk.n_public != pk.n_public:
        raise MalformedArtifact(f"proving key: vk has {pk.vk.n_public} public inputs, key says {pk.n_public}")
    if pk.domain_size < 2 or pk.domain_size & (pk.domain_size - 1):
        raise MalformedArtifact(f"proving key: domain size {pk.domain_size} is not a power of two")
    for name, expected in pk.expected_lengths().items():
        got = backend.vector_len(getattr(pk, name))
        if got != expected:
            raise MalformedArtifact(f"proving key: {name} has {got} points, expected {expected}")


def _portable_bytes(group: str, vector: Any, backend: Any) -> bytes:
    if group == "g1":
        return b"".join(encode_g1_uncompressed(p) for p in backend.g1_vector_to_canonical(vector))
    return b"".join(encode_g2_uncompressed(p) for p in backend.g2_vector_to_canonical(vector))


def component_digests(pk: ProvingKey, backend: Any) -> dict[str, str]:
    """Hex SHA-256 of each query in portable encoding, plus the vk's canonical bytes."""
    out = {name: hashlib.sha256(_portable_bytes(group, getattr(pk, name), backend)).hexdigest()
           for name, (group, _) in QUERIES.items()}
    out["vk"] = hashlib.sha256(vk_to_bytes(pk.vk)).hexdigest()
    return out


def digest_from_components(pk: ProvingKey, components: dict[str, str]) -> str:
    h = hashlib.sha256()
    h.update(KEY_FORMAT.encode() + KEY_VERSION.to_bytes(1, "big"))
    for value in (pk.n_wires, pk.n_public, pk.domain_size):
        h.update(value.to_bytes(8, "big"))
    h.update(bytes.fromhex(pk.r1cs_digest))
    h.update(encode_g1_compressed(pk.beta_g1) + encode_g1_compressed(pk.delta_g1))
    for name in (*QUERIES, "vk"):
        h.update(bytes.fromhex(components[name]))
    if pk.h_basis != MONOMIAL_Z:
        # Appended only for other bases, so monomial keys keep their digests; the
        # stream above has a fixed length, so the two kinds cannot collide.
        h.update(b"h_basis:" + pk.h_basis.encode())
    return h.hexdigest()


def proving_key_digest(pk: ProvingKey, backend: Any = None) -> str:
    """Canonical hex SHA-256 of the key: equal for the same key on any backend.

    SHA-256 over: format tag and version, n_wires, n_public, domain_size (u64 BE),
    the R1CS digest, beta_g1 and delta_g1 compressed, then the SHA-256 of each
    query's portable encoding (a, b_g1, b_g2, l, h) and of the vk's bytes, then,
    for a basis other than MONOMIAL_Z, "h_basis:" and the basis name."""
    backend = _backend_for(pk, backend)
    return digest_from_components(pk, component_digests(pk, backend))


def _backend_for(pk: ProvingKey, backend: Any) -> Any:
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(pk.backend_name)
    if backend.name != pk.backend_name:
        raise CircuitError(
            f"proving key holds {pk.backend_name} vectors, backend is {backend.name}; use convert_proving_key"
        )
    return backend


def convert_proving_key(pk: ProvingKey, source: Any, target: Any) -> ProvingKey:
    """The same key with its vectors rebuilt in `target`'s representation."""
    if source.name != pk.backend_name:
        raise CircuitError(f"proving key holds {pk.backend_name} vectors, source backend is {source.name}")
    changes: dict[str, Any] = {"backend_name": target.name}
    for name, (group, _) in QUERIES.items():
        vector = getattr(pk, name)
        if group == "g1":
            changes[name] = target.g1_vector(source.g1_vector_to_canonical(vector))
        else:
            changes[name] = target.g2_vector(source.g2_vector_to_canonical(vector))
    return pk.with_changes(**changes)


# --- directory storage ------------------------------------------------------------


def save_proving_key(pk: ProvingKey, directory: str | os.PathLike[str], backend: Any = None, *, portable: bool = False) -> str:
    """Write the key into `directory` (created if missing); returns the canonical digest."""
    backend = _backend_for(pk, backend)
    check_shape(pk, backend)
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    key_seal.remove_seal(path)
    components: dict[str, str] = {}
    files: dict[str, dict[str, Any]] = {}
    for name, (group, file_name) in QUERIES.items():
        vector = getattr(pk, name)
        portable_data = _portable_bytes(group, vector, backend)
        components[name] = hashlib.sha256(portable_data).hexdigest()
        if portable:
            data = portable_data
        elif group == "g1":
            data = backend.g1_vector_to_bytes(vector)
        else:
            data = backend.g2_vector_to_bytes(vector)
        _write_file_atomically(path / file_name, data)
        files[name] = {
            "file": file_name,
            "group": group,
            "count": backend.vector_len(vector),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    components["vk"] = hashlib.sha256(vk_to_bytes(pk.vk)).hexdigest()
    digest = digest_from_components(pk, components)
    header = {
        "format": KEY_FORMAT,
        "version": KEY_VERSION,
        "storage": "portable" if portable else "raw",
        "backend": backend.name,
        "n_wires": pk.n_wires,
        "n_public": pk.n_public,
        "domain_size": pk.domain_size,
        "h_basis": pk.h_basis,
        "r1cs_digest": pk.r1cs_digest,
        "beta_g1": g1_to_json(pk.beta_g1),
        "delta_g1": g1_to_json(pk.delta_g1),
        "vk": vk_to_dict(pk.vk),
        "queries": files,
        "digest": digest,
    }
    header_bytes = json.dumps(header, indent=1).encode()
    _write_file_atomically(path / HEADER_FILE, header_bytes)  # header last: a half-written key has no header
    if not portable:
        key_seal.write_seal(path, [entry["file"] for entry in files.values()],
                            {HEADER_FILE: key_seal.sha256_hex(header_bytes)})
    return digest


def _write_file_atomically(path: Path, data: bytes) -> None:
    """`data` under a temporary name, then renamed over `path`: a process that has the old file
    mapped keeps reading the old bytes (rewriting in place would change them under it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_key_header(directory: str | os.PathLike[str]) -> dict[str, Any]:
    return _read_header(Path(directory))[0]


def _read_header(directory: Path) -> tuple[dict[str, Any], str]:
    """The header and the SHA-256 of the very bytes it was parsed from (what a seal names)."""
    path = directory / HEADER_FILE
    try:
        raw = path.read_bytes()
        header = json.loads(raw)
    except FileNotFoundError as exc:
        raise MalformedArtifact(f"proving key: {path} not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedArtifact(f"proving key: {path} is not valid JSON ({exc})") from exc
    if not isinstance(header, dict) or header.get("format") != KEY_FORMAT:
        raise MalformedArtifact(f"proving key: {path} is not a {KEY_FORMAT} header")
    if header.get("version") != KEY_VERSION:
        raise MalformedArtifact(f"proving key: unsupported version {header.get('version')!r}")
    return header, key_seal.sha256_hex(raw)


def _decode_portable(group: str, data: bytes, backend: Any, name: str) -> Any:
    size = G1_UNCOMPRESSED if group == "g1" else G2_UNCOMPRESSED
    if len(data) % size:
        raise MalformedArtifact(f"proving key: {name} has {len(data)} bytes, not a multiple of {size}")
    if group == "g1":
        points = [decode_g1_uncompressed(data[i : i + size], f"{name}[{i // size}]") for i in range(0, len(data), size)]
        return backend.g1_vector(points)
    # The subgroup check is left to backend.g2_vector, which validates every point.
    g2_points = [
        decode_g2_uncompressed(data[i : i + size], f"{name}[{i // size}]", check_subgroup=False)
        for i in range(0, len(data), size)
    ]
    return backend.g2_vector(g2_points)


def _map_own_queries(path: Path, header: dict[str, Any], header_digest: str, backend: Any) -> dict[str, Any]:
    """The raw query files mapped in place (`backend.vector_from_own_file`), each checked against its
    SHA-256 in the header unless the directory's seal says they are unchanged since they were."""
    entries = {name: header["queries"][name] for name in QUERIES}
    files = [str(entry["file"]) for entry in entries.values()]
    digests = {HEADER_FILE: header_digest}
    sealed = key_seal.seal_holds(path, files, digests)
    stamps = {} if sealed else {name: key_seal.file_stamp(path / name) for name in files}
    vectors = {}
    for name, entry in entries.items():
        file_path = path / entry["file"]
        if not sealed:
            with file_path.open("rb") as handle:
                if hashlib.file_digest(handle, "sha256").hexdigest() != entry["sha256"]:
                    raise MalformedArtifact(f"proving key: {entry['file']} does not match its SHA-256 in the header")
        vectors[name] = backend.vector_from_own_file(QUERIES[name][0], file_path)
    if not sealed:
        key_seal.write_seal(path, files, digests, stamps=stamps)
    return vectors


def _h_basis_from_header(header: dict[str, Any]) -> HBasis:
    basis = header.get("h_basis", MONOMIAL_Z)  # keys saved before bases existed are monomial
    if basis not in H_BASES:
        raise MalformedArtifact(f"proving key: unknown H basis {basis!r}")
    return cast(HBasis, basis)  # one of H_BASES, checked above


def _g2_from_raw(backend: Any, data: bytes, subgroup_check: bool) -> Any:
    if not subgroup_check and "check_subgroup" in inspect.signature(backend.g2_vector_from_bytes).parameters:
        return backend.g2_vector_from_bytes(data, check_subgroup=False)
    return backend.g2_vector_from_bytes(data)


def load_proving_key(
    directory: str | os.PathLike[str],
    backend: Any = None,
    *,
    check_digest: bool = False,
    g2_subgroup_check: bool = False,
    check_points: bool = True,
) -> ProvingKey:
    """Load and validate a key directory.

    Always checks: header shape, each file's SHA-256, every point on its curve
    (G1 has cofactor 1, so G1 points are then group elements) and the query
    lengths. Raw keys load only into the backend that wrote them.

    The order-R subgroup check of the raw G2 query (b_g2_query) is optional
    (`g2_subgroup_check`) because it dominates loading (mcl, 2^18 wires: ~100 s
    with it, ~4 s without, on a loaded 2-core machine) and soundness does not
    rest on it: the verifier checks that proof.B lies in the subgroup, so a bad
    B point in the prover's own key can only make its proofs fail. Backends
    without the option always check. Portable keys are always fully checked.
    With check_digest the canonical digest is recomputed (converts every point
    to canonical form: slower) and compared with the header's.

    `check_points=False` is for the prover's own raw key: each file's SHA-256
    must still match the header written when the key was saved, but no point
    is parsed or checked (a key that is wrong anyway can only make the
    prover's own proofs fail: the verifier checks every proof point). The
    files are then mapped into memory, not read: while the key's seal holds
    (key_seal.py: the files unchanged since they were written or last fully
    checked) nothing is hashed; otherwise every file is hashed and, when all
    match, the key is sealed again.
    """
    path = Path(directory)
    header, header_digest = _read_header(path)
    if backend is None:
        from ..backends import get_backend

        backend = get_backend(header["backend"] if header.get("storage") == "raw" else None)
    storage = header.get("storage")
    if storage not in ("raw", "portable"):
        raise MalformedArtifact(f"proving key: unknown storage form {storage!r}")
    if storage == "raw" and header.get("backend") != backend.name:
        raise CircuitError(
            f"proving key in {path} is stored in the {header.get('backend')} backend's raw form; "
            f"load it with that backend, or re-save it portable"
        )
    try:
        vk = vk_from_dict(header["vk"], backend)
        vectors: dict[str, Any] = {}
        if storage == "raw" and not check_points:
            vectors = _map_own_queries(path, header, header_digest, backend)
        for name, (group, file_name) in QUERIES.items():
            if name in vectors:
                continue
            entry = header["queries"][name]
            data = (path / entry["file"]).read_bytes()
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise MalformedArtifact(f"proving key: {entry['file']} does not match its SHA-256 in the header")
            if storage == "portable":
                vectors[name] = _decode_portable(group, data, backend, name)
            elif group == "g1":
                vectors[name] = backend.g1_vector_from_bytes(data)
            else:
                vectors[name] = _g2_from_raw(backend, data, g2_subgroup_check)
        pk = ProvingKey(
            backend_name=backend.name,
            n_wires=int(header["n_wires"]),
            n_public=int(header["n_public"]),
            domain_size=int(header["domain_size"]),
            h_basis=_h_basis_from_header(header),
            r1cs_digest=str(header["r1cs_digest"]),
            vk=vk,
            beta_g1=g1_from_json(header["beta_g1"], "beta_g1"),
            delta_g1=g1_from_json(header["delta_g1"], "delta_g1"),
            **vectors,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedArtifact(f"proving key: malformed header in {path} ({type(exc).__name__}: {exc})") from exc
    except FileNotFoundError as exc:
        raise MalformedArtifact(f"proving key: missing file {exc.filename}") from exc
    check_shape(pk, backend)
    if check_digest and proving_key_digest(pk, backend) != header.get("digest"):
        raise MalformedArtifact("proving key: canonical digest does not match the header")
    return pk


# --- verifying key as JSON ------------------------------------------------------------


def save_verifying_key(vk: VerifyingKey, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(json.dumps(vk_to_dict(vk), indent=1))


def load_verifying_key(path: str | os.PathLike[str], backend: Any = None) -> VerifyingKey:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise MalformedArtifact(f"verifying key: {path} not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedArtifact(f"verifying key: {path} is not valid JSON ({exc})") from exc
    return vk_from_dict(data, backend)
