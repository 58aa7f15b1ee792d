"""The architecture matrix: tiny random models of every family users bring train, save, reload (with and without
hfsiamese), export to ONNX and to sentence-transformers with the same embeddings, and start from a
sentence-transformers folder of themselves with each pooling mode, giving sentence-transformers' own similarities."""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoConfig, AutoModel, PreTrainedTokenizerFast

from hfsiamese.bi_encoder.model_building import build_model_and_tokenizer
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.bi_encoder.onnx_model import OnnxSiameseModel
from hfsiamese.bi_encoder.sentence_transformers_export import export_sentence_transformers
from hfsiamese.training.arguments import ModelArguments
from tests.conftest import TEXTS
from tests.fixtures import tiny_training_args, trainer_on_tiny_pairs
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese

try:  # sentence-transformers >= 6
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
except ImportError:
    from sentence_transformers.models import Dense, Normalize, Pooling, Transformer

ENCODER = dict(
    hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=64
)
# Tiny random configs, by the name the issue lists them under; decoders pad on the left and pool their last token.
ARCHITECTURES = {
    "bert": dict(model_type="bert", **ENCODER),
    "xlm-roberta": dict(model_type="xlm-roberta", **ENCODER),
    "deberta-v2": dict(model_type="deberta-v2", **ENCODER),
    "mpnet": dict(model_type="mpnet", **ENCODER),
    "modernbert": dict(
        model_type="modernbert",
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        global_attn_every_n_layers=1,
        local_attention=8,
    ),
    "electra": dict(model_type="electra", embedding_size=16, **ENCODER),
    "qwen3": dict(
        model_type="qwen3",
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        intermediate_size=32,
        max_position_embeddings=64,
    ),
    "t5": dict(model_type="t5", d_model=16, d_ff=32, num_layers=2, num_heads=2, d_kv=8),
}
DECODERS = {"qwen3"}
EOS = "<|endoftext|>"
# sentence-transformers' pooling modes, each alone, then two together.
ST_POOLINGS = ["cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken", ("cls", "mean")]
PROBE = TEXTS + ["a much longer question about how the sky can look blue on some days and grey on others ?"]


def _decoder_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer like GPT-2's/Qwen's: EOS but no padding token, not appending EOS, padding on the left."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(
        TEXTS * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=[EOS], show_progress=False)
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS, padding_side="left", model_max_length=64)


@pytest.fixture(scope="module")
def base_models(tmp_path_factory, word_tokenizer):
    """Each architecture saved as a "pretrained" folder with its tokenizer (T5 with its decoder, as users have it)."""
    folders = {}
    for name, spec in ARCHITECTURES.items():
        tokenizer = _decoder_tokenizer() if name in DECODERS else word_tokenizer
        pad = tokenizer.convert_tokens_to_ids(EOS) if name in DECODERS else tokenizer.pad_token_id
        spec = dict(spec, vocab_size=len(tokenizer), pad_token_id=pad)
        if name in DECODERS:
            spec.update(eos_token_id=pad, bos_token_id=pad)
        torch.manual_seed(0)
        model = AutoModel.from_config(AutoConfig.for_model(**spec))
        folder = tmp_path_factory.mktemp(name.replace("-", "_"))
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[name] = folder
    return folders


def _build(folder, **model_args):
    args = ModelArguments(encoder_type="transformer", model_name_or_path=str(folder), **model_args)
    return build_model_and_tokenizer(args, None)


def _st_encode(folder, texts=PROBE) -> torch.Tensor:
    model = SentenceTransformer(str(folder), device="cpu")
    return torch.nn.functional.normalize(model.encode(texts, convert_to_tensor=True), dim=-1)


CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
from transformers import AutoModel
folder, texts = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True)
print(json.dumps(model.encode(texts).tolist()))
"""
)


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
@pytest.mark.slow
def test_trains_saves_reloads_and_exports(architecture, base_models, tmp_path):
    decoder = architecture in DECODERS
    model, tokenizer = _build(base_models[architecture], pooling="last_token" if decoder else None)
    if decoder:  # EOS appended (the pooled position), a padding token given
        assert tokenizer("how")["input_ids"][-1] == tokenizer.eos_token_id and tokenizer.pad_token == EOS
    if architecture == "t5":
        assert type(model.encoder).__name__ == "T5EncoderModel"
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer = trainer_on_tiny_pairs(model, tokenizer, tiny_training_args(tmp_path, max_steps=2, learning_rate=1e-3))
    trainer.train()
    changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    assert any(name.startswith("encoder.") for name in changed)

    folder = tmp_path / "trained"
    trainer.save_model(str(folder))
    expected = model.eval().encode(PROBE, tokenizer)
    reloaded = AutoModel.from_pretrained(folder)
    assert torch.allclose(reloaded.encode(PROBE), expected, atol=1e-6)
    without = run_without_hfsiamese(CHILD, [folder, json.dumps(PROBE)], tmp_path)
    assert torch.allclose(torch.tensor(without), expected, atol=1e-6)

    config = export_onnx(reloaded, tokenizer, tmp_path / "onnx", source_dir=folder)
    assert config.onnx["fp32_max_abs_diff"] < 1e-4
    assert torch.allclose(OnnxSiameseModel.from_pretrained(tmp_path / "onnx").encode(PROBE), expected, atol=1e-4)

    export_sentence_transformers(reloaded, tmp_path / "st", tokenizer)
    assert (_st_encode(tmp_path / "st") - expected).abs().max() <= 1e-5


def _dimension(module) -> int:
    """A sentence-transformers module's output size (the method was renamed in sentence-transformers 6)."""
    if hasattr(module, "get_embedding_dimension"):
        return module.get_embedding_dimension()
    return (
        module.get_sentence_embedding_dimension()
        if hasattr(module, "pooling_mode")
        else module.get_word_embedding_dimension()
    )


def _sentence_transformers_folder(base, tmp_path, pooling, *, dense=False, normalize=False, prompt=False):
    transformer = Transformer(str(base))
    if transformer.tokenizer.pad_token is None:  # a decoder embedder's authors give it one
        transformer.tokenizer.pad_token = transformer.tokenizer.eos_token
    modules = [transformer, Pooling(_dimension(transformer), pooling_mode=pooling)]
    if dense:
        torch.manual_seed(1)
        modules.append(Dense(_dimension(modules[-1]), 8, activation_function=torch.nn.Tanh()))
    if normalize:
        modules.append(Normalize())
    prompts = {"query": "query: ", "passage": "passage: "} if prompt else None
    model = SentenceTransformer(
        modules=modules, device="cpu", prompts=prompts, default_prompt_name="query" if prompt else None
    )
    folder = (
        tmp_path / f"st_{'_'.join(pooling) if isinstance(pooling, tuple) else pooling}_{dense}_{normalize}_{prompt}"
    )
    model.save(str(folder))
    return folder


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
@pytest.mark.slow
def test_starts_from_a_sentence_transformers_folder_as_its_authors_configured_it(architecture, base_models, tmp_path):
    variants = [dict(pooling=mode) for mode in ST_POOLINGS] + [
        dict(pooling="mean", dense=True, normalize=True, prompt=True)
    ]
    for variant in variants:
        folder = _sentence_transformers_folder(base_models[architecture], tmp_path, **variant)
        model, tokenizer = _build(folder)
        ours = model.eval().encode(PROBE, tokenizer)
        theirs = _st_encode(folder)
        difference = (ours @ ours.T - theirs @ theirs.T).abs().max().item()
        assert difference <= 1e-5, (variant, difference)
        if variant.get("prompt"):
            assert model.config.default_prompt_name == "query" and model.config.dense_layers[0]["activation"] == "Tanh"
