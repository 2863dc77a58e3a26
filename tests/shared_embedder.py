"""The embedder tests share: the real bundled model, loaded once per session (the
``embedder`` fixture of ``tests/conftest.py``). A module of its own, with a name no other
module of the suite has, so that a test module can import the class (to build an embedder
like it) whichever ``conftest`` the run loaded first."""

from __future__ import annotations

from memorybank.providers.embedders.local import LocalEmbedder


class SharedEmbedder(LocalEmbedder):
    """The session's one embedder; banks built in tests must not close it."""

    def close(self) -> None:
        pass


__all__ = ["SharedEmbedder"]
