"""The census: every public Keras callable as a small perf test (docs/census.md).

Run it with ``pytest --kerasperf --pyargs pytest_kerasperf.census``.  The
workloads are data (``tables``: one entry per public symbol, its arguments
and input shapes); ``symbols`` lists what the installed Keras makes public, and
``test_census_coverage`` fails when a public symbol has neither a workload nor
an exclusion with its reason.
"""
