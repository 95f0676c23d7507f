"""Progress bars for long work, on the terminal only.

A bar is drawn (tqdm, on stderr) when stderr is a terminal; piped or redirected output gets nothing from
here, so logs and scripts see only the lines a command prints anyway.
"""
from __future__ import annotations

import sys
from typing import IO


class StageBar:
    """One job's progress: stages with a fraction done (`Prover.prove`'s on_stage) or counts (`update`)."""

    def __init__(self, description: str, total: int = 100, stream: IO[str] | None = None,
                 enabled: bool | None = None):
        from tqdm import tqdm

        stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(stream) if enabled is None else enabled
        self.total = total
        self._bar = tqdm(total=total, desc=description, file=stream, disable=not self.enabled, leave=False,
                         dynamic_ncols=True, bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")

    def stage(self, words: str, fraction: float) -> None:
        """A stage starting, `fraction` of the way through."""
        self._bar.n = max(0, min(self.total, round(fraction * self.total)))
        self._bar.set_postfix_str(words, refresh=True)

    def update(self, done: int, total: int | None = None, words: str = "") -> None:
        """`done` of `total` (default: the bar's) items finished."""
        if total is not None and total != self.total:
            self.total = self._bar.total = total
        self._bar.n = done
        self._bar.set_postfix_str(words, refresh=True)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "StageBar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
