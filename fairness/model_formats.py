"""The network file formats `fairness.model.load_network` reads (a light
module, so that command-line parsers can offer them without importing the
loaders)."""

MODEL_FORMATS = ("torch", "torchscript", "onnx", "sklearn")
