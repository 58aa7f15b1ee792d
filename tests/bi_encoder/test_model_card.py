"""Model cards: Hub metadata that parses (model-index included), the run's figures, usage snippets.

`ModelCard.validate` posts the card to the Hub, which is unreachable here; the checks are huggingface_hub's
own offline parsing: `ModelCard` reads the YAML into `ModelCardData`, which turns `model-index` into
`EvalResult`s (`model_index_to_eval_results`) and raises on a malformed one.
"""

from pathlib import Path

import pytest
import torch
import yaml
from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import eval_results_to_model_index, model_index_to_eval_results

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.model_card import BASE_TAGS, build_model_card, hub_model_id, local_card_license
from hfsiamese.data import tokenize_pairs
from hfsiamese.losses import VerificationIdentificationLoss
from tests.fixtures import tiny_eval_pairs as _eval_pairs, tiny_training_args as _args, trainer_on_tiny_pairs


def yaml_block(text):
    return yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])


@pytest.fixture
def trained(tiny_lstm, word_tokenizer, tmp_path):
    args = _args(tmp_path, max_steps=3, hub_token="hf_not_for_cards", margin=0.3)
    trainer = trainer_on_tiny_pairs(tiny_lstm, word_tokenizer, args)
    trainer.train()
    metrics = trainer.evaluate()
    metrics.update(trainer.evaluate(tokenize_pairs(_eval_pairs(), word_tokenizer), metric_key_prefix="test"))
    return trainer, metrics


def test_trainer_card_metadata_and_model_index(trained):
    trainer, metrics = trained
    trainer.create_model_card(
        dataset_tags="quora", dataset="QQP sample", language="en", license="apache-2.0", arguments={"embedding_dim": 8}
    )
    card = ModelCard.load(f"{trainer.args.output_dir}/README.md")
    data = card.data
    assert data.library_name == "transformers" and data.pipeline_tag == "sentence-similarity"
    assert set(BASE_TAGS) | {"lstm"} <= set(data.tags)
    assert (data.language, data.license, data.datasets, data.base_model) == ("en", "apache-2.0", ["quora"], None)

    model_index = data.to_dict()["model-index"]
    name, results = model_index_to_eval_results(model_index)
    assert name == "out"
    assert eval_results_to_model_index(name, results) == model_index
    by_split = {(r.dataset_split, r.metric_type): r.metric_value for r in results}
    for prefix, split in (("eval", "validation"), ("test", "test")):
        for key in ("average_precision", "roc_auc", "accuracy", "f1", "precision", "recall"):
            assert by_split[(split, key)] == round(metrics[f"{prefix}_{key}"], 4)
    assert {r.dataset_type for r in results} == {"quora"} and {r.task_type for r in results} == {"text-classification"}


def test_trainer_card_text(trained):
    trainer, metrics = trained
    trainer.create_model_card(arguments={"embedding_dim": 8, "train_file": None})
    text = Path(trainer.args.output_dir, "README.md").read_text(encoding="utf-8")
    threshold = trainer.model.config.threshold
    assert threshold == pytest.approx(metrics["eval_threshold"])
    assert f"`config.threshold = {threshold:.4f}`" in text
    assert f"| validation | {metrics['eval_average_precision']:.4f} |" in text
    assert f'AutoModel.from_pretrained("{trainer.args.output_dir}", trust_remote_code=True)' in text
    assert 'pipeline("question-duplicates"' in text and "SentenceTransformer" not in text
    assert "Trained on question pairs" in text and "`[UNK]`" in text
    config = yaml_block(text)
    assert config["embedding_dim"] == 8 and config["margin"] == 0.3 and config["max_steps"] == 3
    assert "train_file" not in config and "num_train_epochs" not in config  # unset, and overridden by max_steps
    assert "hf_not_for_cards" not in text and "hub_token" not in config and "output_dir" not in config


def test_hub_ids_only_become_base_model(tiny_bert_dir, word_tokenizer):
    assert hub_model_id("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert hub_model_id(str(tiny_bert_dir)) is None
    assert hub_model_id("not a/valid//id") is None and hub_model_id(None) is None
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    local = build_model_card(model, model_name="m", base_model=str(tiny_bert_dir))
    assert local.data.base_model is None
    assert f"| encoder | bert ({tiny_bert_dir.name}), 2 layers, hidden size 16 → mean pooling |" in local.text
    hub = build_model_card(model, model_name="m", base_model="org/encoder", tokenizer=word_tokenizer)
    assert hub.data.base_model == "org/encoder" and "transformer" in hub.data.tags
    assert "| encoder | bert (org/encoder)" in hub.text and f"| vocabulary | {len(word_tokenizer)} tokens" in hub.text


def test_license_comes_from_a_local_base_card(tmp_path):
    (tmp_path / "README.md").write_text("---\nlicense: mit\n---\n# base\n")
    assert local_card_license(tmp_path) == "mit"
    assert local_card_license(tmp_path / "missing") is None and local_card_license(None) is None


def test_card_without_results_or_threshold(word_tokenizer):
    torch.manual_seed(0)
    model = SiameseModel(
        SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, classifier_head=True)
    )
    card = ModelCard(str(build_model_card(model, model_name="head", sentence_transformers_path="someone/st")))
    assert "model-index" not in card.data.to_dict() and card.data.eval_results is None
    assert "No evaluation results were recorded" in card.text and "none stored; pass `threshold=...`" in card.text
    assert "score = out.logits.softmax(dim=-1)[:, 1]" in card.text
    assert 'SentenceTransformer("someone/st")' in card.text and "sentence-transformers" in card.data.tags


def test_card_lists_every_option_of_the_loss(word_tokenizer, tmp_path):
    """The card's config and loss line come from the losses' own option list (contrastive_ranking's were missing)."""
    model = SiameseModel(SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6))
    args = _args(tmp_path, loss="contrastive_ranking", margin=0.4, triplet_margin=0.2, ranking_weight=0.5)
    card = build_model_card(model, model_name="m", training_args=args)
    config = yaml_block(card.text)
    assert {k: config[k] for k in ("loss", "margin", "triplet_margin", "ranking_weight")} == {
        "loss": "contrastive_ranking", "margin": 0.4, "triplet_margin": 0.2, "ranking_weight": 0.5,
    }  # fmt: skip
    assert (
        "- Loss: `contrastive_ranking` (margin=0.4, triplet_margin=0.2, ranking_weight=0.5, "
        "ranking_loss=hard_negative_triplet, ranking_candidates=all_rows, temperature=0.05)"
    ) in card.text
    # The loss a trainer was given is the one the card describes, defaults included.
    trained = build_model_card(
        model, model_name="m", training_args=_args(tmp_path), loss=VerificationIdentificationLoss(margin=0.3)
    )
    assert "- Loss: `verification_identification` (margin=0.3, verification_weight=1.0)" in trained.text
