"""`fairproof commit`: quantise a model, commit to its weights, publish the card."""
from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "commit",
        help="commit to a model's weights (salted Poseidon) and write its public model card",
        description="Quantise the model at a power-of-two scale, check no in-circuit quantity can wrap, draw a "
                    "random salt (kept in MODEL_DIR/secret/salt), and write the public card MODEL_DIR/card.json "
                    "with the commitment. Refuses to replace an existing commitment unless --force.",
    )
    p.add_argument("--model", required=True, metavar="DIR", help="model directory (model.json + weights.npz)")
    p.add_argument("--model-id", metavar="ID", help="public model identifier (default: the directory name)")
    p.add_argument("--scale-bits", type=int, default=None, metavar="S", help="fixed-point scale 2^S (default 16)")
    p.add_argument("--eps-bits", type=int, default=None, metavar="T", help="eps published as E/2^T (default 16)")
    p.add_argument("--description", default="", help="free text for the card")
    p.add_argument("--no-spread", dest="spread", action="store_false",
                   help="prove the radius alone (default: every certificate also proves the counterfactual "
                        "spread, each combination of sensitive values' decision and the number of score buckets)")
    p.add_argument("--favourable-class", metavar="LABEL",
                   help="the class whose logit margin the spread buckets (default: the favourable class the "
                        "bank named at import, else the dataset's favourable one)")
    p.add_argument("--bucket-width", type=float, default=0.2, metavar="W",
                   help="spread bucket width in logits (default 0.2: 0.05 in probability near 1/2)")
    p.add_argument("--persistence", type=float, default=None, metavar="DELTA",
                   help="every certificate also proves persistent bias: bounds on how the favourable class's "
                        "margin differs between the customer and each one-attribute counterfactual, the numeric "
                        "features moved by up to DELTA standard deviations in both (DELTA: requests' default)")
    p.add_argument("--force", action="store_true", help="replace an existing commitment (issued certificates then "
                                                        "no longer match the new card)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from prover_service.tree_proving import is_tree_model
    from prover_service.workspace import ModelWorkspace

    if is_tree_model(args.model):
        from .tree_commands import commit_trees_command

        return commit_trees_command(args)
    from prover_service.publishing import commit_model

    workspace = ModelWorkspace.open(args.model)
    card = commit_model(workspace, model_id=args.model_id, scale_bits=args.scale_bits, eps_bits=args.eps_bits,
                        description=args.description, force=args.force, spread=args.spread,
                        favourable_label=args.favourable_class or workspace.artifact.training.get("favourable_class"),
                        bucket_width=args.bucket_width,
                        persistence_delta=args.persistence)
    print(f"committed model {card.model_id}: commitment {card.commitment}")
    print(f"  scale 2^{card.scale_bits}, eps scale 2^{card.eps_scale_bits}, card digest {card.digest()}")
    if card.spread is not None:
        label = card.architecture.class_labels[card.spread.favourable_class]
        print(f"  lenses: radius and counterfactual spread (favourable class {label!r}, bucket width "
              f"{card.spread.bucket_width} / 2^{card.logit_scale_bits} logits)")
    if card.persistence is not None:
        names = ", ".join(card.feature_names[j] for j in card.persistence.columns)
        print(f"  lens: persistent bias over {names}, default delta {card.persistence.default_delta} / "
              f"2^{card.scale_bits} standard deviations")
    print(f"  card: {workspace.card_path}   salt: {workspace.salt_path} (secret)", file=sys.stderr)
    return 0
