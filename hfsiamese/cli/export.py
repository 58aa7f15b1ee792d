"""`hfsiamese export`: export a trained Siamese model (or a cross-encoder) for CPU serving: an ONNX folder (onnxruntime)
or an OpenVINO folder, in float32 or int8 (dynamic for ONNX; static, calibrated on your own pairs, for either).

    hfsiamese export --model_name_or_path outputs/lstm_qqp --output_dir outputs/lstm_qqp_onnx
    hfsiamese export --model_name_or_path outputs/minilm_qqp --output_dir outputs/minilm_qqp_int8 --quantize int8
    hfsiamese export --model_name_or_path outputs/minilm_qqp --output_dir outputs/minilm_qqp_ov_int8 \\
        --format openvino --quantize int8 --calibration_file data/dev.tsv

The output folder loads with `hfsiamese.load_model` (and so in `hfsiamese evaluate`, `hfsiamese search`,
`hfsiamese app`, the service and `DuplicateIndex`) with the same threshold and calibration. Needs onnx, onnxscript and
onnxruntime (`pip install -e ".[onnx]"` from a clone), and for `--format openvino` openvino and nncf
(`pip install -e ".[openvino]"`). Prints one JSON object: the export's `onnx` or `openvino` entry.
"""

from __future__ import annotations

import json
from typing import Any

from transformers import AutoModel, AutoTokenizer

from hfsiamese.bi_encoder.onnx_export import ExportArguments, export_onnx
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.cross_encoder.model import CrossEncoder, is_cross_encoder_folder
from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx
from hfsiamese.loading import exported_format
from hfsiamese.utils.console import configure_quiet_console
from hfsiamese.utils.hub_access import require_local_or_cached
from hfsiamese.utils.openvino_runtime import require_openvino

DESCRIPTION = (
    "Export a trained Siamese model (or a cross-encoder) to an ONNX or OpenVINO folder for CPU serving; "
    "prints one JSON object."
)
RUNTIME_NAMES = {"onnx": "ONNX", "openvino": "OpenVINO"}


def main(argv: list[str] | None = None) -> dict:
    """`hfsiamese export --model_name_or_path MODEL --output_dir FOLDER [--format openvino] [--quantize int8]`."""
    parser = command_parser(ExportArguments, prog="hfsiamese export", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    configure_quiet_console()
    already = exported_format(args.model_name_or_path)
    if already is not None:
        raise ValueError(
            f"{args.model_name_or_path} is already an {RUNTIME_NAMES[already]} export: "
            "export the PyTorch model it came from"
        )
    if args.format == "openvino":
        require_openvino()  # before the model is read or the calibration file loaded
    require_local_or_cached(args.model_name_or_path, saved_folder=True)
    options: dict[str, Any] = {
        "quantize": args.quantize,
        "opset": args.opset,
        "source_dir": args.model_name_or_path,
        "overwrite": args.overwrite_output_dir,
        "calibration": args.calibration_sample(),
        "int8_check": args.int8_check(),
    }
    if is_cross_encoder_folder(args.model_name_or_path):
        cross_encoder = CrossEncoder.from_pretrained(args.model_name_or_path)
        if args.format == "openvino":
            from hfsiamese.cross_encoder.openvino_export import export_cross_encoder_openvino

            entry = export_cross_encoder_openvino(cross_encoder, args.output_dir, **options)
        else:
            entry = export_cross_encoder_onnx(cross_encoder, args.output_dir, **options)
        print(json.dumps(entry, sort_keys=True))
        return entry
    model = AutoModel.from_pretrained(args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    if args.format == "openvino":
        from hfsiamese.bi_encoder.openvino_export import export_openvino

        entry = export_openvino(model, tokenizer, args.output_dir, **options).openvino
    else:
        entry = export_onnx(model, tokenizer, args.output_dir, **options).onnx
    print(json.dumps(entry, sort_keys=True))
    return entry


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
