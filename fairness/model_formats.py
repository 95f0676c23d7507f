"""The network file formats `fairness.model.import_model` reads (a light
module, so that command-line parsers can offer them without importing the
loaders)."""

MODEL_FORMATS = ("torch", "torchscript", "onnx", "sklearn")
