"""The shipped judge (:class:`memorybank.providers.judges.LocalJudge`) as every path calls it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest

from memorybank.providers.judges.local import LocalJudge, _files

FACTS = [
    "User lives in Lisbon",
    "User moved to Porto",
    "User owns a car",
    "User sold their car",
    "User likes tea",
    "User is learning Spanish now",
    "User's sister Maria works as a nurse in Porto and visits on Sundays",
]


def test_a_pair_scores_the_same_alone_and_in_a_batch_of_sixteen() -> None:
    # The model computes in float32 (its int8 weights folded at load), so a pair's answer
    # does not depend on what it is batched with, nor on the padding a longer pair brings.
    pairs = list(itertools.permutations(FACTS, 2))[:16]
    together = LocalJudge().score(pairs)
    for pair, scores in zip(pairs, together, strict=True):
        [alone] = LocalJudge().score([pair])  # a fresh judge: each caches its answers
        assert alone.update == pytest.approx(scores.update, abs=1e-5)
        assert alone.duplicate == pytest.approx(scores.duplicate, abs=1e-5)
        assert alone.distinct == pytest.approx(scores.distinct, abs=1e-5)


def test_the_int8_weights_are_folded_to_float32_when_the_model_loads(tmp_path: Path) -> None:
    model, meta, _ = _files()
    stored = {node.op_type for node in onnx.load(str(model)).graph.node}
    assert "DequantizeLinear" in stored  # the file keeps int8 weights (a quarter the size)
    assert not stored & {"DynamicQuantizeLinear", "MatMulInteger"}  # no int8 activations
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    options.optimized_model_filepath = str(tmp_path / "loaded.onnx")
    ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    loaded = {node.op_type for node in onnx.load(str(tmp_path / "loaded.onnx")).graph.node}
    assert not loaded & {"DequantizeLinear", "MatMulNBits", "MatMulInteger"}
    assert "MatMul" in loaded
    assert LocalJudge().version == json.loads(meta.read_text(encoding="utf-8"))["version"]


def test_scores_are_probabilities_and_cached() -> None:
    judge = LocalJudge()
    first = judge.score([(FACTS[0], FACTS[1]), (FACTS[2], FACTS[3])])
    assert all(abs(s.duplicate + s.update + s.distinct - 1) < 1e-6 for s in first)
    assert judge.score([(FACTS[2], FACTS[3])]) == first[1:]
