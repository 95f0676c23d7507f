"""The ONNX importer on the files banks export: skl2onnx pipelines and torch.onnx exports.

Each accepted file: the imported network's logits equal onnxruntime's float32
logits within 1e-4, its decisions equal the bank's runtime (and the fitted
pipeline) on every row, and the schema's means, scales and categories are the
fitted objects'. Each has a twin that is refused with a sentence naming the
node or the column.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("skl2onnx")
torch = pytest.importorskip("torch")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from onnx_fixtures import (DOMAINS, Layer, as_logit_pairs, binary_target, column_feeds, column_transformer,  # noqa: E402
                           credit_frame, export_sklearn, export_sklearn_array, export_torch, facts, float_input,
                           graph_model, mlp_nodes, mlp_pipeline, onnx_logits, records, small_layers,
                           three_class_target, torch_network)

from fairness.errors import DataError, FairnessError, ModelError  # noqa: E402
from fairness.schema import CategoricalFeature, NumericFeature, SensitiveAttribute  # noqa: E402
from prover_service.importers.onnx_pipeline import read_onnx  # noqa: E402

TOL = 1e-4


@pytest.fixture(scope="module")
def frame():
    return credit_frame()


@pytest.fixture(scope="module")
def binary(frame, tmp_path_factory):
    """Pipeline(ColumnTransformer(...), MLPClassifier) on a binary target: a logistic head, one output unit."""
    pipe = mlp_pipeline(frame, binary_target(frame))
    return pipe, export_sklearn(pipe, frame, tmp_path_factory.mktemp("onnx") / "binary.onnx")


@pytest.fixture(scope="module")
def three_class(frame, tmp_path_factory):
    pipe = mlp_pipeline(frame, three_class_target(frame), hidden=(6, 4))
    return pipe, export_sklearn(pipe, frame, tmp_path_factory.mktemp("onnx") / "three.onnx", zipmap=True)


@pytest.fixture(scope="module")
def preprocessor(frame):
    """The bank's fitted ColumnTransformer, kept apart from its torch network (its count min-max scaled)."""
    from sklearn.preprocessing import MinMaxScaler
    return column_transformer(kids=("kids", MinMaxScaler(), ["kids"])).fit(frame)


def _encoded(model, frame):
    return np.array([model.schema.encode(r) for r in records(frame)])


def _assert_agrees(model, frame, path, *, fitted=None, feeds=None):
    """Logits within 1e-4 of onnxruntime's, and the same decision as the bank's runtime on every row."""
    X = _encoded(model, frame)
    ours = model.network.forward(X)
    theirs = as_logit_pairs(onnx_logits(path, feeds if feeds is not None else column_feeds(frame)))
    assert np.max(np.abs(ours - theirs)) < TOL
    decided = model.runtime.decide(records(frame))
    assert np.array_equal(model.network.predict(X), decided)
    assert len(set(decided.tolist())) > 1  # a decision that never changes would prove nothing
    if fitted is not None:
        classes = [model.schema.label.values.index(str(c)) for c in fitted.predict(frame)]
        assert np.array_equal(decided, classes)


def _feature(model, name):
    return next(f for f in model.schema.features if f.name == name)


def _age_and_sex():
    """The facts of a hand-built graph over one tensor of two columns: age (numeric) and a sex code."""
    return facts(domains={"age": (0.0, 1.0)}, units={}, value_labels={"sex": {"0": "f", "1": "m"}})


def _refused(path, bank_facts=None, **kwargs):
    with pytest.raises(FairnessError) as err:
        read_onnx(path, bank_facts if bank_facts is not None else facts(), **kwargs)
    return str(err.value)


# --------------------------------------------------------------------------- skl2onnx pipelines


def test_binary_pipeline_reads_the_fitted_encoders_and_decides_as_the_bank(binary, frame):
    pipe, path = binary
    model = read_onnx(path, facts())
    ct = pipe.named_steps["columns"]
    assert model.schema.attributes == ("age", "income", "purpose", "sex", "region", "kids")
    age, income, kids = _feature(model, "age"), _feature(model, "income"), _feature(model, "kids")
    scaler, minmax = ct.named_transformers_["age"], ct.named_transformers_["income"]
    assert isinstance(age, NumericFeature) and (age.min, age.max) == DOMAINS["age"]
    np.testing.assert_allclose([age.mean, age.std], [scaler.mean_[0], scaler.scale_[0]], rtol=1e-6)
    np.testing.assert_allclose([income.mean, income.std], [-minmax.min_[0] / minmax.scale_[0], 1 / minmax.scale_[0]],
                               rtol=1e-6)
    assert (kids.mean, kids.std) == (0.0, 1.0) and income.unit == "EUR"
    purpose, region, sex = _feature(model, "purpose"), _feature(model, "region"), _feature(model, "sex")
    assert isinstance(purpose, CategoricalFeature) and purpose.encoding == "one_hot"
    assert purpose.categories == tuple(ct.named_transformers_["purpose"].categories_[0]) and purpose.drop == "car"
    assert region.categories == ("east", "north", "south") and region.drop is None  # if_binary keeps 3 values
    assert isinstance(sex, SensitiveAttribute) and sex.encoding == "one_hot"
    assert sex.values == ("female", "male") and sex.drop == "female"
    assert model.schema.label.values == ("0", "1") and model.network.n_classes == 2
    assert any("(0, z)" in n for n in model.notes)
    assert model.runtime.name.startswith("onnxruntime")
    _assert_agrees(model, frame, path, fitted=pipe)


def test_tanh_mlp_is_refused_naming_its_node(frame, tmp_path):
    pipe = mlp_pipeline(frame, binary_target(frame), activation="tanh")
    message = _refused(export_sklearn(pipe, frame, tmp_path / "tanh.onnx"))
    assert "Tanh node" in message and "only Relu" in message


def test_three_class_pipeline_with_zipmap_keeps_one_logit_per_class(three_class, frame):
    pipe, path = three_class
    model = read_onnx(path, facts(class_labels=("low", "middle", "high")))
    assert model.network.n_classes == 3 and model.network.hidden_sizes == (6, 4)
    assert model.schema.label.values == ("0", "1", "2")
    assert model.schema.class_labels == ("low", "middle", "high")
    assert not any("(0, z)" in n for n in model.notes)
    _assert_agrees(model, frame, path, fitted=pipe)


def test_class_values_contradicting_the_graph_are_refused(three_class):
    _, path = three_class
    message = _refused(path, facts(class_values=("2", "1", "0")))
    assert "class_values (2, 1, 0)" in message and "(0, 1, 2)" in message


def test_double_precision_pipeline_gives_the_scaler_exactly(frame, tmp_path):
    """skl2onnx in double writes StandardScaler as Sub then Div: mean and std come out bit for bit.
    The classes are text here: the graph's label output names them."""
    pipe = mlp_pipeline(frame, np.where(binary_target(frame) == 1, "good", "bad"))
    path = export_sklearn(pipe, frame, tmp_path / "double.onnx", double=True)
    model = read_onnx(path, facts())
    assert model.schema.label.values == ("bad", "good")
    scaler = pipe.named_steps["columns"].named_transformers_["age"]
    age = _feature(model, "age")
    assert (age.mean, age.std) == (scaler.mean_[0], scaler.scale_[0])
    _assert_agrees(model, frame, path, fitted=pipe, feeds=column_feeds(frame, double=True))


def test_division_by_a_column_is_refused(tmp_path):
    layers = small_layers(1)
    nodes, consts, logits = mlp_nodes("scaled", layers)
    nodes.insert(0, helper.make_node("Div", ["one", "age"], ["scaled"], name="inverse_age"))
    path = graph_model(nodes, [float_input("age")], [logits], {**consts, "one": np.ones(1, np.float32)},
                       tmp_path / "div.onnx")
    message = _refused(path, facts(sensitive=("age",)))
    assert "Div node 'inverse_age'" in message and "not an affine map" in message


def test_reordered_one_hot_indicators_are_refused(binary, tmp_path):
    """drop="first" keeps indicators 1 and 2; a graph keeping them as 2, 1 is not the encoder's order."""
    from onnx import numpy_helper

    _, path = binary
    model = onnx.load(str(path))
    gather = next(n for n in model.graph.node if n.op_type == "Gather" and "indices_to_keep" in n.input[1])
    init = next(t for t in model.graph.initializer if t.name == gather.input[1])
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init)[::-1].copy(), init.name))
    onnx.save(model, str(tmp_path / "reordered.onnx"))
    message = _refused(tmp_path / "reordered.onnx")
    assert "'purpose'" in message and "order (house, education)" in message


def test_ordinal_and_integer_categories(frame, tmp_path):
    """OrdinalEncoder (a LabelEncoder in the graph) on a category and on the sensitive column, and a
    OneHotEncoder over integer categories."""
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    data = frame.assign(kids=frame["kids"].astype(np.int64))
    ct = column_transformer(region=("region", OrdinalEncoder(), ["region"]), sex=("sex", OrdinalEncoder(), ["sex"]),
                            kids=("kids", OneHotEncoder(), ["kids"]))
    pipe = mlp_pipeline(data, binary_target(data), transformer=ct)
    path = export_sklearn(pipe, data, tmp_path / "ordinal.onnx")
    model = read_onnx(path, facts(domains={"age": DOMAINS["age"], "income": DOMAINS["income"]}))
    region, kids = _feature(model, "region"), _feature(model, "kids")
    assert region.encoding == "ordinal" and region.categories == ("east", "north", "south")
    assert region.ordinal_codes == (0.0, 1.0, 2.0)
    sex = _feature(model, "sex")
    assert sex.encoding == "code" and sex.values == ("female", "male") and sex.value_codes == (0, 1)
    assert kids.encoding == "one_hot" and kids.categories == ("0", "1", "2", "3")
    _assert_agrees(model, data, path, fitted=pipe)


def test_value_labels_of_an_unknown_category_are_refused(binary):
    _, path = binary
    message = _refused(path, facts(value_labels={"sex": {"female": "woman", "divers": "diverse"}}))
    assert "'divers'" in message and "'sex'" in message


def test_numeric_sensitive_column_scaled_by_the_bank_is_folded(frame, tmp_path):
    """StandardScaler on a 0/1 sex code: the schema's sensitive input holds the code, the scaling goes to W."""
    from sklearn.preprocessing import StandardScaler

    data = frame.assign(sex=(frame["sex"] == "male").astype(float))
    ct = column_transformer(sex=("sex", StandardScaler(), ["sex"]))
    pipe = mlp_pipeline(data, binary_target(frame), transformer=ct)
    path = export_sklearn(pipe, data, tmp_path / "sex-code.onnx")
    model = read_onnx(path, facts(value_labels={"sex": {"0": "female", "1": "male"}}))
    sex = _feature(model, "sex")
    assert sex.encoding == "code" and sex.values == ("0", "1") and sex.value_codes == (0, 1)
    assert sex.labels == ("female", "male")
    assert any("sex" in n and "folded into the first layer" in n for n in model.notes)
    assert model.schema.encode(records(data)[0])[3] in (0.0, 1.0)  # the code itself, unscaled
    _assert_agrees(model, data, path, fitted=pipe)
    domain_model = read_onnx(path, facts(domains={**DOMAINS, "sex": (0.0, 1.0)}))
    assert _feature(domain_model, "sex").values == ("0", "1")


def test_numeric_sensitive_column_without_integer_codes_is_refused(frame, tmp_path):
    from sklearn.preprocessing import StandardScaler

    data = frame.assign(sex=(frame["sex"] == "male").astype(float))
    ct = column_transformer(sex=("sex", StandardScaler(), ["sex"]))
    path = export_sklearn(mlp_pipeline(data, binary_target(frame), transformer=ct), data, tmp_path / "sex.onnx")
    message = _refused(path, facts(domains={**DOMAINS, "sex": (0.0, 1.5)}))
    assert "'sex'" in message and "integer codes" in message and "[0, 1.5]" in message
    message = _refused(path, facts())
    assert "'sex'" in message and "value_labels" in message


def test_input_column_missing_from_the_domains_is_refused(binary):
    _, path = binary
    message = _refused(path, facts(domains={"age": DOMAINS["age"], "kids": DOMAINS["kids"]}))
    assert "'income'" in message and "no domain" in message


def test_sensitive_column_the_model_does_not_read_is_refused(binary):
    _, path = binary
    message = _refused(path, facts(sensitive=("sex", "nationality")))
    assert "'nationality'" in message and "not an input of the model" in message


def test_unknown_operator_is_refused_naming_it(frame, tmp_path):
    from sklearn.impute import SimpleImputer

    ct = column_transformer(age=("age", SimpleImputer(), ["age"]))
    path = export_sklearn(mlp_pipeline(frame, binary_target(frame), transformer=ct), frame, tmp_path / "imp.onnx")
    message = _refused(path)
    assert "Imputer node" in message and "operator Imputer" in message


def test_a_column_used_twice_is_refused(frame, tmp_path):
    from sklearn.preprocessing import StandardScaler

    ct = column_transformer(kids=("kids", StandardScaler(), ["age"]))
    path = export_sklearn(mlp_pipeline(frame, binary_target(frame), transformer=ct), frame.drop(columns="kids"),
                          tmp_path / "twice.onnx")
    message = _refused(path, facts(domains={"age": DOMAINS["age"], "income": DOMAINS["income"]}))
    assert "'age'" in message and "two places" in message


def test_numeric_array_input_is_named_by_the_facts_columns(frame, tmp_path):
    """A pipeline fitted on an unnamed array: one tensor input whose columns the facts name."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler

    X = np.column_stack([frame["age"], (frame["sex"] == "male").astype(float), frame["income"]])
    ct = ColumnTransformer([("scaled", StandardScaler(), [0, 2]), ("code", "passthrough", [1])])
    pipe = mlp_pipeline(X, binary_target(frame), transformer=ct)
    path = export_sklearn_array(pipe, 3, tmp_path / "array.onnx")
    bank = facts(value_labels={"sex": {"0": "female", "1": "male"}})
    model = read_onnx(path, bank, columns=("age", "sex", "income"))
    assert model.schema.attributes == ("age", "income", "sex")  # model-input order: the scaled pair first
    assert _feature(model, "sex").encoding == "code"
    rows = [{"age": a, "sex": s, "income": i} for a, s, i in X.tolist()]
    ours = model.network.forward(np.array([model.schema.encode(r) for r in rows]))
    np.testing.assert_allclose(ours, as_logit_pairs(onnx_logits(path, {"X": X.astype(np.float32)})), atol=TOL)
    assert np.array_equal(model.runtime.decide(rows), pipe.predict(X))
    message = _refused(path, bank)
    assert "'X' holds 3 columns without names" in message


def test_two_networks_behind_two_outputs_are_refused(tmp_path):
    first, second = small_layers(2, seed=1), small_layers(2, seed=2)
    nodes1, consts1, out1 = mlp_nodes("x", first, "a_")
    nodes2, consts2, out2 = mlp_nodes("x", second, "b_")
    path = graph_model(nodes1 + nodes2, [float_input("x", 2)], [out1, out2], {**consts1, **consts2},
                       tmp_path / "two.onnx")
    message = _refused(path, _age_and_sex(), columns=("age", "sex"))
    assert "different networks" in message


def test_one_network_behind_logits_and_probabilities_is_accepted(tmp_path):
    """The twin: two outputs of the same scores (logits and their softmax) are one decision."""
    layers = small_layers(2)
    nodes, consts, logits = mlp_nodes("x", layers)
    nodes.append(helper.make_node("Softmax", [logits], ["p"], name="softmax", axis=-1))
    path = graph_model(nodes, [float_input("x", 2)], [logits, "p"], consts, tmp_path / "both.onnx")
    model = read_onnx(path, _age_and_sex(), columns=("age", "sex"))
    X = np.array([[0.5, 1.0], [0.1, 0.0]])
    expected = np.maximum(X @ layers[0].w + layers[0].b, 0) @ layers[1].w + layers[1].b
    np.testing.assert_allclose(model.network.forward(X), expected, atol=TOL)


def test_two_raw_columns_multiplied_are_refused(tmp_path):
    nodes, consts, logits = mlp_nodes("mixed", small_layers(1))
    nodes.insert(0, helper.make_node("Mul", ["age", "income"], ["mixed"], name="age_times_income"))
    path = graph_model(nodes, [float_input("age"), float_input("income")], [logits], consts, tmp_path / "mul.onnx")
    message = _refused(path, facts(sensitive=("age",)))
    assert "Mul node 'age_times_income'" in message and "age, income" in message


def test_scaled_one_hot_indicators_are_folded_so_the_inputs_stay_zero_or_one(tmp_path):
    """A hand-built graph: OneHotEncoder on a text input, scaled after encoding (folded, exact on 0/1)."""
    nodes, consts, logits = mlp_nodes("scaled", small_layers(2))
    nodes[:0] = [helper.make_node("OneHotEncoder", ["sex"], ["hot"], domain="ai.onnx.ml", name="ohe",
                                  cats_strings=["f", "m"], zeros=0),
                 helper.make_node("Reshape", ["hot", "shape"], ["flat"], name="flatten"),
                 helper.make_node("Mul", ["flat", "half"], ["scaled"], name="halve")]
    inputs = [helper.make_tensor_value_info("sex", TensorProto.STRING, [None, 1])]
    consts.update(shape=np.array([-1, 2], np.int64), half=np.array([0.5, 2.0], np.float32))
    path = graph_model(nodes, inputs, [logits], consts, tmp_path / "ohe.onnx")
    model = read_onnx(path, facts(domains={}, units={}))
    assert _feature(model, "sex").encoding == "one_hot" and any("exactly 0 or 1" in n for n in model.notes)
    rows = [{"sex": "f"}, {"sex": "m"}]
    X = np.array([model.schema.encode(r) for r in rows])
    assert X.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    feeds = {"sex": np.array([["f"], ["m"]], dtype=object)}
    np.testing.assert_allclose(model.network.forward(X), onnx_logits(path, feeds), atol=TOL)
    message = _refused(path, facts(sensitive=("gender",), domains={}, units={}))
    assert "'gender'" in message


# --------------------------------------------------------------------------- torch exports


def _transformed(preprocessor, frame):
    return np.asarray(preprocessor.transform(frame), dtype=np.float32)


def test_torch_one_logit_gemm_behind_the_fitted_preprocessor(frame, preprocessor, tmp_path):
    X = _transformed(preprocessor, frame)
    y = binary_target(frame)
    net = torch_network(X.shape[1], 1, X=X, y=y)
    path = export_torch(net, X.shape[1], tmp_path / "one.onnx")
    assert "Gemm" in {n.op_type for n in onnx.load(str(path)).graph.node}
    model = read_onnx(path, facts(), preprocessor=preprocessor)
    assert model.schema.attributes == ("age", "income", "purpose", "sex", "region", "kids")
    assert _feature(model, "sex").drop == "female" and model.schema.label.values == ("0", "1")
    assert any("(0, z)" in n for n in model.notes)
    _assert_agrees(model, frame, path, feeds={"x": X})
    with torch.no_grad():
        torch_decisions = (net(torch.tensor(X))[:, 0] > 0).numpy().astype(int)
    assert np.array_equal(model.runtime.decide(records(frame)), torch_decisions)


def test_torch_tanh_network_is_refused(frame, preprocessor, tmp_path):
    X = _transformed(preprocessor, frame)
    net = torch_network(X.shape[1], 1, activation=torch.nn.Tanh)
    message = _refused(export_torch(net, X.shape[1], tmp_path / "tanh.onnx"), preprocessor=preprocessor)
    assert "Tanh node '/1/Tanh'" in message


def test_torch_two_logits_matmul_form_with_softmax(frame, preprocessor, tmp_path):
    """A [N, 1, k] input makes torch export Linear as MatMul + Add; the Softmax closes the network."""
    X = _transformed(preprocessor, frame)
    net = torch_network(X.shape[1], 2, hidden=(5, 3), head=torch.nn.Softmax(dim=-1), X=X, y=binary_target(frame))
    path = export_torch(net, X.shape[1], tmp_path / "two.onnx", three_d=True)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"MatMul", "Add"} <= ops and "Gemm" not in ops
    model = read_onnx(path, facts(class_values=("bad", "good")), preprocessor=preprocessor)
    assert model.network.n_classes == 2 and model.network.hidden_sizes == (5, 3)
    assert model.schema.label.values == ("bad", "good")
    _assert_agrees(model, frame, path, feeds={"x": X.reshape(len(X), 1, -1)})


def test_torch_dropout_in_training_mode_is_refused(preprocessor, tmp_path):
    n = len(preprocessor.get_feature_names_out())
    net = torch.nn.Sequential(torch.nn.Linear(n, 4), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(4, 2))
    message = _refused(export_torch(net, n, tmp_path / "train.onnx", training=True), preprocessor=preprocessor)
    assert "Dropout node" in message and "training mode" in message


def test_torch_fixed_batch_export_runs_in_batches_of_its_size(frame, preprocessor, tmp_path):
    X = _transformed(preprocessor, frame)
    net = torch_network(X.shape[1], 2, X=X, y=binary_target(frame))
    path = export_torch(net, X.shape[1], tmp_path / "fixed.onnx", batch=4)
    model = read_onnx(path, facts(), preprocessor=preprocessor)
    assert model.runtime.batch == 4
    some = frame.iloc[:10]  # 10 rows: two full batches and a padded one
    ours = model.network.forward(_encoded(model, some))
    logits = np.vstack([onnx_logits(path, {"x": X[i:i + 4]}) for i in (0, 4, 8, 6)])
    np.testing.assert_allclose(ours, np.vstack([logits[:8], logits[-2:]]), atol=TOL)
    assert np.array_equal(model.runtime.decide(records(some)), ours.argmax(axis=1))


def test_network_only_graph_without_preprocessor_is_refused(preprocessor, tmp_path):
    n = len(preprocessor.get_feature_names_out())
    message = _refused(export_torch(torch_network(n, 2), n, tmp_path / "bare.onnx", batch=4))
    assert f"input 'x' takes {n} numbers" in message and "preprocessor" in message


def test_torch_network_behind_a_schema(frame, binary, tmp_path):
    """--schema: the bank's own schema gives the features (here the one read from its skl2onnx pipeline)."""
    schema = read_onnx(binary[1], facts()).schema
    X = np.array([schema.encode(r) for r in records(frame)], dtype=np.float32)
    net = torch_network(schema.n_inputs, 1, head=torch.nn.Sigmoid(), X=X, y=binary_target(frame))
    path = export_torch(net, schema.n_inputs, tmp_path / "schema.onnx", opset=11, initializers_as_inputs=True)
    assert len(onnx.load(str(path)).graph.input) > 1  # the weights are listed as inputs too
    model = read_onnx(path, None, schema=schema)
    assert model.schema == schema
    _assert_agrees(model, frame, path, feeds={"x": X})
    wrong = schema.model_copy(update={"features": schema.features[:-1]})
    message = _refused(path, schema=wrong)
    assert f"takes {schema.n_inputs} inputs" in message


def test_batch_normalization_is_folded_into_the_layer_before(frame, preprocessor, tmp_path):
    X = _transformed(preprocessor, frame)
    n = X.shape[1]
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(n, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    net.train()
    with torch.no_grad():
        for _ in range(5):
            net(torch.tensor(X))  # running statistics away from (0, 1)
    net.eval()
    path = export_torch(net, n, tmp_path / "bn.onnx")
    model = read_onnx(path, facts(), preprocessor=preprocessor)
    assert model.network.hidden_sizes == (4,)
    assert any("BatchNormalization" in note and "folded" in note for note in model.notes)
    ours = model.network.forward(_encoded(model, frame))
    np.testing.assert_allclose(ours, onnx_logits(path, {"x": X}), atol=TOL)
    message = _refused(export_torch(net, n, tmp_path / "bn-train.onnx", training=True), preprocessor=preprocessor)
    assert "BatchNormalization node" in message and "training mode" in message


def test_graph_with_preprocessing_and_a_preprocessor_is_refused(binary, preprocessor):
    message = _refused(binary[1], preprocessor=preprocessor)
    assert "already holds its preprocessing" in message


# --------------------------------------------------------------------------- files


def test_a_file_that_is_not_onnx_is_refused(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a protobuf at all \x00\x01")
    with pytest.raises(ModelError, match="cannot parse as ONNX|not a valid ONNX model"):
        read_onnx(bad, facts())
    with pytest.raises(ModelError, match="no such file"):
        read_onnx(tmp_path / "missing.onnx", facts())


def test_records_the_runtime_cannot_read_are_refused_naming_the_column(binary):
    model = read_onnx(binary[1], facts())
    row = records(credit_frame(3))[0]
    with pytest.raises(DataError, match="age"):
        model.runtime.decide([{**row, "age": "forty"}])
    with pytest.raises(DataError, match="onnxruntime refuses records 1 to 1"):  # its encoder knows no "west"
        model.runtime.decide([{**row, "region": "west"}])


def test_gemm_alpha_beta_and_transposition_are_honoured(tmp_path):
    """Gemm alpha/beta/transB are honoured exactly (a hand-written Gemm layer, transB = 0)."""
    rng = np.random.default_rng(5)
    w, b = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    out = Layer(rng.normal(size=(3, 1)).astype(np.float32), rng.normal(size=1).astype(np.float32))
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["z"], name="gemm", alpha=0.5, beta=2.0),
             helper.make_node("Relu", ["z"], ["h"], name="relu"),
             helper.make_node("Gemm", ["h", "W2", "B2"], ["y"], name="out", transB=1)]
    consts = {"W": w, "B": b, "W2": out.w.T.copy(), "B2": out.b}
    path = graph_model(nodes, [float_input("x", 2)], ["y"], consts, tmp_path / "gemm.onnx")
    model = read_onnx(path, _age_and_sex(), columns=("age", "sex"))
    X = np.array([[0.3, 1.0], [0.9, 0.0]])
    z = np.maximum(0.5 * X @ w + 2.0 * b, 0) @ out.w + out.b
    np.testing.assert_allclose(model.network.forward(X), as_logit_pairs(z), atol=TOL)


def test_a_dropped_column_is_fed_but_not_in_the_schema(frame, tmp_path):
    """ColumnTransformer "drop": skl2onnx still declares the column's input; the schema leaves it out."""
    ct = column_transformer(kids=("kids", "drop", ["kids"]))
    pipe = mlp_pipeline(frame, binary_target(frame), transformer=ct)
    path = export_sklearn(pipe, frame, tmp_path / "dropped.onnx")
    model = read_onnx(path, facts(domains={"age": DOMAINS["age"], "income": DOMAINS["income"]}))
    assert "kids" not in model.schema.attributes
    assert any("kids" in n and "do not reach the network" in n for n in model.notes)
    rows = [{a: r[a] for a in model.schema.attributes} for r in records(frame)]  # what read_csv gives
    assert np.array_equal(model.runtime.decide(rows), pipe.predict(frame))
    message = _refused(path, facts(units={"kids": "children"}))
    assert "'kids'" in message and "does not use" in message


# --------------------------------------------------------------------------- torch's default exporter (dynamo)


def _opset(path) -> int:
    return next(o.version for o in onnx.load(str(path)).opset_import if o.domain in ("", "ai.onnx"))


def test_default_exporter_one_logit_behind_the_fitted_preprocessor(frame, preprocessor, tmp_path):
    """torch.onnx.export(dynamo=True): opset 18+, weights as initializers named by the module, Gemm layers."""
    X = _transformed(preprocessor, frame)
    net = torch_network(X.shape[1], 1, hidden=(5, 3), X=X, y=binary_target(frame))
    path = export_torch(net, X.shape[1], tmp_path / "one.onnx", dynamo=True)
    assert _opset(path) >= 18 and "Gemm" in {n.op_type for n in onnx.load(str(path)).graph.node}
    model = read_onnx(path, facts(), preprocessor=preprocessor)
    assert model.network.n_classes == 2 and model.network.hidden_sizes == (5, 3)
    _assert_agrees(model, frame, path, feeds={"x": X})
    with torch.no_grad():
        torch_decisions = (net(torch.tensor(X))[:, 0] > 0).numpy().astype(int)
    assert np.array_equal(model.runtime.decide(records(frame)), torch_decisions)


def test_default_exporter_tanh_network_is_refused_naming_its_node(frame, preprocessor, tmp_path):
    X = _transformed(preprocessor, frame)
    net = torch_network(X.shape[1], 1, activation=torch.nn.Tanh)
    path = export_torch(net, X.shape[1], tmp_path / "tanh.onnx", dynamo=True)
    (tanh,) = [n.name for n in onnx.load(str(path)).graph.node if n.op_type == "Tanh"]
    message = _refused(path, preprocessor=preprocessor)
    assert f"Tanh node '{tanh}'" in message and "only Relu" in message


def test_default_exporter_per_class_logits_matmul_form_with_softmax(frame, preprocessor, tmp_path):
    """A [N, 1, k] input: the default exporter writes MatMul + Add with pre-transposed weights (opset 20)."""
    X = _transformed(preprocessor, frame)
    net = torch_network(X.shape[1], 2, hidden=(5, 3), head=torch.nn.Softmax(dim=-1), X=X, y=binary_target(frame))
    path = export_torch(net, X.shape[1], tmp_path / "two.onnx", three_d=True, dynamo=True, opset=20)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"MatMul", "Add", "Softmax"} <= ops and "Gemm" not in ops and _opset(path) == 20
    model = read_onnx(path, facts(class_values=("bad", "good")), preprocessor=preprocessor)
    assert model.network.n_classes == 2 and model.network.hidden_sizes == (5, 3)
    assert model.schema.label.values == ("bad", "good")
    _assert_agrees(model, frame, path, feeds={"x": X.reshape(len(X), 1, -1)})


def test_default_exporter_network_wider_than_the_preprocessor_is_refused(preprocessor, tmp_path):
    n = len(preprocessor.get_feature_names_out())
    path = export_torch(torch_network(n + 1, 2), n + 1, tmp_path / "wide.onnx", three_d=True, dynamo=True)
    message = _refused(path, preprocessor=preprocessor)
    assert f"writes {n} columns, the network reads {n + 1}" in message


def test_default_exporter_batch_norm_is_folded_and_a_fixed_batch_kept(frame, preprocessor, tmp_path):
    """BatchNorm in eval mode: the exporter's optimiser folds it into the Gemm before; a fixed batch of 4."""
    X = _transformed(preprocessor, frame)
    n = X.shape[1]
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(n, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        bn = net[1]
        bn.running_mean.normal_(), bn.running_var.uniform_(0.5, 2.0), bn.weight.normal_(), bn.bias.normal_()
    net.eval()
    path = export_torch(net, n, tmp_path / "bn.onnx", batch=4, dynamo=True)
    model = read_onnx(path, facts(), preprocessor=preprocessor)
    assert model.runtime.batch == 4 and model.network.hidden_sizes == (4,)
    some = frame.iloc[:8]
    ours = model.network.forward(_encoded(model, some))
    theirs = np.vstack([onnx_logits(path, {"x": X[i:i + 4]}) for i in (0, 4)])
    np.testing.assert_allclose(ours, theirs, atol=TOL)
    assert np.array_equal(model.runtime.decide(records(some)), ours.argmax(axis=1))


def test_default_exporter_network_behind_a_schema_and_its_wrong_schema(frame, binary, tmp_path):
    schema = read_onnx(binary[1], facts()).schema
    X = np.array([schema.encode(r) for r in records(frame)], dtype=np.float32)
    net = torch_network(schema.n_inputs, 1, head=torch.nn.Sigmoid(), X=X, y=binary_target(frame))
    path = export_torch(net, schema.n_inputs, tmp_path / "schema.onnx", dynamo=True)
    model = read_onnx(path, None, schema=schema)
    assert model.schema == schema
    _assert_agrees(model, frame, path, feeds={"x": X})
    wrong = schema.model_copy(update={"features": schema.features[:-1]})
    message = _refused(path, schema=wrong)
    assert f"takes {schema.n_inputs} inputs" in message
