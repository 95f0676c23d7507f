"""The sizes of a model's statements, remembered beside its keys.

The hybrid radius compares an exact certificate's statement with the deployment's largest
(`BucketChoice.exact_fits`) before proving it. A bucket the card publishes carries its count; any other is read
off its statement family's line (`statement.size.size_line`: three small builds, one to two seconds on the
paper models). That is offline work: the first time a family is needed its line is kept in
MODEL_DIR/keys/sizes.json, so a customer's online step, in this process or any later one, reads it. The file
holds public counts only; one that cannot be read, or that names another line format, is recomputed and
rewritten.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

from statement import StatementShape
from statement.size import SizeLine, family, size_line

from .workspace import write_atomically

SIZES_FILE = "sizes.json"
SIZES_FORMAT = "fairproof-statement-sizes/1"


class StatementSizes:
    """Size lines per statement family (keyed by the digest of its (4, 4) member), in memory and in `path`."""

    def __init__(self, path: Path):
        self.path = path
        self._lines: dict[str, SizeLine] | None = None
        self._lock = threading.Lock()

    def constraints(self, shape: StatementShape) -> int:
        """`shape`'s constraints as its family's line gives them (within 1% above the count)."""
        return self.line(shape).at(shape.region_slots, shape.farkas_slots)

    def line(self, shape: StatementShape) -> SizeLine:
        key = family(shape).digest()
        with self._lock:
            lines = self._load()
            if key not in lines:
                lines[key] = size_line(shape)
                self._save(lines)
            return lines[key]

    def _load(self) -> dict[str, SizeLine]:
        if self._lines is None:
            self._lines = _read(self.path)
        return self._lines

    def _save(self, lines: dict[str, SizeLine]) -> None:
        doc = {"format": SIZES_FORMAT,
               "lines": {k: [v.at_4_4, v.per_slot, v.per_entry] for k, v in sorted(lines.items())}}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, json.dumps(doc, indent=1) + "\n")
        except OSError:
            pass  # a read-only or full disk: the line is kept in memory, and computed again by the next process


def _read(path: Path) -> dict[str, SizeLine]:
    """The lines `path` holds; none if it is absent, unreadable or not in this format."""
    try:
        doc = json.loads(path.read_text())
        if doc.get("format") != SIZES_FORMAT:
            return {}
        return {str(k): SizeLine(int(v[0]), float(v[1]), float(v[2])) for k, v in doc["lines"].items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}
