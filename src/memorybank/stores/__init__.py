"""Stores: persistence behind the :class:`~memorybank.stores.base.Store` protocol — one SQL
store over SQLite (the default) and PostgreSQL, each searching through its
:class:`~memorybank.stores.search_index.SearchIndex`. Every read and write is filtered by owner
and scope inside the store. Stores import providers (for vector types), rules and the model.
"""
