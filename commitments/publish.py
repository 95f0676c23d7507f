"""Committing to a model and publishing its card (bank side).

The commitment is the salted Poseidon hash of the quantised weights defined
in `statement.commitment` (circomlib parameters, a documented chain
construction), bound to the model part of the statement shape. The salt is a
uniformly random field element: it makes the commitment hiding; Poseidon's
collision resistance makes it binding.
"""
from __future__ import annotations

from fairness.fixed_point import FixedPointModel, SensitiveDomain
from fairness.model import ModelArtifact
from fairness.schema import FeatureSchema
from statement import COMMITMENT_SCHEME, StatementShape
from statement.adapter import model_commitment, statement_shape

from .card import (ArchitectureCard, FeatureEncoding, ModelCard, PersistenceLensCard, SensitiveFeatureCard,
                   SpreadLensCard)


def model_shape(model: FixedPointModel, eps_bits: int) -> StatementShape:
    """A shape of the model (the bound radius's: it asks only the forward pass to fit the field, so a model
    that only the bound statement can prove is committed too); the commitment binds only its model part."""
    return statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=eps_bits, radius="bound")


def sensitive_card(f: SensitiveDomain) -> SensitiveFeatureCard:
    """A sensitive attribute as the card publishes it: one column and one integer per value as cards always
    had, or (an attribute spanning several inputs) its columns and one list of integers per value."""
    if f.width == 1:
        return SensitiveFeatureCard(name=f.name, column=f.column, values=f.values, labels=f.labels)
    return SensitiveFeatureCard(name=f.name, columns=f.columns, values=f.points, labels=f.labels)


def feature_encodings(artifact: ModelArtifact) -> tuple[FeatureEncoding, ...]:
    """Public preprocessing of a shipped dataset's model, so a customer can map their record to the query."""
    pre = artifact.preprocessor
    if isinstance(pre, FeatureSchema):
        return ()  # the card publishes the schema itself
    return tuple(
        FeatureEncoding(
            name=name,
            kind="sensitive" if name in pre.sensitive else kind,
            categories=tuple(pre.categories.get(name, ())),
            mean=float(mean),
            std=float(std),
        )
        for name, kind, mean, std in zip(pre.feature_names, pre.kinds, pre.means, pre.stds)
    )


def import_note(artifact: ModelArtifact) -> str | None:
    """What the card says of how an imported network was checked (None for a network trained here)."""
    check = (artifact.training or {}).get("import_check")
    if check is None:
        return None
    if not isinstance(check, dict):
        return "imported without a decision check: its decisions were not compared with the bank's own"
    text = (f"imported from {artifact.training.get('format', '?')}; decisions compared with the bank's own on "
            f"{check['rows']} rows (data sha256 {check['data_sha256']}, runtime {check['runtime']}): "
            f"{check['agree']} agree")
    if check.get("near_ties"):
        text += f", {check['near_ties']} differ only at a near tie (logit margin <= {check['tie_tolerance']:g}), accepted"
    return text


def build_card(model_id: str, artifact: ModelArtifact, model: FixedPointModel, salt: int, *,
               eps_bits: int, description: str = "", spread: SpreadLensCard | None = None,
               persistence: PersistenceLensCard | None = None) -> ModelCard:
    commitment = model_commitment(model, salt, model_shape(model, eps_bits))
    return ModelCard(
        model_id=model_id,
        description=description,
        dataset=artifact.dataset,
        feature_names=tuple(artifact.feature_names),
        features=feature_encodings(artifact),
        feature_schema=artifact.preprocessor if isinstance(artifact.preprocessor, FeatureSchema) else None,
        import_check=import_note(artifact),
        sensitive=tuple(sensitive_card(f) for f in model.sensitive),
        architecture=ArchitectureCard(
            n_inputs=model.net.n_inputs,
            hidden_sizes=model.net.hidden_sizes,
            n_classes=model.net.n_classes,
            class_labels=tuple(artifact.class_labels),
        ),
        scale_bits=model.scale_bits,
        eps_scale_bits=eps_bits,
        box_lower=model.box_lower,
        box_upper=model.box_upper,
        commitment=str(commitment),
        commitment_scheme=COMMITMENT_SCHEME,
        spread=spread,
        persistence=persistence,
    )
