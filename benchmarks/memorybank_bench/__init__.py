"""Benchmarks of memorybank itself: latency, throughput and memory at realistic sizes.

Not part of the runtime package: they ship beside it and need the ``bench`` extra
(``pip install 'memorybank[bench]'``); ``memorybank bench …`` runs them.
"""
