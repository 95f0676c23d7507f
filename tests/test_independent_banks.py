"""`fairproof import-model` on pipelines built by banks that never saw FairProof's code.

tests/independent_banks.py builds them on German Credit and Default of Credit Card Clients: sklearn
Pipelines (joblib and skl2onnx with one input per column), torch networks behind a fitted
ColumnTransformer (state dict and TorchScript with one output logit, torch.onnx with one logit per
class), one-hot sensitive attributes of two and three values, two sensitive attributes at once.

Every good bank imports, its check agrees on every row, and the committed integer model, reading the
bank's CSV as customers' records are read, decides every row as the bank did. Every good bank has its
rejection twin: the same files with one recorded decision changed are refused, naming that line. Every
broken bank is refused in one sentence naming the rows its own runtime disagrees on, or the column.
"""
from __future__ import annotations

import json
import re

import pytest

from prover_service.cli import main as fairproof

pytest.importorskip("torch")
pytest.importorskip("skl2onnx")
pytest.importorskip("onnxruntime")

GOOD = ("german-pipeline", "german-pipeline-onnx", "credit-pipeline", "credit-pipeline-onnx",
        "credit-torch-state-dict", "credit-torchscript", "credit-torch-onnx")
BROKEN = ("credit-columns-swapped", "credit-onehot-reversed", "credit-other-scaler", "credit-sensitive-missing",
          "german-sensitive-unread")
# Values of each bank's sensitive attributes: the slices its certificates range over.
SLICES = {"german": 2 * 2, "credit": 2 * 3}


@pytest.fixture(scope="session")
def banks(tmp_path_factory):
    """(good banks by name, broken banks by name), built once."""
    from fairness.errors import DataError
    from independent_banks import build_banks

    try:
        good, broken = build_banks(tmp_path_factory.mktemp("independent-banks"))
    except (DataError, FileNotFoundError) as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"shared datasets not available: {exc}")
    return good, {b.files.name: b for b in broken}


def _run(capsys, args: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = fairproof(args)
    out, err = capsys.readouterr()
    return code, out, err


def _committed_decisions(model_dir, data) -> list[str]:
    """Each CSV row read through the imported schema (as a customer's record is), quantised, and decided
    by the fixed-point model that will be committed: the raw class value."""
    from fairness.fixed_point import quantise_query
    from fairness.schema_csv import read_csv
    from offline_precompute.certify import load_fixed_point

    artifact, model = load_fixed_point(model_dir)
    schema = artifact.preprocessor
    table = read_csv(schema, data)
    return [schema.label.values[model.net.decision(quantise_query(model, list(x)))] for x in table.X]


def _refusal(capsys, args: list[str]) -> str:
    code, _, err = _run(capsys, args)
    assert code != 0 and "Traceback" not in err, err
    assert "fairproof: error:" in err, err
    return err[err.index("fairproof: error:"):]


@pytest.mark.parametrize("name", GOOD)
def test_good_bank_imports_with_every_decision_agreeing(banks, name, tmp_path, capsys):
    files = banks[0][name]
    out_dir = tmp_path / "model"
    code, out, err = _run(capsys, files.import_args(out_dir))
    assert code == 0, err
    rows = len(files.decisions)
    assert f"{rows} rows" in out and f"{rows} agree" in out
    check = json.loads((out_dir / "model.json").read_text())["training"]["import_check"]
    assert check["rows"] == check["agree"] == rows
    assert _committed_decisions(out_dir, files.data) == list(files.decisions)


@pytest.mark.parametrize("name", GOOD)
def test_one_changed_decision_is_refused_naming_its_line(banks, name, tmp_path, capsys):
    from independent_banks import with_flipped_decision

    row = len(banks[0][name].decisions) // 2
    files = with_flipped_decision(banks[0][name], row, tmp_path)
    err = _refusal(capsys, files.import_args(tmp_path / "model"))
    assert f"1 of {len(files.decisions)} rows" in err
    assert re.findall(r"line (\d+):", err) == [str(row + 2)]
    assert not (tmp_path / "model" / "model.json").exists()


@pytest.mark.parametrize("name", ["german-pipeline", "credit-pipeline", "credit-torch-onnx"])
def test_sensitive_attributes_span_the_banks_one_hot_columns(banks, name, tmp_path, capsys):
    """The slices are every combination of the bank's sensitive values, and each slice sets the one-hot
    inputs of its values (one column per value, or one for a dropped binary), nothing else."""
    from offline_precompute.certify import load_fixed_point

    files = banks[0][name]
    assert _run(capsys, files.import_args(tmp_path / "model"))[0] == 0
    _, model = load_fixed_point(tmp_path / "model")
    slices = list(model.slices())
    assert len(slices) == SLICES[name.split("-")[0]] == len(set(slices))
    meta = json.loads((tmp_path / "model" / "model.json").read_text())
    names = meta["feature_names"]
    for attribute in meta["sensitive"]:  # one-hot columns with a point per value, or one dropped-binary column
        columns = [names[c] for c in attribute.get("columns", [attribute.get("column")])]
        points = attribute.get("points") or [[v] for v in attribute["values"]]
        assert all(c.startswith(f"{attribute['name']}=") for c in columns), columns
        assert all(len(p) == len(columns) and sum(p) <= 1 and set(p) <= {0, 1} for p in points), points


@pytest.mark.parametrize("name", BROKEN)
def test_broken_bank_is_refused_naming_rows_and_columns(banks, name, tmp_path, capsys):
    broken = banks[1][name]
    err = _refusal(capsys, broken.files.import_args(tmp_path / "model"))
    for word in broken.names:
        assert word in err, (word, err)
    if broken.mismatched_rows:
        listed = {int(line) for line in re.findall(r"line (\d+):", err)}
        assert listed and listed <= set(broken.mismatched_lines), (sorted(listed), broken.mismatched_lines)
        assert min(broken.mismatched_lines) in listed
        assert f"{len(broken.mismatched_rows)} of {len(broken.files.decisions)} rows" in err
    assert not (tmp_path / "model" / "model.json").exists()
