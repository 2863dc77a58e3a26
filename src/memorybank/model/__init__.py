"""The records: plain typed values with no I/O.

``memorybank.model`` answers for the memory records of :mod:`memorybank.model.memory`, which
every layer exchanges (its ``__all__`` is this package's); the accounts' and webhooks' records
are in :mod:`memorybank.model.accounts` and :mod:`memorybank.model.webhooks`, and
:mod:`memorybank.model.stored` holds what stores hand back (times, rows, search candidates,
outcomes).
"""

from memorybank.model.memory import *  # noqa: F403 -- memory.py's __all__ is the one list
from memorybank.model.memory import __all__ as __all__
