"""Gradient (activation) checkpointing on a Siamese model gives the loss and gradients of the plain step.

Checkpointing recomputes each transformer layer in the backward pass instead of keeping its activations; with
dropout off the recomputation is the same arithmetic, so the loss and every gradient must agree with the plain
step's: in one forward per side, with length-sorted sub-batches, with GradCache, and through the Trainer.
"""

import warnings

import datasets
import pytest
import torch
from transformers import TrainerCallback

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.gradient_cache import gradient_cache_step, side_inputs
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data import SiamesePairCollator, tokenize_pairs
from hfsiamese.losses import HardNegativeTripletLoss, MultipleNegativesRankingLoss
from hfsiamese.models.siamese.sub_batching import plan_sub_batches
from tests.conftest import TEXTS

BATCH_ONLY = ("labels", "group_ids")
# Float32 on the same CPU: recomputing a layer is the same arithmetic; only summation order may differ.
TOLERANCE = dict(rtol=1e-5, atol=1e-7)
# A small token budget, so that one step's 20 or 30 texts (with negatives) go to the encoder in several sub-batches.
SMALL_BUDGET = 40


@pytest.fixture(autouse=True)
def quiet_deprecations():
    """transformers 5 calls the feature activation checkpointing and warns on the older names this file also tests."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*gradient_checkpointing.*")
        yield


def _pairs(tokenizer, n=10):
    q1 = [f"{TEXTS[i % 8]} {'and more words ' * (i % 3)}{i}" for i in range(n)]
    q2 = [f"{TEXTS[(i + 1) % 8]} again {i}" for i in range(n)]
    negatives = [TEXTS[(i + 4) % 8] for i in range(n)]
    columns = {"question1": q1, "question2": q2, "negative": negatives, "label": [1] * n, "group_id": list(range(n))}
    return tokenize_pairs(datasets.Dataset.from_dict(columns), tokenizer)


@pytest.fixture(scope="module")
def batch(word_tokenizer):
    data = _pairs(word_tokenizer)
    return SiamesePairCollator(word_tokenizer)([data[i] for i in range(len(data))])


def _model(tiny_bert_dir, *, checkpointing=False, max_tokens=0, use_reentrant=None):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), encoder_dropout=0.0).train()
    model.set_sub_batching(max_tokens=max_tokens)
    if checkpointing:
        kwargs = None if use_reentrant is None else {"use_reentrant": use_reentrant}
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        assert model.is_activation_checkpointing
    return model


def _plain_step(model, batch, loss_fn):
    out = model(**{k: v for k, v in batch.items() if k not in BATCH_ONLY})
    loss = loss_fn(out.embeddings_a, out.embeddings_b, group_ids=batch["group_ids"], negatives=out.embeddings_n)
    loss.backward()
    return loss.detach()


def _grads(model):
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def _assert_same(expected_loss, expected_grads, loss, grads):
    assert torch.allclose(loss, expected_loss, **TOLERANCE)
    assert grads.keys() == expected_grads.keys() and len(grads) > 30  # every encoder weight got its gradient
    for name, grad in expected_grads.items():
        assert torch.allclose(grads[name], grad, **TOLERANCE), name


@pytest.mark.parametrize(
    "loss_fn", [MultipleNegativesRankingLoss(), HardNegativeTripletLoss()], ids=["mnrl", "triplet"]
)
@pytest.mark.parametrize("use_reentrant", [None, True], ids=["default", "reentrant"])
def test_same_loss_and_gradients_in_one_call_per_side(tiny_bert_dir, batch, loss_fn, use_reentrant):
    plain = _model(tiny_bert_dir)
    expected = _plain_step(plain, batch, loss_fn)
    checkpointed = _model(tiny_bert_dir, checkpointing=True, use_reentrant=use_reentrant)
    loss = _plain_step(checkpointed, batch, loss_fn)
    _assert_same(expected, _grads(plain), loss, _grads(checkpointed))


@pytest.mark.parametrize("use_reentrant", [None, True], ids=["default", "reentrant"])
def test_same_loss_and_gradients_with_sub_batches(tiny_bert_dir, batch, use_reentrant):
    """The sub-batched path looks the words up once for the whole step and gives the encoder `inputs_embeds`."""
    lengths = sorted(n for side in "abn" for n in batch[f"attention_mask_{side}"].sum(1).tolist())
    assert len(plan_sub_batches(lengths, max_tokens=SMALL_BUDGET)) >= 4
    loss_fn = MultipleNegativesRankingLoss()
    plain = _model(tiny_bert_dir, max_tokens=SMALL_BUDGET)
    assert plain._encoder_takes_inputs_embeds()
    expected = _plain_step(plain, batch, loss_fn)
    checkpointed = _model(tiny_bert_dir, checkpointing=True, max_tokens=SMALL_BUDGET, use_reentrant=use_reentrant)
    calls = []
    checkpointed.encoder.register_forward_hook(lambda *_: calls.append(1))
    _assert_same(expected, _grads(plain), _plain_step(checkpointed, batch, loss_fn), _grads(checkpointed))
    assert len(calls) >= 4  # several sub-batches, each through checkpointed layers


def _gradient_cache_step(model, batch, loss_fn, mini_batch):
    sides = {side: side_inputs(batch, side) for side in ("a", "b", "n")}
    return gradient_cache_step(
        model.embed,
        sides,
        lambda e: loss_fn(e["a"], e["b"], group_ids=batch["group_ids"], negatives=e["n"]),
        mini_batch_size=mini_batch,
    )


# The reentrant variant warns that GradCache's first pass (no graph) has no input requiring gradients: true, and harmless.
@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad=True:UserWarning")
@pytest.mark.parametrize("use_reentrant", [None, True], ids=["default", "reentrant"])
@pytest.mark.parametrize("mini_batch", [3, 10])
def test_same_loss_and_gradients_with_gradient_cache(tiny_bert_dir, batch, mini_batch, use_reentrant):
    """GradCache embeds without a graph first, then again with one: checkpointing applies to the second pass."""
    loss_fn = MultipleNegativesRankingLoss()
    plain = _model(tiny_bert_dir)
    expected = _gradient_cache_step(plain, batch, loss_fn, mini_batch)
    checkpointed = _model(tiny_bert_dir, checkpointing=True, use_reentrant=use_reentrant)
    loss = _gradient_cache_step(checkpointed, batch, loss_fn, mini_batch)
    _assert_same(expected, _grads(plain), loss, _grads(checkpointed))


def _saved_bytes(model, batch):
    """Bytes the forward keeps for the backward outside checkpointed layers (checkpointing keeps its own inside)."""
    total = [0]

    def pack(tensor):
        total[0] += tensor.numel() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(**{k: v for k, v in batch.items() if k not in BATCH_ONLY})
    return total[0]


def test_checkpointing_keeps_fewer_activations_and_can_be_turned_off(tiny_bert_dir, batch):
    model = _model(tiny_bert_dir)
    plain = _saved_bytes(model, batch)
    model.gradient_checkpointing_enable()
    assert _saved_bytes(model, batch) < plain / 2
    model.gradient_checkpointing_disable()
    assert not model.is_activation_checkpointing and not model._require_grads_hooks
    assert _saved_bytes(model, batch) == plain


def test_word_vocabulary_encoders_are_refused_in_one_line(tiny_lstm):
    with pytest.raises(
        ValueError, match="gradient checkpointing applies to transformer encoders; this model's encoder is 'lstm'"
    ):
        tiny_lstm.gradient_checkpointing_enable()


class _GradientsBeforeTheUpdate(TrainerCallback):
    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads = _grads(model)


def _trained_one_step(tiny_bert_dir, word_tokenizer, tmp_path, **flags):
    """One real `trainer.train()` step (the Trainer turns checkpointing on in `train`): its loss and gradients."""
    data = _pairs(word_tokenizer).remove_columns(["input_ids_n", "attention_mask_n"])
    args = SiameseTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=10,
        max_steps=1,
        max_grad_norm=0.0,  # no clipping: the raw gradients are compared
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        loss="multiple_negatives_ranking",
        **flags,
    )
    model = _model(tiny_bert_dir, max_tokens=SMALL_BUDGET)
    grads = _GradientsBeforeTheUpdate()
    trainer = SiameseTrainer(
        model=model, args=args, train_dataset=data, processing_class=word_tokenizer, callbacks=[grads]
    )
    loss = trainer.train().training_loss
    return model, torch.tensor(loss), grads.grads


@pytest.mark.parametrize(
    "flags,base",
    [
        ({"gradient_checkpointing": True}, {}),
        ({"activation_checkpointing": True, "activation_checkpointing_kwargs": {"use_reentrant": True}}, {}),
        ({"gradient_checkpointing": True}, {"gradient_cache_mini_batch_size": 4}),
    ],
    ids=["gradient_checkpointing", "reentrant", "with_gradient_cache"],
)
def test_trainer_flag_turns_it_on_and_changes_no_gradient(tiny_bert_dir, word_tokenizer, tmp_path, flags, base):
    """Compared with the same run without the flag: GradCache's own mini-batches sum in another order than one step."""
    plain, expected_loss, expected_grads = _trained_one_step(tiny_bert_dir, word_tokenizer, tmp_path / "plain", **base)
    assert not plain.is_activation_checkpointing
    model, loss, grads = _trained_one_step(tiny_bert_dir, word_tokenizer, tmp_path / "checkpointed", **base, **flags)
    assert model.is_activation_checkpointing
    _assert_same(expected_loss, expected_grads, loss, grads)


def test_an_encoder_transformers_cannot_checkpoint_is_named_in_one_line():
    from transformers import MPNetConfig

    config = MPNetConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    model = SiameseModel(SiameseConfig(encoder_type="transformer", encoder_config=config.to_dict()))
    with pytest.raises(
        ValueError,
        match=r"^gradient checkpointing: transformers' MPNetModel does not support it \(e\.g\. MPNet\); train with LoRA",
    ):
        model.gradient_checkpointing_enable()
