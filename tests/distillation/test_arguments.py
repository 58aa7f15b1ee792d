"""`DistillationArguments`: what `hfsiamese distill` adds to training's flags, checked before the teacher loads."""

from __future__ import annotations

import pytest

from hfsiamese.distillation.arguments import DistillationArguments

TEACHER = {"teacher_model_name_or_path": "teacher"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"teacher_batch_size": 0}, "teacher_batch_size must be a positive integer, got 0"),
        ({"distillation_epochs": 0, "distillation_max_steps": 0}, "stage 1 needs distillation_epochs > 0"),
        ({"distillation_learning_rate": -1e-3}, "distillation_learning_rate must be at least 0, got -0.001"),
        ({"distillation_targets": "logits"}, "distillation_targets must be one of"),
        ({"score_distillation_loss": "mse"}, "score_distillation_loss must be one of"),
    ],
)
def test_a_stage_that_cannot_run_is_refused_with_the_flags(options, message):
    with pytest.raises(ValueError, match=message):
        DistillationArguments(**TEACHER, **options)


def test_the_defaults_and_what_stage_one_learns():
    arguments = DistillationArguments(**TEACHER)
    assert arguments.learns_embeddings and not arguments.learns_scores
    both = DistillationArguments(**TEACHER, distillation_targets="both", distillation_learning_rate=0.0)
    assert both.learns_embeddings and both.learns_scores
