"""GradCache gives the plain step's loss and gradients, with memory bounded by the mini-batch."""

import datasets
import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.gradient_cache import gradient_cache_step, side_inputs
from hfsiamese.data import SiamesePairCollator, tokenize_pairs
from hfsiamese.losses import HardNegativeTripletLoss, MatryoshkaLoss, MultipleNegativesRankingLoss
from tests.conftest import TEXTS


def _batch(tokenizer, n=10):
    q1 = [f"{TEXTS[i % 8]} {i}" for i in range(n)]
    q2 = [f"{TEXTS[(i + 1) % 8]} {i} again" for i in range(n)]
    neg = [TEXTS[(i + 4) % 8] for i in range(n)]
    data = tokenize_pairs(
        datasets.Dataset.from_dict(
            {"question1": q1, "question2": q2, "negative": neg, "label": [1] * n, "group_id": list(range(n))}
        ),
        tokenizer,
    )
    return SiamesePairCollator(tokenizer)([data[i] for i in range(n)])


def _model(tokenizer, dropout=0.0):
    torch.manual_seed(0)
    return SiameseModel(
        SiameseConfig(vocab_size=len(tokenizer), embedding_dim=8, hidden_size=6, dropout=dropout, bidirectional=True)
    )


def _grads(model):
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def _plain_and_cached_steps(word_tokenizer, loss_fn, mini_batch):
    """One batch through a plain forward/backward and through GradCache on a twin model: (plain model, its loss, cached model, its loss)."""
    batch = _batch(word_tokenizer)
    plain = _model(word_tokenizer)
    out = plain(**{k: v for k, v in batch.items() if k not in ("labels", "group_ids")})
    plain_loss = loss_fn(out.embeddings_a, out.embeddings_b, group_ids=batch["group_ids"], negatives=out.embeddings_n)
    plain_loss.backward()
    cached = _model(word_tokenizer)
    sides = {side: side_inputs(batch, side) for side in ("a", "b", "n")}
    loss = gradient_cache_step(
        cached.embed,
        sides,
        lambda e: loss_fn(e["a"], e["b"], group_ids=batch["group_ids"], negatives=e["n"]),
        mini_batch_size=mini_batch,
    )
    return plain, plain_loss, cached, loss


@pytest.mark.parametrize("loss_fn", [HardNegativeTripletLoss(0.9), MultipleNegativesRankingLoss()])
@pytest.mark.parametrize("mini_batch", [1, 3, 10])
def test_same_loss_and_gradients_as_the_plain_step(word_tokenizer, loss_fn, mini_batch):
    plain, plain_loss, cached, loss = _plain_and_cached_steps(word_tokenizer, loss_fn, mini_batch)
    assert loss.item() == pytest.approx(plain_loss.item(), abs=1e-5)
    expected, got = _grads(plain), _grads(cached)
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.allclose(got[name], expected[name], atol=1e-5), name


@pytest.mark.parametrize("mini_batch", [1, 3])
def test_a_matryoshka_loss_gets_the_plain_step_s_gradients_too(word_tokenizer, mini_batch):
    """The cut happens inside the loss, so the cached embedding gradients hold every size's term. The small
    sizes' re-normalisation scales the gradients up (to ~4000 here), so float32 agrees relative to each one's scale."""
    loss_fn = MatryoshkaLoss("multiple_negatives_ranking", [12, 6, 3])
    plain, plain_loss, cached, loss = _plain_and_cached_steps(word_tokenizer, loss_fn, mini_batch)
    assert loss.item() == pytest.approx(plain_loss.item(), abs=1e-5)
    expected, got = _grads(plain), _grads(cached)
    assert expected.keys() == got.keys()
    for name in expected:
        assert (got[name] - expected[name]).abs().max() <= 1e-5 * expected[name].abs().max(), name


def test_dropout_masks_are_replayed(word_tokenizer):
    """With dropout, the re-embedding pass must draw the masks of the first pass: the gradients then
    equal those of the same mini-batch forward run with a graph in one go."""
    batch = _batch(word_tokenizer, n=6)
    loss_fn = HardNegativeTripletLoss(0.9)
    sides = {side: side_inputs(batch, side) for side in ("a", "b")}

    reference = _model(word_tokenizer, dropout=0.5)
    torch.manual_seed(123)
    embedded = {
        s: torch.cat([reference.embed(**{k: v[i : i + 2] for k, v in f.items()}) for i in range(0, 6, 2)])
        for s, f in sides.items()
    }
    reference_loss = loss_fn(embedded["a"], embedded["b"])
    reference_loss.backward()

    cached = _model(word_tokenizer, dropout=0.5)
    torch.manual_seed(123)
    loss = gradient_cache_step(cached.embed, sides, lambda e: loss_fn(e["a"], e["b"]), mini_batch_size=2)
    assert loss.item() == pytest.approx(reference_loss.item(), abs=1e-6)
    for name, grad in _grads(reference).items():
        assert torch.allclose(_grads(cached)[name], grad, atol=1e-6), name


def test_trainer_step_with_gradient_cache(word_tokenizer, tmp_path):
    from hfsiamese.bi_encoder.trainer import SiameseTrainer
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments

    args = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=10,
        max_steps=1,
        learning_rate=0.0,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
    )
    data = tokenize_pairs(
        datasets.Dataset.from_dict(
            {
                "question1": [f"{TEXTS[i % 8]} {i}" for i in range(10)],
                "question2": [f"{TEXTS[(i + 1) % 8]} {i}" for i in range(10)],
                "label": [1] * 10,
                "group_id": list(range(10)),
            }
        ),
        word_tokenizer,
    )
    grads = []
    for mini_batch in (None, 4):
        model = _model(word_tokenizer)
        trainer = SiameseTrainer(
            model=model,
            args=SiameseTrainingArguments(**args, gradient_cache_mini_batch_size=mini_batch),
            train_dataset=data,
            processing_class=word_tokenizer,
        )
        batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
        trainer.create_optimizer_and_scheduler(num_training_steps=1)
        trainer.current_gradient_accumulation_steps = 1
        loss = trainer.training_step(model, batch)
        grads.append((loss.item(), _grads(model)))
    assert grads[0][0] == pytest.approx(grads[1][0], abs=1e-5)
    for name, grad in grads[0][1].items():
        assert torch.allclose(grads[1][1][name], grad, atol=1e-5), name
