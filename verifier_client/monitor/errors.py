"""The monitor's two failures: a run that cannot proceed, and a log that contradicts itself."""
from __future__ import annotations

from typing import Sequence


class MonitorError(Exception):
    """The run cannot proceed: unusable input, state or answer (exit status 2). One line."""


class Violation(Exception):
    """The log contradicts itself or its key; `evidence` names the signed notes that show it."""

    def __init__(self, lines: Sequence[str], evidence: dict[str, str] | None = None):
        super().__init__(lines[0])
        self.lines = list(lines)
        self.evidence = dict(evidence or {})

