"""Each metric's part of a record: the typed values a measurement holds, one module per metric.

The lowest room of the metrics' vocabulary: ``record.py`` is made of these
types, ``measure/`` builds them, and ``metrics/`` judges them.  They import
only the vocabulary (``codec``, ``budget``), never a metric, a measuring pass
or a record, so measuring and judging can both stand on them.
"""
