"""The key of a tree ensemble's bucket: its statement rebuilt from the card, set up by the bank alone at
commit, or by a phase-2 ceremony that replaces it.

The statement of bucket `t<T>-d<D>-bound` is `statement.trees` for the shape the card describes
(`ModelCard.tree_shape_json`); the commitment binds that shape's digest, so a ceremony is always for the
committed shape. Installing a ceremony's key replaces the bucket's key on the card (same shape, same
constraint system, another verifying key and setup record): the card's digest changes, and the service
publishes the new card in its log like any other.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from circuits.builder import ConstraintSystem
from circuits.groth16 import r1cs_digest, setup, vk_digest
from circuits.relation import R1CS
from circuits.relation_arrays import ArrayR1CS
from circuits.snarkjs.ceremony import Ceremony
from circuits.snarkjs.json_formats import verifying_key_to_json
from circuits.snarkjs.zkey_read import read_zkey
from commitments.card import TREE_ENSEMBLE, CircuitBucket, ModelCard, SetupRecord, TreeBucketShape, tree_bucket_name
from fairness.errors import ModelError
from statement.trees import TreeShape, build_tree_statement

from .bucket_keys import ZKEY_FILE, InstalledKeys, save_keys, setup_record
from .workspace import ModelWorkspace

RELATION_FILE = "relation.npz"
TREE_SHAPE_KEY = "tree_shape"  # a tree bucket's ceremony names its shape under this metadata key
Progress = Callable[[str], None]


def tree_relation(shape: TreeShape) -> R1CS:
    """The tree statement's constraint system for `shape` (no values)."""
    cs = ConstraintSystem(with_values=False)
    build_tree_statement(cs, shape)
    return cs.compile(wire_names=False)


def shape_from_json(data: Any) -> TreeShape:
    """A tree shape from its JSON (a card's `tree_shape_json`, or `TreeShape.to_json`)."""
    if not isinstance(data, dict):
        raise ModelError("a tree statement shape is a JSON object")
    fields = {k: v for k, v in data.items() if k != "format"}
    try:
        return TreeShape(**{**fields, "box_lower": tuple(fields["box_lower"]), "box_upper": tuple(fields["box_upper"]),
                            "sensitive_columns": tuple(fields["sensitive_columns"]),
                            "slices": tuple(tuple(s) for s in fields["slices"])})
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"not a tree statement shape ({exc})") from None


def shape_from_card(card: ModelCard, bucket: CircuitBucket) -> TreeShape:
    return shape_from_json(card.tree_shape_json(bucket))


def card_bucket(shape: TreeShape, relation: R1CS, keys: InstalledKeys) -> CircuitBucket:
    """The card's entry for a tree statement's key."""
    return CircuitBucket(
        bucket=tree_bucket_name(shape.n_trees, shape.depth),
        shape=TreeBucketShape(kind=TREE_ENSEMBLE, n_trees=shape.n_trees, depth=shape.depth,
                              value_bits=shape.value_bits, threshold_bits=shape.threshold_bits,
                              value_range_bits=shape.value_range_bits, eps_cap=shape.eps_cap),
        n_constraints=relation.n_constraints, n_public=relation.n_public, r1cs_digest=r1cs_digest(relation),
        verifying_key_digest=vk_digest(keys.verifying_key), verifying_key=verifying_key_to_json(keys.verifying_key),
        setup=keys.setup)


def install_keys(files: ModelWorkspace, shape: TreeShape, relation: R1CS, keys: InstalledKeys,
                 backend: Any) -> CircuitBucket:
    """The keys and the relation in the model directory (keys/<bucket>/); the bucket the card lists."""
    bucket = card_bucket(shape, relation, keys)
    directory = files.keys_dir(bucket.bucket)
    save_keys(directory, shape.to_json(), keys, backend)
    ArrayR1CS.from_r1cs(relation).save(directory / RELATION_FILE, bucket.r1cs_digest)
    return bucket


def single_party_keys(shape: TreeShape, backend: Any, progress: Progress) -> tuple[R1CS, InstalledKeys]:
    """The bank draws every secret itself: whoever ran it can forge proofs (the card says so)."""
    progress(f"building the statement for {shape.n_trees} trees of depth {shape.depth} ...")
    relation = tree_relation(shape)
    progress(f"  {relation.n_constraints:,} constraints; setting up its key (single party) ...")
    pk, vk = setup(relation, backend)
    return relation, InstalledKeys(pk, vk, SetupRecord(method="single-party"))


# --------------------------------------------------------------------------------------------- ceremonies


def the_bucket(card: ModelCard, name: str | None) -> CircuitBucket:
    (bucket,) = card.circuits  # a tree ensemble's card lists one bucket
    if name is not None and name != bucket.bucket:
        raise ModelError(f"model {card.model_id} is a tree ensemble with one bucket, {bucket.bucket}, not {name}")
    return bucket


def init_ceremony(files: ModelWorkspace, bucket_name: str | None, ptau: Path, out: Path, backend: Any,
                  progress: Progress) -> tuple[Ceremony, CircuitBucket]:
    """A phase-2 ceremony for the committed tree statement (its circuit and initial key, from phase 1)."""
    card = files.card()
    bucket = the_bucket(card, bucket_name)
    shape = shape_from_card(card, bucket)
    progress(f"building the statement of bucket {bucket.bucket}")
    relation = tree_relation(shape)
    metadata = {"model_id": card.model_id, "commitment": card.commitment, "bucket": bucket.bucket,
                TREE_SHAPE_KEY: json.loads(json.dumps(shape.to_json()))}
    ceremony = Ceremony.init(out, relation, ptau, backend, label=f"{card.model_id} {bucket.bucket}",
                             metadata=metadata, progress=progress)
    return ceremony, bucket


def ceremony_tree_relation(ceremony: Ceremony) -> R1CS:
    """The tree statement a ceremony names, rebuilt and checked against its circuit."""
    relation = tree_relation(shape_from_json(ceremony.state.metadata.get(TREE_SHAPE_KEY)))
    if r1cs_digest(relation) != ceremony.state.r1cs_digest:
        raise ModelError(f"{ceremony.directory}: its circuit is not the tree statement of the shape it names")
    return relation


def install_ceremony(files: ModelWorkspace, ceremony: Ceremony, backend: Any, *, ptau: Path | None = None,
                     progress: Progress = lambda _: None) -> ModelCard:
    """Verify the ceremony end to end and make its final key the bucket's (the card re-written)."""
    card = files.card()
    bucket = the_bucket(card, ceremony.state.metadata.get("bucket"))
    shape = shape_from_card(card, bucket)
    if shape_from_json(ceremony.state.metadata.get(TREE_SHAPE_KEY)) != shape or \
            ceremony.state.metadata.get("commitment") != card.commitment:
        raise ModelError(f"{ceremony.directory} is a ceremony for another statement than this model's committed one")
    if not ceremony.state.contributors:
        raise ModelError(f"{ceremony.directory} has no contribution yet: its key is degenerate")
    relation = ceremony_tree_relation(ceremony)
    ceremony.verify(backend, ptau_path=ptau, r1cs=relation, progress=progress)
    pk, vk = read_zkey(ceremony.current_key_path, relation, backend)
    new = install_keys(files, shape, relation, InstalledKeys(pk, vk, setup_record(ceremony, backend)), backend)
    shutil.copyfile(ceremony.current_key_path, files.keys_dir(new.bucket) / ZKEY_FILE)  # for auditors
    updated = card.model_copy(update={"circuits": (new,)})
    files.save_card(updated)
    return updated
