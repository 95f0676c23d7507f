"""The committed models this service serves, and one prover per model and worker thread.

A model is registered once by the name of its directory under the models
directory; registration publishes its card in the transparency log. The card
customers see is always the published one, read from the database, never the
file on disk: recommitting the directory (`fairproof commit --force`) changes
nothing customers see or are proved against until an admin publishes the new
card, which appends it to the log where every monitor sees the change. Until
then the model keeps its published weights if they are loaded, and is
unavailable otherwise (the directory no longer holds them).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from commitments.card import ModelCard
from commitments.card_migration import is_legacy, legacy_digest
from fairness.errors import FairnessError
from fairness.fixed_point import FixedPointModel, IntVector
from fairness.trees.ensemble import TreeModel
from offline_precompute.certify import query_from_record
from offline_precompute.db import Database, open_database, resolve_store_url
from prover_service.workspace import ModelWorkspace

from .database import ServiceDatabase
from .errors import BadRequest, Conflict, NotFound, Unavailable
from .publication import publish_added_buckets, publish_card
from .schema import PublishedCard, ServedModel
from .settings import Settings
from .transparency_log import TransparencyLog


@dataclass(frozen=True)
class LoadedModel:
    """A served model's weights, loaded once per published commitment."""

    model_id: str
    commitment: str
    workspace: ModelWorkspace
    model: FixedPointModel

    def decide(self, record: Mapping[str, Any]) -> tuple[IntVector, int]:
        """The customer's query (the card's public preprocessing) and the model's decision."""
        try:
            query = query_from_record(self.workspace.artifact, self.model, dict(record))
        except FairnessError as exc:
            raise BadRequest(f"record refused: {exc}") from None
        return query, self.model.net.decision(query)


@dataclass(frozen=True)
class LoadedTreeModel:
    """A served tree ensemble, loaded once per published commitment: a customer's record is encoded by the
    card's schema, as every verifier encodes it."""

    model_id: str
    commitment: str
    workspace: ModelWorkspace
    model: TreeModel
    card: ModelCard

    def decide(self, record: Mapping[str, Any]) -> tuple[IntVector, int]:
        from commitments.record import RecordError, encode_record

        try:
            query = self.model.check_query(encode_record(self.card, dict(record)))
        except (FairnessError, RecordError) as exc:
            raise BadRequest(f"record refused: {exc}") from None
        return query, self.model.ensemble.decision(query)


class ModelRegistry:
    def __init__(self, db: ServiceDatabase, settings: Settings, log: TransparencyLog, backend=None):
        self.db = db
        self.log = log
        self.settings = settings
        self.backend = backend
        self._loaded: dict[str, LoadedModel] = {}
        self._cards: dict[str, ModelCard] = {}  # by digest: a published card never changes
        self._stores: dict[str, Database] = {}
        self._provers: dict[tuple[str, int, bool, str], Any] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------- registration
    def _open(self, root: Path) -> ModelWorkspace:
        return ModelWorkspace.open(root, secrets_dir=self.settings.secrets_dir)

    def _check_salt(self, workspace: ModelWorkspace) -> None:
        """A card without its salt cannot be proved against: refuse it where salts are visible (a
        process that proves, or one given the secrets directory). An API that never proves is not
        given the salts; its workers refuse such a model's jobs with the same reason."""
        if self.settings.proves_here or self.settings.secrets_dir is not None:
            workspace.salt()

    def register(self, directory: str) -> LoadedModel:
        root = self._model_directory(directory)
        try:
            workspace = self._open(root)
            card = workspace.card()
            self._check_salt(workspace)
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
                served = ServedModel(model_id=card.model_id, directory=directory, commitment=card.commitment,
                                     card_digest=card.digest())
                session.add(served)
                session.flush()
                publish_card(session, self.log, served, card)
        return self.get(card.model_id)

    def publish(self, model_id: str) -> tuple[ModelCard, bool]:
        """Publish the card now in the model's directory (an admin's decision); (card, whether it is new)."""
        with self.db.sessions() as session:
            row = session.get(ServedModel, model_id)
            if row is None:
                raise NotFound(f"unknown model {model_id!r}")
            directory = row.directory
        try:
            workspace = self._open(self._model_directory(directory))
            card = workspace.card()
            self._check_salt(workspace)
        except FairnessError as exc:
            raise BadRequest(f"cannot publish the card of {model_id}: {exc}") from None
        if card.model_id != model_id:
            raise Conflict(f"the directory {directory} now holds model {card.model_id}, not {model_id}")
        with self.db.transaction() as session:
            served = session.get(ServedModel, model_id, with_for_update=True)
            if served.card_digest == card.digest():
                return card, False
            publish_card(session, self.log, served, card)
        self._forget(model_id)
        return card, True

    def card(self, model_id: str) -> ModelCard:
        """The model's current published card."""
        with self.db.sessions() as session:
            row = session.get(ServedModel, model_id)
            if row is None:
                raise NotFound(f"unknown model {model_id!r}")
            digest = row.card_digest
            cached = self._cards.get(digest)
            if cached is not None:
                return cached
            published = session.get(PublishedCard, digest)
            text = None if published is None else published.card_json
        if text is None:  # registered before this service kept a log
            return self._publish_registered(model_id)
        if is_legacy(text):  # published as version 2: its re-publication as version 3 goes in the log
            return self._publish_migrated(model_id, digest)
        card = ModelCard.from_json(text)
        if card.digest() != digest:
            raise Unavailable(f"model {model_id}: the stored card does not hash to its digest")
        with self._lock:
            return self._cards.setdefault(digest, card)

    def _publish_registered(self, model_id: str) -> ModelCard:
        """Log the card of a model registered before the log existed: the commitment its registration
        pinned, and nothing else, may be published without an admin."""
        card = self.get(model_id).workspace.card()
        with self.db.transaction() as session:
            served = session.get(ServedModel, model_id, with_for_update=True)
            if served.commitment != card.commitment or served.card_digest != card.digest():
                raise Unavailable(f"model {model_id}: its card is not in the transparency log and the card on "
                                  "disk is not the registered one; an admin must publish it")
            if session.get(PublishedCard, served.card_digest) is None:
                publish_card(session, self.log, served, card)
        return self.card(model_id)

    def _publish_migrated(self, model_id: str, legacy: str) -> ModelCard:
        """Publish the version-3 card on disk in place of the served version-2 card it re-publishes (the same
        fields: its version-2 digest is the served one); nothing else is published without an admin."""
        try:
            card = self.get(model_id).workspace.card()
        except FairnessError as exc:
            raise Unavailable(f"model {model_id}: its published card is version 2 and the card on disk cannot be "
                              f"read ({exc})") from None
        if legacy_digest(card) != legacy:
            raise Unavailable(f"model {model_id}: its published card is version 2; re-publish the same card as "
                              "version 3 with `fairproof card migrate --model DIR`")
        with self.db.transaction() as session:
            served = session.get(ServedModel, model_id, with_for_update=True)
            if served.card_digest == legacy:
                publish_card(session, self.log, served, card)
        self._forget(model_id)
        return self.card(model_id)

    def refresh(self, model_id: str) -> None:
        """Publish the directory's card if it only adds buckets to the served one (after key setup)."""
        loaded = self.get(model_id)
        card = loaded.workspace.card()
        with self.db.transaction() as session:
            publish_added_buckets(session, self.log, card)

    def _forget(self, model_id: str) -> None:
        with self._lock:
            self._loaded.pop(model_id, None)
            store = self._stores.pop(model_id, None)
            for key in [k for k in self._provers if k[0] == model_id]:
                del self._provers[key]
        if store is not None:
            store.dispose()

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
        """The model under its published commitment (loaded once; a publication reloads it)."""
        with self.db.sessions() as session:
            row = session.get(ServedModel, model_id)
            if row is None:
                raise NotFound(f"unknown model {model_id!r}")
            directory, commitment = row.directory, row.commitment
        with self._lock:
            loaded = self._loaded.get(model_id)
        if loaded is not None and loaded.commitment == commitment:
            return loaded
        if loaded is not None:
            self._forget(model_id)  # published under a new commitment by another process
        try:
            workspace = self._open(self._model_directory(directory))
            on_disk = workspace.card().commitment
            if on_disk != commitment:
                raise Unavailable(f"model {model_id}: its directory holds commitment {on_disk[:16]}..., the "
                                  f"published card {commitment[:16]}...; an admin must publish the new card")
            loaded = (self._tree_model(model_id, commitment, workspace) if workspace.is_tree_ensemble
                      else LoadedModel(model_id, commitment, workspace, workspace.fixed_point()))
        except (FairnessError, OSError) as exc:
            raise Unavailable(f"model {model_id} cannot be loaded: {exc}") from None
        with self._lock:
            return self._loaded.setdefault(model_id, loaded)

    @staticmethod
    def _tree_model(model_id: str, commitment: str, workspace: ModelWorkspace) -> LoadedTreeModel:
        from prover_service.tree_proving import TreeWorkspace

        return LoadedTreeModel(model_id, commitment, workspace, TreeWorkspace(workspace).model(), workspace.card())

    def store(self, model_id: str) -> Database:
        with self._lock:
            store = self._stores.get(model_id)
        if store is None:
            loaded = self.get(model_id)
            store = open_database(resolve_store_url(self.settings.store_url or None, loaded.workspace.root))
            with self._lock:
                store = self._stores.setdefault(model_id, store)
        return store

    def prover(self, model_id: str, *, sets_up_keys: bool = False, radius: str | None = None):
        """This thread's prover for the model in radius mode `radius` (None: the service's FAIRPROOF_RADIUS);
        provers cache keys and LP results, and are not shared.

        Only admin jobs (`sets_up_keys`) set up a missing bucket; a customer's job meets `KeysNotReady`."""
        radius = radius or self.settings.radius
        key = (model_id, threading.get_ident(), sets_up_keys, radius)
        with self._lock:
            prover = self._provers.get(key)
        if prover is None:
            loaded = self.get(model_id)
            prover = self._new_prover(model_id, loaded, sets_up_keys, radius)
            if prover.card.commitment != loaded.commitment:
                raise Unavailable(f"model {model_id}: its directory was recommitted; an admin must publish the "
                                  "new card before it is proved against")
            with self._lock:
                prover = self._provers.setdefault(key, prover)
        return prover

    def _new_prover(self, model_id: str, loaded: LoadedModel | LoadedTreeModel, sets_up_keys: bool, radius: str):
        from prover_service.bucket_keys import DeferredKeySetup, key_setup_for
        from prover_service.proving import Prover
        from prover_service.tree_proving import TreeProver, TreeWorkspace

        if isinstance(loaded, LoadedTreeModel):  # one bucket, set up at commit: nothing to set up here
            return TreeProver(TreeWorkspace(loaded.workspace), self.backend)
        setup = (key_setup_for(self.settings.ptau, self.settings.single_party_setup) if sets_up_keys
                 else DeferredKeySetup())
        return Prover(loaded.workspace, self.store(model_id), self.backend, key_setup=setup,
                      radius=radius, exact_budget=self.settings.exact_budget,
                      exact_max_constraints=self.settings.exact_max_constraints,
                      max_hot_keys=self.settings.max_hot_keys, bucket_growth=self.settings.bucket_growth,
                      per_slice=self.settings.per_slice and radius == "exact")

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.dispose()
            self._stores.clear()
            self._provers.clear()
