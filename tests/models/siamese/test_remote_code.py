"""A saved checkpoint loads with `trust_remote_code=True` where hfsiamese cannot be imported; the folder that travels is closed."""

import ast
import json
import sys
from pathlib import Path

import pytest
import torch

import hfsiamese.models.siamese as travelling
from hfsiamese import SiameseConfig, SiameseModel
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese

# Runs in a child interpreter that cannot import hfsiamese: the model must come from the code saved
# beside the weights.
CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
import torch
from transformers import AutoModel

folder, batch = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
assert "hfsiamese" not in type(model).__module__, type(model).__module__
with torch.no_grad():
    out = model(**{k: torch.tensor(v) for k, v in batch.items()})
print(json.dumps({"similarity": out.similarity.tolist(), "threshold": model.config.threshold, "module": type(model).__module__}))
"""
)


def _pair_batch(tokenizer):
    a = tokenizer(["how do i learn python ?", "why is the sky blue ?"], padding=True)
    b = tokenizer(["what is the best way to learn python ?", "how do i cook rice ?"], padding=True)
    return {
        "input_ids_a": a["input_ids"],
        "attention_mask_a": a["attention_mask"],
        "input_ids_b": b["input_ids"],
        "attention_mask_b": b["attention_mask"],
    }


def _tiny_static(tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="static", vocab_size=len(tokenizer), embedding_dim=8, pooling="weighted_mean", projection_dim=6
    )
    return SiameseModel(config)


@pytest.mark.parametrize("encoder", ["lstm", "static", "transformer"])
@pytest.mark.slow
def test_checkpoint_loads_without_hfsiamese(encoder, tiny_lstm, tiny_bert_dir, word_tokenizer, tmp_path):
    if encoder == "transformer":
        model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    else:
        model = tiny_lstm if encoder == "lstm" else _tiny_static(word_tokenizer)
    model.config.threshold = 0.42
    folder = tmp_path / "checkpoint"
    model.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    batch = _pair_batch(word_tokenizer)
    with torch.no_grad():
        expected = model.eval()(**{k: torch.tensor(v) for k, v in batch.items()}).similarity.tolist()
    child = run_without_hfsiamese(CHILD, [folder, json.dumps(batch)], tmp_path)
    assert child["module"].startswith("transformers_modules")
    assert child["threshold"] == 0.42
    assert child["similarity"] == pytest.approx(expected, abs=1e-6)


# encode in a child without hfsiamese: no machine policy there, float32 whatever dtype="auto" asks.
ENCODE_CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
import torch
from transformers import AutoModel

folder, texts = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True)
threads = torch.get_num_threads()
plain, auto = model.encode(texts), model.encode(texts, dtype="auto")
print(json.dumps({"plain": plain.tolist(), "auto": auto.tolist(), "reason": model.encode_precision().reason,
                  "threads": [threads, torch.get_num_threads()]}))
"""
)


def test_remote_code_encodes_in_float32_without_the_machine_policy(tiny_lstm, word_tokenizer, tmp_path):
    folder = tmp_path / "checkpoint"
    tiny_lstm.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    texts = ["how do i learn python ?", "why is the sky blue ?", "how do i cook rice ?"]
    expected = tiny_lstm.encode(texts, word_tokenizer, dtype=torch.float32)
    child = run_without_hfsiamese(ENCODE_CHILD, [folder, json.dumps(texts)], tmp_path)
    assert torch.allclose(torch.tensor(child["plain"]), expected, atol=1e-6) and child["auto"] == child["plain"]
    assert child["reason"].startswith("fp32: dtype='auto' is decided by hfsiamese's measurement")
    assert child["threads"][0] == child["threads"][1]


TRAVELLING_DIR = Path(travelling.__file__).parent
# Packages a checkpoint's code may import besides the standard library: what transformers itself needs.
LIGHT_PACKAGES = {"torch", "numpy", "transformers", "huggingface_hub", "safetensors"}
# The one call into the installed library, made only inside the method that needs it (see docs/architecture.md).
LIBRARY_CALLS = {("calibration.py", "hfsiamese.calibration_fitting")}


def _travelling_files() -> list[Path]:
    return sorted(path for path in TRAVELLING_DIR.glob("*.py") if path.name != "__init__.py")


def _imports(path: Path) -> list[tuple[ast.ImportFrom | ast.Import, bool]]:
    """Every import of a file, and whether it runs when the module is imported (not inside a function)."""
    found, tree = [], ast.parse(path.read_text())
    nested = {
        id(node)
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, id(node) not in nested))
    return found


@pytest.mark.parametrize("path", _travelling_files(), ids=lambda path: path.name)
def test_the_travelling_folder_is_closed(path):
    siblings = {file.stem for file in _travelling_files()}
    for node, at_import in _imports(path):
        if isinstance(node, ast.ImportFrom) and node.level:
            assert node.level == 1, (
                f"{path.name}:{node.lineno} imports outside its folder ({'.' * node.level}{node.module})"
            )
            assert node.module.split(".")[0] in siblings, f"{path.name}:{node.lineno} imports a file not in the folder"
            continue
        names = [node.module] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
        for name in names:
            top = name.split(".")[0]
            if top == "hfsiamese":
                assert (path.name, name) in LIBRARY_CALLS and not at_import, f"{path.name}:{node.lineno} imports {name}"
            elif at_import:
                assert top in sys.stdlib_module_names or top in LIGHT_PACKAGES, (
                    f"{path.name}:{node.lineno} imports {name}"
                )


def test_a_checkpoint_carries_exactly_the_travelling_folder(tiny_lstm, tmp_path):
    from transformers.dynamic_module_utils import get_relative_import_files

    reached = {Path(file).name for file in get_relative_import_files(str(TRAVELLING_DIR / "modeling_siamese.py"))}
    tiny_lstm.save_pretrained(tmp_path)
    saved = {file.name for file in tmp_path.glob("*.py")}
    assert saved == {file.name for file in _travelling_files()} == reached | {"modeling_siamese.py"}
    auto_map = json.loads((tmp_path / "config.json").read_text())["auto_map"]
    assert auto_map == {
        "AutoConfig": "configuration_siamese.SiameseConfig",
        "AutoModel": "modeling_siamese.SiameseModel",
    }


def test_each_module_a_checkpoint_names_imports_every_sibling_it_needs_itself(tiny_lstm, tmp_path):
    """transformers 4.x copies a local folder's module named in config.json (`auto_map`, `custom_pipelines`) with only
    the siblings that module imports itself, then imports it: a sibling reached only through another one is missing
    from its module cache (FileNotFoundError), and the folder does not load with trust_remote_code=True there. The
    Hub path and transformers 5 follow the imports further; this holds the folder to the narrower rule."""
    from transformers.dynamic_module_utils import get_relative_import_files, get_relative_imports

    tiny_lstm.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    named = [*config["auto_map"].values(), *(task["impl"] for task in config["custom_pipelines"].values())]
    modules = sorted({reference.split(".")[0] for reference in named})
    assert modules == ["configuration_siamese", "modeling_siamese", "pipeline_question_duplicates"]
    for module in modules:
        path = str(tmp_path / f"{module}.py")
        reached = {Path(file).stem for file in get_relative_import_files(path)} - {module}
        missing = reached - set(get_relative_imports(path))
        assert not missing, f"{module}.py reaches {sorted(missing)} only through other siblings"
