"""README.md as a user reads it: every bash and Python block, in order, in a fresh copy of the repository.

A README that drifts from the code (a renamed flag, an output folder that an earlier example already
wrote, a name a snippet never defined) fails here. What the test changes, all of it visible below:
- training commands get `TINY_TRAINING` appended (argparse keeps a flag's last value, so these win
  over the README's own `--max_steps`), so each run takes seconds; `recipes/silver_pairs.py` pairs up
  the questions of a few hundred training pairs (`TINY_SILVER`);
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

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import offline_env

README = REPO_ROOT / "README.md"
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
# `recipes/silver_pairs.py` pairs up the training split's questions: a few hundred of them.
TINY_SILVER = "--max_train_pairs 300"
TINY_FLAGS = {"recipes/train.py": TINY_TRAINING, "recipes/distill.py": TINY_DISTILLATION, "recipes/silver_pairs.py": TINY_SILVER,
              "hfsiamese train": TINY_TRAINING, "hfsiamese distill": TINY_DISTILLATION, "hfsiamese silver-pairs": TINY_SILVER}
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
        skip = marker["reason"] if marker else ("the test suite itself" if above == TEST_COMMAND_MARKER else None)
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
    assert runnable(".venv/bin/pip install -e . && .venv/bin/hfsiamese train") == f".venv/bin/hfsiamese train {TINY_TRAINING}"
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


def test_readme_runs_in_order(repo_copy, monkeypatch, capsys):
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {}  # the README's own Python blocks define every name they use
    env = offline_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1"
    )
    env.pop("ACCELERATE_USE_CPU", None)
    monkeypatch.chdir(repo_copy)
    ran, skipped = [], []
    for block in blocks:
        where = f"README.md:{block.line}"
        if block.skip:
            skipped.append(f"{where} ({block.language}): {block.skip}")
            continue
        if block.language == "python":
            try:
                exec(compile(block.code, where, "exec"), namespace)  # noqa: S102 - the README's own code
            except Exception as err:  # noqa: BLE001
                pytest.fail(f"{where}: the python block fails: {type(err).__name__}: {err}\n{block.code}")
            ran.append(where)
            continue
        for command in shell_commands(block.code):
            command = runnable(command)
            if command is None:
                continue
            result = subprocess.run(
                ["bash", "-c", command], cwd=repo_copy, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            assert result.returncode == 0, f"{where}: `{command}` failed:\n{result.stderr[-3000:]}"
            ran.append(where)
    with capsys.disabled():
        print(f"\nREADME test: {len(ran)} commands/blocks run, {len(skipped)} blocks skipped")
        for line in skipped:
            print(f"  skipped {line}")
    assert ran
