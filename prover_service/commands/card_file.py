"""Reading a model card file on the command line: one strict parse, one clear error."""
from __future__ import annotations

from pathlib import Path

from commitments.card import ModelCard


def read_card(path: str | Path) -> ModelCard:
    """The card at `path`, strictly parsed; ModelError if unreadable, MalformedArtifact if not a card."""
    from circuits.errors import MalformedArtifact
    from commitments.canonical import NonCanonical
    from fairness.errors import ModelError

    try:
        return ModelCard.from_json(Path(path).read_bytes())
    except OSError as exc:
        raise ModelError(f"cannot read the card {path}: {exc.strerror or exc}") from None
    except NonCanonical as exc:
        raise MalformedArtifact(f"{path} is not a model card: {exc}") from None
