"""A model's directory on the bank side, and what lives in it.

    MODEL_DIR/
      model.json, weights.npz     the float model (fairproof train / import-model); a tree ensemble's
                                  directory holds trees.json instead (prover_service.tree_proving)
      secret/salt                 the commitment's salt: never leaves the bank (mode 0600)
      card.json                   the public model card (fairproof commit)
      keys/<bucket>/              proving key, verification_key.json, phase-2 transcript
      precompute.sqlite           the default precompute store

Everything secret is under `secret/`; everything a customer may see is
`card.json` and the verifying keys it embeds. A deployment whose services
must not all see the salts keeps them apart instead: with a secrets
directory (FAIRPROOF_SECRETS_DIR), the salt of MODEL_DIR is
SECRETS_DIR/<name of MODEL_DIR>/salt, and only the processes that prove
mount it.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from circuits.field import R
from commitments.canonical import NonCanonical
from commitments.card import LEGACY_CARD_MESSAGE, ModelCard
from fairness.errors import ModelError
from fairness.fixed_point import FixedPointModel, to_fixed_point
from fairness.model import ModelArtifact, load_artifact


def write_atomically(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Replace `path` in one step, so a crash never leaves half a file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


SECRETS_DIR_ENV = "FAIRPROOF_SECRETS_DIR"
TREES_FILE = "trees.json"  # a tree ensemble's directory (prover_service.tree_proving) holds this, not model.json


@dataclass(frozen=True)
class ModelWorkspace:
    root: Path
    # Salts kept apart from the model directories (see the module's docstring); None: root/secret.
    secrets_root: Path | None = None

    @classmethod
    def open(cls, directory: str | os.PathLike[str], secrets_dir: str | os.PathLike[str] | None = None
             ) -> "ModelWorkspace":
        """The model directory `directory`; its salt under `secrets_dir` if given, else under
        $FAIRPROOF_SECRETS_DIR if set, else in the directory's own secret/."""
        root = Path(directory)
        if not (root / "model.json").is_file() and not (root / TREES_FILE).is_file():
            raise ModelError(f"{root} is not a model directory (no model.json): train or import a model first")
        if secrets_dir is None:
            secrets_dir = os.environ.get(SECRETS_DIR_ENV) or None
        return cls(root, Path(secrets_dir) if secrets_dir is not None else None)

    @property
    def card_path(self) -> Path:
        return self.root / "card.json"

    @property
    def secret_dir(self) -> Path:
        if self.secrets_root is None:
            return self.root / "secret"
        return self.secrets_root / self.root.resolve().name

    @property
    def salt_path(self) -> Path:
        return self.secret_dir / "salt"

    def keys_dir(self, bucket: str) -> Path:
        return self.root / "keys" / bucket

    @cached_property
    def artifact(self) -> ModelArtifact:
        return load_artifact(self.root)

    @property
    def is_tree_ensemble(self) -> bool:
        return (self.root / TREES_FILE).is_file()

    @property
    def is_committed(self) -> bool:
        return self.card_path.is_file() and self.salt_path.is_file()

    def card(self) -> ModelCard:
        if not self.card_path.is_file():
            raise ModelError(f"{self.root} has no model card: run `fairproof commit --model {self.root}` first")
        try:
            return ModelCard.from_json(self.card_path.read_bytes())
        except NonCanonical as exc:
            if str(exc) == LEGACY_CARD_MESSAGE:
                raise ModelError(f"{self.card_path}: card_version 2 (from before RFC 8785 card digests): run "
                                 f"`fairproof card migrate --model {self.root}`") from None
            raise ModelError(f"{self.card_path} is not a valid model card ({exc}); a card written by an older "
                             "version must be recommitted: `fairproof commit --force`") from None

    def save_card(self, card: ModelCard) -> None:
        write_atomically(self.card_path, card.published_json())

    def salt(self) -> int:
        try:
            value = int(self.salt_path.read_text().strip())
        except FileNotFoundError:
            inside = self.root / "secret" / "salt"
            if self.secrets_root is not None and inside.is_file():
                raise ModelError(f"{self.salt_path} is missing: the salt of {self.root} is still in {inside}; "
                                 f"move it to the secrets directory {self.secrets_root}") from None
            raise ModelError(f"{self.root} has no salt at {self.salt_path}: run `fairproof commit --model "
                             f"{self.root}` first") from None
        except ValueError:
            raise ModelError(f"{self.salt_path} is corrupt (not an integer)") from None
        if not 0 <= value < R:
            raise ModelError(f"{self.salt_path} is corrupt (not a field element)")
        return value

    def save_salt(self, salt: int) -> None:
        self.salt_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomically(self.salt_path, f"{salt}\n", mode=0o600)

    def fixed_point(self) -> FixedPointModel:
        """The committed integer model, at the card's scale."""
        return to_fixed_point(self.artifact, self.card().scale_bits)
