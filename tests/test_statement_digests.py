"""Every statement variant's R1CS digest, pinned.

A proving key is bound to its relation's digest (`circuits.groth16.r1cs_digest`), so a change to the
constraints a shape's statement emits, or to their order, orphans every key made for that shape. This table
names one small shape per variant (region statements whole and per-slice, fast and exact; the bound radius
with fixed and optimised slopes; the spread and persistence lenses; one-hot and several sensitive
attributes; two and three classes) with the digest its statement has; a refactor of `statement` must keep
each one. The rejection twin: changing any one field of a shape changes its digest.
"""
from __future__ import annotations

import dataclasses

import pytest

from circuits.groth16 import r1cs_digest
from statement.circuit import statement_relation
from statement.shape import StatementShape

# Two free columns (1, 2) around one sensitive column 0 with values 0 and 1; one hidden layer of two neurons.
BASE = StatementShape(
    n_inputs=3, hidden_sizes=(2,), n_classes=2, sensitive_columns=(0,), slices=((0,), (1,)),
    box_lower=(0, -4, -4), box_upper=(1, 4, 4), scale_bits=2, eps_bits=3, eps_cap=20,
    weight_bits=(3, 3), bias_bits=(4, 5), region_slots=2, farkas_slots=2, farkas_bits=6, boundary_bits=8)

THREE_CLASS = dict(n_classes=3)
# Two sensitive attributes (columns 0 and 1, two values each) and one free column.
TWO_ATTRIBUTES = dict(sensitive_columns=(0, 1), slices=((0, 0), (0, 1), (1, 0), (1, 1)),
                      box_lower=(0, 0, -4), box_upper=(1, 1, 4))
# One one-hot attribute over columns 0 and 1 (its values (1, 0) and (0, 1)), and free columns 2, 3.
ONE_HOT = dict(n_inputs=4, sensitive_columns=(0, 1), sensitive_widths=(2,), slices=((1, 0), (0, 1)),
               box_lower=(0, 0, -4, -4), box_upper=(1, 1, 4, 4))
TWO_LAYERS = dict(hidden_sizes=(2, 2), weight_bits=(3, 3, 3), bias_bits=(4, 5, 6))
SPREAD = dict(spread_width=2, favourable_class=1)
PERSISTENCE = dict(persistence_columns=(1,), favourable_class=1)
EXACT = dict(radius="exact")
PER_SLICE = dict(radius="exact", per_slice=True)
BOUND = dict(radius="bound", region_slots=1, farkas_slots=1)
BOUND_ALPHA = dict(BOUND, alpha_bits=16)


def variant(*parts: dict) -> StatementShape:
    changes: dict = {}
    for p in parts:
        changes.update(p)
    return dataclasses.replace(BASE, **changes)


VARIANTS: dict[str, StatementShape] = {
    "fast": variant(),
    "fast/two_layers": variant(TWO_LAYERS),
    "fast/three_class": variant(THREE_CLASS),
    "fast/two_attributes": variant(TWO_ATTRIBUTES),
    "fast/one_hot": variant(ONE_HOT),
    "fast/spread": variant(SPREAD),
    "fast/spread/three_class": variant(THREE_CLASS, SPREAD),
    "fast/persistence": variant(PERSISTENCE),
    "fast/persistence/alpha": variant(PERSISTENCE, dict(alpha_bits=16)),
    "fast/persistence/one_hot": variant(ONE_HOT, PERSISTENCE, dict(persistence_columns=(2,))),
    "fast/persistence/two_attributes": variant(TWO_ATTRIBUTES, PERSISTENCE, dict(persistence_columns=(2,))),
    "fast/spread/persistence": variant(SPREAD, PERSISTENCE),
    "exact": variant(EXACT),
    "exact/two_layers": variant(EXACT, TWO_LAYERS),
    "exact/three_class": variant(EXACT, THREE_CLASS),
    "exact/two_attributes": variant(EXACT, TWO_ATTRIBUTES),
    "exact/one_hot": variant(EXACT, ONE_HOT),
    "exact/spread": variant(EXACT, SPREAD),
    "exact/persistence": variant(EXACT, PERSISTENCE),
    "exact/spread/persistence/alpha": variant(EXACT, SPREAD, PERSISTENCE, dict(alpha_bits=16)),
    "per_slice": variant(PER_SLICE),
    "per_slice/three_class": variant(PER_SLICE, THREE_CLASS),
    "per_slice/two_attributes": variant(PER_SLICE, TWO_ATTRIBUTES),
    "per_slice/one_hot": variant(PER_SLICE, ONE_HOT),
    "per_slice/spread": variant(PER_SLICE, SPREAD),
    "per_slice/spread/three_class": variant(PER_SLICE, THREE_CLASS, SPREAD),
    "per_slice/persistence": variant(PER_SLICE, PERSISTENCE),
    "per_slice/persistence/alpha": variant(PER_SLICE, PERSISTENCE, dict(alpha_bits=16)),
    "bound": variant(BOUND),
    "bound/alpha": variant(BOUND_ALPHA),
    "bound/two_layers": variant(BOUND, TWO_LAYERS),
    "bound/alpha/two_layers": variant(BOUND_ALPHA, TWO_LAYERS),
    "bound/three_class": variant(BOUND, THREE_CLASS),
    "bound/alpha/three_class": variant(BOUND_ALPHA, THREE_CLASS),
    "bound/two_attributes": variant(BOUND, TWO_ATTRIBUTES),
    "bound/one_hot": variant(BOUND, ONE_HOT),
    "bound/spread": variant(BOUND, SPREAD),
    "bound/persistence": variant(BOUND, PERSISTENCE),
    "bound/alpha/spread/persistence": variant(BOUND_ALPHA, SPREAD, PERSISTENCE),
    "bound/alpha/persistence/one_hot": variant(BOUND_ALPHA, ONE_HOT, PERSISTENCE, dict(persistence_columns=(2,))),
}

DIGESTS: dict[str, str] = {
    "fast": "bf936a525eeb1ed92f831624fca512bde2735e6ff29a98b73c43c1d48fa14fb8",
    "fast/two_layers": "eaeeb8b81fd45a39df078292bf224c9c79539f6c3d7505caf23301fec854f563",
    "fast/three_class": "af101af6ccebfee2db987267786fa8a3640bd090dd642954f5bed4da6707f6bf",
    "fast/two_attributes": "6ee64119b61a9ff5e1c29235854ef7185d5a78842e6b28c5ee8d41998eac6109",
    "fast/one_hot": "bf6f13976023aab63bc73563c3454a78ecbf010f77e5ecebadac026e12f99610",
    "fast/spread": "e3682dbe2f70e1fc2db8d1c08d2a007f786e03c946caec7bedf6c355f4ad4ce0",
    "fast/spread/three_class": "8fdfbeee8898b01514076e6fa24e54785f28f508e5c2b670a784b7aede05d49a",
    "fast/persistence": "44402fe3d52eeae6bdd7d9424566cc2ac4238b9fbe0f28062c5870ddadd52897",
    "fast/persistence/alpha": "8f80e6020494af513971474d00d2d07960fc95ba356ac28d1539669e1d8a27f6",
    "fast/persistence/one_hot": "af22e9a192a3cbc9194141b5dc2249e0314a2c489b13044673e2103e77dfde8e",
    "fast/persistence/two_attributes": "35b0c67b43b9fa6a95b6b8979fbfb6dc051bc1fabbb0ef4e80c9b02f9e562f82",
    "fast/spread/persistence": "5b9b50366259101407e107520340cd565c42153066a9e385bc924bc7801ef1a4",
    "exact": "b9f0132ace0d3b2e94a8223ebc72ebf6407c96cb9f0ae7847e7389ff6b4850c8",
    "exact/two_layers": "c4e400aa19f4c7dc68615b5edade9aa3da42bcc6520d1c8f9aa6ff46182b7be9",
    "exact/three_class": "a620fe0c1c585b6ee4fbcc3a02b1e59a5d827fb7cf304e4086400fa8ea2222c6",
    "exact/two_attributes": "71eb38e14b9d76eeceb78980e6a3ca6f87f670af0158738e4b170f6404bc46d2",
    "exact/one_hot": "6bba6cebaed6d63f2e9af79622ab4309198a11e7c62742db77490591c09fa9e6",
    "exact/spread": "47f1bd69cb43b01a23401eb2cb0972a7115b081594401b26e4e8332d250df403",
    "exact/persistence": "bf199763d42dc80b3fb3d732bd0e846f256135457c412b0cb49b59bdcb472e86",
    "exact/spread/persistence/alpha": "561550f112079c9540b04fd7bb811ac24edffdb9020ec2942dbaaf98e66b9343",
    "per_slice": "2c149a1b36c5f4768644e874f58274e5564e55d52432bbaf5bbf5f863577b1ac",
    "per_slice/three_class": "6baf2f18df669296516e491c4c6b8239747f6b251e5c0bf1190ea81ac50677d0",
    "per_slice/two_attributes": "f7e746940d9ff6f9eeba38691ac7c2e35beaff5140ad72780294be9d0ed40644",
    "per_slice/one_hot": "6c49e3851254cf7c12a6c2d8588ea1f641846574fe1628881aae27286261ab54",
    "per_slice/spread": "c02576359288889e0450a08a1c3ec12a5286f7e5949c2cd0e1d90b700f13779e",
    "per_slice/spread/three_class": "f327be7af57f1b62bc281b4871772442b076395a7d9e4289f37f4dd60266f637",
    "per_slice/persistence": "8731785a3caa072d2ca0942e3827dd52792673955b93717703bbb36efd0ca5e4",
    "per_slice/persistence/alpha": "2fa13df6de569ef75496219caf1ea954e9f15697f4a553bc4dfcc06967c08f69",
    "bound": "7e999387e96ca6d85720ce558ef349c96d5750fde5ecadf44d4f5fd4b68d45cb",
    "bound/alpha": "d4c62622df8d35dce71272d6d075823c82b6edb49f96030d13d82f8698017895",
    "bound/two_layers": "367ab1fcf750222f2e26baf714dd15e3f89e619bcfaf35f894f3ddd36612c450",
    "bound/alpha/two_layers": "f8cdc029f73bcef5acb4e785a2d3c9a2ee0169d8333b658401f1efe4821159a2",
    "bound/three_class": "202723a1ae287a513c63e9d9a1c93fcc013630160f73d45d3634b50090d87e4f",
    "bound/alpha/three_class": "2ca4b04f9bd3aa41fc8aad68c6b6d863c17dd1453943b6807870b2c4622d7f42",
    "bound/two_attributes": "565f7f4d1be5601e630ed0f14db5dfc20d2f4b5b25bb5318bf3b07d3a74f9514",
    "bound/one_hot": "d261b42feadc0664e6329a456c9859da9c69fe51a6538031a826f17c12cb9594",
    "bound/spread": "9e79d1744e043cf126ccb81cf914ee5d4d30bdf9434daee0e6b935307278a0b6",
    "bound/persistence": "3fdaa71774d2939386390c01b73600232f0e299e22b44420472c69058d7d750e",
    "bound/alpha/spread/persistence": "e3782742450b5aa78a031f32f2af2c91c238675671a6bd40e8646e9fbf2cef8b",
    "bound/alpha/persistence/one_hot": "89a1fb6ebd34ed0f73ec18bb30846c04e772cd4c3d02dcab1130d723b0468f9e",
}


def test_the_table_names_every_variant_once():
    assert set(DIGESTS) == set(VARIANTS)
    assert len({shape.digest() for shape in VARIANTS.values()}) == len(VARIANTS)  # no variant twice


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_statement_variant_keeps_its_r1cs_digest(name):
    assert r1cs_digest(statement_relation(VARIANTS[name])) == DIGESTS[name]


CHANGES = [("fast", dict(region_slots=3)), ("fast", dict(farkas_bits=7)), ("exact", dict(boundary_bits=9)),
           ("per_slice", dict(eps_cap=21)), ("bound", dict(alpha_bits=8)), ("bound/alpha", dict(weight_bits=(4, 3))),
           ("fast/spread", dict(spread_width=3)), ("fast/persistence", dict(persistence_columns=(2,))),
           ("fast/one_hot", dict(box_upper=(1, 1, 5, 4)))]


@pytest.mark.parametrize("name, change", CHANGES)
def test_changing_one_shape_field_changes_the_digest(name, change):
    changed = dataclasses.replace(VARIANTS[name], **change)
    assert r1cs_digest(statement_relation(changed)) != DIGESTS[name]
