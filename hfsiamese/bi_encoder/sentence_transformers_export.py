"""Export a transformer-encoder Siamese model in the sentence-transformers layout.

`SentenceTransformer(folder)` then gives the same embeddings as `SiameseModel.encode`: the encoder as a
`Transformer` module, `Pooling` (`config.pooling`'s modes), the model's `Dense` layers (those a
sentence-transformers source brought) and one for the projection if the model has one, and `Normalize`;
its prompts and default prompt go to `config_sentence_transformers.json`.

The export may go into the Siamese checkpoint folder itself, so that one folder (or Hub repository) loads
both with `AutoModel.from_pretrained(..., trust_remote_code=True)` and with `SentenceTransformer(...)`: none of
the files it writes collides with the checkpoint's. The price is a second copy of the encoder weights
(`0_Transformer/model.safetensors`): sentence-transformers' `Transformer` module loads its weights with
`AutoModel.from_pretrained` from its own folder, and the checkpoint's `model.safetensors` holds them under the
Siamese model's names, next to a config.json of model type "siamese".

LSTM encoders are refused: their word tokenizer and packed-sequence pooling have no exact counterpart among
sentence-transformers' modules.

    python -m hfsiamese.bi_encoder.sentence_transformers_export outputs/minilm_qqp outputs/minilm_qqp_st
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer

from hfsiamese.bi_encoder.sentence_transformers_folder import POOLING_MODES
from hfsiamese.models.siamese.adapters import merged_copy
from hfsiamese.models.siamese.configuration_siamese import encoder_width
from hfsiamese.models.siamese.inference import check_truncate_dim
from hfsiamese.models.siamese.modeling_siamese import SiameseModel
from hfsiamese.utils.deprecation import warn_deprecated
from hfsiamese.utils.output_dirs import give_umask_mode

MODULES_FILE = "modules.json"
MODEL_CONFIG_FILE = "config_sentence_transformers.json"


def check_export(model: Any, output_dir: str | os.PathLike, *, overwrite: bool = False) -> None:
    """Fail now, before any training, if `model` cannot be exported to `output_dir`."""
    config = model.config
    if getattr(config, "encoder_type", None) != "transformer":
        raise ValueError(
            f"only transformer encoders export to sentence-transformers; this model's encoder is "
            f"{getattr(config, 'encoder_type', type(model).__name__)!r} (the LSTM's packed-sequence pooling "
            "and the static encoder's learned token weights have no exact sentence-transformers counterpart, and "
            "exporting their word vocabularies is not implemented). Use the checkpoint itself with "
            "AutoModel.from_pretrained(..., trust_remote_code=True)"
        )
    existing = _existing_export(Path(output_dir))
    if existing and not overwrite:
        raise FileExistsError(
            f"{output_dir} already holds a sentence-transformers export ({', '.join(existing)}); "
            "pass overwrite=True (--overwrite_output_dir) to replace it, or choose another folder"
        )


def export_sentence_transformers(
    model: Any,
    output_dir: str | os.PathLike,
    tokenizer: Any | None = None,
    *,
    overwrite: bool = False,
    truncate_dim: int | None = None,
) -> Path:
    """
    Write `model` (a `SiameseModel` with a transformer encoder, or the path of one) to `output_dir` as a
    sentence-transformers model. `tokenizer` defaults to the one saved with the model. Returns `output_dir`.

    Files already in `output_dir` other than a previous export are kept, so the Siamese checkpoint folder
    itself is a valid target; a previous export there is replaced only with `overwrite=True`.

    `truncate_dim` bakes `encode(truncate_dim=...)` into the export: a `Dense` layer whose weights pick the
    first that many dimensions (exact: ones on the diagonal), before `Normalize`, since sentence-transformers
    keeps no truncation setting in a model folder.
    """
    from sentence_transformers import __version__ as st_version

    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Dense, Normalize, Pooling, Transformer  # type: ignore[no-redef]

    if isinstance(model, (str, os.PathLike)):
        tokenizer = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(model, trust_remote_code=True)
        # This package's class, not the code saved beside the weights: the export needs this version's API.
        model = SiameseModel.from_pretrained(model)
    model = merged_copy(model)  # a LoRA-trained model in memory: its adapters merged, into a copy
    output_dir = Path(output_dir)
    check_export(model, output_dir, overwrite=overwrite)
    if tokenizer is None:
        if not model.name_or_path:
            raise ValueError("pass tokenizer=...: this model was not loaded from a folder that holds one")
        tokenizer = AutoTokenizer.from_pretrained(model.name_or_path, trust_remote_code=True)
    config = model.config
    if config.classifier_head:
        warnings.warn(
            "the classification head is not exported: sentence-transformers gives the embeddings, and "
            "config.threshold applies to the head's P(duplicate), not to their cosine similarity",
            UserWarning,
            stacklevel=2,
        )
    _remove_export(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    # Truncate where `SiameseModel.encode` does (sentence-transformers would go up to the encoder's positions).
    max_length = model.default_max_length(tokenizer)
    with tempfile.TemporaryDirectory() as staging:
        # sentence-transformers builds its Transformer module from a folder only.
        model.encoder.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        modules = [Transformer(staging, max_seq_length=max_length)]
    hidden_size = encoder_width(config.encoder_config)
    st_modes = {ours: theirs for theirs, ours in POOLING_MODES.items()}
    modes = tuple(st_modes[mode] for mode in config.pooling.split("+"))
    modules.append(Pooling(hidden_size, pooling_mode=modes[0] if len(modes) == 1 else modes))
    width = config.pooled_dim
    for layer, spec in zip(model.dense or (), config.dense_layers or (), strict=True):
        modules.append(
            Dense(
                spec["in_features"],
                spec["out_features"],
                bias=spec["bias"],
                activation_function=getattr(torch.nn, spec["activation"])(),
                init_weight=layer.linear.weight.detach().cpu().clone(),
                init_bias=layer.linear.bias.detach().cpu().clone() if spec["bias"] else None,
            )
        )
        width = spec["out_features"]
    if model.projection is not None:
        modules.append(
            Dense(
                width,
                config.projection_dim,
                bias=model.projection.bias is not None,
                activation_function=torch.nn.Identity(),
                init_weight=model.projection.weight.detach().cpu().clone(),
                init_bias=model.projection.bias.detach().cpu().clone() if model.projection.bias is not None else None,
            )
        )
    if truncate_dim is not None:
        check_truncate_dim(truncate_dim, config.sentence_embedding_dim)
        full = config.sentence_embedding_dim
        pick = torch.eye(full)[:truncate_dim].clone()
        modules.append(Dense(full, truncate_dim, bias=False, activation_function=torch.nn.Identity(), init_weight=pick))
    modules.append(Normalize())

    # Each module in a numbered subfolder, the Transformer's included: sentence-transformers' own `save` puts
    # the first module in the root, where the Siamese checkpoint's config.json and weights may already be.
    entries = []
    for idx, module in enumerate(modules):
        path = f"{idx}_{type(module).__name__}"
        (output_dir / path).mkdir()
        module.save(str(output_dir / path))
        entries.append(
            {"idx": idx, "name": str(idx), "path": path, "type": f"{type(module).__module__}.{type(module).__name__}"}
        )
    (output_dir / MODULES_FILE).write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")
    model_config = {
        "__version__": {"sentence_transformers": st_version, "pytorch": torch.__version__},
        "prompts": dict(config.prompts or {}),
        "default_prompt_name": config.default_prompt_name,
        "similarity_fn_name": "cosine",
    }
    (output_dir / MODEL_CONFIG_FILE).write_text(json.dumps(model_config, indent=2) + "\n", encoding="utf-8")
    # safetensors writes its files 0600: readable as the export's other files instead.
    give_umask_mode(*(weights for entry in entries for weights in (output_dir / entry["path"]).glob("*.safetensors")))
    return output_dir


def _existing_export(folder: Path) -> list[str]:
    return [name for name in (MODULES_FILE, MODEL_CONFIG_FILE) if (folder / name).exists()]


def _remove_export(folder: Path) -> None:
    """Remove a previous export's module folders (only those its modules.json names) and files."""
    modules_file = folder / MODULES_FILE
    if modules_file.is_file():
        for entry in json.loads(modules_file.read_text(encoding="utf-8")):
            path = entry.get("path") or ""
            target = (folder / path).resolve()
            # Never the folder itself (a root module), nor anything outside it.
            if path and target.parent == folder.resolve() and target.is_dir():
                shutil.rmtree(target)
    for name in (MODULES_FILE, MODEL_CONFIG_FILE):
        (folder / name).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="folder of a Siamese checkpoint with a transformer encoder")
    parser.add_argument(
        "output_dir", nargs="?", help="where to write the export (default: the checkpoint folder itself)"
    )
    parser.add_argument("--overwrite_output_dir", action="store_true", help="replace a previous export in output_dir")
    parser.add_argument("--overwrite", action="store_true", help="deprecated: use --overwrite_output_dir")
    parser.add_argument(
        "--truncate_dim", type=int, help="export embeddings cut to their first N dimensions (Matryoshka models)"
    )
    args = parser.parse_args(argv)
    if args.overwrite:  # the old name, kept for one release
        warn_deprecated("option", "--overwrite", stacklevel=2)
    path = export_sentence_transformers(
        args.checkpoint,
        args.output_dir or args.checkpoint,
        overwrite=args.overwrite_output_dir or args.overwrite,
        truncate_dim=args.truncate_dim,
    )
    print(path)


__all__ = ["check_export", "export_sentence_transformers"]


if __name__ == "__main__":
    main()
