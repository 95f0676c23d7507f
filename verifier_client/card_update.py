"""What changed between the card a customer pinned and the one the bank now presents, field by field.

A card binds far more than the proof does: the class and sensitive labels,
feature names and units, each bucket's radius kind and cap, the lenses'
parameters. The verifier prints those as facts, so a card re-published under
the same commitment could change what a valid certificate says (a fast
bucket renamed exact, two class labels swapped). The one change a customer
may accept on their own (`--accept-card-update`) is the one key setup makes
as customers need it: circuit buckets or audit circuits ADDED, everything
already pinned left exactly as it was. Any other change needs an auditor the
customer trusts to attest the new card.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from commitments.card import ModelCard

_KEYED = {"circuits": "bucket", "audit_circuits": "name"}  # lists whose entries are compared by name


@dataclass(frozen=True)
class CardChanges:
    added: tuple[str, ...]  # buckets and audit circuits the new card adds
    other: tuple[str, ...]  # every other change, one line each ("field: old -> new")

    @property
    def only_added_buckets(self) -> bool:
        return not self.other

    def describe(self) -> str:
        lines = [f"added {name}" for name in self.added] + list(self.other)
        return "; ".join(lines) if lines else "no change"


def card_changes(old: ModelCard, new: ModelCard) -> CardChanges:
    """Every difference between `old` and `new`, as the customer would need to know it."""
    before, after = old.model_dump(mode="json"), new.model_dump(mode="json")
    added: list[str] = []
    other: list[str] = []
    for field in sorted(set(before) | set(after)):
        was, now = before.get(field), after.get(field)
        if was == now:
            continue
        if field in _KEYED:
            key = _KEYED[field]
            old_entries = {e[key]: e for e in was or ()}
            new_entries = {e[key]: e for e in now or ()}
            for name in old_entries:
                if name not in new_entries:
                    other.append(f"{field}: {name} removed")
                elif old_entries[name] != new_entries[name]:
                    other.extend(f"{field}.{name}.{line}" for line in _differences(old_entries[name],
                                                                                    new_entries[name]))
            added.extend(name for name in new_entries if name not in old_entries)
            continue
        other.extend(f"{field}{line}" if line.startswith(":") else f"{field}.{line}"
                     for line in _differences(was, now))
    return CardChanges(tuple(added), tuple(other))


def _differences(was: Any, now: Any) -> list[str]:
    """'path: old -> new' for each leaf that differs (lists of equal length compared item by item)."""
    if isinstance(was, dict) and isinstance(now, dict):
        lines: list[str] = []
        for key in sorted(set(was) | set(now)):
            if was.get(key) != now.get(key):
                lines.extend(f"{key}{line}" if line.startswith(":") else f"{key}.{line}"
                             for line in _differences(was.get(key), now.get(key)))
        return lines
    return [f": {_short(was)} -> {_short(now)}"]


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= 80 else text[:77] + "..."
