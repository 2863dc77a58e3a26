"""Judges: read pairs of facts (duplicate / update / distinct) and (message, fact) pairs
(relevance), behind one interface (:class:`memorybank.rules.verdicts.Judge`).

:class:`LocalJudge` runs the cross-encoder the package ships (int8 ONNX, offline, the
default); :class:`LLMJudge` asks an LLM about the pairs the local model is unsure of or reads as a
change.
Imported on first use, like the embedders.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memorybank.rules.verdicts import Judge

if TYPE_CHECKING:
    from memorybank.providers.judges.llm import LLMJudge
    from memorybank.providers.judges.local import LocalJudge, default_judge

_LAZY = {
    "LocalJudge": "memorybank.providers.judges.local",
    "default_judge": "memorybank.providers.judges.local",
    "LLMJudge": "memorybank.providers.judges.llm",
}


def judge_for(llm: Any = None) -> Judge:
    """The judge a bank uses by default: the shipped model, with ``llm`` (if any) settling
    the pairs it is unsure of or reads as a change (the model is loaded on first use)."""
    from memorybank.providers.judges.local import default_judge

    if llm is None:
        return default_judge()
    from memorybank.providers.judges.llm import LLMJudge

    return LLMJudge(llm, default_judge())


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["LLMJudge", "LocalJudge", "default_judge", "judge_for"]
