"""The statement's lenses, each a part a statement adds after its radius: `spread` (the counterfactual
spread, public decisions and bucket count per slice) and `persistence` (persistent-bias bounds). Each
takes the circuit values it needs and asserts its public inputs; the gadgets are `statement.spread`
and `statement.persistence`'s."""
