"""The bi-encoder (Siamese) family: its trainer and training arguments, how a run builds its model (LSTM or
static vocabularies, pretrained and sentence-transformers folders, LoRA, decoder tokens), its gradient cache,
batch sampling (several data sets in one run too) and hard-negative mining, its model card, calibrated copies, and its exports (ONNX, OpenVINO, the
sentence-transformers layout). The model itself is `hfsiamese.models.siamese`: the folder that travels with
every checkpoint."""

from hfsiamese.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "SiameseTrainer": "hfsiamese.bi_encoder.trainer",
    "SiameseTrainingArguments": "hfsiamese.bi_encoder.training_args",
    "build_model_and_tokenizer": "hfsiamese.bi_encoder.model_building",
    "check_same_vocabulary": "hfsiamese.bi_encoder.model_building",
    "build_model_card": "hfsiamese.bi_encoder.model_card",
    "MultiDatasetView": "hfsiamese.bi_encoder.multi_dataset",
    "CalibrationArguments": "hfsiamese.bi_encoder.calibrated_folder",
    "ExportArguments": "hfsiamese.bi_encoder.onnx_export",
    "export_onnx": "hfsiamese.bi_encoder.onnx_export",
    "OnnxSiameseConfig": "hfsiamese.bi_encoder.onnx_model",
    "OnnxSiameseModel": "hfsiamese.bi_encoder.onnx_model",
    "export_openvino": "hfsiamese.bi_encoder.openvino_export",
    "OpenVinoSiameseConfig": "hfsiamese.bi_encoder.openvino_model",
    "OpenVinoSiameseModel": "hfsiamese.bi_encoder.openvino_model",
    "check_export": "hfsiamese.bi_encoder.sentence_transformers_export",
    "export_sentence_transformers": "hfsiamese.bi_encoder.sentence_transformers_export",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
