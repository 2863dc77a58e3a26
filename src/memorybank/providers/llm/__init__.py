"""Chat models, used where memorybank needs judgement: extracting facts from a conversation,
deciding whether a fact updates or replaces a stored one, planning what a forget request
removes. Everything works without one; an LLM only makes those steps smarter.

>>> from memorybank.providers.llm import ChatClient
>>> llm = ChatClient("http://localhost:11434/v1", "llama3.1")  # no request until a call
>>> llm.model
'llama3.1'
>>> llm.close()
"""

from __future__ import annotations

from memorybank.providers.llm.client import *  # noqa: F403 -- client.py's __all__ is the one list
from memorybank.providers.llm.client import __all__ as __all__
