"""
Worker of test_multi_dataset_processes.py, run with `accelerate launch --multi_gpu --num_processes 2`.

Both ranks train one `SiameseTrainer` on two data sets (duplicates with an in-batch loss, labelled pairs with
the contrastive loss) and record, for every training batch, its data set and rows; each rank writes its record
to `<output folder>/rank<r>.json`. The test checks that both ranks drew the same data set at every step.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import datasets
import torch

from hfsiamese.bi_encoder.multi_dataset import DATASET_INDEX
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data import tokenize_pairs
from hfsiamese.losses import get_loss
from hfsiamese.models.siamese import SiameseConfig, SiameseModel

WORDS = ["how", "do", "i", "learn", "python", "lose", "weight", "sky", "blue", "cook", "rice", "france"]


def pairs(n: int, labelled: bool) -> datasets.Dataset:
    return datasets.Dataset.from_dict(
        {
            "question1": [f"{WORDS[i % 12]} {WORDS[(i * 5) % 12]} {i}" for i in range(n)],
            "question2": [f"{WORDS[(i + 1) % 12]} {WORDS[(i * 7) % 12]} {i}" for i in range(n)],
            "label": [i % 2 if labelled else 1 for i in range(n)],
            "group_id": [i // 2 for i in range(n)],
            "row": list(range(n)),
        }
    )


class RecordingTrainer(SiameseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        self.record.append(
            {
                "step": self.state.global_step,
                "datasets": sorted(set(inputs[DATASET_INDEX].tolist())),
                "groups": inputs["group_ids"].tolist(),
            }
        )
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


def main(output: Path) -> None:
    tokenizer = train_word_tokenizer(WORDS + [str(i) for i in range(40)], vocab_size=100, model_max_length=16)
    torch.manual_seed(0)
    model = SiameseModel(
        SiameseConfig(encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0)
    )
    args = SiameseTrainingArguments(
        output_dir=str(output / "run"), per_device_train_batch_size=4, max_steps=5, learning_rate=1e-2,
        save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, multi_dataset_sampling="proportional",
    )  # fmt: skip
    trainer = RecordingTrainer(
        model=model,
        args=args,
        train_dataset={
            "duplicates": tokenize_pairs(pairs(24, False), tokenizer),
            "labelled": tokenize_pairs(pairs(16, True), tokenizer),
        },
        processing_class=tokenizer,
        loss={"duplicates": get_loss("multiple_negatives_ranking"), "labelled": get_loss("contrastive")},
    )
    trainer.record = []
    trainer.train()
    rank = trainer.args.process_index
    (output / f"rank{rank}.json").write_text(
        json.dumps({"world_size": trainer.accelerator.num_processes, "batches": trainer.record})
    )
    trainer.accelerator.end_training()  # the process group torn down: under several processes gloo aborts at exit otherwise


if __name__ == "__main__":
    main(Path(sys.argv[1]))
