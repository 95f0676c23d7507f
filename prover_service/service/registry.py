"""The committed models this service serves, and one prover per model and worker thread.

A model is registered once by the name of its directory under the models
directory; registration pins its commitment. A model id never changes
commitment afterwards: customers pin it, and a recommitted model must be
registered under a new id.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from commitments.card import ModelCard
from fairness.errors import FairnessError
from fairness.fixed_point import FixedPointModel, IntVector
from offline_precompute.certify import query_from_record
from offline_precompute.db import Database, open_database, resolve_store_url
from prover_service.workspace import ModelWorkspace

from .database import ServiceDatabase
from .errors import BadRequest, Conflict, NotFound, Unavailable
from .schema import ServedModel
from .settings import Settings


@dataclass(frozen=True)
class LoadedModel:
    model_id: str
    commitment: str
    workspace: ModelWorkspace
    model: FixedPointModel
    # The parsed card and the (mtime, size) of the file it came from: re-read only when the file changes.
    _card_cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def card(self) -> ModelCard:
        """The card as published now (new circuit buckets appear over the model's life)."""
        try:
            stat = self.workspace.card_path.stat()
        except OSError as exc:
            raise Unavailable(f"model {self.model_id}: its card cannot be read ({exc.strerror})") from None
        version = (stat.st_mtime_ns, stat.st_size)
        cached = self._card_cache.get("card")
        if cached is not None and cached[0] == version:
            return cached[1]
        card = self.workspace.card()
        self._card_cache["card"] = (version, card)
        if card.commitment != self.commitment:
            raise Unavailable(f"model {self.model_id}: its card on disk names another commitment than the one "
                              "registered; a recommitted model must be registered under a new id")
        return card

    def decide(self, record: Mapping[str, Any]) -> tuple[IntVector, int]:
        """The customer's query (the card's public preprocessing) and the model's decision."""
        try:
            query = query_from_record(self.workspace.artifact, self.model, dict(record))
        except FairnessError as exc:
            raise BadRequest(f"record refused: {exc}") from None
        return query, self.model.net.decision(query)


class ModelRegistry:
    def __init__(self, db: ServiceDatabase, settings: Settings, backend=None):
        self.db = db
        self.settings = settings
        self.backend = backend
        self._loaded: dict[str, LoadedModel] = {}
        self._stores: dict[str, Database] = {}
        self._provers: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------- registration
    def register(self, directory: str) -> LoadedModel:
        root = self._model_directory(directory)
        try:
            workspace = ModelWorkspace.open(root)
            card = workspace.card()
            workspace.salt()  # a card without its salt cannot be proved against
        except FairnessError as exc:
            raise BadRequest(f"cannot register {directory}: {exc}") from None
        with self.db.transaction() as session:
            existing = session.get(ServedModel, card.model_id)
            if existing is not None:
                if existing.commitment != card.commitment:
                    raise Conflict(f"model id {card.model_id} is registered with commitment "
                                   f"{existing.commitment[:16]}...; {directory} has {card.commitment[:16]}...: "
                                   "a recommitted model needs a new model id")
                if existing.directory != directory:
                    raise Conflict(f"model id {card.model_id} is registered from directory {existing.directory}")
            else:
                session.add(ServedModel(model_id=card.model_id, directory=directory, commitment=card.commitment,
                                        card_digest=card.digest()))
        return self.get(card.model_id)

    def _model_directory(self, name: str) -> Path:
        base = self.settings.models_dir.resolve()
        root = (base / name).resolve()
        if root.parent != base:  # the name is checked by the API too; this guards every other caller
            raise BadRequest(f"model directory {name!r} must be a plain name inside the models directory")
        if not root.is_dir():
            raise NotFound(f"no model directory {name!r} in the models directory")
        return root

    # --------------------------------------------------------------- lookup
    def model_ids(self) -> list[str]:
        with self.db.sessions() as session:
            return list(session.scalars(ServedModel.__table__.select().with_only_columns(ServedModel.model_id)
                                        .order_by(ServedModel.model_id)))

    def get(self, model_id: str) -> LoadedModel:
        with self._lock:
            loaded = self._loaded.get(model_id)
        if loaded is not None:
            return loaded
        with self.db.sessions() as session:
            row = session.get(ServedModel, model_id)
            if row is None:
                raise NotFound(f"unknown model {model_id!r}")
            directory, commitment = row.directory, row.commitment
        try:
            workspace = ModelWorkspace.open(self._model_directory(directory))
            loaded = LoadedModel(model_id, commitment, workspace, workspace.fixed_point())
        except (FairnessError, OSError) as exc:
            raise Unavailable(f"model {model_id} cannot be loaded: {exc}") from None
        loaded.card()  # refuse a model whose card no longer matches its registration
        with self._lock:
            return self._loaded.setdefault(model_id, loaded)

    def store(self, model_id: str) -> Database:
        with self._lock:
            store = self._stores.get(model_id)
        if store is None:
            loaded = self.get(model_id)
            store = open_database(resolve_store_url(self.settings.store_url or None, loaded.workspace.root))
            with self._lock:
                store = self._stores.setdefault(model_id, store)
        return store

    def prover(self, model_id: str):
        """This thread's prover for the model (provers cache keys and LP results; they are not shared)."""
        from prover_service.bucket_keys import key_setup_for
        from prover_service.proving import Prover

        key = (model_id, threading.get_ident())
        with self._lock:
            prover = self._provers.get(key)
        if prover is None:
            loaded = self.get(model_id)
            prover = Prover(loaded.workspace, self.store(model_id), self.backend,
                            key_setup=key_setup_for(self.settings.ptau, self.settings.single_party_setup))
            with self._lock:
                prover = self._provers.setdefault(key, prover)
        return prover

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.dispose()
            self._stores.clear()
            self._provers.clear()
