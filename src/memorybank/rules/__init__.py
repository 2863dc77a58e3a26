"""Rules: pure functions and settings models, with no I/O — what may be saved and how it is
phrased, what a new fact is to a stored one, how hits are scored, who may do what, what goes
into a prompt. A rule never receives a bank or a store; it imports only :mod:`memorybank.model`.
"""
