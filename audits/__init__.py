"""The model-wide audits offered beside the certificate: plaintext reports on the committed model as a whole.

The certificate (`fairness`) answers for one query; these audits look at the whole model, over a data set,
a distribution or the whole domain box, with the same exact integer model deciding every point. One module
per audit:

    group_metrics      selection rates per compound sensitive group, DI, SP, equal opportunity, EO (FVGM's and
                       Justicia's metrics, empirical over the rows)
    probabilistic      each group's probability of a favourable decision over a Bayesian network, exact or
                       sampled with a stated confidence (FVGM's and Justicia's verification problem)
    distribution       the Bayesian network learned from the rows (star or hill-climbed structure) and the
                       selection rates sampled from it (FVGM's setting)
    persistence        per sensitive group, the share of inputs persistently favoured or disfavoured against
                       a single-attribute flip (PBA's group scores)
    spread             how many outcomes the sensitive combinations split each individual of a data set into
                       (the counterfactual spread over the rows)
    global_search      does any individual of the domain get another decision for its sensitive values alone,
                       and the maximum margin difference (HyFair's 2-fairness, exact MILP)
    k_discrimination   the most margin buckets one individual's sensitive combinations reach (HyFair)
    explain            decision-tree rules for where the model discriminates (HyFair's Algorithm 2)

They read `fairness` (the model, its schema, the persistence LP and the MILP solver) and nothing above it;
the certificate, the statement and the customer's verifier never import them. `fairproof audit` runs them.
"""
