"""`hfsiamese export`: export a trained Siamese model (or a cross-encoder) to an ONNX model folder for CPU serving (onnxruntime), optionally int8.

    hfsiamese export --model_name_or_path outputs/lstm_qqp --output_dir outputs/lstm_qqp_onnx
    hfsiamese export --model_name_or_path outputs/minilm_qqp --output_dir outputs/minilm_qqp_int8 --quantize int8

The output folder loads with `hfsiamese.load_siamese_model` (and so in `hfsiamese evaluate`,
`hfsiamese search`, `hfsiamese app` and `DuplicateIndex`) with the same threshold and calibration; an exported
cross-encoder loads with `CrossEncoder.from_pretrained` (and so in `hfsiamese evaluate` and as a reranker).
Needs onnx, onnxscript and onnxruntime (`pip install -e ".[onnx]"` from a clone). Prints one JSON object: the export's `onnx` entry.
"""

from __future__ import annotations

import json

from transformers import AutoModel, AutoTokenizer, HfArgumentParser

from hfsiamese.bi_encoder.onnx_export import ExportArguments, export_onnx
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.cross_encoder.model import CrossEncoder, is_cross_encoder_folder
from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx
from hfsiamese.loading import is_onnx_folder
from hfsiamese.utils.console import configure_quiet_console
from hfsiamese.utils.hub_access import require_local_or_cached

DESCRIPTION = (
    "Export a trained Siamese model (or a cross-encoder) to an ONNX folder for CPU serving; prints one JSON object."
)


def main(argv: list[str] | None = None) -> dict:
    """`hfsiamese export --model_name_or_path MODEL --output_dir ONNX_FOLDER [--quantize int8]`: the export's entry."""
    parser = HfArgumentParser(ExportArguments, prog="hfsiamese export", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    configure_quiet_console()
    if is_onnx_folder(args.model_name_or_path):
        raise ValueError(f"{args.model_name_or_path} is already an ONNX export: export the PyTorch model it came from")
    require_local_or_cached(args.model_name_or_path, saved_folder=True)
    if is_cross_encoder_folder(args.model_name_or_path):
        entry = export_cross_encoder_onnx(
            CrossEncoder.from_pretrained(args.model_name_or_path),
            args.output_dir,
            quantize=args.quantize,
            opset=args.opset,
            source_dir=args.model_name_or_path,
            overwrite=args.overwrite_output_dir,
        )
        print(json.dumps(entry, sort_keys=True))
        return entry
    model = AutoModel.from_pretrained(args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    config = export_onnx(
        model,
        tokenizer,
        args.output_dir,
        quantize=args.quantize,
        opset=args.opset,
        source_dir=args.model_name_or_path,
        overwrite=args.overwrite_output_dir,
    )
    print(json.dumps(config.onnx, sort_keys=True))
    return config.onnx


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
