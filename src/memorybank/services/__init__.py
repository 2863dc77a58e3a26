"""Services: use cases written as functions (or small classes) over a
:class:`~memorybank.core.bank.MemoryBank` that they receive — a conversation's facts, reviewed
forgetting, the decision log, export/import, insights, accounts and webhooks. Only adapters
import services.
"""
