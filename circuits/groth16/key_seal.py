"""A seal on a directory of key files: proof, without reading them, that they are unchanged.

A proving key is about a hundred MiB at 2^18 constraints; hashing it on every
command costs more than the rest of a short proof. So its integrity is
established once, when the files are written or first fully checked (every
SHA-256 against the key's header), and recorded in a seal: for each file its
identity and change stamps (device, inode, size, modification and change
times in nanoseconds), and the SHA-256 of the small files named as such (the
header, which carries the large files' digests and the verifying key).
Later uses compare the stamps (one stat per file) and the small files'
digests, which the caller computes from the very bytes it goes on to use.

Why a stamp can stand for the content: any write through the filesystem sets
a file's change time (ctime) to the current time, and no system call sets it
back (`touch` can restore the modification time, not the change time); a
replaced file has another inode. One gap remains: file times come from a
coarse clock, so a write in the same clock tick as the stamp was taken would
leave both times unchanged. A stamp is therefore trusted only if the file's
change time is strictly older than the seal file's own modification time (a
rule git uses for its index): a later write lands at or after that time and
so changes the change time. `write_seal` waits out the tick when it has to.

A seal that does not hold is not an error: the caller checks the files in
full and seals them again. Whoever can rewrite the files can rewrite the
seal, as they could the header's digests: the seal guards against damaged,
half-copied or altered files, not against the key's owner; what binds a key
to a statement is its verifying key, which a card names by digest.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

SEAL_FILE = "seal.json"
SEAL_FORMAT = "fairproof-file-seal"
SEAL_VERSION = 1
# How long write_seal waits, at most, for the filesystem clock to pass the files' change times.
RACY_WAIT_S = 0.05
RACY_TRIES = 40


def file_stamp(path: Path) -> list[int]:
    """[device, inode, size, mtime_ns, ctime_ns] of a file (raises OSError if it is missing)."""
    st = path.stat()
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_seal(directory: str | os.PathLike[str], stamped: Sequence[str], digests: Mapping[str, str],
               *, stamps: Mapping[str, list[int]] | None = None) -> bool:
    """Seal the `stamped` files of `directory` (by stamp) and the small files of `digests` (name -> the
    SHA-256 of the bytes the caller read and checked). `stamps`, when given, are stamps the caller took
    before checking those files: if one changed since, nothing is sealed. Returns False when no
    seal could be written (a read-only directory, a file changing under us): the files are then
    checked in full on every use."""
    path = Path(directory)
    try:
        now = {name: file_stamp(path / name) for name in stamped}
        document = {"format": SEAL_FORMAT, "version": SEAL_VERSION, "stamps": now, "sha256": dict(digests)}
        if stamps is not None and any(now[name] != stamp for name, stamp in stamps.items()):
            return False
        for _ in range(RACY_TRIES):
            _write_atomically(path / SEAL_FILE, json.dumps(document, indent=1))
            if _stamps_trusted(path, document):
                return True
            time.sleep(RACY_WAIT_S)  # same clock tick as a file's last change: seal again, later
    except OSError:
        pass
    remove_seal(path)
    return False


def seal_holds(directory: str | os.PathLike[str], stamped: Sequence[str], digests: Mapping[str, str]) -> bool:
    """Whether `directory`'s seal covers exactly these files, every stamped one is unchanged since, and
    the small files the caller read (`digests`: name -> SHA-256 of the bytes read) are the sealed ones."""
    path = Path(directory)
    try:
        document = json.loads((path / SEAL_FILE).read_text())
        if not isinstance(document, dict) or document.get("format") != SEAL_FORMAT \
                or document.get("version") != SEAL_VERSION:
            return False
        if set(document.get("stamps", {})) != set(stamped) or document.get("sha256") != dict(digests):
            return False
        if any(file_stamp(path / name) != document["stamps"][name] for name in stamped):
            return False
        return _stamps_trusted(path, document)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False


def remove_seal(directory: str | os.PathLike[str]) -> None:
    """Drop the seal (before files are rewritten in place, so no stale seal outlives them)."""
    try:
        (Path(directory) / SEAL_FILE).unlink(missing_ok=True)
    except OSError:
        pass


def _stamps_trusted(directory: Path, document: dict[str, Any]) -> bool:
    """Every stamped change time strictly before the seal file was written (see the module docstring)."""
    sealed_at = (directory / SEAL_FILE).stat().st_mtime_ns
    return all(stamp[4] < sealed_at for stamp in document["stamps"].values())


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
