"""
Loading a model to serve it: the onnxruntime model (`OnnxSiameseModel`, the same inference API as
`SiameseModel`) and `load_siamese_model`, which tells an ONNX export from a PyTorch checkpoint
(`load_pair_model`: a cross-encoder too, for the tools that only score pairs).
"""

from .loading import is_onnx_folder, load_pair_model, load_siamese_model
from .onnx_model import OnnxSiameseConfig, OnnxSiameseModel

__all__ = ["OnnxSiameseConfig", "OnnxSiameseModel", "is_onnx_folder", "load_pair_model", "load_siamese_model"]
