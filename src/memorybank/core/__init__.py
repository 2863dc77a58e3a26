"""Core: :class:`~memorybank.core.bank.MemoryBank` and what it owns — search and its
candidates, the memory block and auto-recall, settling borderline duplicates, consolidation,
reindexing, reinforcement, usage counters and the events feed. The core imports stores,
providers, rules and the model; it never imports :mod:`memorybank.services` or an adapter.
"""
