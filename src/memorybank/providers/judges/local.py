"""The shipped judge: a cross-encoder fine-tuned from all-MiniLM-L6-v2 (``memorybank bench
train-judge``), int8 ONNX on onnxruntime, inside the package (``memorybank/_model/judge``).

It reads a pair as one input (``[CLS] stored [SEP] new [SEP]``, or message and fact) and
answers from two heads: the relation of two facts, and the relevance of a fact to a message.
Answers are cached per pair (a user's next message, or the next save, asks many of the same
pairs again); the cache is the process's, shared by every bank, and bounded.
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

#: How many answers the process keeps (model answers of pairs and relevances, and the pairs'
#: weighed scores; about 100 bytes each).
CACHE_SIZE = 65_536


def _files() -> tuple[Path, Path, Path]:
    root = Path(str(importlib.resources.files("memorybank") / "_model"))
    return root / "judge" / "model.onnx", root / "judge" / "judge.json", root / "tokenizer.json"


class _Cache:
    """A bounded least-recently-used map, safe across threads."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, str, str], value: Any) -> None:
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

    #: Each pair is scored in a run of its own (see :meth:`_answers`), so asking pairs one at a
    #: time, only those a caller turns out to need, costs no more than asking them together
    #: (:func:`memorybank.rules.verdicts.asks_alone`).
    pairs_alone = True

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
        try:
            self._session = ort.InferenceSession(
                str(model),
                sess_options=session_options(threads or default_threads()),
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:  # onnxruntime's exception types are not public API
            raise ConfigurationError(f"cannot load the judge model {model}: {exc}") from exc
        self._cache = _Cache(CACHE_SIZE)
        self._key = str(model)

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        """The scores of each (stored, new) pair of fact texts, in one batched pass for the
        pairs not asked before, read by :func:`~memorybank.rules.verdicts.weighed` (a near
        copy with a new number, name, "not" or value is a change, never a duplicate)."""
        # The weighed scores are cached too: reading a pair's words (``weighed``) costs more
        # than the cached model answer it reads, and a block asks hundreds of known pairs.
        out: list[PairScores | None] = [self._cache.get(("weighed", a, b)) for a, b in pairs]
        todo = [i for i, value in enumerate(out) if value is None]
        if todo:
            logits = self._answers("pair", [pairs[i] for i in todo])
            for i, row in zip(todo, logits, strict=True):
                old, new = pairs[i]
                out[i] = scores = weighed(self._scores(row), old, new)
                self._cache.put(("weighed", old, new), scores)
        return [s for s in out if s is not None]

    def clear_cache(self) -> None:
        """Forget every cached answer (benchmarks time the model from cold with it)."""
        self._cache = _Cache(CACHE_SIZE)

    def relevance(self, message: str, texts: Sequence[str]) -> list[float]:
        """How likely each fact text bears on ``message`` (0 to 1)."""
        logits = self._answers("relevance", [(message, text) for text in texts])
        return [float(1.0 / (1.0 + np.exp(-float(row)))) for row in logits]

    def _scores(self, logits: npt.NDArray[np.float32]) -> PairScores:
        z = logits.astype(np.float64) / self.temperature
        p = np.exp(z - z.max())
        p /= p.sum()
        named = dict(zip(self.labels, p.tolist(), strict=True))
        return PairScores(named["duplicate"], named["update"], named["distinct"])

    def _answers(self, head: str, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        out: list[Any] = [self._cache.get((head, a, b)) for a, b in pairs]
        missing = sorted({pairs[i] for i, value in enumerate(out) if value is None})
        # One pair per run: the int8 model quantises its activations over the whole input,
        # so a pair batched with others scores differently from the same pair alone (0.85 /
        # 0.96), and a verdict would depend on what else a path happened to ask. Alone, it
        # is the same on every path, at about 1.5x the time of a batch of eight.
        for one in missing:
            chunk = [one]
            pair, relevance = self._run(chunk)
            for index, (a, b) in enumerate(chunk):
                self._cache.put(("pair", a, b), pair[index])
                self._cache.put(("relevance", a, b), relevance[index])
        if missing:
            out = [self._cache.get((head, a, b)) for a, b in pairs]
        return out

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

    def _run(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, Any]:
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
            pair, relevance = self._session.run(
                ["pair", "relevance"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
        except Exception as exc:  # onnxruntime's exception types are not public API
            raise ProviderError(f"the judge model failed: {exc}") from exc
        return pair, relevance


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
    """The process's shipped judge, loaded once (about 25 MB; shared by every bank)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LocalJudge()
        return _default


__all__ = ["CACHE_SIZE", "LocalJudge", "default_judge"]
