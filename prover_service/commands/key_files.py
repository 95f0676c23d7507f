"""Private key files of the auditors and witnesses: created once (mode 0600, never overwritten), read back."""
from __future__ import annotations

import os
from pathlib import Path

from transparency.note import Signer


class KeyFileError(Exception):
    """A key file cannot be created or used (one line)."""


def write_new_file(path: Path, text: str, mode: int = 0o600) -> None:
    """`text` into a new file at `path` (never over an existing one)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise KeyFileError(f"{path} exists; it is never overwritten") from None
    except OSError as exc:
        raise KeyFileError(f"cannot create {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def read_signer(path: Path, kind: type[Signer] = Signer) -> Signer:
    """The signer whose private key (C2SP skey) is in `path`."""
    try:
        return kind.from_key(path.read_text().strip())
    except OSError as exc:
        raise KeyFileError(f"cannot read the key {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise KeyFileError(f"{path} is not a private key: {exc}") from None
