"""On a CUDA GPU: bf16 autocast training steps, CUDA embeddings equal to the CPU's, and FSDP and ZeRO-2 on one GPU.

The rest of the suite runs on CPUs (a GPU is lent to some sessions only, and CI has none); this module holds what
only a GPU can show, and is skipped, with its reason counted, where there is none. On a GPU machine run it alone:
`python -m pytest tests/test_on_cuda.py`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hfsiamese import SiameseModel, load_model
from tests.conftest import REPO_ROOT, TEXTS
from tests.helpers import TRAIN, free_port, recipe_flags, run_offline

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA GPU: bf16 steps, CUDA encode and FSDP/ZeRO-2 need one"
)

CONFIGS = REPO_ROOT / "recipes" / "accelerate"


def flags(model_dir: Path, **overrides: object) -> list[str]:
    """A tiny BERT bi-encoder, the in-batch loss, 4 steps of plain SGD (a wrong gradient shows in the weights), in
    fp32: a transformer run's `--bf16` defaults to auto, which is bf16 on a GPU, and the runs compared must differ in
    nothing but what each test changes."""
    values = dict(
        encoder_type="transformer", model_name_or_path=model_dir, max_length=16, encoder_dropout=0.0,
        loss="multiple_negatives_ranking", max_train_pairs=64, max_eval_pairs=16, per_device_train_batch_size=8,
        max_steps=4, optim="sgd", learning_rate=1.0, warmup_steps=0, seed=7, eval_strategy="no",
        save_strategy="no", disable_tqdm=True, bf16="false",
    )  # fmt: skip
    return recipe_flags({**values, **overrides})


def train_on_gpu(command: list[str], out: Path) -> subprocess.CompletedProcess:
    result = run_offline([*command, "--output_dir", str(out)], cwd=out.parent, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def max_difference(a: Path, b: Path) -> float:
    first, second = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert first.keys() == second.keys()
    return max((first[key].float() - second[key].float()).abs().max().item() for key in first)


@pytest.fixture(scope="module")
def plain_run(tiny_bert_dir, tmp_path_factory) -> Path:
    """One process on the GPU, fp32: what the sharded runs must train."""
    out = tmp_path_factory.mktemp("plain") / "run"
    train_on_gpu([sys.executable, str(TRAIN), *flags(tiny_bert_dir)], out)
    return out


def test_bf16_autocast_steps_train_on_the_gpu(tiny_bert_dir, plain_run, tmp_path):
    result = train_on_gpu([sys.executable, str(TRAIN), *flags(tiny_bert_dir, bf16="auto")], tmp_path / "bf16")
    supported = torch.cuda.is_bf16_supported()
    assert f"precision: --bf16 auto: the GPU {'supports' if supported else 'lacks'} bf16" in result.stderr
    results = json.loads((tmp_path / "bf16" / "all_results.json").read_text())
    assert math.isfinite(results["train_loss"])
    # bf16 steps move the weights as fp32's do, within bf16's precision, not elsewhere.
    assert 0 < max_difference(tmp_path / "bf16", plain_run) < 5e-2


def test_cuda_embeddings_equal_the_cpus(plain_run, tiny_lstm, word_tokenizer):
    for model, tokenizer in ((load_model(plain_run), None), (tiny_lstm, word_tokenizer)):
        model = model.eval()
        on_cpu = model.to("cpu").encode(TEXTS, tokenizer, dtype=torch.float32)
        on_gpu = model.to("cuda").encode(TEXTS, tokenizer, dtype=torch.float32)
        assert on_gpu.device.type == "cpu"  # encode returns CPU float32 from either device
        cosine = torch.nn.functional.cosine_similarity(on_cpu, on_gpu, dim=-1)
        assert cosine.min().item() >= 0.9999


@pytest.mark.parametrize("config", ["fsdp", "deepspeed_zero2"])
def test_sharded_on_one_gpu_trains_the_plain_weights(config, tiny_bert_dir, plain_run, tmp_path):
    if config.startswith("deepspeed"):
        pytest.importorskip("deepspeed")
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / f"{config}.yaml"),
               "--num_processes", "1", "--mixed_precision", "no", "--main_process_port", free_port(), str(TRAIN),
               *flags(tiny_bert_dir)]  # fmt: skip
    train_on_gpu(command, tmp_path / config)
    assert max_difference(tmp_path / config, plain_run) < 1e-4
    SiameseModel.from_pretrained(tmp_path / config)  # a full checkpoint, loadable as any other
