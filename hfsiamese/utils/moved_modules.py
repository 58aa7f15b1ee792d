"""Import paths of the release before the package was filed by model family, kept one release.

`import hfsiamese.trainer.siamese_trainer` (or `from hfsiamese.trainer import SiameseTrainer`, as the README of
0.1 showed) still works, with a `FutureWarning` naming the new path: a finder on `sys.meta_path` answers for
the old names only, so nothing else is slowed or changed. An old module name gives the new module itself
(so objects pickled under the old name and `mock.patch` targets resolve to the same objects); an old package gives
a face that hands on the names it used to export. Written here because the standard library offers no alias
for a moved module, and the names must resolve before anything else is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

REMOVED_IN = "0.3"

MOVED_MODULES: dict[str, str] = {
    "hfsiamese.trainer.atomic_save": "hfsiamese.base.atomic_save",
    "hfsiamese.trainer.staged_saving": "hfsiamese.base.staged_saving",
    "hfsiamese.trainer.checkpoints": "hfsiamese.base.checkpoints",
    "hfsiamese.trainer.threshold_calibration": "hfsiamese.base.threshold_calibration",
    "hfsiamese.trainer.nonfinite_loss": "hfsiamese.base.nonfinite_loss",
    "hfsiamese.trainer.loss_statistics": "hfsiamese.base.loss_statistics",
    "hfsiamese.trainer.cpu_precision": "hfsiamese.base.cpu_precision",
    "hfsiamese.trainer.core_sharing_callback": "hfsiamese.base.core_sharing_callback",
    "hfsiamese.trainer.sharded_training": "hfsiamese.base.sharded_training",
    "hfsiamese.trainer.siamese_trainer": "hfsiamese.bi_encoder.trainer",
    "hfsiamese.trainer.training_arguments": "hfsiamese.bi_encoder.training_args",
    "hfsiamese.trainer.gradient_cache": "hfsiamese.bi_encoder.gradient_cache",
    "hfsiamese.trainer.batch_sampling": "hfsiamese.bi_encoder.batch_sampling",
    "hfsiamese.trainer.lora_checkpoints": "hfsiamese.bi_encoder.lora_checkpoints",
    "hfsiamese.trainer.truncated_evaluation": "hfsiamese.bi_encoder.truncated_evaluation",
    "hfsiamese.trainer.dataset_checks": "hfsiamese.bi_encoder.dataset_checks",
    "hfsiamese.training.model_building": "hfsiamese.bi_encoder.model_building",
    "hfsiamese.training.lora": "hfsiamese.bi_encoder.lora",
    "hfsiamese.training.decoder_tokens": "hfsiamese.bi_encoder.decoder_tokens",
    "hfsiamese.training.pretrained_vectors": "hfsiamese.bi_encoder.pretrained_vectors",
    "hfsiamese.training.word_tokenizer": "hfsiamese.bi_encoder.word_tokenizer",
    "hfsiamese.training.minilm": "hfsiamese.bi_encoder.minilm",
    "hfsiamese.training.mining": "hfsiamese.bi_encoder.mining",
    "hfsiamese.models.sentence_transformers_folder": "hfsiamese.bi_encoder.sentence_transformers_folder",
    "hfsiamese.model_card": "hfsiamese.bi_encoder.model_card",
    "hfsiamese.calibrated_folder": "hfsiamese.bi_encoder.calibrated_folder",
    "hfsiamese.exporters.onnx": "hfsiamese.bi_encoder.onnx_export",
    "hfsiamese.exporters.sentence_transformers": "hfsiamese.bi_encoder.sentence_transformers_export",
    "hfsiamese.serving.onnx_model": "hfsiamese.bi_encoder.onnx_model",
    "hfsiamese.cross_encoder.cross_encoder": "hfsiamese.cross_encoder.model",
    "hfsiamese.trainer.cross_encoder_trainer": "hfsiamese.cross_encoder.trainer",
    "hfsiamese.training.cross_encoder_building": "hfsiamese.cross_encoder.model_building",
    "hfsiamese.exporters.onnx_cross_encoder": "hfsiamese.cross_encoder.onnx_export",
    "hfsiamese.serving.onnx_cross_encoder": "hfsiamese.cross_encoder.onnx_model",
    "hfsiamese.serving.loading": "hfsiamese.loading",
    "hfsiamese.runs.command_line": "hfsiamese.cli.command_line",
    "hfsiamese.runs.config_and_flags": "hfsiamese.cli.config_and_flags",
    "hfsiamese.runs.run_start": "hfsiamese.training.run_start",
    "hfsiamese.runs.run_end": "hfsiamese.training.run_end",
    "hfsiamese.runs.run_summary": "hfsiamese.training.run_summary",
    "hfsiamese.runs.run_folder": "hfsiamese.cli.run_folder",
    "hfsiamese.runs.zero3_construction": "hfsiamese.training.zero3_construction",
    "hfsiamese.runs.console": "hfsiamese.utils.console",
    "hfsiamese.runs.cpu_threads": "hfsiamese.utils.cpu_threads",
    "hfsiamese.runs.output_dirs": "hfsiamese.utils.output_dirs",
    "hfsiamese.runs.process_group": "hfsiamese.utils.process_group",
    "hfsiamese.runs.run_lock": "hfsiamese.utils.run_lock",
    "hfsiamese.openmp_defaults": "hfsiamese.utils.openmp_defaults",
    "hfsiamese.hub_access": "hfsiamese.utils.hub_access",
    "hfsiamese.deprecation": "hfsiamese.utils.deprecation",
    "hfsiamese.extras": "hfsiamese.utils.extras",
    "hfsiamese.measurement_memory": "hfsiamese.utils.measurement_memory",
    "hfsiamese.search.embedding_shards": "hfsiamese.search.shards",
    "hfsiamese.search.lancedb_store": "hfsiamese.search.stores.lancedb_store",
    "hfsiamese.search.qdrant_store": "hfsiamese.search.stores.qdrant_store",
    "hfsiamese.search.store_checks": "hfsiamese.search.stores.store_checks",
    "hfsiamese.search.exact": "hfsiamese.utils.exact_topk",
    "hfsiamese.search.ann_index": "hfsiamese.search.stores.ann_index",
    "hfsiamese.search.recall_tuning": "hfsiamese.search.stores.recall_tuning",
    "hfsiamese.search.index_files": "hfsiamese.search.stores.index_files",
    "hfsiamese.search.embedding_table": "hfsiamese.search.stores.embedding_table",
    "hfsiamese.search.app": "hfsiamese.cli.app_page",
    "hfsiamese.search.app_groups": "hfsiamese.cli.app_groups",
    "hfsiamese.distillation.silver_arguments": "hfsiamese.cli.silver_pairs_arguments",
    "hfsiamese.models.siamese.core_sharing": "hfsiamese.utils.core_sharing",
    "hfsiamese.models.siamese.encode_precision": "hfsiamese.utils.encode_precision",
}
"""Old module → the module that holds its code now."""

MOVED_PACKAGES: dict[str, dict[str, str]] = {
    "hfsiamese.trainer": {
        "CrossEncoderTrainer": "hfsiamese.cross_encoder.trainer",
        "NonFiniteLossError": "hfsiamese.base.nonfinite_loss",
        "SiameseTrainer": "hfsiamese.bi_encoder.trainer",
        "SiameseTrainingArguments": "hfsiamese.bi_encoder.training_args",
        "resolve_resume_checkpoint": "hfsiamese.base.checkpoints",
    },
    "hfsiamese.serving": {
        "OnnxSiameseConfig": "hfsiamese.bi_encoder.onnx_model",
        "OnnxSiameseModel": "hfsiamese.bi_encoder.onnx_model",
        "is_cross_encoder_config": "hfsiamese.loading",
        "is_cross_encoder_folder": "hfsiamese.loading",
        "is_onnx_folder": "hfsiamese.loading",
        "load_siamese_model": "hfsiamese.loading",
    },
    "hfsiamese.exporters": {
        "ExportArguments": "hfsiamese.bi_encoder.onnx_export",
        "check_export": "hfsiamese.bi_encoder.sentence_transformers_export",
        "export_cross_encoder_onnx": "hfsiamese.cross_encoder.onnx_export",
        "export_onnx": "hfsiamese.bi_encoder.onnx_export",
        "export_sentence_transformers": "hfsiamese.bi_encoder.sentence_transformers_export",
    },
    "hfsiamese.runs": {
        "UsageError": "hfsiamese.cli.command_line",
        "run_recipe": "hfsiamese.cli.command_line",
        "default_config_of": "hfsiamese.cli.config_and_flags",
        "parse_config_and_flags": "hfsiamese.cli.config_and_flags",
        "configure_quiet_console": "hfsiamese.utils.console",
        "configure_training_console": "hfsiamese.utils.console",
        "apply_cpu_threads": "hfsiamese.utils.cpu_threads",
        "end_run": "hfsiamese.training.run_end",
        "save_run": "hfsiamese.training.run_end",
        "claim_output_dir": "hfsiamese.cli.run_folder",
    },
}
"""Old package → the names it exported, each with the module that holds it now."""


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path goes in hfsiamese {REMOVED_IN}", FutureWarning, stacklevel=3)


class _PackageFace(types.ModuleType):
    """An old package: hands on each name it used to export from where the name lives now."""

    def __getattr__(self, name: str) -> Any:
        new_module = MOVED_PACKAGES[self.__name__].get(name)
        if new_module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        _warn(f"{self.__name__}.{name}", f"{new_module}.{name}")
        value = getattr(importlib.import_module(new_module), name)
        setattr(self, name, value)  # `from old import name` looks the name up twice: warn once
        return value


class _MovedLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in MOVED_PACKAGES:
            face = _PackageFace(spec.name, f"Moved: see {sorted(set(MOVED_PACKAGES[spec.name].values()))}.")
            face.__path__ = []  # a package, so that its old submodules import too
            return face
        _warn(spec.name, MOVED_MODULES[spec.name])
        return importlib.import_module(MOVED_MODULES[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module was created whole."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED_MODULES or fullname in MOVED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _MovedLoader(), is_package=fullname in MOVED_PACKAGES)
        return None


def install() -> None:
    """Answer for the old paths (once per process)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
