"""Small helpers shared by the load-time ONNX rewrites (``dynamic_int8``, ``fused_attention``)."""

from __future__ import annotations

import onnx
from onnx import helper

#: onnxruntime's contrib-op domain (DynamicQuantizeMatMul, QAttention).
MS_DOMAIN = "com.microsoft"


def drop_unused_initializers(graph: onnx.GraphProto) -> None:
    """Remove the initialisers no node of ``graph`` reads."""
    used = {name for node in graph.node for name in node.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def import_ms_domain(model: onnx.ModelProto) -> None:
    """Declare the ``com.microsoft`` opset unless ``model`` already does."""
    if not any(op.domain == MS_DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
