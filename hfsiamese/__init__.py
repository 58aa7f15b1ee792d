"""hfsiamese: Siamese (bi-encoder) networks and cross-encoders for duplicate-question and paraphrase detection.

Every family is reachable from here: the bi-encoder (`SiameseModel`, `SiameseTrainer`,
`SiameseTrainingArguments`), the cross-encoder (`CrossEncoder`, `CrossEncoderTrainer`,
`CrossEncoderTrainingArguments`), the trainer both build on (`PairTrainer`), search (`DuplicateIndex`), data
(`load_pairs`) and the one loader (`load_model`). Names other than the model classes are imported when first used,
so `import hfsiamese` stays as light as loading a model needs.
"""

# Before anything loads torch (and with it OpenMP, which reads its wait policy once): in a hfsiamese command only,
# OpenMP's short spin; a library import changes nothing in the process (see cpu_policy).
from hfsiamese.cpu_policy import apply_command_defaults, apply_openmp_defaults_at_import, set_cpu_policy

apply_openmp_defaults_at_import()

from transformers import AutoConfig, AutoModel  # noqa: E402
from transformers.pipelines import PIPELINE_REGISTRY  # noqa: E402

from hfsiamese import library_hooks  # noqa: E402
from hfsiamese.bi_encoder.onnx_model import OnnxSiameseConfig, OnnxSiameseModel  # noqa: E402
from hfsiamese.bi_encoder.openvino_model import OpenVinoSiameseConfig, OpenVinoSiameseModel  # noqa: E402
from hfsiamese.loading import load_model, load_siamese_model  # noqa: E402
from hfsiamese.models.siamese.configuration_siamese import SiameseConfig  # noqa: E402
from hfsiamese.models.siamese.modeling_siamese import SiameseModel, SiameseModelOutput  # noqa: E402
from hfsiamese.models.siamese.pipeline_question_duplicates import PIPELINE_TASK, QuestionDuplicatesPipeline  # noqa: E402
from hfsiamese.utils import moved_modules  # noqa: E402
from hfsiamese.utils.lazy_exports import lazy_exports  # noqa: E402

# What the travelling model code asks of the library (encode's machine policy, push_to_hub's card), set on its classes.
library_hooks.install()

# Auto classes: `AutoModel.from_pretrained(folder)` works with hfsiamese imported, and the saved
# config carries an `auto_map` plus the modeling code so that it also works without hfsiamese.
AutoConfig.register(SiameseConfig.model_type, SiameseConfig, exist_ok=True)
AutoModel.register(SiameseConfig, SiameseModel, exist_ok=True)
# ONNX exports (`hfsiamese export`): AutoConfig reads their config.json (AutoTokenizer needs it) and
# AutoModel returns an OnnxSiameseModel; `load_model` picks the class from the folder.
AutoConfig.register(OnnxSiameseConfig.model_type, OnnxSiameseConfig, exist_ok=True)
AutoModel.register(OnnxSiameseConfig, OnnxSiameseModel, exist_ok=True)
# OpenVINO exports (`hfsiamese export --format openvino`), likewise.
AutoConfig.register(OpenVinoSiameseConfig.model_type, OpenVinoSiameseConfig, exist_ok=True)
AutoModel.register(OpenVinoSiameseConfig, OpenVinoSiameseModel, exist_ok=True)
SiameseConfig.register_for_auto_class()
SiameseModel.register_for_auto_class("AutoModel")
# `pipeline("question-duplicates", model=SiameseModel instance, tokenizer=...)` with hfsiamese imported; a
# checkpoint folder or repo also names the pipeline in its config.json (loaded with trust_remote_code=True).
if PIPELINE_TASK not in PIPELINE_REGISTRY.supported_tasks:
    PIPELINE_REGISTRY.register_pipeline(
        PIPELINE_TASK, pipeline_class=QuestionDuplicatesPipeline, pt_model=AutoModel, type="text"
    )

__version__ = "0.1.0"

# The paths of the release before the package was filed by model family, kept one release with a FutureWarning.
moved_modules.install()

_LAZY = {
    "SiameseTrainer": "hfsiamese.bi_encoder.trainer",
    "SiameseTrainingArguments": "hfsiamese.bi_encoder.training_args",
    "CrossEncoder": "hfsiamese.cross_encoder.model",
    "CrossEncoderTrainer": "hfsiamese.cross_encoder.trainer",
    "CrossEncoderTrainingArguments": "hfsiamese.cross_encoder.training_args",
    "PairTrainer": "hfsiamese.base.trainer",
    "DuplicateIndex": "hfsiamese.search.duplicate_index",
    "load_pairs": "hfsiamese.data.pair_loading",
    "NonFiniteLossError": "hfsiamese.base.nonfinite_loss",
    "resolve_resume_checkpoint": "hfsiamese.base.checkpoints",
    "ExportArguments": "hfsiamese.bi_encoder.onnx_export",
    "export_onnx": "hfsiamese.bi_encoder.onnx_export",
    "export_openvino": "hfsiamese.bi_encoder.openvino_export",
    "export_cross_encoder_openvino": "hfsiamese.cross_encoder.openvino_export",
    "export_cross_encoder_onnx": "hfsiamese.cross_encoder.onnx_export",
    "export_sentence_transformers": "hfsiamese.bi_encoder.sentence_transformers_export",
    "to_mteb": "hfsiamese.integrations.mteb",
    "MtebBiEncoder": "hfsiamese.integrations.mteb",
    "MtebCrossEncoder": "hfsiamese.integrations.mteb",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "OnnxSiameseConfig",
    "OnnxSiameseModel",
    "OpenVinoSiameseConfig",
    "OpenVinoSiameseModel",
    "SiameseConfig",
    "SiameseModel",
    "SiameseModelOutput",
    "load_model",
    "load_siamese_model",
    "QuestionDuplicatesPipeline",
    *_LAZY,
    "__version__",
    "apply_command_defaults",
    "set_cpu_policy",
]
