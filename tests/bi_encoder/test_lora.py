"""LoRA on the encoder (`--lora_r`): only the adapters train; what is saved is a plain Siamese model plus the adapters.

A tiny random BERT trained a few steps with a large learning rate, so that the adapters move visibly.
"""

import json
import sys
import warnings

import datasets
import peft
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel, TrainerCallback

from hfsiamese import SiameseModel
from hfsiamese.bi_encoder.lora import default_target_modules
from hfsiamese.bi_encoder.model_building import build_model_and_tokenizer
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data import tokenize_pairs
from hfsiamese.losses import MultipleNegativesRankingLoss
from hfsiamese.models.siamese.adapters import ADAPTER_FOLDER, has_adapters, merged_copy
from hfsiamese.training.arguments import ModelArguments
from tests.conftest import TEXTS
from tests.helpers import BLOCK_HFSIAMESE, TRAIN, run_offline, run_without_hfsiamese

# peft asks a transformers 5 model the deprecated `is_gradient_checkpointing` where this file calls it directly.
pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")

RANK = 4
# The tiny BERT: 2 layers, width 16; peft's default targets for BERT are query and value, 16 → 16 each.
ADAPTER_TENSORS = 2 * 2 * 2  # layers × (query, value) × (A, B)
ADAPTER_PARAMETERS = 2 * 2 * (RANK * 16 + 16 * RANK)
PROBES = ["how do i learn python ?", "why is the sky blue ?", "what is the capital of france ?"]


@pytest.fixture(scope="module")
def pairs():
    n = 16
    q1 = [f"{TEXTS[i % 8]} {i}" for i in range(n)]
    q2 = [f"{TEXTS[(i + 1) % 8]} again {i}" for i in range(n)]
    return datasets.Dataset.from_dict({"question1": q1, "question2": q2, "label": [1] * n, "group_id": list(range(n))})


def _lora_model(tiny_bert_dir, pairs, **model_args):
    torch.manual_seed(0)
    args = ModelArguments(
        encoder_type="transformer", model_name_or_path=str(tiny_bert_dir), max_length=16, encoder_dropout=0.0,
        lora_r=RANK, **model_args,
    )  # fmt: skip
    return build_model_and_tokenizer(args, pairs)


def _training_args(output_dir, **overrides):
    values = dict(
        output_dir=str(output_dir), per_device_train_batch_size=8, max_steps=2, learning_rate=5e-2, report_to="none",
        use_cpu=True, save_strategy="no", disable_tqdm=True, loss="multiple_negatives_ranking", warmup_steps=0,
    )  # fmt: skip
    return SiameseTrainingArguments(**{**values, **overrides})


def _trainer(model, tokenizer, pairs, output_dir, **overrides):
    data = tokenize_pairs(pairs, tokenizer)
    return SiameseTrainer(
        model=model, args=_training_args(output_dir, **overrides), train_dataset=data, processing_class=tokenizer
    )


def _snapshot(model):
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


@pytest.fixture(scope="module")
def trained(tiny_bert_dir, pairs, tmp_path_factory):
    """A LoRA model before and after 2 steps, and its final save."""
    model, tokenizer = _lora_model(tiny_bert_dir, pairs)
    before = _snapshot(model)
    out = tmp_path_factory.mktemp("lora_run")
    trainer = _trainer(model, tokenizer, pairs, out)
    trainer.train()
    trainer.save_model()
    return model.eval(), tokenizer, before, out


def test_only_the_adapters_train(tiny_bert_dir, pairs):
    model, _ = _lora_model(tiny_bert_dir, pairs)
    trainable = {name: p.numel() for name, p in model.named_parameters() if p.requires_grad}
    assert len(trainable) == ADAPTER_TENSORS and sum(trainable.values()) == ADAPTER_PARAMETERS
    assert all(".lora_A." in name or ".lora_B." in name for name in trainable)
    assert all(name.rsplit(".", 4)[-4] in ("query", "value") for name in trainable)


def test_the_head_trains_whole(tiny_bert_dir, pairs):
    """A projection (or classification head) starts random: it trains with the adapters."""
    model, _ = _lora_model(tiny_bert_dir, pairs, projection_dim=8)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert len(trainable) == ADAPTER_TENSORS + 2 and {"projection.weight", "projection.bias"} <= set(trainable)


def test_adapters_change_and_the_base_weights_do_not(trained):
    model, _, before, _ = trained
    after = _snapshot(model)
    adapters = [name for name in before if ".lora_" in name]
    assert len(adapters) == ADAPTER_TENSORS
    assert all(not torch.equal(before[name], after[name]) for name in adapters)
    assert all(torch.equal(before[name], after[name]) for name in before if ".lora_" not in name)


def _embed(model, tokenizer, texts=PROBES):
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model.embed(batch["input_ids"], batch["attention_mask"])


def test_the_checkpoint_is_a_plain_siamese_model(trained, tiny_bert_dir):
    model, tokenizer, _, out = trained
    names = set(load_file(out / "model.safetensors"))
    plain = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    assert names == set(plain.state_dict()) and all(name.startswith("encoder.") for name in names)
    loaded = AutoModel.from_pretrained(out).eval()
    assert isinstance(loaded, SiameseModel) and not has_adapters(loaded.encoder)
    merged = merged_copy(model)
    assert merged is not model and has_adapters(model.encoder)  # the model in training keeps its adapters
    expected = _embed(merged, tokenizer)
    assert torch.allclose(_embed(loaded, tokenizer), expected, atol=1e-6)
    assert torch.allclose(_embed(model, tokenizer), expected, atol=1e-5)
    assert not torch.allclose(
        _embed(SiameseModel.from_encoder_pretrained(str(tiny_bert_dir)).eval(), tokenizer), expected, atol=1e-3
    )
    with pytest.raises(ValueError, match="saves its own weights, merged"):
        model.save_pretrained(out / "again", state_dict=model.state_dict())


# A child interpreter without hfsiamese and without peft: the checkpoint's own code loads it.
NO_PEFT_CHILD = (
    BLOCK_HFSIAMESE
    + r"""
sys.modules["peft"] = None  # import peft fails
import json, torch
from transformers import AutoModel, AutoTokenizer
folder = sys.argv[1]
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
batch = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)(json.loads(sys.argv[2]), padding=True, return_tensors="pt")
with torch.no_grad():
    print(json.dumps(model.embed(batch["input_ids"], batch["attention_mask"]).tolist()))
"""
)


@pytest.mark.slow
def test_the_checkpoint_loads_where_neither_hfsiamese_nor_peft_is_installed(trained, tmp_path):
    model, tokenizer, _, out = trained
    embeddings = run_without_hfsiamese(NO_PEFT_CHILD, [out, json.dumps(PROBES)], tmp_path)
    assert torch.allclose(torch.tensor(embeddings), _embed(model, tokenizer), atol=1e-5)


def test_the_adapter_folder_reloads_onto_the_base_encoder_with_peft(trained, tiny_bert_dir):
    model, tokenizer, _, out = trained
    adapter = out / ADAPTER_FOLDER
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in adapter.iterdir()}
    # Readable as the rest of the folder (safetensors alone would write it 0600).
    assert (adapter / "adapter_model.safetensors").stat().st_mode == (adapter / "adapter_config.json").stat().st_mode
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_bert_dir) and config["r"] == RANK
    reloaded = peft.PeftModel.from_pretrained(AutoModel.from_pretrained(str(tiny_bert_dir)), str(adapter)).eval()
    batch = tokenizer(PROBES, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = model.encoder(**batch).last_hidden_state
        assert torch.allclose(reloaded(**batch).last_hidden_state, expected, atol=1e-6)


def test_onnx_export_of_the_in_memory_model(trained, tmp_path):
    import onnxruntime

    from hfsiamese.bi_encoder.onnx_export import export_onnx

    model, tokenizer, _, _ = trained
    export_onnx(model, tokenizer, tmp_path / "onnx")
    assert has_adapters(model.encoder)
    session = onnxruntime.InferenceSession(str(tmp_path / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    batch = tokenizer(PROBES, padding=True, return_tensors="np")
    (got,) = session.run(None, {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]})
    assert torch.allclose(torch.from_numpy(got), _embed(merged_copy(model), tokenizer), atol=1e-5)


def test_sentence_transformers_export_of_the_in_memory_model(trained, tmp_path):
    from sentence_transformers import SentenceTransformer

    from hfsiamese.bi_encoder.sentence_transformers_export import export_sentence_transformers

    model, tokenizer, _, _ = trained
    export_sentence_transformers(model, tmp_path / "st", tokenizer)
    assert has_adapters(model.encoder)
    names = set(load_file(tmp_path / "st" / "0_Transformer" / "model.safetensors"))
    assert not any("lora" in name or "base_model" in name for name in names)
    st = SentenceTransformer(str(tmp_path / "st"), device="cpu")
    expected = model.encode(PROBES, tokenizer)
    assert (st.encode(PROBES, convert_to_tensor=True).cpu() - expected).abs().max().item() < 1e-5


def test_a_missing_peft_is_one_line_naming_the_extra(tiny_bert_dir, pairs, monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # `import peft` raises ImportError
    with pytest.raises(
        ImportError, match=r'--lora_r needs peft, which is not installed: .*pip install -e "\.\[lora\]"'
    ):
        _lora_model(tiny_bert_dir, pairs)
    model, _ = build_model_and_tokenizer(
        ModelArguments(encoder_type="transformer", model_name_or_path=str(tiny_bert_dir)), pairs
    )
    assert not has_adapters(model.encoder)  # without lora_r, peft is never imported


def test_lora_is_refused_where_it_does_not_apply(trained, pairs):
    _, _, _, out = trained
    lstm = ModelArguments(embedding_dim=8, hidden_size=6, vocab_size=100, lora_r=RANK)
    with pytest.raises(
        ValueError,
        match="lora_r applies when training from a pretrained transformer encoder, not from encoder_type 'lstm'",
    ):
        build_model_and_tokenizer(lstm, pairs)
    with pytest.raises(ValueError, match="not from a saved Siamese checkpoint"):
        build_model_and_tokenizer(ModelArguments(model_name_or_path=str(out), lora_r=RANK), pairs)


def test_default_targets_of_an_architecture_peft_does_not_name(tmp_path):
    """MPNet (all-mpnet-base-v2) is not in peft's table: every linear layer but the unused pooler."""
    from transformers import MPNetConfig, MPNetModel

    encoder = MPNetModel(
        MPNetConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    )
    linear = {name for name, module in encoder.named_modules() if isinstance(module, torch.nn.Linear)}
    targets = default_target_modules(encoder)
    assert isinstance(targets, str)  # one pattern in adapter_config.json, not a list of every layer
    wrapped = peft.get_peft_model(encoder, peft.LoraConfig(r=RANK, target_modules=targets))
    adapted = {
        name.split("base_model.model.")[1].rsplit(".lora_A", 1)[0]
        for name, _ in wrapped.named_parameters()
        if ".lora_A." in name
    }
    assert len(adapted) == 2 * 6  # q, k, v, o, intermediate and output dense of each layer
    assert adapted == {name for name in linear if not name.startswith("pooler.")}


def _lora_grads(model, batch, checkpointing):
    model.train()
    if checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})
        assert model.is_activation_checkpointing  # it reached the layers inside the peft wrapper
    out = model(**{k: v for k, v in batch.items() if k not in ("labels", "group_ids")})
    MultipleNegativesRankingLoss()(out.embeddings_a, out.embeddings_b).backward()
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("max_tokens", [0, 40], ids=["one_call_per_side", "sub_batches"])
def test_reentrant_gradient_checkpointing_reaches_the_adapters(tiny_bert_dir, pairs, max_tokens):
    """Frozen embeddings give the first checkpointed layer an input without gradients: the model makes it require them."""
    from hfsiamese.data import SiamesePairCollator

    expected_model, tokenizer = _lora_model(tiny_bert_dir, pairs)
    data = tokenize_pairs(pairs, tokenizer)
    batch = SiamesePairCollator(tokenizer)([data[i] for i in range(len(data))])
    expected_model.set_sub_batching(max_tokens=max_tokens)
    expected = _lora_grads(expected_model, batch, checkpointing=False)
    model, _ = _lora_model(tiny_bert_dir, pairs)
    model.set_sub_batching(max_tokens=max_tokens)
    grads = _lora_grads(model, batch, checkpointing=True)
    assert len(expected) == ADAPTER_TENSORS and grads.keys() == expected.keys()
    for name, grad in expected.items():
        assert torch.allclose(grads[name], grad, rtol=1e-5, atol=1e-7), name


class _LossesLogged(TrainerCallback):
    def __init__(self):
        self.losses = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses.append(logs["loss"])


def test_resuming_restores_the_adapters_and_their_optimizer_state(tiny_bert_dir, pairs, tmp_path):
    steps = dict(max_steps=4, save_strategy="steps", save_steps=2, logging_steps=1)
    model, tokenizer = _lora_model(tiny_bert_dir, pairs)
    whole = _trainer(model, tokenizer, pairs, tmp_path / "whole", **steps)
    whole.train()
    whole.save_model()  # into the run's folder, which holds its checkpoints: files moved in one by one
    whole.save_model()  # again: the earlier adapter/ folder is replaced
    checkpoint = tmp_path / "whole" / "checkpoint-2"
    assert (checkpoint / ADAPTER_FOLDER / "adapter_model.safetensors").is_file()
    assert not any("lora" in name for name in load_file(checkpoint / "model.safetensors"))
    trained = _snapshot(model)

    whole.state.best_model_checkpoint = str(checkpoint)  # as load_best_model_at_end would, at the end of a run
    whole._load_best_model()
    merged = merged_copy(model).state_dict()
    assert all(
        torch.allclose(merged[name], tensor, atol=1e-6)
        for name, tensor in load_file(checkpoint / "model.safetensors").items()
    )

    resumed_model, tokenizer = _lora_model(tiny_bert_dir, pairs)
    resumed = _trainer(resumed_model, tokenizer, pairs, tmp_path / "resumed", **steps)
    resumed.train(resume_from_checkpoint=str(checkpoint))
    again = _snapshot(resumed_model)
    assert all(torch.allclose(again[name], trained[name], atol=1e-6) for name in trained), "resumed run ends elsewhere"
    final = load_file(tmp_path / "whole" / "model.safetensors")
    assert all(
        torch.allclose(tensor, merged_copy(resumed_model).state_dict()[name], atol=1e-6)
        for name, tensor in final.items()
    )

    plain, _ = build_model_and_tokenizer(
        ModelArguments(encoder_type="transformer", model_name_or_path=str(tiny_bert_dir)), pairs
    )
    refused = _trainer(plain, tokenizer, pairs, tmp_path / "plain", **steps)
    with pytest.raises(ValueError, match="was saved by a LoRA run .* resume it with the same --lora_r"):
        refused.train(resume_from_checkpoint=str(checkpoint))


@pytest.mark.slow
def test_recipe_trains_with_lora(tiny_bert_dir, tmp_path):
    out = tmp_path / "run"
    flags = ["--model_name_or_path", str(tiny_bert_dir), "--lora_r", str(RANK), "--lora_alpha", "8",
             "--output_dir", str(out), "--max_steps", "2", "--max_train_pairs", "64", "--max_eval_pairs", "32",
             "--per_device_train_batch_size", "8", "--max_length", "16", "--disable_tqdm", "true"]  # fmt: skip
    result = run_offline([sys.executable, str(TRAIN), *flags], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"LoRA r={RANK}, alpha=8 on ['query', 'value']: {ADAPTER_PARAMETERS} of" in result.stderr
    assert {"model.safetensors", "config.json", "modeling_siamese.py", ADAPTER_FOLDER} <= {
        p.name for p in out.iterdir()
    }
    assert not any("lora" in name or "base_model" in name for name in load_file(out / "model.safetensors"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = AutoModel.from_pretrained(out)
    assert (
        isinstance(loaded, SiameseModel) and json.loads((out / "all_results.json").read_text())["eval_num_pairs"] == 32
    )
