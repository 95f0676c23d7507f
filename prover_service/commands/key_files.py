"""Private key files of the auditors and witnesses: created once (mode 0600, never overwritten), read back."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from transparency.note import Signer

S = TypeVar("S", bound=Signer)


class KeyFileError(Exception):
    """A key file cannot be created or used (one line)."""


def write_new_file(path: Path, text: str, mode: int = 0o600, what: str = "it") -> None:
    """`text` into a new file at `path` (never over an existing one); `what` names it in the refusal."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise KeyFileError(f"{path} exists; {what} is never overwritten") from None
    except OSError as exc:
        raise KeyFileError(f"cannot create {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def write_new_key(path: Path, private_key: str, what: str) -> None:
    """A private key (C2SP skey) into a new file of mode 0600, never over an existing one."""
    write_new_file(path, private_key + "\n", 0o600, what)


def read_signer(path: Path, kind: type[S], what: str) -> S:
    """The signer (of `kind`) whose private key (C2SP skey) is in `path`."""
    try:
        return kind.from_key(path.read_text().strip())
    except OSError as exc:
        raise KeyFileError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise KeyFileError(f"{path} is not a {what}: {exc}") from None
