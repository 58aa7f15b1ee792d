"""OpenVINO sessions share one Core, so that freeing them in any order leaves the thread's signal stack usable."""

from __future__ import annotations

import ctypes
import gc
import signal
import sys

import numpy as np
import pytest

from hfsiamese.utils.cpu_features import CpuFeatures, detected_features
from hfsiamese.utils.openvino_runtime import (
    AMX_ATTENTION_OV_CONFIG,
    DEFAULT_OV_CONFIG,
    OpenVinoSession,
    session_defaults,
    shared_core,
)

openvino = pytest.importorskip("openvino", reason="the openvino extra")


class _SignalStack(ctypes.Structure):
    """`stack_t` of sigaltstack(2)."""

    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]


def alternate_stack_is_mapped() -> bool:
    """Does this thread's alternate signal stack (if any) lie in memory the process has mapped?"""
    stack = _SignalStack()
    assert ctypes.CDLL(None).sigaltstack(None, ctypes.byref(stack)) == 0
    if not stack.ss_sp:
        return True
    with open("/proc/self/maps", encoding="ascii") as maps:
        for line in maps:
            low, high = (int(bound, 16) for bound in line.split()[0].split("-"))
            if low <= stack.ss_sp < high:
                return True
    return False


def relu_graph():
    from openvino import opset13 as ops

    features = ops.parameter([-1, 4], np.float32, name="features")
    return openvino.Model([ops.relu(features)], [features], "relu")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="not Linux: reads /proc/self/maps")
def test_sessions_freed_in_creation_order_leave_the_signal_stack_mapped():
    # With a Core per session, the first session's Core put back the stack it found and the second then put back
    # the first's unmapped one: the next signal handled on it killed the process (issue 51).
    first = OpenVinoSession(relu_graph())
    second = OpenVinoSession(relu_graph())
    assert first.run(None, {"features": -np.ones((1, 4), np.float32)})[0].max() == 0
    del first
    gc.collect()
    del second
    gc.collect()
    assert alternate_stack_is_mapped()
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append(True))
    try:
        signal.raise_signal(signal.SIGUSR1)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert received == [True]


def test_one_core_for_the_process():
    assert shared_core() is shared_core()


def attention_graph():
    """One ScaledDotProductAttention over a (batch, heads, length, dim) input: what a transformer export holds."""
    from openvino import opset13 as ops

    states = ops.parameter([-1, 2, -1, 4], np.float32, name="states")
    return openvino.Model([ops.scaled_dot_product_attention(states, states, states)], [states], "attention")


def features(*, amx: bool) -> CpuFeatures:
    return CpuFeatures(avx2=True, avx512=True, avx512_bf16=amx, amx=amx, vnni=True, source="test")


def test_snippets_off_for_attention_on_amx_only():
    assert session_defaults(attention_graph(), features(amx=True)) == {
        **DEFAULT_OV_CONFIG,
        **AMX_ATTENTION_OV_CONFIG,
    }
    assert session_defaults(attention_graph(), features(amx=False)) == DEFAULT_OV_CONFIG
    assert session_defaults(relu_graph(), features(amx=True)) == DEFAULT_OV_CONFIG


def test_a_session_compiles_with_its_defaults_and_the_callers_config_wins():
    graph = attention_graph()
    assert OpenVinoSession(graph).ov_config == session_defaults(graph)
    assert OpenVinoSession(graph).ov_config.get("SNIPPETS_MODE") == ("DISABLE" if detected_features().amx else None)
    caller = {"SNIPPETS_MODE": "ENABLE", "INFERENCE_PRECISION_HINT": "bf16"}
    assert OpenVinoSession(graph, ov_config=caller).ov_config == caller
    states = np.random.default_rng(0).standard_normal((2, 2, 3, 4)).astype(np.float32)
    (plain,) = OpenVinoSession(graph).run(None, {"states": states})
    (snippets,) = OpenVinoSession(graph, ov_config={"SNIPPETS_MODE": "ENABLE"}).run(None, {"states": states})
    np.testing.assert_allclose(plain, snippets, atol=1e-5)
