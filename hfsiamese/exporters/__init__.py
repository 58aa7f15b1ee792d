"""
Writing a trained Siamese model in other formats: ONNX for onnxruntime serving (`onnx`, optionally int8)
and a sentence-transformers folder (`sentence_transformers`); a cross-encoder to ONNX (`onnx_cross_encoder`). Each exporter checks its output folder
before it starts and never overwrites a user's files.
"""

from .onnx import ExportArguments, export_onnx
from .onnx_cross_encoder import export_cross_encoder_onnx
from .sentence_transformers import check_export, export_sentence_transformers

__all__ = [
    "ExportArguments",
    "check_export",
    "export_cross_encoder_onnx",
    "export_onnx",
    "export_sentence_transformers",
]
