"""Commit to a model in its workspace: salt, commitment, card."""
from __future__ import annotations

from commitments.card import ModelCard, PersistenceLensCard, SpreadLensCard, scaled_delta
from commitments.publish import build_card
from fairness.bitwidth import check_no_wrap
from fairness.certificate import DEFAULT_EPS_BITS
from fairness.errors import ModelError
from fairness.fixed_point import DEFAULT_SCALE_BITS, to_fixed_point
from fairness.spread import DEFAULT_BUCKET_WIDTH, bucket_width_at, default_favourable_class
from statement.adapter import new_salt

from .workspace import ModelWorkspace


def commit_model(workspace: ModelWorkspace, *, model_id: str | None = None, scale_bits: int | None = None,
                 eps_bits: int | None = None, description: str = "", force: bool = False,
                 spread: bool = True, favourable_label: str | None = None,
                 bucket_width: float = DEFAULT_BUCKET_WIDTH, persistence_delta: float | None = None) -> ModelCard:
    """Commit and write the card. `spread`: every certificate also proves the counterfactual spread
    (fairness.spread) for `favourable_label` (default: the dataset's favourable class) with margin
    buckets `bucket_width` logits wide. `persistence_delta` (standardised units): every certificate also
    proves persistent-bias bounds (fairness.persistence) over the box of the numeric features within
    delta, the default of requests that name none (None: no such lens)."""
    if workspace.is_committed and not force:
        raise ModelError(f"{workspace.root} is already committed (card {workspace.card().commitment[:16]}...); "
                         "pass --force to replace the commitment")
    scale = DEFAULT_SCALE_BITS if scale_bits is None else scale_bits
    eps = DEFAULT_EPS_BITS if eps_bits is None else eps_bits
    if not 1 <= scale <= 32 or not 1 <= eps <= 32:
        raise ModelError("scale and eps bits must lie in 1..32")
    model = to_fixed_point(workspace.artifact, scale)
    check_no_wrap(model)
    lens = persistence = None
    labels = tuple(workspace.artifact.class_labels)
    if favourable_label is not None and favourable_label not in labels:
        raise ModelError(f"favourable class {favourable_label!r} is not one of the model's classes {labels}")
    favourable = labels.index(favourable_label) if favourable_label else default_favourable_class(labels)
    if persistence_delta is not None:
        persistence = _persistence_lens(workspace, model, favourable, persistence_delta)
    if spread:
        try:
            width = bucket_width_at(model, bucket_width)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        lens = SpreadLensCard(favourable_class=favourable, bucket_width=width)
    salt = new_salt()
    card = build_card(model_id or workspace.root.resolve().name, workspace.artifact, model, salt,
                      eps_bits=eps, description=description, spread=lens, persistence=persistence)
    # Salt first: a card must never name a commitment whose salt was lost.
    workspace.save_salt(salt)
    workspace.save_card(card)
    return card


def _persistence_lens(workspace: ModelWorkspace, model, favourable: int, delta: float) -> PersistenceLensCard:
    if model.net.n_classes != 2:
        raise ModelError("the persistence lens needs a two-class model")
    columns = tuple(j for j in workspace.artifact.numeric_columns if model.box_lower[j] < model.box_upper[j])
    if not columns:
        raise ModelError("the persistence lens moves numeric features, and this model has none")
    cap = max(model.box_upper[j] - model.box_lower[j] for j in columns)
    try:
        scaled = scaled_delta(delta, model.scale_bits)
    except ValueError as exc:
        raise ModelError(str(exc)) from None
    if scaled > cap:
        raise ModelError(f"the persistence delta {delta:g} exceeds {cap / (1 << model.scale_bits):g}, the widest "
                         "numeric feature's domain (standardised units)")
    return PersistenceLensCard(favourable_class=favourable, columns=columns, default_delta=scaled)
