"""benchmarks/serving/st_backends_worker.py's choice of sentence-transformers' dynamic int8 configuration: the one
its docs advise for the CPU the peer runs on (the worker itself needs optimum, which needs transformers<5)."""

from __future__ import annotations

import pytest

from benchmarks.serving.st_backends_worker import onnx_quantization_config


@pytest.mark.parametrize(
    ("flags", "config"),
    [
        ({"avx2", "fma"}, "avx2"),
        ({"avx2", "avx512f", "avx512bw"}, "avx512"),
        ({"avx2", "avx512f", "avx512bw", "avx512_vnni"}, "avx512_vnni"),
        ({"avx2", "avx512f"}, "avx2"),  # AVX-512 without its byte/word instructions: onnxruntime's AVX2 kernels
    ],
)
def test_the_peer_quantises_for_the_cpu_it_runs_on(flags, config):
    assert onnx_quantization_config(flags) == config


def test_this_machine_gets_one_of_the_configs():
    assert onnx_quantization_config() in {"avx2", "avx512", "avx512_vnni"}
