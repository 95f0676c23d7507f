"""Commit to a model in its workspace: salt, commitment, card."""
from __future__ import annotations

from commitments.card import ModelCard, SpreadLensCard
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
                 bucket_width: float = DEFAULT_BUCKET_WIDTH) -> ModelCard:
    """Commit and write the card. `spread`: every certificate also proves the counterfactual spread
    (fairness.spread) for `favourable_label` (default: the dataset's favourable class) with margin
    buckets `bucket_width` logits wide."""
    if workspace.is_committed and not force:
        raise ModelError(f"{workspace.root} is already committed (card {workspace.card().commitment[:16]}...); "
                         "pass --force to replace the commitment")
    scale = DEFAULT_SCALE_BITS if scale_bits is None else scale_bits
    eps = DEFAULT_EPS_BITS if eps_bits is None else eps_bits
    if not 1 <= scale <= 32 or not 1 <= eps <= 32:
        raise ModelError("scale and eps bits must lie in 1..32")
    model = to_fixed_point(workspace.artifact, scale)
    check_no_wrap(model)
    lens = None
    if spread:
        labels = tuple(workspace.artifact.class_labels)
        if favourable_label is not None and favourable_label not in labels:
            raise ModelError(f"favourable class {favourable_label!r} is not one of the model's classes {labels}")
        favourable = labels.index(favourable_label) if favourable_label else default_favourable_class(labels)
        try:
            width = bucket_width_at(model, bucket_width)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        lens = SpreadLensCard(favourable_class=favourable, bucket_width=width)
    salt = new_salt()
    card = build_card(model_id or workspace.root.resolve().name, workspace.artifact, model, salt,
                      eps_bits=eps, description=description, spread=lens)
    # Salt first: a card must never name a commitment whose salt was lost.
    workspace.save_salt(salt)
    workspace.save_card(card)
    return card
