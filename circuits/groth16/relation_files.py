"""A relation's arrays (`ArrayR1CS`) as plain .npy files that the prover maps instead of reading.

The prover evaluates the constraint rows in bulk (backends/sparse_rows.py);
at 2^18 constraints their arrays are tens of MiB. Kept as one .npy file per
array, they load with `numpy.load(mmap_mode="r")`: no decoding, no copy, the
pages shared through the page cache. A small header names the relation's
shape and the digest of what the arrays were made from (an .r1cs file's
SHA-256), so arrays made from another circuit are never used.

Loading `checked` validates every array (row starts, wires in range,
coefficients below r: `ArrayR1CS.check`); a caller that holds a seal over
the files (key_seal.py) made when they were checked may skip that.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np

from ..relation_arrays import ArrayR1CS, SparseRows

HEADER_FILE = "header.json"
FORMAT = "fairproof-relation-arrays"
VERSION = 1
SIDES = ("a", "b", "c")
PARTS = ("start", "wire", "coefficient")
ARRAY_FILES = tuple(f"{side}_{part}.npy" for side in SIDES for part in PARTS)


def save_relation(directory: str | os.PathLike[str], relation: ArrayR1CS, source_digest: str) -> bytes:
    """Write the arrays and then the header (a directory without a header is never loaded); each file
    under a temporary name first, so a process that has the old files mapped keeps them. Returns the
    header's bytes (what a seal over the directory names)."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for side in SIDES:
        rows = getattr(relation, side)
        for part in PARTS:
            _write_atomically(path / f"{side}_{part}.npy", _saver(getattr(rows, part)))
    header = json.dumps({"format": FORMAT, "version": VERSION, "n_wires": relation.n_wires,
                         "n_public": relation.n_public, "n_public_outputs": relation.n_public_outputs,
                         "source_digest": source_digest}, indent=1).encode()
    _write_atomically(path / HEADER_FILE, lambda handle: handle.write(header))
    return header


def read_header(directory: str | os.PathLike[str]) -> bytes | None:
    """The header's bytes, or None if there is none."""
    try:
        return (Path(directory) / HEADER_FILE).read_bytes()
    except OSError:
        return None


def map_relation(directory: str | os.PathLike[str], header: bytes, source_digest: str | None, *,
                 checked: bool = True) -> ArrayR1CS | None:
    """The relation of the arrays in `directory`, mapped read-only; None when the header is not this
    format, names another source digest (`source_digest` None: any), or the arrays are missing or
    malformed (with `checked`, also when a wire or coefficient is out of range)."""
    path = Path(directory)
    try:
        meta: Any = json.loads(header)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
            return None
        if source_digest is not None and meta.get("source_digest") != source_digest:
            return None
        sides = []
        for side in SIDES:
            start, wire, coefficient = (np.load(path / f"{side}_{part}.npy", mmap_mode="r", allow_pickle=False)
                                        for part in PARTS)
            if start.dtype != np.int64 or wire.dtype != np.int64 or coefficient.dtype != np.uint8:
                return None
            sides.append(SparseRows(start, wire, coefficient))
        a, b, c = sides
        relation = ArrayR1CS(int(meta["n_wires"]), int(meta["n_public"]), a, b, c,
                             n_public_outputs=int(meta["n_public_outputs"]))
        if checked:
            relation.check()
    except (OSError, KeyError, ValueError, TypeError):
        return None
    return relation


def _saver(array: np.ndarray) -> Callable[[BinaryIO], None]:
    """Writes `array` in .npy format to a file handle."""
    return lambda handle: np.save(handle, array)


def _write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
