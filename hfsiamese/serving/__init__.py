"""
Loading a model to serve it: the onnxruntime model (`OnnxSiameseModel`, the same inference API as
`SiameseModel`) and `load_siamese_model`, which tells an ONNX export from a PyTorch checkpoint, and refuses a cross-encoder
(`is_cross_encoder_folder`); `onnx_cross_encoder`: a cross-encoder's graph on onnxruntime.
"""

from .loading import is_cross_encoder_config, is_cross_encoder_folder, is_onnx_folder, load_siamese_model
from .onnx_model import OnnxSiameseConfig, OnnxSiameseModel

__all__ = [
    "OnnxSiameseConfig",
    "OnnxSiameseModel",
    "is_cross_encoder_config",
    "is_cross_encoder_folder",
    "is_onnx_folder",
    "load_siamese_model",
]
