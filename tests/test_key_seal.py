"""The seal over key files (circuits/groth16/key_seal.py): a stamp per file stands for its content.

Each accepting check has a twin that must refuse: a file changed in place (even with its modification
time put back), a file replaced, a header other than the sealed one, another set of files, a seal
taken in the same clock tick as a file's last change.
"""
from __future__ import annotations

import os
import shutil

from circuits.groth16 import key_seal

FILES = ["a.bin", "b.bin"]


def _directory(tmp_path):
    for name in FILES:
        (tmp_path / name).write_bytes(bytes(range(256)) * 4)
    header = b'{"queries": "..."}'
    (tmp_path / "header.json").write_bytes(header)
    return {"header.json": key_seal.sha256_hex(header)}


def test_a_fresh_seal_holds(tmp_path):
    digests = _directory(tmp_path)
    assert key_seal.write_seal(tmp_path, FILES, digests)
    assert key_seal.seal_holds(tmp_path, FILES, digests)


def test_a_file_changed_in_place_breaks_the_seal_even_with_its_mtime_put_back(tmp_path):
    digests = _directory(tmp_path)
    assert key_seal.write_seal(tmp_path, FILES, digests)
    target = tmp_path / "a.bin"
    before = target.stat()
    with target.open("r+b") as handle:
        handle.seek(17)
        handle.write(b"\xff")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.stat().st_mtime_ns == before.st_mtime_ns and target.stat().st_size == before.st_size
    assert not key_seal.seal_holds(tmp_path, FILES, digests)


def test_a_replaced_file_breaks_the_seal(tmp_path):
    digests = _directory(tmp_path)
    assert key_seal.write_seal(tmp_path, FILES, digests)
    shutil.copy2(tmp_path / "b.bin", tmp_path / "b.copy")  # same bytes and times, another inode
    os.replace(tmp_path / "b.copy", tmp_path / "b.bin")
    assert not key_seal.seal_holds(tmp_path, FILES, digests)


def test_another_header_or_another_set_of_files_is_not_sealed(tmp_path):
    digests = _directory(tmp_path)
    assert key_seal.write_seal(tmp_path, FILES, digests)
    assert not key_seal.seal_holds(tmp_path, FILES, {"header.json": key_seal.sha256_hex(b"another header")})
    assert not key_seal.seal_holds(tmp_path, FILES[:1], digests)
    assert not key_seal.seal_holds(tmp_path, [*FILES, "header.json"], digests)
    (tmp_path / key_seal.SEAL_FILE).write_text("not json")
    assert not key_seal.seal_holds(tmp_path, FILES, digests)
    (tmp_path / key_seal.SEAL_FILE).unlink()
    assert not key_seal.seal_holds(tmp_path, FILES, digests)


def test_a_seal_as_old_as_a_files_last_change_is_not_trusted(tmp_path):
    """File times come from a coarse clock: a change in the same tick as the seal would leave the
    stamps alike, so a seal not strictly younger than every file's change time does not hold."""
    digests = _directory(tmp_path)
    assert key_seal.write_seal(tmp_path, FILES, digests)
    newest = max((tmp_path / name).stat().st_ctime_ns for name in FILES)
    os.utime(tmp_path / key_seal.SEAL_FILE, ns=(newest, newest))
    assert not key_seal.seal_holds(tmp_path, FILES, digests)
    os.utime(tmp_path / key_seal.SEAL_FILE, ns=(newest + 1, newest + 1))
    assert key_seal.seal_holds(tmp_path, FILES, digests)


def test_files_changed_during_their_check_are_not_sealed(tmp_path):
    digests = _directory(tmp_path)
    stamps = {name: key_seal.file_stamp(tmp_path / name) for name in FILES}
    (tmp_path / "a.bin").write_bytes(b"changed while being hashed")
    assert not key_seal.write_seal(tmp_path, FILES, digests, stamps=stamps)
    assert not (tmp_path / key_seal.SEAL_FILE).exists()
    stamps = {name: key_seal.file_stamp(tmp_path / name) for name in FILES}
    assert key_seal.write_seal(tmp_path, FILES, digests, stamps=stamps)
