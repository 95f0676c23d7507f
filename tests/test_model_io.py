"""Model artifacts (save/load) and import from PyTorch and ONNX."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fairness.datasets import load_dataset
from fairness.errors import ModelError
from fairness.model import (
    FloatMLP, artifact_from_dataset, import_onnx, import_torch, load_artifact, save_artifact,
)

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def german():
    return load_dataset("german")


def random_mlp(sizes, seed=0) -> FloatMLP:
    rng = np.random.default_rng(seed)
    return FloatMLP([rng.normal(size=(sizes[i + 1], sizes[i])) for i in range(len(sizes) - 1)],
                    [rng.normal(size=sizes[i + 1]) for i in range(len(sizes) - 1)])


def torch_sequential(sizes, seed=0):
    torch.manual_seed(seed)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).double()


def test_forward_matches_numpy_reference():
    m = random_mlp((5, 4, 3, 2))
    X = np.random.default_rng(1).normal(size=(7, 5))
    h = X
    for l, (w, b) in enumerate(zip(m.weights, m.biases)):
        h = h @ w.T + b
        h = np.maximum(h, 0) if l < 2 else h
    assert np.allclose(m.forward(X), h)
    assert np.array_equal(m.predict(X), h.argmax(1))
    assert m.forward(X[0]).shape == (2,)
    with pytest.raises(ModelError, match="takes 5 input"):
        m.forward(np.zeros((2, 4)))


def test_float_mlp_validates_shapes():
    with pytest.raises(ModelError, match="layer 1: takes 3 inputs"):
        FloatMLP([np.zeros((4, 5)), np.zeros((2, 3))], [np.zeros(4), np.zeros(2)])
    with pytest.raises(ModelError, match="bias"):
        FloatMLP([np.zeros((4, 5))], [np.zeros(3)])
    with pytest.raises(ModelError, match="non-finite"):
        FloatMLP([np.full((2, 2), np.inf)], [np.zeros(2)])


def test_artifact_round_trip(german, tmp_path):
    model = random_mlp((20, 4, 2, 2))
    art = artifact_from_dataset(model, german, training={"lr": 0.1}, seed=7)
    save_artifact(art, tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["hidden_sizes"] == [4, 2] and meta["dataset"] == "german" and meta["seed"] == 7
    assert meta["sensitive"][0]["name"] == "foreign_worker" and meta["training"]["lr"] == 0.1
    back = load_artifact(tmp_path / "m")
    assert back.model.equals(model)
    assert back == art
    assert np.array_equal(back.preprocessor.transform_record(german.records_test[3]), german.X_test[3])


def test_artifact_errors(german, tmp_path):
    with pytest.raises(ModelError, match="model.json: missing"):
        load_artifact(tmp_path)
    art = artifact_from_dataset(random_mlp((20, 4, 2, 2)), german)
    d = save_artifact(art, tmp_path / "m")
    meta = json.loads((d / "model.json").read_text())
    meta["hidden_sizes"] = [4, 3]
    (d / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="hidden sizes|shape"):
        load_artifact(d)
    (d / "model.json").write_text("{not json")
    with pytest.raises(ModelError, match="not valid JSON"):
        load_artifact(d)
    with pytest.raises(ModelError, match="dataset 'german' has 20 features"):
        artifact_from_dataset(random_mlp((19, 4, 2)), german)


def test_torch_state_dict_import_equals_original(tmp_path):
    seq = torch_sequential((20, 8, 2, 2))
    torch.save(seq.state_dict(), tmp_path / "sd.pt")
    torch.save(seq, tmp_path / "whole.pt")
    torch.save({k: v.clone() for k, v in seq.state_dict().items()}, tmp_path / "plain.pt")
    X = np.random.default_rng(0).normal(size=(50, 20))
    expected = seq(torch.tensor(X)).detach().numpy()
    for name in ("sd.pt", "whole.pt", "plain.pt"):
        m = import_torch(tmp_path / name, n_inputs=20, n_classes=2)
        assert m.hidden_sizes == (8, 2)
        assert np.allclose(m.forward(X), expected, rtol=0, atol=1e-12)


def test_torch_import_rejects_wrong_shapes_and_modules(tmp_path):
    seq = torch_sequential((20, 4, 2))
    torch.save(seq.state_dict(), tmp_path / "sd.pt")
    with pytest.raises(ModelError, match="takes 20 inputs, expected 23"):
        import_torch(tmp_path / "sd.pt", n_inputs=23)
    with pytest.raises(ModelError, match="hidden sizes"):
        import_torch(tmp_path / "sd.pt", hidden_sizes=(8,))
    bad = {"0.weight": torch.zeros(4, 20), "0.bias": torch.zeros(4), "1.weight": torch.zeros(2, 5), "1.bias": torch.zeros(2)}
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(ModelError, match="layer 1: takes 5 inputs but layer 0 gives 4"):
        import_torch(tmp_path / "bad.pt")
    bn = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    torch.save(bn.state_dict(), tmp_path / "bn.pt")
    with pytest.raises(ModelError, match="unsupported parameter"):
        import_torch(tmp_path / "bn.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(ModelError, match="cannot load"):
        import_torch(tmp_path / "junk.pt")


def test_onnx_export_import_equals_original(tmp_path):
    seq = torch_sequential((20, 4, 2, 2)).float()
    torch.onnx.export(seq, (torch.zeros(1, 20),), str(tmp_path / "m.onnx"), dynamo=False)
    m = import_onnx(tmp_path / "m.onnx", n_inputs=20, n_classes=2)
    X = np.random.default_rng(0).normal(size=(50, 20))
    expected = seq.double()(torch.tensor(X)).detach().numpy()
    assert m.hidden_sizes == (4, 2)
    assert np.allclose(m.forward(X), expected, rtol=0, atol=1e-12)
    with pytest.raises(ModelError, match="network has 2 outputs, expected 3"):
        import_onnx(tmp_path / "m.onnx", n_classes=3)


def _matmul_add_model(w0, b0, w1, b1, path, extra_op=None):
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(a.astype(np.float32), n) for a, n in ((w0.T, "W0"), (b0, "B0"), (w1.T, "W1"), (b1, "B1"))]
    nodes = [
        helper.make_node("MatMul", ["x", "W0"], ["m0"]), helper.make_node("Add", ["m0", "B0"], ["a0"]),
        helper.make_node("Relu", ["a0"], ["r0"]),
        helper.make_node("MatMul", ["r0", "W1"], ["m1"]), helper.make_node("Add", ["m1", "B1"], ["y"]),
    ]
    out = "y"
    if extra_op:
        nodes.append(helper.make_node(extra_op, ["y"], ["z"]))
        out = "z"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, w0.shape[1]])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [None, w1.shape[0]])], inits)
    onnx.save(helper.make_model(graph), str(path))


def test_onnx_matmul_add_chain(tmp_path):
    rng = np.random.default_rng(2)
    w0, b0, w1, b1 = (rng.normal(size=s).astype(np.float32) for s in ((3, 5), (3,), (4, 3), (4,)))
    _matmul_add_model(w0, b0, w1, b1, tmp_path / "mm.onnx")
    m = import_onnx(tmp_path / "mm.onnx")
    ref = FloatMLP([w0, w1], [b0, b1])
    X = rng.normal(size=(10, 5))
    assert m.hidden_sizes == (3,) and m.n_classes == 4
    assert np.allclose(m.forward(X), ref.forward(X), atol=1e-12)
    _matmul_add_model(w0, b0, w1, b1, tmp_path / "sig.onnx", extra_op="Sigmoid")
    # A Sigmoid head over four outputs is a multi-label model, not a classifier's decision.
    with pytest.raises(ModelError, match="a logistic head needs one output unit, the last layer has 4"):
        import_onnx(tmp_path / "sig.onnx")
    _matmul_add_model(w0, b0, w1, b1, tmp_path / "tanh.onnx", extra_op="Tanh")
    with pytest.raises(ModelError, match="unsupported ONNX operator Tanh"):
        import_onnx(tmp_path / "tanh.onnx")
    _matmul_add_model(w0, b0, w1, b1, tmp_path / "relu.onnx", extra_op="Relu")
    with pytest.raises(ModelError, match="must end with a linear layer"):
        import_onnx(tmp_path / "relu.onnx")


def test_one_logit_networks_become_two_logits(tmp_path):
    """A logistic network (one output z, optionally a final Sigmoid) is the classifier (0, z): class 1 iff z > 0."""
    seq = torch_sequential((5, 3, 1))
    X = np.random.default_rng(3).normal(size=(20, 5))
    z = seq(torch.tensor(X)).detach().numpy()[:, 0]
    torch.save(seq.state_dict(), tmp_path / "sd.pt")
    torch.save(torch.nn.Sequential(*seq, torch.nn.Sigmoid()), tmp_path / "sigmoid.pt")
    torch.onnx.export(seq.float(), (torch.zeros(1, 5),), str(tmp_path / "one.onnx"), dynamo=False)
    for m in (import_torch(tmp_path / "sd.pt"), import_torch(tmp_path / "sigmoid.pt"), import_onnx(tmp_path / "one.onnx")):
        assert m.n_classes == 2
        assert np.allclose(m.forward(X), np.c_[np.zeros_like(z), z], rtol=0, atol=1e-6)
    # Rejection twin: a Sigmoid over several outputs is a multi-label model, not a decision.
    torch.save(torch.nn.Sequential(*torch_sequential((5, 3, 3)), torch.nn.Sigmoid()), tmp_path / "multi.pt")
    with pytest.raises(ModelError, match="a logistic head needs one output unit, the last layer has 3"):
        import_torch(tmp_path / "multi.pt")


def test_fairness_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['onnx'] = None\n"
            "import fairness.datasets, fairness.model, fairness.fixed_point, fairness.bitwidth, fairness.training\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
