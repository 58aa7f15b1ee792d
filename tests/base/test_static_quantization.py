"""Which matrix products static int8 keeps float: those a GELU feeds (hfsiamese.base.static_quantization)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from hfsiamese.base.static_quantization import gelu_fed_products


def feed_forward_graph() -> onnx.GraphProto:
    """x -> up (MatMul) -> GELU as torch exports it (x * (0.5 * (1 + erf(x / sqrt 2)))) -> down (MatMul) -> next (MatMul)."""
    weights = [numpy_helper.from_array(np.ones((4, 4), np.float32), name) for name in ("w_up", "w_down", "w_next")]
    constants = [numpy_helper.from_array(np.array(value, np.float32), name)
                 for name, value in (("sqrt2", 1.4142135), ("one", 1.0), ("half", 0.5))]  # fmt: skip
    nodes = [
        helper.make_node("MatMul", ["x", "w_up"], ["up"], name="up"),
        helper.make_node("Div", ["up", "sqrt2"], ["scaled"], name="scale"),
        helper.make_node("Erf", ["scaled"], ["erf"], name="erf"),
        helper.make_node("Add", ["erf", "one"], ["shifted"], name="shift"),
        helper.make_node("Mul", ["shifted", "half"], ["halved"], name="halve"),
        helper.make_node("Mul", ["up", "halved"], ["gelu"], name="gelu"),
        helper.make_node("MatMul", ["gelu", "w_down"], ["down"], name="down"),
        helper.make_node("MatMul", ["down", "w_next"], ["y"], name="next"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]
    return helper.make_graph(nodes, "ffn", inputs, outputs, initializer=weights + constants)


def test_the_product_a_gelu_feeds_is_kept_float_and_no_other():
    # "up" reads the graph's input; "next" reads "down", and the search never walks past another product.
    assert gelu_fed_products(feed_forward_graph()) == ["down"]


def test_a_graph_without_gelu_keeps_every_product_quantised():
    graph = feed_forward_graph()
    for node in graph.node:
        if node.op_type == "Erf":
            node.op_type = "Sigmoid"  # another nonlinearity: nothing kept float
    assert gelu_fed_products(graph) == []
