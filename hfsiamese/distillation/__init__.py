"""
Distillation of a transformer teacher into a fast student (LSTM or static encoder), in two stages.

1. The teacher (a fine-tuned MiniLM, say) embeds every training question once (`teacher`); the
   student learns those embeddings and the teacher's similarities on the training pairs and the
   pairs within duplicate groups (`data`, `EmbeddingDistillationLoss`, `DistillationTrainer`).
   Or (`DistillationArguments.distillation_targets` "scores"), or then ("both"), the student learns the
   teacher's scores of scored rows: a query, its positive, its negatives and the teacher's score of each
   (`hfsiamese.data.teacher_score_rows`; `margin_mse` or `listwise_kl`, `score_distillation_loss`).
2. The student is fine-tuned on the labels with the recipe's own loss (`SiameseTrainer`).

`hfsiamese distill` puts the steps in order; `DistillationArguments` holds the options of stage 1.

A cross-encoder teaches too: `silver_pairs` pairs up the training questions and labels them with it
(`hfsiamese silver-pairs`, whose command line is `hfsiamese/cli/silver_pairs_arguments.py`), and the recipes train on gold + silver.
"""

from hfsiamese.distillation.arguments import DISTILLATION_TARGETS, DistillationArguments, distillation_training_args
from hfsiamese.distillation.collator import TEACHER_ROW_COLUMNS, DistillationCollator
from hfsiamese.distillation.data import distillation_pairs, with_teacher_rows
from hfsiamese.distillation.teacher import TeacherEmbeddings, encode_teacher_targets, load_teacher, teacher_path
from hfsiamese.distillation.trainer import DistillationTrainer

__all__ = [
    "DISTILLATION_TARGETS",
    "TEACHER_ROW_COLUMNS",
    "DistillationArguments",
    "DistillationCollator",
    "DistillationTrainer",
    "TeacherEmbeddings",
    "distillation_pairs",
    "distillation_training_args",
    "encode_teacher_targets",
    "load_teacher",
    "teacher_path",
    "with_teacher_rows",
]
