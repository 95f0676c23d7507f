"""Which kind of file the bank handed over, read from its first bytes (its name only for ONNX).

- ONNX: the `.onnx` suffix, or a protobuf ModelProto (first field ir_version, byte 0x08) that onnx parses;
- TorchScript: a zip archive holding `constants.pkl` and compiled code (torch.jit.save);
- torch: a zip archive of torch.save (a state dict or a whole module), or torch's legacy pickle;
- scikit-learn: a pickle or a joblib file (plain or compressed) of fitted scikit-learn objects.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

from fairness.errors import ModelError

TORCH_LEGACY_MAGIC = bytes.fromhex("8a0a6cfc9c46f9206aa85019")  # the long torch's legacy format pickles first
COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x04\x22\x4d\x18", b"ZF")  # gzip, bz2, xz, lz4, joblib zlib


def detect_format(path: str | Path) -> str:
    """One of "onnx", "torchscript", "torch", "sklearn"; a plain refusal when the file is none of them."""
    from .torch_network import is_torchscript

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    if p.suffix.lower() == ".onnx":
        return "onnx"
    with p.open("rb") as fh:
        head = fh.read(16)
    if zipfile.is_zipfile(p):
        return "torchscript" if is_torchscript(p) else "torch"
    if head[:1] == b"\x80":
        return "torch" if TORCH_LEGACY_MAGIC in head else "sklearn"
    if head[:1] == b"\x78" and len(head) > 1 and head[1] in (0x01, 0x5E, 0x9C, 0xDA) or head.startswith(COMPRESSED):
        return "sklearn"
    if head[:1] == b"\x08" and _parses_as_onnx(p):
        return "onnx"
    raise ModelError(f"{p}: FairProof cannot tell what this file is (not ONNX, TorchScript, a torch.save file or "
                     "a joblib/pickle file); give --format")


def _parses_as_onnx(path: Path) -> bool:
    try:
        import onnx

        model = onnx.load(str(path))
    except Exception:  # not a protobuf ModelProto
        return False
    return len(model.graph.node) > 0
