"""The HTTP API of memorybank: a FastAPI app over one :class:`~memorybank.MemoryBank`."""

from memorybank.server.app import create_app

__all__ = ["create_app"]
