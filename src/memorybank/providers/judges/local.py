"""The shipped judge: a cross-encoder fine-tuned from all-MiniLM-L6-v2's first layers
(``memorybank bench train-judge``), ONNX on onnxruntime, inside the package
(``memorybank/_model/judge``).

It reads a pair as one input (``[CLS] stored [SEP] new [SEP]``) and answers the relation of
the two facts. The file keeps its weights as int8 behind ``DequantizeLinear`` (a quarter of
the size); onnxruntime folds them back to float32 when it loads the model
(``session.disable_quant_qdq``), so the model computes in float32: a pair's answer is the
same alone or in any batch, and a save reads all its pairs in one run. Answers are cached per
pair; the cache is the process's, shared by every bank, and bounded.
"""

from __future__ import annotations

import importlib.resources
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from memorybank.errors import ConfigurationError, ProviderError
from memorybank.providers.embedders.local import default_threads, session_options
from memorybank.rules.verdicts import PairScores, weighed

#: How many answers the process keeps (the pairs' weighed scores; about 100 bytes each).
CACHE_SIZE = 65_536
#: The most pairs one model run reads (a longer batch is read in runs of this many).
BATCH = 64


def _files() -> tuple[Path, Path, Path]:
    root = Path(str(importlib.resources.files("memorybank") / "_model"))
    return root / "judge" / "model.onnx", root / "judge" / "judge.json", root / "tokenizer.json"


class _Cache:
    """A bounded least-recently-used map, safe across threads."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


class LocalJudge:
    """The cross-encoder judge, on this machine's CPU, with no network.

    >>> judge = default_judge()
    >>> [s.update > 0.5 for s in judge.score([("User lives in Lisbon", "User moved to Porto")])]
    [True]
    """

    def __init__(self, model_dir: Path | str | None = None, *, threads: int | None = None) -> None:
        model, meta, tokenizer = _files()
        if model_dir is not None:
            model, meta = Path(model_dir) / "model.onnx", Path(model_dir) / "judge.json"
        for path in (model, meta, tokenizer):
            if not path.is_file():
                raise ConfigurationError(
                    f"the judge model is incomplete: {path} is missing; reinstall memorybank "
                    "(or train it: memorybank bench train-judge)"
                )
        info = json.loads(meta.read_text(encoding="utf-8"))
        #: Which model this is (``judge.json``'s version): kept with every relation it
        #: decides, so that ``memorybank rejudge`` re-reads those of another model.
        self.version = str(info.get("version") or f"judge-{model.stat().st_size}")
        self.labels: list[str] = list(info["labels"])
        self.temperature = float(info.get("temperature", 1.0))
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._max_length = int(info.get("max_length", 64))
        self._tokenizer.enable_truncation(max_length=self._max_length)
        # The same tokenizer without the cut: each text's own tokens, for _cut.
        self._whole = Tokenizer.from_file(str(tokenizer))
        self._whole.no_padding()
        self._whole.no_truncation()
        options = session_options(threads or default_threads())
        # The int8 weights folded to float32 at load (constant folding of DequantizeLinear):
        # without it onnxruntime runs them as int8 products, whose answers vary with the CPU.
        options.add_session_config_entry("session.disable_quant_qdq", "1")
        try:
            self._session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's exception types are not public API
            raise ConfigurationError(f"cannot load the judge model {model}: {exc}") from exc
        self._cache = _Cache(CACHE_SIZE)
        self._key = str(model)

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        """The scores of each (stored, new) pair of fact texts, the pairs not asked before
        read in one batched run, as :func:`~memorybank.rules.verdicts.weighed` reads them."""
        out: list[PairScores | None] = [self._cache.get(pair) for pair in pairs]
        # Runs of pairs of like length (less padding); the answers do not depend on it.
        todo = sorted(
            {pairs[i] for i, value in enumerate(out) if value is None},
            key=lambda pair: (len(pair[0]) + len(pair[1]), pair),
        )
        for start in range(0, len(todo), BATCH):
            chunk = todo[start : start + BATCH]
            for (old, new), row in zip(chunk, self._run(chunk), strict=True):
                self._cache.put((old, new), weighed(self._scores(row), old, new))
        if todo:
            out = [self._cache.get(pair) for pair in pairs]
        return [s for s in out if s is not None]

    def clear_cache(self) -> None:
        """Forget every cached answer (benchmarks time the model from cold with it)."""
        self._cache = _Cache(CACHE_SIZE)

    def _scores(self, logits: npt.NDArray[np.float32]) -> PairScores:
        z = logits.astype(np.float64) / self.temperature
        p = np.exp(z - z.max())
        p /= p.sum()
        named = dict(zip(self.labels, p.tolist(), strict=True))
        return PairScores(named["duplicate"], named["update"], named["distinct"])

    def _cut(self, first: str, second: str) -> tuple[str, str]:
        """A pair of texts cut to the tokens the model can read of them, so that it
        tokenizes exactly as it is: the tokenizer's own cut of a pair is quadratic in its
        length (a pair of 20,000 and 10,000 "#" took 20 s and 11 GB, issue 44), where each
        text alone is tokenized in linear time. A pair's cut depends only on each text's
        tokens up to ``max_length`` and on which text is longer, which the cut keeps."""
        if len(first) + len(second) <= _CUT_FROM:
            return first, second
        one, two = self._whole.encode_batch([first, second], add_special_tokens=False)
        n1, n2 = len(one.ids), len(two.ids)
        return (
            _prefix(first, one, min(n1, self._max_length + (n1 > n2))),
            _prefix(second, two, min(n2, self._max_length + (n2 > n1))),
        )

    def _run(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        cut = [self._cut(a, b) for a, b in pairs]
        encodings: list[Encoding] = self._tokenizer.encode_batch(cut)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(pairs), width), dtype=np.int64)
        mask = np.zeros((len(pairs), width), dtype=np.int64)
        types = np.zeros((len(pairs), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = (
                encoding.ids,
                encoding.attention_mask,
                encoding.type_ids,
            )
        try:
            (logits,) = self._session.run(
                ["pair"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
        except Exception as exc:  # onnxruntime's exception types are not public API
            raise ProviderError(f"the judge model failed: {exc}") from exc
        return np.asarray(logits, dtype=np.float32)


#: Pairs up to this many characters are tokenized as they are (no token is shorter than a
#: character, so they hold few more than the model reads): only longer ones are cut first.
_CUT_FROM = 512


def _prefix(text: str, encoding: Encoding, tokens: int) -> str:
    """``text`` up to the end of its first ``tokens`` tokens (``encoding``: its own)."""
    if tokens >= len(encoding.ids):
        return text
    return text[: encoding.offsets[tokens - 1][1]] if tokens else ""


_default: LocalJudge | None = None
_default_lock = threading.Lock()


def default_judge() -> LocalJudge:
    """The process's shipped judge, loaded once (shared by every bank)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LocalJudge()
        return _default


__all__ = ["BATCH", "CACHE_SIZE", "LocalJudge", "default_judge"]
