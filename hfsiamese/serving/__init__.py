"""
Loading a model to serve it: the onnxruntime model (`OnnxSiameseModel`, the same inference API as
`SiameseModel`) and `load_siamese_model`, which tells an ONNX export from a PyTorch checkpoint.
"""

from .loading import is_onnx_folder, load_siamese_model
from .onnx_model import OnnxSiameseConfig, OnnxSiameseModel

__all__ = ["OnnxSiameseConfig", "OnnxSiameseModel", "is_onnx_folder", "load_siamese_model"]
