"""README.md as a user reads it: every bash and Python block, in order, in a fresh copy of the repository.

A README that drifts from the code (a renamed flag, an output folder that an earlier example already
wrote, a name a snippet never defined) fails here. What the test changes, all of it visible below:
- training commands get `TINY_TRAINING` appended (argparse keeps a flag's last value, so these win
  over the README's own `--max_steps`), so each run takes seconds; `recipes/silver_pairs.py` pairs up
  the questions of a few hundred training pairs, with a few hundred random pairs (`TINY_SILVER`);
- install steps (`python3 -m venv`, `pip install`) are dropped: the test runs in the installed venv,
  which is linked as `.venv` into the copy and put first on PATH (as an activated venv is);
- nothing else: every file an example names is made by an earlier example (or shipped), and every
  Python name it uses is defined by an earlier block, as for a user pasting the README in order.

A block the test cannot run here says so in README.md, right above it, visible in the source:
`<!-- readme-test: skip <reason> -->` (the Hub, a GPU, several machines), and the Quick start's
`<!-- test-command -->` block is the test suite itself. The test prints how many commands it ran and
every block it skipped, with its reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.deprecation_hook.sitecustomize import MARKER as DEPRECATION_MARKER, python_block_deprecations
from tests.helpers import offline_env
from tests.plugins.run_notes import RUN_NOTE

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

README = REPO_ROOT / "README.md"
# On the commands' PYTHONPATH: an hfsiamese FutureWarning or DeprecationWarning fails the command's block.
DEPRECATION_HOOK = REPO_ROOT / "tests" / "deprecation_hook"
SKIP_MARKER = re.compile(r"<!--\s*readme-test:\s*skip\s+(?P<reason>.+?)\s*-->")
TEST_COMMAND_MARKER = "<!-- test-command -->"
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<language>\w*)\s*$")

# Appended to every `recipes/train.py` command: a few steps on a few hundred pairs, nothing saved mid-run.
TINY_TRAINING = (
    "--max_steps 2 --max_train_pairs 300 --max_eval_pairs 100 --per_device_train_batch_size 16 "
    "--eval_strategy no --save_strategy no --disable_tqdm true"
)
# `recipes/distill.py` trains too (stage 2 as train.py does), after a stage 1 of its own.
TINY_DISTILLATION = f"{TINY_TRAINING} --distillation_max_steps 2"
# `recipes/silver_pairs.py` pairs up the training split's questions: a few hundred of them, and a few hundred random
# pairs (a page's --random_pairs 4000 had the cross-encoder score 4,500 pairs on one thread: 106 s of the docs run).
TINY_SILVER = "--max_train_pairs 300 --random_pairs 200"
TINY_FLAGS = {
    "recipes/train.py": TINY_TRAINING,
    "recipes/distill.py": TINY_DISTILLATION,
    "recipes/silver_pairs.py": TINY_SILVER,
    "hfsiamese train": TINY_TRAINING,
    "hfsiamese distill": TINY_DISTILLATION,
    "hfsiamese silver-pairs": TINY_SILVER,
}
INSTALL_STEP = re.compile(r"^\s*(python3? -m venv\b|\S*pip install\b)")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skip: str | None  # why the test does not run it


def readme_blocks(text: str) -> list[Block]:
    """The fenced bash/python blocks of a markdown text, in order, with the skip marker right above each."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or not opening["language"]:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        indent = len(opening["indent"])
        code = "\n".join(line[indent:] for line in lines[i + 1 : end])
        above = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP_MARKER.search(above)
        skip = (
            marker["reason"]
            if marker
            else ("the test suite itself; twin: .ci/run runs it" if above == TEST_COMMAND_MARKER else None)
        )
        if opening["language"] in ("bash", "python"):
            blocks.append(Block(i + 1, opening["language"], code, skip))
        i = end + 1
    return blocks


def shell_commands(code: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", code)
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            commands.append(line)
    return commands


def runnable(command: str) -> str | None:
    """The command as the test runs it: install steps dropped, tiny settings added to training; None if nothing is left."""
    steps = [step.strip() for step in command.split("&&") if not INSTALL_STEP.match(step)]
    steps = [next((f"{step} {tiny}" for script, tiny in TINY_FLAGS.items() if script in step), step) for step in steps]
    return " && ".join(steps) or None


def test_blocks_and_markers_are_read_as_written():
    text = (
        "<!-- readme-test: skip needs the Hub -->\n```bash\naccelerate launch x  # note\n```\n"
        "   ```python\n   a = 1\n   ```\n```text\nnot code\n```\n"
    )
    blocks = readme_blocks(text)
    assert [(b.language, b.code, b.skip) for b in blocks] == [
        ("bash", "accelerate launch x  # note", "needs the Hub"), ("python", "a = 1", None)
    ]  # fmt: skip
    assert shell_commands("# c\npython a.py --x 1 \\\n    --y 2   # later\n") == ["python a.py --x 1 --y 2"]
    install = "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e . && .venv/bin/accelerate launch recipes/train.py"
    assert runnable(install) == f".venv/bin/accelerate launch recipes/train.py {TINY_TRAINING}"
    assert runnable("python3 -m venv .venv && .venv/bin/pip install -e .") is None
    assert runnable("python recipes/distill.py c.yaml") == f"python recipes/distill.py c.yaml {TINY_DISTILLATION}"
    assert (
        runnable(".venv/bin/pip install -e . && .venv/bin/hfsiamese train")
        == f".venv/bin/hfsiamese train {TINY_TRAINING}"
    )
    assert runnable("hfsiamese split --output_file x.jsonl") == "hfsiamese split --output_file x.jsonl"


@pytest.fixture
def repo_copy(tmp_path):
    """A copy of the repository as a fresh clone has it (no outputs/), with the venv linked in."""
    root = tmp_path / "repo"
    shutil.copytree(
        REPO_ROOT,
        root,
        ignore=shutil.ignore_patterns(".git", ".venv", "outputs", "__pycache__", ".pytest_cache", "*.egg-info"),
    )
    (root / ".venv").symlink_to(Path(sys.prefix))
    return root


# Its Python blocks run in this process: a hang in one fails the test here, with a traceback through the block
# (compiled as "README.md:<line>"); each shell command has its own 600 s limit. The old 820-line README took 14
# minutes on a 2-core machine at load 6; the front page trains once.
@pytest.mark.timeout(1200)
@pytest.mark.runs_first
def test_readme_runs_in_order(repo_copy, monkeypatch, record_property):
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {}  # the README's own Python blocks define every name they use
    env = offline_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1"
    )
    env.pop("ACCELERATE_USE_CPU", None)
    monkeypatch.chdir(repo_copy)
    ran, skipped, met, unchecked = [], [], set(), []  # met: the README_EXPECTATIONS entries checked
    for block in blocks:
        where = f"README.md:{block.line}"
        if block.skip:
            skipped.append(f"{where} ({block.language}): {block.skip}")
            continue
        if block.language == "python":
            if not run_python_block(block, where, namespace, repo_copy, met, README_EXPECTATIONS):
                unchecked.append(f"{where} (python): runs without error, nothing more promised")
            ran.append(where)
            continue
        for written in shell_commands(block.code):
            command = runnable(written)
            if command is None:
                continue
            if not run_shell_command(written, command, where, repo_copy, env, met, README_EXPECTATIONS, timeout=600):
                unchecked.append(f"{where}: `{written[:100]}` exits 0, nothing more checked")
            ran.append(where)
    note = [f"README test: {len(ran)} commands/blocks run, {len(skipped)} blocks skipped"]
    note += [f"skipped {line}" for line in skipped] + [f"no expectation: {line}" for line in unchecked]
    record_property(RUN_NOTE, "\n".join(note))  # in the session's summary
    assert ran
    missed = sorted(set(README_EXPECTATIONS) - met)
    assert not missed, f"README expectations that met no block (edit README_EXPECTATIONS): {missed}"


# ----------------------------------------------------------------------------------------------------------------
# What each block promises, checked after it runs: the figures it prints (JSON keys), the files and folders it
# says it writes, a search hit. Each entry: a regular expression that finds one command (as written, before the test
# adds its tiny settings) or Python block, and the check of what it left. README_EXPECTATIONS are the front page's,
# DOCS_EXPECTATIONS the documentation site's (run by tests/test_docs.py). An entry that meets no block fails its
# test, so an edited page cannot leave its promises unchecked; a block no entry meets is listed.
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ran:
    """What a command or Python block (README or docs) left: the copy's root, its stdout (a command), the namespace (Python)."""

    root: Path
    stdout: str = ""
    namespace: dict | None = None


def printed_json(ran: Ran) -> dict:
    """The last line of a command's stdout that is a JSON object (the commands print one)."""
    for line in reversed(ran.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON object printed; stdout ends:\n{ran.stdout[-2000:]}")


def files(*paths: str) -> Callable[[Ran], None]:
    """Every path (relative to the copy's root) exists; a name ending in / must be a non-empty folder."""

    def check(ran: Ran) -> None:
        for path in paths:
            where = ran.root / path
            assert where.exists(), f"{path} was not written"
            if path.endswith("/"):
                assert where.is_dir() and any(where.iterdir()), f"{path} is not a non-empty folder"

    return check


def trained_model(folder: str) -> Callable[[Ran], None]:
    """A training run's promise: a model folder with its metrics, and the closing summary naming it."""

    def check(ran: Ran) -> None:
        files(f"{folder}/config.json", f"{folder}/model.safetensors", f"{folder}/all_results.json")(ran)
        results = json.loads((ran.root / folder / "all_results.json").read_text())
        assert {"eval_accuracy", "eval_average_precision", "eval_threshold"} <= results.keys(), sorted(results)
        assert f"Model saved to {folder} after" in ran.stdout and "Validation (" in ran.stdout, ran.stdout[-2000:]
        assert f"--model_name_or_path {folder} " in ran.stdout  # the commands to evaluate and search with it

    return check


def json_keys(*keys: str, **values: Any) -> Callable[[Ran], None]:
    """The command printed one JSON object with these keys, and these values where given."""

    def check(ran: Ran) -> None:
        printed = printed_json(ran)
        assert set(keys) <= printed.keys(), f"missing {sorted(set(keys) - printed.keys())} in {sorted(printed)}"
        for key, value in values.items():
            assert printed[key] == value, (key, printed[key], value)

    return check


def search_results(k: int) -> Callable[[Ran], None]:
    """`hfsiamese search --json`: one query's k matches, best first."""

    def check(ran: Ran) -> None:
        (result,) = printed_json(ran)["results"]
        scores = [match["score"] for match in result["matches"]]
        assert len(scores) == k and scores == sorted(scores, reverse=True), result

    return check


def exact_hit_first(k: int, copy: str) -> Callable[[Ran], None]:
    """
    `hfsiamese search` without --json, for a query the corpus holds up to case and spacing (`copy`: "How do I
    learn Python?" is "How do I learn python ?" in qqp_dev.tsv): k numbered matches, best first, and `copy` among
    those at cosine 1 (the same tokens embed the same; a tiny model's unknown words may tie others with it).
    """

    def check(ran: Ran) -> None:
        rows = re.findall(r"^\s*\d+\. (-?\d+\.\d+) .*?\] (.*)$", ran.stdout, flags=re.MULTILINE)
        scores = [float(score) for score, _ in rows]
        assert len(rows) == k and scores == sorted(scores, reverse=True), ran.stdout[-2000:]
        assert copy in [text for score, text in rows if float(score) >= 0.999], ran.stdout[-2000:]

    return check


def all_of(*checks: Callable[[Ran], None]) -> Callable[[Ran], None]:
    def check(ran: Ran) -> None:
        for one in checks:
            one(ran)

    return check


def _index_finds_what_was_added(ran: Ran) -> None:
    """
    The saved and reloaded index holds the 19,052 questions and the one added, and finds that one first, or tied
    for first: the docs run trains on 300 pairs, whose vocabulary lacks "learning" and "python", so "How do I start
    coding professionally ?" and "How do I start clothing line ?" read as the same tokens ("how do i start [UNK]
    [UNK] ?") and tie at 1.0; which of equal scores comes first is the CPU's arithmetic (an AVX2-only EPYC put
    another one first), not a promise of the page.
    """
    index, questions = ran.namespace["index"], ran.namespace["questions"]
    assert len(questions) == 19_052 and len(index) == len(questions) + 1
    matches = index.search("How do I start learning Python?", k=10)
    added = [match for match in matches if match["text"] == "How do I start learning Python?"]
    assert len(added) == 1 and added[0]["score"] == pytest.approx(1.0, abs=1e-5), matches[:3]
    assert added[0]["id"] == len(questions)  # "ids: the next row numbers"
    assert all(match["score"] == pytest.approx(1.0, abs=1e-5) for match in matches[: matches.index(added[0])])


def _database_reopens(ran: Ran) -> None:
    """outputs/qqp_db_index reopens the LanceDB table: the added row there, the deleted ones gone."""
    from hfsiamese.search import DuplicateIndex

    questions = ran.namespace["questions"]
    with DuplicateIndex.load(ran.root / "outputs/qqp_db_index", ran.namespace["model"]) as db:
        assert db.store_name == "lancedb" and len(db) == len(questions) + 1 - 2
        (mine,) = db.search("How do I start learning Rust?", k=1, filter={"site": "mine"})
        assert mine["text"] == "How do I start learning Rust?" and mine["score"] == pytest.approx(1.0, abs=1e-5)
        assert all(match["id"] not in (0, 1) for matches in db.search(questions[:2], k=3) for match in matches)


def _silver_pairs_written(ran: Ran) -> None:
    """The pairs the summary counts are the lines of outputs/silver.jsonl, each a labelled question pair."""
    printed = printed_json(ran)
    rows = [json.loads(line) for line in (ran.root / "outputs/silver.jsonl").read_text().splitlines()]
    assert printed["output_file"] == "outputs/silver.jsonl" and len(rows) == printed["pairs"] > 0
    assert sum(row["label"] for row in rows) == printed["duplicates"], rows[0]


# What `--report_dir` writes (docs/guides/evaluation-and-calibration.md); a calibrated model adds reliability_diagram.png.
REPORT_FILES = (
    "metrics.json",
    "similarity_histogram.png",
    "precision_recall_curve.png",
    "threshold_sweep.png",
    "report.md",
)


def _calibration_saved(ran: Ran) -> None:
    """The calibrated copy stores the printed threshold and the Platt map in its config."""
    config = json.loads((ran.root / "outputs/lstm_qqp_mydomain/config.json").read_text())
    assert (
        config["threshold"] == pytest.approx(printed_json(ran)["threshold"])
        and config["calibration"]["method"] == "platt"
    )


def _prompt_saved(ran: Ran) -> None:
    """`--prompt "question: "` travels with the model (its config's prompts, used by encode)."""
    config = json.loads((ran.root / "outputs/minilm_prompted/config.json").read_text())
    assert "question: " in config["prompts"].values(), config.get("prompts")


def _reranked(ran: Ran) -> None:
    """Reranked matches carry the cross-encoder's score in [0, 1] and the bi-encoder's cosine beside it."""
    matches = printed_json(ran)["results"][0]["matches"]
    assert all("retrieval_score" in m and 0.0 <= m["score"] <= 1.0 for m in matches), matches


def _cross_encoder_order_free(ran: Ran) -> None:
    """`cross.predict`: scores in [0, 1], the same whichever text comes first."""
    cross = ran.namespace["cross"]
    a, b = ["How do I learn Python ?"], ["What is the best way to learn Python ?"]
    forward, backward = cross.predict(a, b)["scores"], cross.predict(b, a)["scores"]
    assert 0.0 <= float(forward[0]) <= 1.0 and float(forward[0]) == pytest.approx(float(backward[0]), abs=1e-6)


def _embeddings(ran: Ran) -> None:
    """`model.encode`: (n, dim), L2-normalised."""
    embeddings, model = ran.namespace["embeddings"], ran.namespace["model"]
    assert tuple(embeddings.shape) == (1, model.config.sentence_embedding_dim)
    assert float(embeddings.norm(dim=-1)[0]) == pytest.approx(1.0, abs=1e-5)


def _onnx_model(ran: Ran) -> None:
    """`load_siamese_model` on the exported folder gives an OnnxSiameseModel that scores pairs."""
    served = ran.namespace["served"]
    assert type(served).__name__ == "OnnxSiameseModel", type(served)
    scores = served.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])["scores"]
    assert len(scores) == 1


def _classified(ran: Ran) -> None:
    """`classify`: a label per text among the support labels or `unknown_label`, and a score per class."""
    out = ran.namespace["out"]
    assert len(out["labels"]) == 2 and set(out["labels"]) <= {"account", "shipping", "other"}, out["labels"]
    assert tuple(out["class_scores"].shape) == (2, 2)  # two texts, two classes (account, shipping)


def _predicts(ran: Ran) -> None:
    """`model.predict`: a score per pair, and the decision taken at the threshold the run stored (`config.threshold`)."""
    model = ran.namespace["model"]
    out = model.predict(["How do I learn Python ?"], ["What is the best way to learn Python ?"])
    assert {"scores", "is_duplicate"} <= out.keys() and len(out["scores"]) == 1, out
    assert model.config.threshold is not None
    assert bool(out["is_duplicate"][0]) == (float(out["scores"][0]) >= model.config.threshold), out


def _remote_code_predicts(ran: Ran) -> None:
    """The folder's own modeling code (`trust_remote_code=True`) scores the pair and decides."""
    out = ran.namespace["remote"].predict(
        ["How do I learn Python ?"], ["What is the best way to learn Python ?"], ran.namespace["tokenizer"]
    )
    assert {"scores", "is_duplicate"} <= out.keys() and len(out["scores"]) == 1, out


def _quickstart_index(ran: Ran) -> None:
    """`DuplicateIndex.build` over the 19,052 questions; `search` gives k matches, best first."""
    index, questions = ran.namespace["index"], ran.namespace["questions"]
    assert len(questions) == 19_052 and len(index) == len(questions)
    matches = index.search("How can I learn Python quickly?", k=3)
    scores = [match["score"] for match in matches]
    assert len(matches) == 3 and scores == sorted(scores, reverse=True), matches


def _pairs_loaded(ran: Ran) -> None:
    """`load_pairs` with the file's column names: question1, question2 and 0/1 labels."""
    pairs = ran.namespace["pairs"]
    assert {"question1", "question2", "label"} <= set(pairs.column_names) and len(pairs) > 0, pairs
    assert set(pairs["label"]) <= {0, 1}


def _truncated(ran: Ran) -> None:
    """A Matryoshka model encodes to its first 64 dimensions on request."""
    assert tuple(ran.namespace["small"].encode(["How do I learn Python?"], truncate_dim=64).shape) == (1, 64)


def _calibrated_in_python(ran: Ran) -> None:
    """`model.calibrate(..., method="platt")` in memory: predict now returns a probability."""
    assert ran.namespace["report"].method == "platt"
    out = ran.namespace["model"].predict(["How do I learn Python ?"], ["What is the best way to learn Python ?"])
    assert "probability" in out and 0.0 <= float(out["probability"][0]) <= 1.0, out


def _mteb_scored(ran: Ran) -> None:
    """MTEB on the held-out pairs: its AP is the one `hfsiamese evaluate` computes (up to tied scores' rounding), and the
    cross-encoder's reranking score is a MAP."""
    from hfsiamese import load_model
    from hfsiamese.evaluation import evaluate_pairs

    scores, pairs = ran.namespace["scores"], ran.namespace["pairs"]
    own = evaluate_pairs(load_model(ran.root / "outputs/lstm_qqp"), pairs, threshold=0.5)["average_precision"]
    assert abs(scores["cosine_ap"] - own) < 0.01, (scores["cosine_ap"], own)
    assert scores["max_ap"] >= scores["cosine_ap"]
    assert 0.0 < ran.namespace["result"].task_results[0].get_score() <= 1.0


def _pipeline_decides(ran: Ran) -> None:
    """The `question-duplicates` pipeline: a score and a decision for a pair."""
    out = ran.namespace["pipe"](("How do I learn Python?", "What is the best way to learn Python?"))
    assert {"score", "is_duplicate"} <= set(out), out


def _model_card(ran: Ran) -> None:
    """The run's README.md parses as a Hub model card with its metadata."""
    card = ran.namespace["card"]
    assert card.data.pipeline_tag == "sentence-similarity" and card.data.library_name, card.data


def _sentence_transformers_encodes(ran: Ran) -> None:
    """The export loads in sentence-transformers and encodes to its embedding size."""
    st = ran.namespace["st"]
    assert tuple(st.encode(["How do I learn Python?"]).shape) == (1, st.get_sentence_embedding_dimension())


def listed(*names: str) -> Callable[[Ran], None]:
    """`ls FOLDER`: these names among what it printed."""

    def check(ran: Ran) -> None:
        printed = set(ran.stdout.split())
        assert set(names) <= printed, f"missing {sorted(set(names) - printed)} in {sorted(printed)}"

    return check


QQP_DEV_SEARCH = r"--index_dir outputs/qqp_dev_index --query \"How do I learn Python\?\" --k 5$"
PREDICT_BLOCK = r"^model = AutoModel\.from_pretrained\(\"outputs/lstm_qqp\"\)\nmodel\.predict\("

# README.md (the front page): its Quick start and three examples, checked by test_readme_runs_in_order.
README_EXPECTATIONS: dict[str, Callable[[Ran], None]] = {
    # Quick start (install steps dropped by `runnable`): the default recipe, saved to outputs/lstm_qqp, then a summary.
    r"&& \.venv/bin/hfsiamese train$": trained_model("outputs/lstm_qqp"),
    PREDICT_BLOCK: _predicts,
    r"^hfsiamese split --output_file outputs/qqp_validation\.jsonl$": files("outputs/qqp_validation.jsonl"),
    r"^hfsiamese evaluate --model_name_or_path outputs/lstm_qqp --test_file outputs/qqp_validation\.jsonl --retrieval$": (
        json_keys("accuracy", "average_precision", "retrieval_mrr@10", "retrieval_recall@5", training_overlap_pairs=0)
    ),
    QQP_DEV_SEARCH: all_of(
        exact_hit_first(5, "How do I learn python ?"), files("outputs/qqp_dev_index/index_config.json")
    ),
}

# The documentation site (docs/, the pages in the nav's order), checked by tests/test_docs.py's test_docs_run_in_order:
# files carry over from page to page, each Python check reads its own page's namespace.
DOCS_EXPECTATIONS: dict[str, Callable[[Ran], None]] = {
    # get-started/quickstart.md
    r"^hfsiamese train$": trained_model("outputs/lstm_qqp"),
    r"^hfsiamese split --output_file outputs/qqp_validation\.jsonl$": files("outputs/qqp_validation.jsonl"),
    r"--test_file outputs/qqp_validation\.jsonl --retrieval --retrieval_k 1 5 10$": json_keys(
        "accuracy", "average_precision", "retrieval_mrr@10", "retrieval_recall@5", training_overlap_pairs=0
    ),
    PREDICT_BLOCK: _predicts,
    r"^embeddings = model\.encode\(": _embeddings,
    r"^index = DuplicateIndex\.build\(questions, model\)$": _quickstart_index,
    r"--index_dir outputs/quickstart_index --query \"How do I learn Python\?\" --k 5$": all_of(
        exact_hit_first(5, "How do I learn python ?"), files("outputs/quickstart_index/index_config.json")
    ),
    r"^remote = AutoModel\.from_pretrained\(\"outputs/lstm_qqp\", trust_remote_code=True\)": _remote_code_predicts,
    # guides/your-own-pairs.md
    r"to_csv\(\"pairs\.csv\"": files("pairs.csv"),
    r"^hfsiamese train --train_file pairs\.csv --question1_column q1": trained_model(
        "outputs/pairs-contrastive_ranking"
    ),
    r"^pairs = load_pairs\(\"pairs\.csv\"": _pairs_loaded,
    r"^hfsiamese split --train_file pairs\.csv .*--output_file outputs/pairs_validation\.jsonl$": files(
        "outputs/pairs_validation.jsonl"
    ),
    # guides/pretrained-models.md, choosing-a-loss.md
    r"--output_dir outputs/minilm_prompted$": all_of(trained_model("outputs/minilm_prompted"), _prompt_saved),
    r"--output_dir outputs/minilm_lora$": all_of(
        trained_model("outputs/minilm_lora"), files("outputs/minilm_lora/adapter/")
    ),
    r"--output_dir outputs/minilm_matryoshka$": trained_model("outputs/minilm_matryoshka"),
    r"small\.encode\(.*truncate_dim=64\)": _truncated,
    r"--output_dir outputs/lstm_mnrl$": trained_model("outputs/lstm_mnrl"),
    r"--output_dir outputs/lstm_triplet$": trained_model("outputs/lstm_triplet"),
    # guides/cross-encoder.md
    r"^hfsiamese train cross_minilm_qqp$": trained_model("outputs/cross_minilm_qqp"),
    r"cross = CrossEncoder\.from_pretrained\(\"outputs/cross_minilm_qqp\"\)": _cross_encoder_order_free,
    r"--cross_encoder outputs/cross_minilm_qqp --query": all_of(
        json_keys("retrieval_threshold", cross_encoder="outputs/cross_minilm_qqp", rerank_k=20),
        search_results(5),
        _reranked,
    ),
    r"^hfsiamese silver-pairs ": all_of(json_keys("pairs", "duplicates", "threshold"), _silver_pairs_written),
    r"--output_dir outputs/minilm_silver$": trained_model("outputs/minilm_silver"),
    # guides/distillation.md (its first command trains the teacher, outputs/minilm_qqp)
    r"^hfsiamese train minilm_qqp$": trained_model("outputs/minilm_qqp"),
    r"^hfsiamese distill lstm_distilled_qqp --teacher_model_name_or_path outputs/minilm_qqp$": trained_model(
        "outputs/lstm_distilled_qqp"
    ),
    r"^hfsiamese distill static_distilled_qqp --teacher_model_name_or_path outputs/minilm_qqp$": trained_model(
        "outputs/static_distilled_qqp"
    ),
    r"--output_dir outputs/static_distilled_short$": trained_model("outputs/static_distilled_short"),
    # guides/mining-and-teacher-scores.md: the mined groups, scored, train a student (it once failed, unrun)
    r"--teacher_scores_file outputs/mined_scored\.parquet --loss margin_mse --output_dir outputs/minilm_mined$": (
        trained_model("outputs/minilm_mined")
    ),
    # guides/evaluation-and-calibration.md
    r"--report_dir outputs/lstm_qqp_report$": all_of(
        json_keys("accuracy", "average_precision", "retrieval_mrr@10", "retrieval_recall@5", training_overlap_pairs=0),
        files(*(f"outputs/lstm_qqp_report/{name}" for name in REPORT_FILES)),
    ),
    r"^ls outputs/lstm_qqp_report$": listed(*REPORT_FILES),
    r"to_json\(\"my_pairs\.jsonl\"\)": files("my_pairs.jsonl", "my_test.jsonl"),
    r"^hfsiamese calibrate ": all_of(
        json_keys("threshold", "threshold_interval", "metrics", "warnings", interval_confidence=0.9, method="platt"),
        _calibration_saved,
    ),
    r"^hfsiamese evaluate --model_name_or_path outputs/lstm_qqp_mydomain --test_file my_test\.jsonl$": json_keys(
        "accuracy", "average_precision", "ece", "brier"
    ),
    r"^report = model\.calibrate\(": _calibrated_in_python,
    r"support_labels=": _classified,
    # guides/public-benchmarks.md
    r"name=\"QQPHeldOut\"": _mteb_scored,
    # guides/duplicate-search.md
    r"index\.save\(\"outputs/qqp_index\"\)": all_of(
        files("outputs/qqp_index/embeddings.npy", "outputs/qqp_index/corpus/", "outputs/qqp_index/index_config.json"),
        _index_finds_what_was_added,
    ),
    QQP_DEV_SEARCH: all_of(
        exact_hit_first(5, "How do I learn python ?"), files("outputs/qqp_dev_index/index_config.json")
    ),
    r"--index_dir outputs/qqp_dev_index --query \"Why is the sky blue\?\" --json$": all_of(
        json_keys("threshold", num_texts=19_052, k=5), search_results(5)
    ),
    r"index\.save\(\"outputs/qqp_big_index\"\)": files(
        "outputs/qqp_big_index/ann.faiss", "outputs/qqp_shards/shards.json"
    ),
    r"--index_dir outputs/qqp_sharded_index": all_of(
        exact_hit_first(5, "How do I learn python ?"),
        files("outputs/qqp_sharded_index/index_config.json", "outputs/qqp_sharded_shards/shards.json"),
    ),
    r"db\.save\(\"outputs/qqp_db_index\"\)": all_of(files("outputs/qqp_db_index/index_config.json"), _database_reopens),
    # guides/serving.md
    r"--output_dir outputs/lstm_qqp_int8 --quantize int8$": all_of(
        json_keys("int8_min_cosine", quantization="int8", file="model.onnx"),
        files("outputs/lstm_qqp_int8/model.onnx", "outputs/lstm_qqp_int8/config.json"),
    ),
    r"--model_name_or_path outputs/lstm_qqp_int8 --test_file": json_keys("accuracy", "average_precision"),
    r"--model_name_or_path outputs/lstm_qqp_int8 --corpus": exact_hit_first(5, "How do I learn python ?"),
    r"load_siamese_model\(\"outputs/lstm_qqp_int8\"\)": _onnx_model,
    r"pipeline\(\"question-duplicates\"": _pipeline_decides,
    # guides/sharing.md
    r"^ls outputs/lstm_qqp$": listed(
        "model.safetensors",
        "config.json",
        "configuration_siamese.py",
        "modeling_siamese.py",
        "pipeline_question_duplicates.py",
        "README.md",
    ),
    r"^card = ModelCard\.load\(\"outputs/lstm_qqp/README\.md\"\)": _model_card,
    r"sentence_transformers_export outputs/minilm_qqp outputs/minilm_qqp_st$": files(
        "outputs/minilm_qqp_st/modules.json"
    ),
    r"^st = SentenceTransformer\(\"outputs/minilm_qqp_st\"\)": _sentence_transformers_encodes,
    # guides/several-gpus.md, experiment-tracking.md
    r"--output_dir outputs/lstm_qqp_2proc$": trained_model("outputs/lstm_qqp_2proc"),
    r"--output_dir outputs/lstm_curve$": trained_model("outputs/lstm_curve"),
    r"savefig\(\"outputs/lstm_curve/curves\.png\"": files("outputs/lstm_curve/curves.png"),
}


def check_expectations(
    text: str, ran: Ran, met: set[str], expectations: dict[str, Callable[[Ran], None]] = README_EXPECTATIONS
) -> bool:
    """Run the checks of every entry of `expectations` whose pattern `text` (a command as written, or a Python
    block) matches, adding the pattern to `met`; whether there was one."""
    matched = False
    for pattern, check in expectations.items():
        if re.search(pattern, text, flags=re.MULTILINE):
            check(ran)
            met.add(pattern)
            matched = True
    return matched


def run_python_block(block: Any, where: str, namespace: dict, repo_copy: Path, met: set[str], table: dict) -> bool:
    """Run a page's Python block in the page's namespace, then the checks `table` has for it; whether it had any."""
    try:
        with python_block_deprecations() as deprecations:
            exec(compile(block.code, where, "exec"), namespace)  # the page's own code
    except Exception as err:  # noqa: BLE001
        pytest.fail(f"{where}: the python block fails: {type(err).__name__}: {err}\n{block.code}")
    assert not deprecations, f"{where}: the python block uses what hfsiamese deprecates: {deprecations}"
    return check_expectations(block.code, Ran(repo_copy, namespace=namespace), met, table)


def run_shell_command(
    written: str, command: str, where: str, repo_copy: Path, env: dict, met: set[str], table: dict, *, timeout: float
) -> bool:
    """Run `command` (a page's `written` command as the test runs it), which must succeed, then the checks `table`
    has for `written`; whether it had any."""
    hook = os.pathsep.join(filter(None, [str(DEPRECATION_HOOK), env.get("PYTHONPATH")]))
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=repo_copy,
        env=dict(env, PYTHONPATH=hook),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"{where}: `{command}` failed:\n{result.stderr[-3000:]}"
    deprecated = [line for line in result.stderr.splitlines() if line.startswith(DEPRECATION_MARKER)]
    assert not deprecated, f"{where}: `{written}` uses what hfsiamese deprecates: {deprecated}"
    return check_expectations(written, Ran(repo_copy, stdout=result.stdout), met, table)


def runnable_texts(text: str) -> list[str]:
    """What the tests match expectations against: each Python block and each shell command (as written) of the
    blocks that run."""
    texts: list[str] = []
    for block in readme_blocks(text):
        if not block.skip:
            texts += [block.code] if block.language == "python" else shell_commands(block.code)
    return texts


def unmatched(expectations: dict[str, Callable[[Ran], None]], texts: list[str]) -> list[str]:
    """The patterns that find none of `texts`."""
    return [pattern for pattern in expectations if not any(re.search(pattern, t, flags=re.MULTILINE) for t in texts)]


def test_every_expectation_names_a_block_that_runs_and_can_fail(tmp_path):
    """Fast, without running the README: each README_EXPECTATIONS entry finds a command or block the test runs, and
    the checks fail on output that does not keep the promise (DOCS_EXPECTATIONS: tests/test_docs.py)."""
    assert unmatched(README_EXPECTATIONS, runnable_texts(README.read_text(encoding="utf-8"))) == [], (
        "find no README block"
    )
    with pytest.raises(AssertionError, match="no JSON object printed"):
        json_keys("accuracy")(Ran(tmp_path, stdout="done\n"))
    with pytest.raises(AssertionError, match="missing"):
        json_keys("accuracy")(Ran(tmp_path, stdout='{"loss": 1.0}\n'))
    with pytest.raises(AssertionError, match="was not written"):
        files("outputs/missing")(Ran(tmp_path))
    table = "Query: q\n   1. {:.4f} duplicate  [3] a ?\n   2. 0.8000            [4] b ?"
    exact_hit_first(2, "a ?")(Ran(tmp_path, stdout=table.format(1.0)))
    with pytest.raises(AssertionError):
        exact_hit_first(2, "a ?")(Ran(tmp_path, stdout=table.format(0.9)))  # the query's copy in the corpus not found
    with pytest.raises(AssertionError):
        exact_hit_first(2, "b ?")(Ran(tmp_path, stdout=table.format(1.0)))
    with pytest.raises(AssertionError):
        trained_model("outputs/run")(Ran(tmp_path, stdout="Model saved to outputs/run after 1s"))
    listed("metrics.json")(Ran(tmp_path, stdout="metrics.json\nreport.md\n"))
    with pytest.raises(AssertionError, match="missing"):
        listed("metrics.json", "report.md")(Ran(tmp_path, stdout="metrics.json\n"))
    met: set[str] = set()
    with pytest.raises(AssertionError, match="was not written"):  # a matched entry runs its check
        check_expectations("hfsiamese split --output_file outputs/qqp_validation.jsonl", Ran(tmp_path), met)
    assert not check_expectations("echo nothing promised", Ran(tmp_path), met) and met == set()
