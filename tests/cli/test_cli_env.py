"""`hfsiamese env`: versions, devices and extras for a bug report."""

from __future__ import annotations

import json

from hfsiamese.cli import env


def test_env_reports_versions_devices_and_extras(capsys):
    info = env.main(["--json"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(info))
    for name in (
        "python",
        "hfsiamese",
        "torch",
        "transformers",
        "datasets",
        "accelerate",
        "cpu",
        "torch_cpu_capability",
    ):
        assert printed[name], name
    sets = printed["instruction_sets"]
    assert {name: type(sets[name]) for name in ("avx2", "avx512", "avx512_bf16", "amx", "vnni")} == dict.fromkeys(
        ("avx2", "avx512", "avx512_bf16", "amx", "vnni"), bool
    )
    assert printed["bf16_path"] and printed["int8_path"] and "reduced-range" in printed["int8_path"]
    assert printed["torch_threads"] >= 1 and isinstance(printed["gpus"], list)
    if printed["extras"] is not None:  # hfsiamese installed (editable here): every extra but the tests', with versions
        assert {"onnx", "faiss", "lora", "app"} <= set(printed["extras"]) and "test" not in printed["extras"]
        assert printed["extras"]["faiss"]["faiss-cpu"]  # installed in the test environment

    text = env.format_environment(info)
    assert f"- torch: {info['torch']}" in text and f"- hfsiamese: {info['hfsiamese']}" in text
    assert "- extras:" in text
    assert f"- int8_path: {info['int8_path']}" in text and "- instruction_sets: avx2 " in text


def test_a_missing_extra_is_named():
    info = {
        "python": "3.11",
        "gpus": [],
        "settings": {},
        "extras": {"lora": {"peft": None}, "faiss": {"faiss-cpu": "1.9"}},
    }
    text = env.format_environment(info)
    assert "    lora: missing peft" in text and "    faiss: installed" in text and "- gpus: none" in text
