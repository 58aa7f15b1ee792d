"""The cross-encoder family: both questions of a pair read together by one transformer, for what a bi-encoder
cannot do as well: deciding a pair (`CrossEncoder.predict`), reranking a bi-encoder's candidates
(`DuplicateIndex(..., cross_encoder=)`), and labelling silver training pairs (`hfsiamese.distillation.silver_pairs`).
Its model (a plain sequence-classification checkpoint), pair inputs, building, trainer and its arguments, card and ONNX export and
serving are all in this folder."""

from hfsiamese.utils.lazy_exports import lazy_package

__getattr__, __dir__, __all__ = lazy_package(
    __name__,
    {
        ".model": ("PAIR_ORDERS", "CrossEncoder"),
        ".config_kind": ("is_cross_encoder_config", "is_cross_encoder_folder"),
        "hfsiamese.loading": ("load_pair_model",),
        ".pair_inputs": ("CrossPairCollator", "tokenize_cross_pairs"),
        ".trainer": ("CrossEncoderTrainer",),
        ".training_args": ("CrossEncoderTrainingArguments",),
        ".model_building": ("build_cross_encoder",),
        ".onnx_export": ("export_cross_encoder_onnx",),
    },
)
