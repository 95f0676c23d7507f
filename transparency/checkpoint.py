"""C2SP transparency log checkpoints: https://c2sp.org/tlog-checkpoint

A checkpoint is the text of a signed note (see transparency.note):

    <origin>
    <tree size, decimal>
    <base64 of the 32-byte RFC 6962 root hash>
    [extension lines]

This module only builds and parses that text; signing is note.sign().
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

_SIZE = re.compile(r"0|[1-9][0-9]*")  # ASCII digits only, no sign, no leading zero
_MAX_SIZE = 2**64 - 1  # sizes are uint64 in every implementation (and in cosigned_message)


class CheckpointError(ValueError):
    """A checkpoint text or field is malformed."""


def _check_line(line: str, what: str) -> None:
    if line == "":
        raise CheckpointError(f"checkpoint {what} is empty")
    # A checkpoint is note text: no newline inside a line, no control characters.
    for c in line:
        if ord(c) < 0x20:
            raise CheckpointError(f"checkpoint {what} contains {c!r}")


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_line(self.origin, "origin")
        if type(self.size) is not int or not 0 <= self.size <= _MAX_SIZE:
            raise CheckpointError(f"checkpoint size {self.size!r} is not an integer in [0, 2^64)")
        if not isinstance(self.root_hash, bytes) or len(self.root_hash) != 32:
            raise CheckpointError("checkpoint root hash is not 32 bytes")
        if not isinstance(self.extensions, tuple):
            raise CheckpointError("checkpoint extensions must be a tuple of lines")
        for line in self.extensions:
            _check_line(line, "extension line")

    def body(self) -> str:
        root = base64.b64encode(self.root_hash).decode("ascii")
        return "".join(line + "\n" for line in (self.origin, str(self.size), root, *self.extensions))

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        if not text.endswith("\n"):
            raise CheckpointError("checkpoint text does not end in a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise CheckpointError(f"checkpoint has {len(lines)} lines, want at least 3")
        origin, size, root, *extensions = lines
        if len(size) > 20 or not _SIZE.fullmatch(size):
            raise CheckpointError(f"checkpoint size {size[:24]!r} is not a decimal without leading zeros")
        try:
            root_hash = base64.b64decode(root, validate=True)
        except ValueError:
            raise CheckpointError(f"checkpoint root hash {root[:48]!r} is not base64") from None
        if len(root_hash) != 32:
            raise CheckpointError(f"checkpoint root hash is {len(root_hash)} bytes, want 32")
        # Python ignores non-zero padding bits; only the canonical form is accepted.
        if base64.b64encode(root_hash).decode("ascii") != root:
            raise CheckpointError("checkpoint root hash is not canonical base64")
        return cls(origin, int(size), root_hash, tuple(extensions))
