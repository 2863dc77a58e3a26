"""Providers: what talks to the outside world — embedding models (bundled or over HTTP), chat
models that answer in JSON, and the URL/address policy for users' own provider endpoints.
Providers import rules and the model, never a store or the bank.
"""
