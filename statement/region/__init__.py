"""The region statements: fast or exact radius, whole or per-slice (docs/STATEMENT.md).

`whole` covers every slice in one proof, `per_slice` one slice named by a public input. Both are
assembled from the same parts: `context` (public inputs, parameters, query, decision, eps and the
code-independent layer-0 terms), `covers` and `pool` (one slice's regions, cover kinds, Farkas pool and
memberships), `decisions` (argmax and flip across slices), and the minimality of the radius:
`minimality` (fast: a designated distance row) or `counterexample` (exact). The lenses are
`statement.lenses`'.
"""
