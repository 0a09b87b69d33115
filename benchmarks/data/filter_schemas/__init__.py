"""Held-out filter-extraction benchmark data: three seeded invented schemas and frozen queries against them.

``data.py`` generates the rows (rentals, events, recipes); ``cases.py`` holds the queries with the filters a careful
human would extract, written before the extractor was run on them. Scored by ``benchmarks/bench_filter_schemas.py``.
"""
