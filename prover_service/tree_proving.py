"""A tree ensemble in its model directory: the imported model, its commitment and card, its key, and a
customer's certificate proved as a bundle.

    MODEL_DIR/
      trees.json                  the integer ensemble as imported (fairness.trees.ensemble.TreeEnsemble)
      schema.json                 the bank's feature schema (the box and the sensitive values come from it)
      import.json                 how the import was checked against the bank's own pipeline
      secret/salt, card.json      as for a network (prover_service.workspace)
      keys/t<N>-d<D>-bound/       the statement's proving key, verification_key.json, relation.npz

The card says `architecture.kind: tree-ensemble` and lists one bucket, the tree statement of
`statement.trees` for the ensemble padded to its depth; its public inputs are the network certificate's,
so a bundle is verified by every verifier as any other.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from circuits.builder import ConstraintSystem
from circuits.groth16 import check_proof, prove, vk_digest
from circuits.relation_arrays import ArrayR1CS
from commitments.bundle import CertificateBundle, FlipSlice, Radius
from commitments.card import TREE_ENSEMBLE, ArchitectureCard, CircuitBucket, ModelCard
from commitments.publish import sensitive_card
from fairness.certificate_data import DEFAULT_EPS_BITS
from fairness.errors import CertificationError, ModelError
from fairness.schema import FeatureSchema
from fairness.trees.ensemble import LEAF, Tree, TreeEnsemble, TreeModel
from fairness.trees.radius import FLIP, TreeCertificate, certify_trees
from statement.adapter import new_salt
from statement.trees import build_tree_statement, tree_shape, tree_statement_inputs
from statement.trees.commitment import commit
from statement.trees.padding import pad_trees

from .bucket_keys import load_keys
from .importers.trees import tree_model
from .proving import Timings
from .tree_keys import RELATION_FILE, install_keys, shape_from_card, single_party_keys
from .workspace import TREES_FILE, ModelWorkspace, write_atomically

IMPORT_FILE = "import.json"
TREE_COMMITMENT_SCHEME = ("poseidon-chain/circomlib; [tag, shape digest, salt, packed base, features, thresholds, "
                          "leaf values] (statement.trees.commitment)")
Progress = Callable[[str], None]


def is_tree_model(directory: str | Path) -> bool:
    return (Path(directory) / TREES_FILE).is_file()


def save_tree_model(directory: str | Path, ensemble: TreeEnsemble, schema: FeatureSchema,
                    record: dict[str, Any]) -> Path:
    """An imported ensemble's model directory (the schema beside it, and how the import was checked)."""
    out = Path(directory)
    if (out / "model.json").exists():
        raise ModelError(f"{out} holds a network model: import the tree ensemble into another directory")
    write_atomically(out / TREES_FILE, json.dumps(ensemble.to_json()) + "\n")
    write_atomically(out / "schema.json", json.dumps(schema.model_dump(mode="json"), indent=2) + "\n")
    write_atomically(out / IMPORT_FILE, json.dumps(record, indent=2) + "\n")
    return out


@dataclass(frozen=True)
class TreeWorkspace:
    """A tree ensemble's model directory (the salt and the card kept as for a network)."""

    files: ModelWorkspace

    @classmethod
    def open(cls, directory: str | Path, secrets_dir: str | Path | None = None) -> "TreeWorkspace":
        root = Path(directory)
        if not is_tree_model(root):
            raise ModelError(f"{root} is not a tree-ensemble model directory (no {TREES_FILE}): import one first")
        return cls(ModelWorkspace.open(root, secrets_dir))

    @property
    def root(self) -> Path:
        return self.files.root

    def schema(self) -> FeatureSchema:
        return FeatureSchema.load(self.root / "schema.json")

    def import_record(self) -> dict[str, Any]:
        path = self.root / IMPORT_FILE
        return json.loads(path.read_text()) if path.is_file() else {}

    def model(self) -> TreeModel:
        try:
            ensemble = TreeEnsemble.from_json(json.loads((self.root / TREES_FILE).read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"{self.root / TREES_FILE} is not a tree ensemble ({exc})") from None
        return tree_model(ensemble, self.schema())


def import_note(record: dict[str, Any]) -> str:
    """What the card says of how the ensemble was checked against the bank's own pipeline."""
    check = record.get("import_check")
    if not isinstance(check, dict):
        return "imported without a decision check: its decisions were not compared with the bank's own"
    return (f"imported from {record.get('source', '?')}; decisions compared with the bank's own pipeline "
            f"({check['runtime']}) on {check['rows']} rows: all agree")


# --------------------------------------------------------------------------------------------- commit


def commit_trees(workspace: TreeWorkspace, backend: Any, *, model_id: str | None = None,
                 eps_bits: int = DEFAULT_EPS_BITS,
                 depth: int | None = None, description: str = "", force: bool = False,
                 progress: Progress = lambda _: None) -> ModelCard:
    """Salt, commitment, the statement's key (set up by the bank alone) and the card."""
    files = workspace.files
    if files.is_committed and not force:
        raise ModelError(f"{workspace.root} is already committed; pass --force to replace the commitment")
    if not 1 <= eps_bits <= 32:
        raise ModelError("eps bits must lie in 1..32")
    model = workspace.model()
    deepest = max(tree_depth(t) for t in model.ensemble.trees)
    if depth is not None and depth < deepest:
        raise ModelError(f"the ensemble has trees of depth {deepest}: --depth {depth} cannot hold them")
    shape = tree_shape(model, max(depth or deepest, 1), eps_bits=eps_bits)
    salt = new_salt()
    commitment = commit(salt, pad_trees(model.ensemble.trees, shape.depth, shape.sensitive_columns),
                        model.ensemble.base, shape)
    relation, keys = single_party_keys(shape, backend, progress)
    bucket = install_keys(files, shape, relation, keys, backend)
    schema = workspace.schema()
    card = ModelCard(
        model_id=model_id or workspace.root.resolve().name, description=description, dataset=schema.name,
        feature_names=schema.feature_names, feature_schema=schema,
        import_check=import_note(workspace.import_record()),
        sensitive=tuple(sensitive_card(f) for f in model.sensitive),
        architecture=ArchitectureCard(n_inputs=shape.n_inputs, hidden_sizes=(), n_classes=shape.n_classes,
                                      class_labels=schema.class_labels, kind=TREE_ENSEMBLE),
        scale_bits=shape.scale_bits, eps_scale_bits=eps_bits, box_lower=shape.box_lower, box_upper=shape.box_upper,
        commitment=str(commitment), commitment_scheme=TREE_COMMITMENT_SCHEME, circuits=(bucket,))
    if shape_from_card(card, bucket) != shape:
        raise ModelError("internal: the card does not describe the statement it was set up for")
    files.save_salt(salt)  # salt first: a card must never name a commitment whose salt was lost
    files.save_card(card)
    return card


def tree_depth(tree: Tree) -> int:
    """The number of splits on the longest path from the root to a leaf."""
    def below(node: int) -> int:
        if tree.feature[node] == LEAF:
            return 0
        return 1 + max(below(tree.left[node]), below(tree.right[node]))
    return below(0)


# ---------------------------------------------------------------------------------------------- prove


@dataclass(frozen=True)
class TreeProof:
    """A proved certificate, as the network prover's `ProofResult` reports one."""

    bundle: CertificateBundle
    certificate: TreeCertificate
    n_constraints: int
    timings: Timings


class TreeProver:
    """Proves certificates of one committed tree ensemble; the key and relation are read once."""

    def __init__(self, workspace: TreeWorkspace, backend: Any):
        self.workspace, self.backend = workspace, backend
        self.card = workspace.files.card()
        if self.card.architecture.kind != TREE_ENSEMBLE or len(self.card.circuits) != 1:
            raise ModelError(f"{workspace.files.card_path} is not a tree ensemble's card with one bucket")
        self.bucket = self.card.circuits[0]
        self.shape = shape_from_card(self.card, self.bucket)
        self.model = workspace.model()
        self.salt = workspace.files.salt()
        directory = workspace.files.keys_dir(self.bucket.bucket)
        self.pk, self.vk, _ = load_keys(directory, backend)
        if vk_digest(self.vk) != self.bucket.verifying_key_digest:
            raise ModelError(f"the key in {directory} is not the one card.json publishes for {self.bucket.bucket}")
        relation = ArrayR1CS.load(directory / RELATION_FILE, self.bucket.r1cs_digest)
        if relation is None:
            raise ModelError(f"{directory / RELATION_FILE} is missing or not the card's statement: commit again")
        self.relation = relation

    def prove(self, query: tuple[int, ...], on_stage: Callable[[str, float], None] | None = None,
              persistence_delta: int | None = None) -> TreeProof:
        """The certificate of `query` proved (the network prover's call: a tree ensemble proves no lens, so
        `persistence_delta` must be None)."""
        if persistence_delta is not None:
            raise ModelError("a tree ensemble's certificates prove no persistence lens: a request takes no delta")
        stage = on_stage or (lambda _name, _progress: None)
        stage("certify", 0.0)
        t0 = time.perf_counter()
        cert = certify_trees(self.model, query, eps_bits=self.shape.eps_bits)
        if cert.status != FLIP and cert.eps == 0:
            raise CertificationError(
                "no positive radius can be proved for this customer: changing the sensitive attributes alone "
                "does not change the decision, but the bound finds leaves of another decision within every "
                "distance (the tree bound certifies eps = 0)")
        t1 = time.perf_counter()
        stage("witness", 0.1)
        public, witness = tree_statement_inputs(self.model, self.shape, cert.query, cert.eps, self.salt)
        if str(public.commitment) != self.card.commitment:
            raise ModelError("the model directory's ensemble or salt is not the one card.json commits to")
        cs = ConstraintSystem(with_values=True, keep_constraints=False)
        build_tree_statement(cs, self.shape, public, witness)
        w = cs.witness()
        t2 = time.perf_counter()
        stage("prove", 0.4)
        proof = prove(self.pk, self.relation, w, self.backend)
        t3 = time.perf_counter()
        if not check_proof(self.vk, public.signals(), proof, self.backend).ok:
            raise CertificationError("internal: the proof does not verify under the card's key")
        bundle = tree_bundle(self.card, self.bucket, self.model, cert, public.signals(), proof)
        return TreeProof(bundle, cert, self.bucket.n_constraints, Timings(t1 - t0, t2 - t1, t3 - t2))

    def decide(self, query: tuple[int, ...]) -> int:
        return self.model.ensemble.decision(self.model.check_query(query))


def tree_bundle(card: ModelCard, bucket: CircuitBucket, model: TreeModel, cert: TreeCertificate,
                signals: list[int], proof: Any) -> CertificateBundle:
    """The bundle of a proved tree certificate, read back as a customer reads it."""
    import uuid
    from datetime import datetime, timezone

    from circuits.groth16 import proof_to_bytes
    from circuits.snarkjs.json_formats import proof_to_json, public_to_json
    from commitments.claims import ClaimError, bundle_claims

    flip = None
    if cert.status == FLIP:
        values, labels = card.slice_labels(cert.flip_slice or 0)
        flip = FlipSlice(index=cert.flip_slice or 0, values=values, labels=labels)
    bundle = CertificateBundle(
        certificate_id=str(uuid.uuid4()), issued_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        model_id=card.model_id, card_digest=card.digest(), bucket=bucket.bucket, query=cert.query,
        decision=cert.decision, decision_label=card.architecture.class_labels[cert.decision],
        status="counterfactual_flip" if cert.status == FLIP else "certified", flip_slice=flip,
        eps=Radius(numerator=cert.eps, scale_bits=cert.eps_bits,
                   capped=cert.status != FLIP and cert.eps == bucket.shape.eps_cap),
        proof=proof_to_json(proof), public_signals=tuple(public_to_json(signals)),
        proof_hex=proof_to_bytes(proof).hex())
    try:
        bundle_claims(bundle, card)
    except ClaimError as exc:
        raise CertificationError(f"internal: bundle contradicts its own public signals: {exc}") from exc
    return bundle
