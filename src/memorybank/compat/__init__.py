"""Other memory libraries' interfaces over :class:`~memorybank.MemoryBank`, so that switching to
memorybank changes an import rather than every call: :mod:`memorybank.compat.mem0`.

An adapter layer like ``cli/`` and ``server/``: it translates calls and answers, and decides
nothing the bank does not already decide. Importing :mod:`memorybank` loads none of it.
"""
