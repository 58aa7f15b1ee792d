"""`hfsiamese env`: the versions, devices and installed extras to paste into a bug report (as `transformers env`).

    hfsiamese env
    hfsiamese env --json

Prints the Python, hfsiamese and Hugging Face library versions, the CPU (model; the instruction sets that decide
the numerics here: AVX2, AVX-512, AVX512-BF16, AMX, VNNI; and the bf16 and int8 paths this CPU takes, see
`hfsiamese.utils.cpu_features`), torch's thread count, CUDA devices, and each optional extra of hfsiamese
(`pip install` name) with whether its packages are installed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
from typing import Any

from packaging.requirements import Requirement

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cpu_policy import apply_command_defaults

LIBRARIES = ("torch", "transformers", "tokenizers", "datasets", "accelerate", "safetensors", "huggingface_hub")
# Environment variables that change how a run uses the machine, shown when set.
SETTINGS = ("OMP_NUM_THREADS", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "HFSIAMESE_OMP_DEFAULTS", "CUDA_VISIBLE_DEVICES",
            "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")  # fmt: skip


def version_of(distribution: str) -> str | None:
    """The installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's name as the OS reports it (Linux: /proc/cpuinfo), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def devices() -> dict[str, Any]:
    """The CPU (its instruction sets, the bf16 and int8 paths it takes, threads) and the CUDA devices."""
    import torch

    from hfsiamese.utils import cpu_features

    features = cpu_features.effective_features()
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "instruction_sets": features.as_dict(),
        "bf16_path": cpu_features.bf16_path(features),
        "int8_path": cpu_features.int8_path(features),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.version.cuda if torch.cuda.is_available() else None,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if torch.cuda.is_available()
        else [],
    }
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        info["mps"] = True
    return info


def extras() -> dict[str, dict[str, str | None]] | None:
    """Each optional extra of the installed hfsiamese: its distributions and their installed versions (None: missing)."""
    try:
        requirements = importlib.metadata.requires("hfsiamese") or []
    except importlib.metadata.PackageNotFoundError:
        return None  # run from a clone that was never installed: no metadata to read
    found: dict[str, dict[str, str | None]] = {}
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is None:
            continue
        for extra in importlib.metadata.metadata("hfsiamese").get_all("Provides-Extra") or []:
            if extra != "test" and requirement.marker.evaluate({"extra": extra}):
                found.setdefault(extra, {})[requirement.name] = version_of(requirement.name)
    return found


def environment() -> dict[str, Any]:
    """Everything `hfsiamese env` reports, as one mapping."""
    import hfsiamese

    return {
        "hfsiamese": getattr(hfsiamese, "__version__", version_of("hfsiamese")),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **{name: version_of(name) for name in LIBRARIES},
        **devices(),
        "settings": {name: os.environ[name] for name in SETTINGS if name in os.environ},
        "extras": extras(),
    }


def format_environment(info: dict[str, Any]) -> str:
    """The report as `- name: value` lines, the extras one per line (`installed` or what is missing)."""
    lines = []
    for name, value in info.items():
        if name == "extras":
            continue
        if name == "gpus":
            value = ", ".join(value) or "none"
        elif name == "settings":
            value = ", ".join(f"{key}={val}" for key, val in value.items()) or "none"
        elif name == "instruction_sets":
            flags = ", ".join(
                f"{key} {'yes' if present else 'no'}" for key, present in value.items() if key != "source"
            )
            value = f"{flags} (from {value['source']})"
        lines.append(f"- {name}: {'unknown' if value is None else value}")
    if info["extras"] is None:
        lines.append("- extras: unknown (hfsiamese is not installed: no package metadata)")
    else:
        lines.append("- extras:")
        for extra, packages in info["extras"].items():
            missing = [name for name, version in packages.items() if version is None]
            state = "installed" if not missing else "missing " + ", ".join(missing)
            lines.append(f"    {extra}: {state}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese env [--json]`: the report, printed."""
    parser = argparse.ArgumentParser(prog="hfsiamese env", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead of lines.")
    args = parser.parse_args(argv)
    info = environment()
    print(json.dumps(info, sort_keys=True) if args.json else format_environment(info))
    return info


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
