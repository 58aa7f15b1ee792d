"""
Every deprecated name of hfsiamese, in one table with one sunset version.

A renamed option, keyword, loss or public name, and a moved module, keeps working until `REMOVED_IN` with a
`FutureWarning` naming the new one; each row says when the old name became an alias. The mechanisms that answer for
the old names read this table: `renamed_option` (an argument dataclass's old field), `warn_deprecated` (a keyword,
a loss name, a value's old spelling), `moved_name_getattr` (a name moved out of a module that stays, or renamed in
it) and `hfsiamese.utils.moved_modules` (old import paths). A warning for a name not in the table is a KeyError, so
the table stays complete; `tests/utils/test_deprecation.py` holds it against the code.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEPRECATIONS",
    "MOVED_MODULES",
    "MOVED_PACKAGES",
    "REMOVED_IN",
    "Deprecated",
    "Kind",
    "deprecation_message",
    "moved_name_getattr",
    "renamed_option",
    "warn_deprecated",
]

REMOVED_IN = "0.3"
"""The release that removes every old name below."""

Kind = Literal["module", "package name", "name", "option", "keyword", "argument", "loss", "loss option"]


@dataclass(frozen=True)
class Deprecated:
    """One old name: what kind of name, the old and the new spelling, and the day the old one became an alias."""

    kind: Kind
    old: str
    new: str
    since: str  # YYYY-MM-DD


_FILED_BY_FAMILY = "2026-11-26"  # the package filed by model family (trainer/, runs/, serving/, exporters/ gone)
_ROUND_THREE = "2026-11-28"  # one question identity, one miner vocabulary, names that say what they do

_MODULES_FILED_BY_FAMILY = {
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
    "hfsiamese.training.minilm": "hfsiamese.utils.minilm",
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
    "hfsiamese.distillation.silver_arguments": "hfsiamese.cli.silver_pairs_arguments",
    "hfsiamese.models.siamese.core_sharing": "hfsiamese.utils.core_sharing",
    "hfsiamese.models.siamese.encode_precision": "hfsiamese.utils.encode_precision",
}

_PACKAGES_FILED_BY_FAMILY = {
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

DEPRECATIONS: tuple[Deprecated, ...] = (
    *(Deprecated("module", old, new, _FILED_BY_FAMILY) for old, new in _MODULES_FILED_BY_FAMILY.items()),
    *(
        Deprecated("package name", f"{package}.{name}", f"{module}.{name}", _FILED_BY_FAMILY)
        for package, names in _PACKAGES_FILED_BY_FAMILY.items()
        for name, module in names.items()
    ),
    Deprecated("loss", "contrastive_triplet", "contrastive_ranking", "2026-11-21"),
    Deprecated("loss option", "triplet_weight", "ranking_weight", "2026-11-21"),
    Deprecated(
        "name", "hfsiamese.losses.ContrastiveTripletLoss", "hfsiamese.losses.ContrastiveRankingLoss", "2026-11-24"
    ),
    Deprecated("keyword", "model.calibrate(target=...)", "calibrate_for=...", _FILED_BY_FAMILY),
    Deprecated("keyword", "calibrate_model(target=...)", "calibrate_for=...", _FILED_BY_FAMILY),
    Deprecated(
        "argument",
        "CrossEncoderTrainer(args=SiameseTrainingArguments(...))",
        "CrossEncoderTrainer(args=CrossEncoderTrainingArguments(...)) (hfsiamese.cross_encoder.training_args)",
        _FILED_BY_FAMILY,
    ),
    Deprecated("option", "--method", "--calibration_method", _FILED_BY_FAMILY),
    Deprecated("option", "--overwrite", "--overwrite_output_dir", _FILED_BY_FAMILY),
    Deprecated("option", "--overwrite_index", "--overwrite_index_dir", _FILED_BY_FAMILY),
    Deprecated(
        "option",
        "--dataset_name owner/name:config",
        "--dataset_name owner/name --dataset_config_name config",
        _FILED_BY_FAMILY,
    ),
    # One question identity: ids, keys, groups, repeated pairs and the column reading they share, in one module.
    *(
        Deprecated("module", f"hfsiamese.data.{old}", "hfsiamese.data.question_identity", _ROUND_THREE)
        for old in ("question_ids", "groups", "deduplication")
    ),
    *(
        Deprecated(
            "name", f"hfsiamese.data.{old}", f"hfsiamese.data.question_identity.{old.rpartition('.')[2]}", _ROUND_THREE
        )
        for old in ("arrow_columns.column_arrow", "arrow_columns.column_numpy", "splits.split_report")
    ),
    # One negative-filter rule, and one vocabulary, for the training-time miner and `hfsiamese mine`.
    Deprecated("module", "hfsiamese.mining.negative_filters", "hfsiamese.data.negative_filters", _ROUND_THREE),
    Deprecated("option", "--mining_top_k", "--mining_max_rank", _ROUND_THREE),
    Deprecated("keyword", "mine_hard_negatives(top_k=...)", "max_rank=...", _ROUND_THREE),
    # Names that say what they hold: "mining" is hard negatives; a corpus's duplicate pairs are found.
    Deprecated("module", "hfsiamese.search.duplicate_mining", "hfsiamese.search.duplicate_finding", _ROUND_THREE),
    # `load_pairs`, beside `hfsiamese.loading` (which loads models).
    Deprecated("module", "hfsiamese.data.loading", "hfsiamese.data.pair_loading", _ROUND_THREE),
    # The validation sample is a data operation (beside the split it samples), not a training run's step.
    Deprecated("module", "hfsiamese.training.validation_sample", "hfsiamese.data.validation_sample", _ROUND_THREE),
    # What a run derives from a prepared folder and keeps there: the mechanism and its three values, one module.
    *(
        Deprecated("module", f"hfsiamese.preparation.{old}", "hfsiamese.preparation.derived_cache", _ROUND_THREE)
        for old in ("question_cache", "vocabulary_cache")
    ),
    Deprecated("option", "--index", "--index_dir", _ROUND_THREE),  # hfsiamese app, as search, groups and serve
    # The two families as siblings with one run: MiniLM is both families' default, one start and one train for either.
    Deprecated("module", "hfsiamese.bi_encoder.minilm", "hfsiamese.utils.minilm", _ROUND_THREE),
    # The index composes: what keeps and tunes vectors is the store side; the web page is beside the command serving it.
    *(
        Deprecated("module", f"hfsiamese.search.{name}", f"hfsiamese.search.stores.{name}", _ROUND_THREE)
        for name in ("ann_index", "recall_tuning", "index_files", "embedding_table")
    ),
    Deprecated("module", "hfsiamese.search.matches", "hfsiamese.search.stores.matches", _ROUND_THREE),  # stores make
    Deprecated("module", "hfsiamese.search.app", "hfsiamese.cli.app_page", _ROUND_THREE),
    Deprecated("module", "hfsiamese.search.app_groups", "hfsiamese.cli.app_groups", _ROUND_THREE),
    Deprecated(
        "name",
        "hfsiamese.training.run_start.start_cross_encoder_run",
        "hfsiamese.training.run_start.start_run (a cross-encoder's run by model_args.architecture)",
        _ROUND_THREE,
    ),
    Deprecated(
        "name",
        "hfsiamese.training.run_start.StartedCrossEncoderRun",
        "hfsiamese.training.run_start.StartedRun",
        _ROUND_THREE,
    ),
    # One `backend` vocabulary: the model's runtime (load_model, evaluate); the vector store is `store` (values disjoint).
    *(
        Deprecated("module", f"hfsiamese.search.{name}", "hfsiamese.search.index_writing", _ROUND_THREE)
        for name in ("index_building", "index_rows")  # the index's write path and its refusals, in one module
    ),
    Deprecated("option", "--backend STORE", "--store STORE", _ROUND_THREE),  # hfsiamese search, groups, app, mine
    # DuplicateIndex (its build, load and search) and mine_negatives:
    Deprecated("keyword", "backend=STORE", "store=STORE", _ROUND_THREE),
    Deprecated(
        "name", "hfsiamese.search.DuplicateIndex.backend", "hfsiamese.search.DuplicateIndex.store_name", _ROUND_THREE
    ),
    Deprecated(
        "name",
        "hfsiamese.cli.train.train_cross_encoder",
        "hfsiamese.cli.train.train (either family, by model_args.architecture)",
        _ROUND_THREE,
    ),
)
"""Every old name, oldest first within a kind; rows are only added here (and all removed at `REMOVED_IN`)."""

MOVED_MODULES: dict[str, str] = {row.old: row.new for row in DEPRECATIONS if row.kind == "module"}
"""Old module → the module that holds its code now."""

MOVED_PACKAGES: dict[str, dict[str, str]] = {}
"""Old package (gone) → the names it exported, each with the module that holds it now."""
for _entry in DEPRECATIONS:
    if _entry.kind == "package name":
        _package, _, _name = _entry.old.rpartition(".")
        MOVED_PACKAGES.setdefault(_package, {})[_name] = _entry.new.rpartition(".")[0]


def _row(kind: Kind, old: str) -> Deprecated:
    for row in DEPRECATIONS:
        if row.kind == kind and row.old == old:
            return row
    raise KeyError(f"{old} is not in hfsiamese.utils.deprecation.DEPRECATIONS as a deprecated {kind}: add its row")


def deprecation_message(row: Deprecated, *, old: str | None = None, new: str | None = None) -> str:
    """What the FutureWarning says; `old`/`new` spell the row's names as the user wrote them (a value in a flag)."""
    old, new = old or row.old, new or row.new
    if row.kind in ("module", "package name"):
        return f"{old} moved to {new}; the old path goes in hfsiamese {REMOVED_IN}"
    if row.kind == "name":
        old_module, _, old_name = old.rpartition(".")
        new_module, _, new_name = new.rpartition(".")
        if old_module == new_module:
            return f"{old_name} is now {new_name} ({new_module}); the old name goes in hfsiamese {REMOVED_IN}"
        return f"{old} moved to {new}; the old path goes in hfsiamese {REMOVED_IN}"
    if row.kind == "argument":
        return f"{old} is replaced by {new}; {old} goes in hfsiamese {REMOVED_IN}"
    what = {"loss": "loss ", "loss option": "loss option "}.get(row.kind, "")
    return f"{what}{old} is renamed {new}; {old} goes in hfsiamese {REMOVED_IN}"


def warn_deprecated(
    kind: Kind, old: str, *, said_old: str | None = None, said_new: str | None = None, stacklevel: int = 3
) -> str:
    """Warn (FutureWarning) that the table's `old` name of `kind` was used; returns the new name."""
    row = _row(kind, old)
    message = deprecation_message(row, old=said_old, new=said_new)
    warnings.warn(message, FutureWarning, stacklevel=stacklevel)
    return row.new


def renamed_option(args: Any, old: str, new: str) -> None:
    """
    Move a value given under the old field name `old` to `new` (with a FutureWarning), and let `old`
    read the value of `new`. Given under both names, with different values, is an error.
    """
    _row("option", f"--{old}")  # listed, before any value is looked at
    value, current = getattr(args, old), getattr(args, new)
    if value is not None and value != current:
        default = type(args).__dataclass_fields__[new].default
        if current != default:
            raise ValueError(f"--{old} (deprecated) and --{new} give different values: pass --{new} only")
        warn_deprecated("option", f"--{old}", stacklevel=5)  # the code that made `args`
        setattr(args, new, value)
    setattr(args, old, getattr(args, new))


def moved_name_getattr(module_name: str) -> Callable[[str], Any]:
    """
    A module's `__getattr__` (PEP 562) that answers for the names the table lists as moved out of it or renamed in
    it: the object under its new name, with the FutureWarning.
    """
    moved = {
        row.old.rpartition(".")[2]: row
        for row in DEPRECATIONS
        if row.kind == "name" and row.old.rpartition(".")[0] == module_name
    }

    def __getattr__(name: str) -> Any:
        row = moved.get(name)
        if row is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        warn_deprecated("name", row.old)
        new_module, _, new_name = row.new.rpartition(".")
        return getattr(importlib.import_module(new_module), new_name)

    return __getattr__
