"""Benchmarks of memorybank itself: latency, throughput and memory at realistic sizes."""
