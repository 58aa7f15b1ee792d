"""The bi-encoder (Siamese) family: its trainer and training arguments, how a run builds its model (LSTM or
static vocabularies, pretrained and sentence-transformers folders, LoRA, decoder tokens), its gradient cache,
batch sampling (several data sets in one run too) and hard-negative mining, its model card, calibrated copies, and its exports (ONNX, OpenVINO, the
sentence-transformers layout). The model itself is `hfsiamese.models.siamese`: the folder that travels with
every checkpoint."""

from hfsiamese.utils.lazy_exports import lazy_package

__getattr__, __dir__, __all__ = lazy_package(
    __name__,
    {
        ".trainer": ("SiameseTrainer",),
        ".training_args": ("SiameseTrainingArguments",),
        ".model_building": ("build_model_and_tokenizer", "check_same_vocabulary"),
        ".model_card": ("build_model_card",),
        ".multi_dataset": ("MultiDatasetView",),
        ".calibrated_folder": ("CalibrationArguments",),
        ".onnx_export": ("ExportArguments", "export_onnx"),
        ".onnx_model": ("OnnxSiameseConfig", "OnnxSiameseModel"),
        ".openvino_export": ("export_openvino",),
        ".openvino_model": ("OpenVinoSiameseConfig", "OpenVinoSiameseModel"),
        ".sentence_transformers_export": ("check_export", "export_sentence_transformers"),
    },
)
