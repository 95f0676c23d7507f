"""The Bayesian network learned from the rows (audits.distribution): its selection rates per group,
FVGM's fairness influence of each feature, and its structure in words."""
from __future__ import annotations


def learned_network(workspace, model, X, structure: str):
    """The Bayesian network learned from X (audits.distribution): the star or a learned structure."""
    from audits.distribution import learn_network, learn_structured_network
    from fairness.errors import ModelError
    from audits.global_search import categorical_choices

    categorical = list(categorical_choices(workspace.artifact.preprocessor, model))
    try:
        if structure == "learned":
            return learn_structured_network(model, X, categorical)
        return learn_network(model, X, categorical)
    except ValueError as exc:
        raise ModelError(f"the learned distribution: {exc}") from None


def learned_rates(network, model, favourable: int, draws: int):
    """Selection rates per group over the learned network."""
    from audits.distribution import distribution_rates

    return distribution_rates(model, network, favourable, draws)


def feature_influence(network, model, favourable: int, draws: int):
    """FVGM's fairness influence of every feature on the learned network, largest first."""
    from audits.distribution import fairness_influence

    influence = fairness_influence(model, network, favourable, draws)
    return sorted(influence, key=lambda i: -abs(i.parity_change))


def describe_network(network, card) -> str:
    """The learned structure in one line: each feature's parents (the group is always a root)."""
    from audits.distribution import GROUP

    if not hasattr(network, "edges"):
        return "star: every feature with the group as its only parent"
    names = {GROUP: "group", **{j: card.feature_names[j] for j in range(len(card.feature_names))}}
    edges = [f"{names[a]} -> {names[b]}" for a, b in network.edges()]
    return f"learned (BIC hill climbing, {len(edges)} edges): " + (", ".join(edges) if edges else "none")
