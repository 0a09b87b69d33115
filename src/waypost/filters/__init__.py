"""Metadata filters: the expression model, a parser and extraction from query text."""

from waypost.filters.model import And, Condition, Filter, Op, Or, parse_filter, parse_filter_json

__all__ = ["And", "Condition", "Filter", "Op", "Or", "parse_filter", "parse_filter_json"]
