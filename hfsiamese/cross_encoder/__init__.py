"""The cross-encoder family: both questions of a pair read together by one transformer, for what a bi-encoder
cannot do as well: deciding a pair (`CrossEncoder.predict`), reranking a bi-encoder's candidates
(`DuplicateIndex(..., cross_encoder=)`), and labelling silver training pairs (`hfsiamese.distillation.silver_pairs`).
Its model (a plain sequence-classification checkpoint), pair inputs, building, trainer and its arguments, card and ONNX export and
serving are all in this folder."""

from hfsiamese.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "PAIR_ORDERS": "hfsiamese.cross_encoder.model",
    "CrossEncoder": "hfsiamese.cross_encoder.model",
    "is_cross_encoder_config": "hfsiamese.cross_encoder.config_kind",
    "is_cross_encoder_folder": "hfsiamese.cross_encoder.config_kind",
    "load_pair_model": "hfsiamese.loading",
    "CrossPairCollator": "hfsiamese.cross_encoder.pair_inputs",
    "tokenize_cross_pairs": "hfsiamese.cross_encoder.pair_inputs",
    "CrossEncoderTrainer": "hfsiamese.cross_encoder.trainer",
    "CrossEncoderTrainingArguments": "hfsiamese.cross_encoder.training_args",
    "build_cross_encoder": "hfsiamese.cross_encoder.model_building",
    "export_cross_encoder_onnx": "hfsiamese.cross_encoder.onnx_export",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
