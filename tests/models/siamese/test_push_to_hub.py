"""What `push_to_hub` uploads, captured offline, and that it loads where hfsiamese is not installed.

The Hub is unreachable here, so huggingface_hub's upload calls are replaced by fakes that copy what would be
uploaded into a local "repository" folder (selecting files the way `upload_folder` documents it); the test
then checks that folder holds exactly what a downstream `from_pretrained(..., trust_remote_code=True)` needs.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from huggingface_hub import CommitInfo, CommitOperationAdd, HfApi, ModelCard, RepoUrl
from huggingface_hub.errors import EntryNotFoundError
from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

from tests.conftest import QQP_FILE
from tests.fixtures import PAIRS, expected_scores, tiny_training_args as _args, trainer_on_tiny_pairs
from tests.helpers import BLOCK_HFSIAMESE, TINY_LSTM_BASE, load_recipe, run_without_hfsiamese

# The modeling code and every sibling it imports relatively: all travel with the weights as remote code.
CODE_FILES = {
    "configuration_siamese.py", "modeling_siamese.py", "pipeline_question_duplicates.py", "safe_loading.py", "inference.py",
    "hub_sharing.py", "scoring.py", "token_fields.py", "sub_batching.py", "encoding_batches.py", "padding.py", "pooling.py",
    "static_encoder.py", "calibration.py", "score_calibrator.py", "adapters.py", "encoding_policy.py",
    "one_shot_classification.py", "lstm_encoder.py", "head_layers.py", "transformer_encoder.py", "encoder_building.py",
    "model_output.py", "pair_decisions.py",
}  # fmt: skip
MODEL_FILES = {"config.json", "model.safetensors"} | CODE_FILES
TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json"}
CARD = "README.md"

# Loads a pushed folder as a downstream user would, with transformers only: model, tokenizer and pipeline.
LOAD_CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
import torch
from transformers import AutoModel, AutoTokenizer, pipeline

folder, pairs = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
a = tokenizer([p[0] for p in pairs], padding=True, truncation=True, return_tensors="pt")
b = tokenizer([p[1] for p in pairs], padding=True, truncation=True, return_tensors="pt")
with torch.no_grad():
    out = model(input_ids_a=a["input_ids"], attention_mask_a=a["attention_mask"],
                input_ids_b=b["input_ids"], attention_mask_b=b["attention_mask"])
pipe = pipeline("question-duplicates", model=folder, trust_remote_code=True)
print(json.dumps({
    "similarity": out.similarity.tolist(),
    "threshold": model.config.threshold,
    "pipeline": [o["score"] for o in pipe([tuple(p) for p in pairs])],
    "module": type(model).__module__,
}))
"""
)


class FakeHub:
    """Stands in for the Hub: each repository is a local folder holding what was uploaded to it."""

    def __init__(self, root: Path):
        self.root = root
        self.created: list[str] = []

    def repo(self, repo_id: str) -> Path:
        return self.root / repo_id

    def create_repo(self, api, repo_id, **kwargs):
        self.created.append(repo_id)
        return RepoUrl(f"https://huggingface.co/{repo_id}")

    def upload_folder(
        self, api, *, repo_id, folder_path, path_in_repo=None, allow_patterns=None, ignore_patterns=None, **kwargs
    ):
        ignore = [ignore_patterns] if isinstance(ignore_patterns, str) else list(ignore_patterns or [])
        folder = Path(folder_path)
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        for name in filter_repo_objects(
            files, allow_patterns=allow_patterns, ignore_patterns=ignore + DEFAULT_IGNORE_PATTERNS
        ):
            self._store(repo_id, f"{path_in_repo}/{name}" if path_in_repo else name, folder / name)
        return self._commit(repo_id, kwargs.get("commit_message") or "Upload folder")

    def create_commit(self, api, repo_id, operations, *, commit_message, **kwargs):
        for operation in operations:
            assert isinstance(operation, CommitOperationAdd), operation
            self._store(repo_id, operation.path_in_repo, operation.path_or_fileobj)
        return self._commit(repo_id, commit_message)

    def _store(self, repo_id, path_in_repo, source):
        target = self.repo(repo_id) / path_in_repo
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            target.write_bytes(source)
        else:
            shutil.copyfile(source, target)

    def _commit(self, repo_id, message):
        return CommitInfo(
            commit_url=f"https://huggingface.co/{repo_id}/commit/{'0' * 40}",
            commit_message=message,
            commit_description="",
            oid="0" * 40,
        )

    def files(self, repo_id) -> set[str]:
        repo = self.repo(repo_id)
        return {p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file()}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    fake = FakeHub(tmp_path / "hub")
    monkeypatch.setattr(HfApi, "create_repo", lambda api, repo_id, **kw: fake.create_repo(api, repo_id, **kw))
    monkeypatch.setattr(HfApi, "upload_folder", lambda api, **kw: fake.upload_folder(api, **kw))
    monkeypatch.setattr(
        HfApi,
        "create_commit",
        lambda api, repo_id, operations, **kw: fake.create_commit(api, repo_id, operations, **kw),
    )
    load_card = ModelCard.load.__func__

    def load_local_or_missing(cls, repo_id_or_path, *args, **kwargs):
        if Path(repo_id_or_path).exists():
            return load_card(cls, repo_id_or_path, *args, **kwargs)
        raise EntryNotFoundError(f"{repo_id_or_path} has no README.md yet")  # a new repository

    monkeypatch.setattr(ModelCard, "load", classmethod(load_local_or_missing))
    return fake


def loadable_copy(repo: Path, tmp_path: Path) -> Path:
    """The pushed files minus pickles: proof that from_pretrained never needs them."""
    folder = tmp_path / "downstream"
    shutil.copytree(repo, folder, ignore=shutil.ignore_patterns("*.bin", "*.pt", "*.pkl"))
    return folder


@pytest.mark.slow
def test_trainer_push_uploads_a_complete_checkpoint(hub, tiny_lstm, word_tokenizer, tmp_path):
    args = _args(tmp_path, max_steps=3, push_to_hub=True, hub_model_id="someone/tiny-siamese")
    trainer = trainer_on_tiny_pairs(tiny_lstm, word_tokenizer, args)
    assert hub.created == ["someone/tiny-siamese"]  # the Trainer creates the repository at once
    trainer.train()
    metrics = trainer.evaluate()
    trainer.push_to_hub(dataset_tags="quora", dataset="tiny pairs")

    files = hub.files("someone/tiny-siamese")
    # The Trainer also uploads training_args.bin (a pickle of the arguments, which loading never reads).
    assert files == MODEL_FILES | TOKENIZER_FILES | {CARD, "training_args.bin"}
    config = json.loads((hub.repo("someone/tiny-siamese") / "config.json").read_text())
    assert config["auto_map"] == {
        "AutoConfig": "configuration_siamese.SiameseConfig",
        "AutoModel": "modeling_siamese.SiameseModel",
    }
    assert config["threshold"] == pytest.approx(metrics["eval_threshold"])
    assert "question-duplicates" in config["custom_pipelines"]

    card = ModelCard.load(hub.repo("someone/tiny-siamese") / CARD)
    assert card.data.model_name == "tiny-siamese" and card.data.datasets == ["quora"]
    assert 'AutoModel.from_pretrained("someone/tiny-siamese", trust_remote_code=True)' in card.text

    downstream = loadable_copy(hub.repo("someone/tiny-siamese"), tmp_path)
    child = run_without_hfsiamese(LOAD_CHILD, [downstream, json.dumps(PAIRS)], tmp_path)
    expected = expected_scores(tiny_lstm, word_tokenizer)
    assert child["module"].startswith("transformers_modules")
    assert child["threshold"] == pytest.approx(metrics["eval_threshold"])
    assert child["similarity"] == pytest.approx(expected, abs=1e-5)
    assert child["pipeline"] == pytest.approx(expected, abs=1e-5)


def test_trainer_checkpoint_push_carries_the_modeling_code(hub, tiny_lstm, word_tokenizer, tmp_path, monkeypatch):
    """The Trainer's per-save push (hub_strategy every_save) copies only weights and config from the
    checkpoint; SiameseTrainer adds the code `auto_map` points at, so every pushed revision loads."""
    from concurrent.futures import Future

    def upload_as_future(api, **kwargs):  # the per-save push runs as a background job (run_as_future=True)
        done = Future()
        done.set_result(hub.upload_folder(api, **kwargs))
        return done

    monkeypatch.setattr(HfApi, "upload_folder", upload_as_future)
    args = _args(
        tmp_path, max_steps=2, save_strategy="steps", save_steps=2, push_to_hub=True, hub_model_id="someone/per-save"
    )
    trainer_on_tiny_pairs(tiny_lstm, word_tokenizer, args).train()  # no final push_to_hub()
    assert CODE_FILES | {"config.json", "model.safetensors"} <= hub.files("someone/per-save")


@pytest.mark.slow
def test_model_push_uploads_weights_code_tokenizer_and_card(hub, tiny_bert_dir, word_tokenizer, tmp_path):
    from hfsiamese import SiameseModel

    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), threshold=0.25)
    with pytest.raises(ValueError, match="needs the tokenizer"):
        model.push_to_hub("someone/tiny-bert-siamese")
    model.push_to_hub("someone/tiny-bert-siamese", tokenizer=word_tokenizer)
    assert hub.files("someone/tiny-bert-siamese") == MODEL_FILES | TOKENIZER_FILES | {CARD}
    card = ModelCard.load(hub.repo("someone/tiny-bert-siamese") / CARD)
    assert "hfsiamese" in card.data.tags and "trust_remote_code=True" in card.text

    child = run_without_hfsiamese(LOAD_CHILD, [hub.repo("someone/tiny-bert-siamese"), json.dumps(PAIRS)], tmp_path)
    assert child["threshold"] == 0.25
    assert child["similarity"] == pytest.approx(expected_scores(model, word_tokenizer), abs=1e-5)


def test_model_loaded_from_a_folder_pushes_its_own_tokenizer_and_card(hub, tiny_lstm, word_tokenizer, tmp_path):
    from transformers import AutoModel

    folder = tmp_path / "trained"
    tiny_lstm.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    snippet = 'model = AutoModel.from_pretrained("outputs/lstm_qqp", trust_remote_code=True)\n'
    (folder / CARD).write_text(f"---\nlicense: apache-2.0\ntags:\n- hfsiamese\n---\n# my trained model\n{snippet}")
    AutoModel.from_pretrained(folder).push_to_hub("someone/trained")
    assert hub.files("someone/trained") == MODEL_FILES | TOKENIZER_FILES | {CARD}
    # The card the recipe wrote for its local folder, its snippets now loading the repository.
    uploaded = (hub.repo("someone/trained") / CARD).read_text()
    assert uploaded.endswith(
        '# my trained model\nmodel = AutoModel.from_pretrained("someone/trained", trust_remote_code=True)\n'
    )


@pytest.fixture
def recipe(monkeypatch):
    """recipes/train.py as a module, run in this process (so that the fake Hub applies)."""
    return load_recipe(monkeypatch)


def test_recipe_pushes_with_its_card(hub, recipe, tmp_path):
    out = tmp_path / "run"
    config = dict(
        TINY_LSTM_BASE,
        max_train_pairs=400,
        max_eval_pairs=200,
        max_steps=4,
        eval_strategy="no",
        save_strategy="no",
        report_to="none",
        use_cpu=True,
    )
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    recipe.main(
        [str(tmp_path / "tiny.yaml"), "--output_dir", str(out), "--push_to_hub", "--hub_model_id", "someone/qqp-lstm"]
    )

    files = hub.files("someone/qqp-lstm")
    assert MODEL_FILES | TOKENIZER_FILES | {CARD} <= files
    assert not {f for f in files if f.startswith("checkpoint-")}
    assert (out / CARD).read_text() == (hub.repo("someone/qqp-lstm") / CARD).read_text()
    card = ModelCard.load(out / CARD)
    results = json.loads((out / "all_results.json").read_text())
    assert card.data.license == "apache-2.0" and card.data.language == "en" and card.data.datasets == ["quora"]
    assert card.data.base_model is None  # an LSTM trained from scratch has none
    ap = [r for r in card.data.eval_results if r.metric_type == "average_precision"]
    assert [r.metric_value for r in ap] == [round(results["eval_average_precision"], 4)]
    reproduced = yaml.safe_load(card.text.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert (
        reproduced["embedding_dim"] == 16
        and reproduced["max_steps"] == 4
        and reproduced["loss"] == "hard_negative_triplet"
    )
    assert "output_dir" not in reproduced and "hub_model_id" not in reproduced


def test_recipe_refuses_lstm_sentence_transformers_export_before_training(recipe, tmp_path):
    out = tmp_path / "run"
    argv = ["--train_file", str(QQP_FILE), "--max_train_pairs", "200", "--max_eval_pairs", "50", "--max_steps", "1",
            "--output_dir", str(out), "--export_sentence_transformers", str(tmp_path / "st"), "--report_to", "none"]  # fmt: skip
    with pytest.raises(ValueError, match="only transformer encoders export"):
        recipe.main(argv)
    assert not (out / "model.safetensors").exists()
