"""The standard suite: CNN forward, LM forward, LM generate-32, eager and compiled.

Run it with ``pytest --kerasperf --pyargs pytest_kerasperf.suite``.
"""
